/* elf.c: libelf-backed access to the target's ELF files (symbols, sections, bytes). */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf/elf.h"
#include "pystitch/errno.h"

struct pst__elf {
  int fd;
  void *map;
  size_t size;
  Elf *elf;
  GElf_Ehdr ehdr;
  struct guard_slot *slot; /* this mapping's entry in the guard's table */
};

/* ---- the truncation guard ----
 *
 * The files mapped here belong to the target, which may truncate them while
 * they are mapped: a read past the new end raises SIGBUS. The handler looks
 * the faulting address up in a table of our file mappings; when it is one,
 * it maps a page of zeros over the faulting page (MAP_FIXED, anonymous, the
 * mapping stays ours) and marks the mapping faulted, so that the read goes
 * on with zeros (every parser here bounds-checks what it reads) and the
 * image's users see pst__elf_faulted() and drop what they read. A SIGBUS at
 * any other address is not ours: the previous action is restored and the
 * fault happens again under it. The table is only ever appended to (in
 * chunks, never freed), so the handler reads it without a lock. */

#define GUARD_CHUNK 256

struct guard_slot {
  _Atomic uintptr_t lo, hi; /* [lo, hi) of a mapping; 0, 0 when free */
  atomic_int faulted;
};

struct guard_chunk {
  struct guard_slot s[GUARD_CHUNK];
  struct guard_chunk *_Atomic next;
};

static struct guard_chunk guard_first;
static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;
static struct sigaction guard_prev;
static atomic_ulong guard_faults;
static uintptr_t guard_page; /* the page size, read before any fault */

static void guard_handler(int sig, siginfo_t *si, void *ctx) {
  uintptr_t a = (uintptr_t)si->si_addr;

  (void)ctx;
  for (struct guard_chunk *c = &guard_first; c; c = atomic_load(&c->next))
    for (int i = 0; i < GUARD_CHUNK; i++) {
      struct guard_slot *g = &c->s[i];
      if (a >= atomic_load(&g->lo) && a < atomic_load(&g->hi)) {
        void *at = (void *)(a & ~(guard_page - 1));
        if (mmap(at, (size_t)guard_page, PROT_READ,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == at) {
          atomic_store(&g->faulted, 1);
          atomic_fetch_add(&guard_faults, 1);
          return; /* the read goes on, with zeros */
        }
      }
    }
  /* Not one of ours: fault again under the previous action. */
  sigaction(sig, &guard_prev, NULL);
}

static void guard_install(void) {
  struct sigaction sa;
  long page = sysconf(_SC_PAGESIZE);

  /* sysconf() is not async-signal-safe: the handler reads this copy. */
  guard_page = page > 0 ? (uintptr_t)page : 4096;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = guard_handler;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, &guard_prev);
}

/* A slot holding [lo, hi), or NULL (no memory: the mapping is unguarded
 * and the caller refuses it). */
static struct guard_slot *guard_add(const void *lo, size_t len) {
  struct guard_chunk *c = &guard_first, *last = NULL;
  struct guard_slot *g = NULL;

  pthread_once(&guard_once, guard_install);
  pthread_mutex_lock(&guard_lock);
  for (; c && !g; last = c, c = atomic_load(&c->next))
    for (int i = 0; i < GUARD_CHUNK && !g; i++)
      if (!atomic_load(&c->s[i].hi))
        g = &c->s[i];
  if (!g && (c = calloc(1, sizeof(*c)))) {
    atomic_store(&last->next, c);
    g = &c->s[0];
  }
  if (g) {
    atomic_store(&g->faulted, 0);
    atomic_store(&g->lo, (uintptr_t)lo);
    atomic_store(&g->hi, (uintptr_t)lo + len);
  }
  pthread_mutex_unlock(&guard_lock);
  return g;
}

static void guard_remove(struct guard_slot *g) {
  pthread_mutex_lock(&guard_lock);
  atomic_store(&g->hi, 0);
  atomic_store(&g->lo, 0);
  pthread_mutex_unlock(&guard_lock);
}

