/* fuzz_analyse.c: libFuzzer harness for the interpreter analysis of
 * src/python/analyse.c (pst__py_analyse_elf): the file and its memory
 * together, as a hostile target gives them. Its symbols (Py_Initialize,
 * Py_Version, _PyRuntime, the type objects...), the version from
 * Py_Version or the mapped name, the layout (built-in table, or
 * _Py_DebugOffsets read from memory and checked), the disassembly of
 * PyGILState_GetThisThreadState and PyInterpreterState_Head (key, interp
 * head, thread-local getter) with its reads of the GOT, the key's checks,
 * the digit size; then, on success, the thread-state list read once.
 *
 * An input is a header (struct header: the architecture, the mapping's
 * start and offset, which file name it has, the ELF's length), the ELF
 * (opened from a memfd, as the analysis opens a target's file), then the
 * memory image as regions (regions.h). Seeds (make_seeds.py): small
 * stand-in libpythons whose PyGILState_GetThisThreadState has the real
 * shape, for 2.7, 3.6, 3.11, 3.12 and 3.14 (its _Py_DebugOffsets from the
 * registry fixture of sid's 3.14), each with the memory its analysis
 * reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elf/elf.h"
#include "proc/mem.h"
#include "python/python.h"
#include "regions.h"
#include "util/log.h"

#define REGIONS_MAX 256

/* Little-endian, as make_seeds.py packs it. */
struct header {
  uint32_t arch;    /* 1 x86_64, 2 aarch64 (anything else: x86_64) */
  uint32_t name;    /* index into names[] (modulo) */
  uint64_t start;   /* the mapping of the file's first segment */
  uint64_t offset;  /* its file offset */
  uint32_t elf_len; /* bytes of ELF after the header; the rest: regions */
  uint32_t pad;
};

/* File names as a target maps them: the version comes from the name when
 * the file has no Py_Version (before 3.11). */
static const char *const names[] = {
    "/usr/lib/libpython3.12.so.1.0",
    "/usr/lib/libpython3.6m.so.1.0",
    "/usr/lib/libpython2.7.so.1.0",
    "/usr/bin/python3.14",
    "/opt/libpython3.so",
    "/usr/lib/libpython3.15t.so.1.0",
    "/x/libpython9.99.so",
    "",
};
#define NNAMES (sizeof(names) / sizeof(names[0]))

static struct pst__mem_region regions[REGIONS_MAX];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct pst__py_found found;
  struct pst__elf *e = NULL;
  struct pst__map mp;
  struct pst__mem mem;
  struct pst__py py;
  struct header h;
  int fd, err;

  pst__log_level = getenv("FUZZ_ANALYSE_VERBOSE") ? PST_LOG_DEBUG : PST_LOG_ERR;
  if (size < sizeof(h))
    return 0;
  memcpy(&h, data, sizeof(h));
  data += sizeof(h);
  size -= sizeof(h);
  if (h.elf_len > size)
    return 0;
  fd = memfd_create("fuzz-analyse", MFD_CLOEXEC);
  if (fd < 0)
    abort();
  if (write(fd, data, h.elf_len) != (ssize_t)h.elf_len) {
    close(fd);
    return 0;
  }
  if (pst__elf_open(fd, &e) != 0)
    return 0; /* fd closed by pst__elf_open */
  pst__mem_init_image(
      &mem, regions,
      fuzz_regions(data + h.elf_len, size - h.elf_len, regions, REGIONS_MAX));
  memset(&mp, 0, sizeof(mp));
  mp.start = h.start;
  mp.end = h.start + 0x1000 > h.start ? h.start + 0x1000 : UINT64_MAX;
  mp.offset = h.offset;
  mp.perms = PST_MAP_R | PST_MAP_X;
  mp.path = (char *)names[h.name % NNAMES];
  memset(&found, 0, sizeof(found));
  pst__py_init(&py);
  err = pst__py_analyse_elf(&py, e, &mp, &mem,
                            h.arch == 2 ? PST_ARCH_AARCH64 : PST_ARCH_X86_64,
                            &found);
  if (getenv("FUZZ_ANALYSE_VERBOSE"))
    fprintf(stderr, "%s: %s; version %s, key %d (%s), layout %s\n", mp.path,
            pst_strerror(err), found.version, py.key, found.key_method,
            found.layout_method);
  if (err == 0) {
    uint64_t ts[8];
    if (!py.interp || !py.codes || py.key < -1 || py.key >= 1024 ||
        (py.long_shift != 15 && py.long_shift != 30) ||
        !memchr(found.version, 0, sizeof(found.version)) ||
        !memchr(found.key_method, 0, sizeof(found.key_method)) ||
        !memchr(found.layout_method, 0, sizeof(found.layout_method)))
      abort(); /* what attaching relies on after a success */
    if (pst__py_tstates(&py, &mem, ts, 8) > 8)
      abort();
  }
  pst__py_exit(&py);
  pst__mem_exit(&mem);
  pst__elf_close(e);
  return 0;
}
