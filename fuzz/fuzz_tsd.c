/* fuzz_tsd.c: libFuzzer harness for src/libc/tsd.c: the TSD and start
 * routine layout decision from a libc's ELF (glibc's _thread_db_*
 * descriptors, the decoded pthread_getspecific, the defaults), then the
 * emulation of pthread_getspecific and the start routine read over a
 * memory image (pst__mem_init_image), as on a live process whose libc file
 * and memory are hostile.
 *
 * An input is a header (struct header), then hdr.elf_len bytes of ELF
 * file, opened from a memfd as the analysis opens the target's libc
 * (none: the layout is the header's own, any values), then the image as
 * records {u64 address, u32 length, bytes} (as fuzz_pyimage.c); a record
 * cut short ends the image. Seeds (make_seeds.py): tiny shared objects
 * with glibc's descriptors and pthread_getspecific bytes copied from this
 * machine's libc.so.6 and musl's libc.so, each followed by the thread
 * descriptor and second-level key block of a live thread that set keys. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elf/debuginfo.h"
#include "elf/elf.h"
#include "libc/tsd.h"
#include "proc/mem.h"
#include "regions.h"
#include "util/log.h"

#define REGIONS_MAX 1024

/* Little-endian, as make_seeds.py packs it. */
struct header {
  uint32_t flags;   /* FLAG_* */
  uint32_t elf_len; /* bytes of ELF file after the header */
  uint64_t tp;      /* the thread pointer the lookups start from */
  uint32_t key;     /* one more key to look up */
  uint32_t pad;
  /* The layout when there is no ELF (elf_len 0). */
  int64_t offset, multiplier, l2_offset, l2_data, start_offset;
};

#define FLAG_AARCH64 1u /* decode as aarch64 (else x86_64) */
#define FLAG_MUSL 2u    /* the file is musl's (tsd.is_musl) */
#define FLAG_INDIRECT 4u
#define FLAG_L2 8u
#define FLAG_L2_ONLY 16u
#define FLAG_START 32u

static struct pst__mem_region regions[REGIONS_MAX];

/* The regions of the image: how many. */
static size_t image(const uint8_t *p, size_t n) {
  return fuzz_regions(p, n, regions, REGIONS_MAX);
}

/* Every string of tsd must end inside its array. */
static void check(const struct pst__tsd *tsd) {
  if (!memchr(tsd->libc_path, 0, sizeof(tsd->libc_path)) ||
      !memchr(tsd->method, 0, sizeof(tsd->method)) ||
      !memchr(tsd->start_method, 0, sizeof(tsd->start_method)))
    abort();
}

/* The layout analysis leaves from the ELF at p: 0, or nonzero when the
 * file is not one (then nothing is looked up, as attaching stops). */
static int analyse(const struct header *h, const uint8_t *p,
                   struct pst__tsd *tsd) {
  /* No debug file is looked for outside a directory that does not
   * exist: the result must not depend on this machine's files. */
  struct pst__debuginfo_where w = {.path = "/nonexistent/fuzz/libc.so.6",
                                   .dirs = "/nonexistent/fuzz"};
  struct pst__elf *e;
  int fd, err;

  fd = memfd_create("fuzz-tsd", MFD_CLOEXEC);
  if (fd < 0)
    return -1;
  if (write(fd, p, h->elf_len) != (ssize_t)h->elf_len) {
    close(fd);
    return -1;
  }
  if (pst__elf_open(fd, &e) != 0)
    return -1; /* fd closed by pst__elf_open */
  memset(tsd, 0, sizeof(*tsd));
  strcpy(tsd->libc_path, w.path);
  tsd->is_musl = !!(h->flags & FLAG_MUSL);
  err = pst__tsd_analyse_elf(
      e, &w, h->flags & FLAG_AARCH64 ? PST_ARCH_AARCH64 : PST_ARCH_X86_64, tsd);
  pst__elf_close(e);
  check(tsd);
  if (tsd->is_musl && tsd->has_start)
    abort(); /* musl keeps no start routine */
  return err;
}

static void from_header(const struct header *h, struct pst__tsd *tsd) {
  memset(tsd, 0, sizeof(*tsd));
  tsd->layout.offset = h->offset;
  tsd->layout.multiplier = h->multiplier;
  tsd->layout.indirect = !!(h->flags & FLAG_INDIRECT);
  tsd->layout.has_l2 = !!(h->flags & FLAG_L2);
  tsd->layout.l2_offset = h->l2_offset;
  tsd->layout.l2_data = h->l2_data;
  tsd->l2_only = !!(h->flags & FLAG_L2_ONLY);
  tsd->has_start = !!(h->flags & FLAG_START);
  tsd->start_offset = h->start_offset;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const unsigned keys[] = {0, 1, 31, 32, 33, 1023, 1024, UINT32_MAX};
  struct pst__tsd tsd;
  struct pst__mem mem;
  struct header h;
  uint64_t v, fn, arg;
  size_t rest;
  int err;

  pst__log_level = PST_LOG_ERR; /* a layout warning per input otherwise */
  if (size < sizeof(h))
    return 0;
  memcpy(&h, data, sizeof(h));
  rest = size - sizeof(h);
  if (h.elf_len > rest)
    return 0;
  if (h.elf_len) {
    if (analyse(&h, data + sizeof(h), &tsd))
      return 0;
  } else {
    from_header(&h, &tsd);
  }
  pst__mem_init_image(&mem, regions,
                      image(data + sizeof(h) + h.elf_len, rest - h.elf_len));
  for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
    (void)pst__tsd_get(&tsd, &mem, h.tp, keys[i], &v);
  v = fn = 0;
  err = pst__tsd_get(&tsd, &mem, h.tp, h.key, &v);
  if (pst__tsd_start_routine(&tsd, &mem, h.tp, &fn, &arg) == 0 &&
      !tsd.has_start)
    abort();
  if (getenv("FUZZ_TSD_VERBOSE")) /* to check that the seeds read */
    fprintf(stderr, "%s; %s; key %u: %d 0x%llx; start 0x%llx\n", tsd.method,
            tsd.start_method, h.key, err, (unsigned long long)v,
            (unsigned long long)fn);
  (void)pst__tsd_start_routine(&tsd, &mem, h.tp, &fn, NULL);
  pst__mem_exit(&mem);
  return 0;
}