int pst__elf_faulted(const struct pst__elf *e) {
  return e->slot && atomic_load(&e->slot->faulted);
}

unsigned long pst__elf_faults(void) { return atomic_load(&guard_faults); }

int pst__elf_open(int fd, struct pst__elf **out) {
  struct pst__elf *e;
  struct stat st;
  int err;

  if (elf_version(EV_CURRENT) == EV_NONE) {
    close(fd);
    return -ENOSYS;
  }
  e = calloc(1, sizeof(*e));
  if (!e) {
    close(fd);
    return -ENOMEM;
  }
  e->fd = fd;
  e->map = MAP_FAILED;
  if (fstat(fd, &st) < 0) {
    err = -errno;
    goto err;
  }
  e->size = (size_t)st.st_size;
  if (!S_ISREG(st.st_mode) || e->size == 0) {
    err = -ENOEXEC;
    goto err;
  }
  e->map = mmap(NULL, e->size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (e->map == MAP_FAILED) {
    err = -errno;
    goto err;
  }
  e->slot = guard_add(e->map, e->size);
  if (!e->slot) {
    err = -ENOMEM;
    goto err;
  }
  e->elf = elf_memory(e->map, e->size);
  if (!e->elf || elf_kind(e->elf) != ELF_K_ELF ||
      !gelf_getehdr(e->elf, &e->ehdr)) {
    err = -ENOEXEC;
    goto err;
  }
  *out = e;
  return 0;
err:
  pst__elf_close(e);
  return err;
}

void pst__elf_close(struct pst__elf *e) {
  if (!e)
    return;
  if (e->elf)
    elf_end(e->elf);
  if (e->slot)
    guard_remove(e->slot);
  if (e->map != MAP_FAILED)
    munmap(e->map, e->size);
  close(e->fd);
  free(e);
}

int pst__elf_machine(const struct pst__elf *e) { return e->ehdr.e_machine; }
int pst__elf_type(const struct pst__elf *e) { return e->ehdr.e_type; }

int pst__elf_symbols(const struct pst__elf *e, const char *const *names,
                     size_t n, uint64_t *values, uint64_t *sizes) {
  static const unsigned types[] = {SHT_DYNSYM, SHT_SYMTAB};
  size_t found = 0;
  char *done = calloc(n ? n : 1, 1);

  if (!done)
    return -ENOMEM;
  for (size_t i = 0; i < n; i++) {
    values[i] = 0;
    if (sizes)
      sizes[i] = 0;
  }
  for (size_t t = 0; t < 2 && found < n; t++) {
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e->elf, scn)) != NULL && found < n) {
      GElf_Shdr sh;
      Elf_Data *data;
      size_t count;
      if (!gelf_getshdr(scn, &sh) || sh.sh_type != types[t] || !sh.sh_entsize ||
          !(data = elf_getdata(scn, NULL)))
        continue;
      count = sh.sh_size / sh.sh_entsize;
      for (size_t k = 1; k < count && found < n; k++) {
        GElf_Sym sym;
        const char *s;
        if (!gelf_getsym(data, (int)k, &sym) || sym.st_shndx == SHN_UNDEF ||
            !(s = elf_strptr(e->elf, sh.sh_link, sym.st_name)))
          continue;
        for (size_t i = 0; i < n; i++) {
          if (done[i] || s[0] != names[i][0] || strcmp(s, names[i]))
            continue;
          done[i] = 1;
          found++;
          values[i] = sym.st_value;
          if (sizes)
            sizes[i] = sym.st_size;
        }
      }
    }
  }
  free(done);
  return (int)found;
}

int pst__elf_symbol(const struct pst__elf *e, const char *name, uint64_t *value,
                    uint64_t *size) {
  uint64_t v, sz;

  if (pst__elf_symbols(e, &name, 1, &v, &sz) != 1)
    return PST_ENOSYM;
  *value = v;
  if (size)
    *size = sz;
  return 0;
}

/* The header of section name, or -1. */
static int find_section(const struct pst__elf *e, const char *name,
                        GElf_Shdr *out) {
  Elf_Scn *scn = NULL;
  size_t shstrndx;

  if (elf_getshdrstrndx(e->elf, &shstrndx) != 0)
    return -1;
  while ((scn = elf_nextscn(e->elf, scn)) != NULL) {
    const char *s;
    if (!gelf_getshdr(scn, out))
      continue;
    s = elf_strptr(e->elf, shstrndx, out->sh_name);
    if (s && !strcmp(s, name))
      return 0;
  }
  return -1;
}

int pst__elf_section(const struct pst__elf *e, const char *name, uint64_t *addr,
                     uint64_t *size) {
  GElf_Shdr sh;

  if (find_section(e, name, &sh))
    return PST_ENOSYM;
  *addr = sh.sh_addr;
  *size = sh.sh_size;
  return 0;
}

const void *pst__elf_section_bytes(const struct pst__elf *e, const char *name,
                                   uint64_t *size) {
  GElf_Shdr sh;

  if (find_section(e, name, &sh) || sh.sh_type == SHT_NOBITS ||
      sh.sh_offset > e->size || sh.sh_size > e->size - sh.sh_offset)
    return NULL;
  *size = sh.sh_size;
  return (const char *)e->map + sh.sh_offset;
}

int pst__elf_read(const struct pst__elf *e, uint64_t vaddr, void *buf,
                  size_t len) {
  size_t n;

  if (elf_getphdrnum(e->elf, &n) != 0)
    return -EFAULT;
  for (size_t i = 0; i < n; i++) {
    GElf_Phdr ph;
    uint64_t off, avail;
    if (!gelf_getphdr(e->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
      continue;
    /* Written with subtractions: a corrupt header must not wrap. */
    if (vaddr < ph.p_vaddr || vaddr - ph.p_vaddr > ph.p_memsz ||
        len > ph.p_memsz - (vaddr - ph.p_vaddr))
      continue;
    off = vaddr - ph.p_vaddr;
    avail = off < ph.p_filesz ? ph.p_filesz - off : 0;
    if (avail > len)
      avail = len;
    if (ph.p_offset > e->size || off > e->size - ph.p_offset ||
        avail > e->size - ph.p_offset - off)
      return -EFAULT;
    memcpy(buf, (const char *)e->map + ph.p_offset + off, avail);
    memset((char *)buf + avail, 0, len - avail);
    return 0;
  }
  return -EFAULT;
}

const void *pst__elf_image(const struct pst__elf *e, size_t *len) {
  *len = e->size;
  return e->map;
}

int pst__elf_segment(const struct pst__elf *e, unsigned type, uint64_t *vaddr,
                     uint64_t *offset, uint64_t *filesz) {
  size_t n;

  if (elf_getphdrnum(e->elf, &n) != 0)
    return PST_ENOSYM;
  for (size_t i = 0; i < n; i++) {
    GElf_Phdr ph;
    if (!gelf_getphdr(e->elf, (int)i, &ph) || ph.p_type != type)
      continue;
    *vaddr = ph.p_vaddr;
    *offset = ph.p_offset;
    *filesz = ph.p_filesz;
    return 0;
  }
  return PST_ENOSYM;
}

int pst__elf_bias(const struct pst__elf *e, uint64_t map_start,
                  uint64_t map_offset, uint64_t *bias) {
  size_t n;

  if (elf_getphdrnum(e->elf, &n) != 0)
    return -EINVAL;
  for (size_t i = 0; i < n; i++) {
    GElf_Phdr ph;
    if (!gelf_getphdr(e->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
      continue;
    /* The segment that holds map_offset: the kernel maps it page-granular,
     * so page(p_offset) lands at page(p_vaddr) + bias. */
    if (map_offset >= (ph.p_offset & ~(uint64_t)4095) &&
        map_offset < ph.p_offset + ph.p_filesz) {
      uint64_t seg_page_vaddr = (ph.p_vaddr & ~(uint64_t)4095) +
                                (map_offset - (ph.p_offset & ~(uint64_t)4095));
      *bias = map_start - seg_page_vaddr;
      return 0;
    }
  }
  return -EINVAL;
}
