/* symtab.c: sorted, demangled function tables of ELF images (.symtab,
 * .dynsym, MiniDebugInfo) for symbolising native frames.
 *
 * The image is untrusted (a fuzzer is pointed at pst__symtab_build): it is
 * never cast to a structure in place (offsets need not be aligned), every
 * read goes through read_at(), which checks offset and size against the
 * image's length, and every count read from it is bounded by the bytes that
 * could hold it. The table is immutable once built: no locking rule.
 */
#include <errno.h>
#include <lzma.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <elf.h>
#include <libiberty/demangle.h>

#include "native/symtab.h"
#include "util/array.h"
#include "util/log.h"

/* One function of the finished table: 16 bytes. A size of 2 GiB or more
 * does not happen in real code; a corrupt one is clamped. */
struct entry {
  uint64_t start;
  uint32_t size : 31; /* never 0 */
  /* Some entry of an earlier address ends after this one's start: only
   * then may a lookup that misses this address group look further back. */
  uint32_t covered : 1;
  uint32_t name; /* offset in the name pool */
};
#define MAX_SIZE ((1u << 31) - 1)

struct pst__symtab {
  struct entry *v;
  size_t n;
  char *names; /* NUL-terminated names, back to back */
  size_t names_len;
};

/* One symbol as read, before sorting; name points into the image (or into
 * the decompressed .gnu_debugdata), NUL-terminated (checked). */
struct raw {
  uint64_t start;
  uint64_t size;
  uint64_t limit; /* end of its section, 0 when unknown */
  const char *name;
  uint32_t len;
  uint8_t rank; /* preference among aliases, lower is better: see rank() */
};

struct builder {
  struct raw *v;
  size_t n, cap;
  /* At most one symbol per 24 bytes of the images read: section headers
   * that point many times at one symbol table add nothing more. */
  size_t max;
  uint8_t *inner; /* the decompressed .gnu_debugdata, freed at the end */
};

/* A bounded view of an ELF image. */
struct image {
  const uint8_t *p;
  size_t len;
  uint64_t shoff;
  size_t shnum;
  size_t shentsize;
};

/* Demangling a very long name costs time for nothing a user could read:
 * longer ones are kept mangled. Output is capped too, since substitutions
 * let a short name expand a lot. */
#define MAX_MANGLED 16384
#define MAX_DEMANGLED 65536
/* liblzma's memory limit: xz -9 needs 65 MiB to decompress. */
#define XZ_MEMLIMIT ((uint64_t)128 << 20)
/* How many address groups before the nearest one a lookup looks at for an
 * enclosing symbol (a sized symbol that contains later ones). */
#define MAX_BACKSCAN 16

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_ELFDATA ELFDATA2LSB
#else
#define HOST_ELFDATA ELFDATA2MSB
#endif

/* Copies n bytes at offset off of the image, or fails without reading. */
static bool read_at(const struct image *im, uint64_t off, void *dst, size_t n) {
  if (off > im->len || n > im->len - off)
    return false;
  memcpy(dst, im->p + off, n);
  return true;
}

static bool section(const struct image *im, size_t i, Elf64_Shdr *sh) {
  if (i >= im->shnum)
    return false;
  return read_at(im, im->shoff + (uint64_t)i * im->shentsize, sh, sizeof(*sh));
}

/* The bytes of a section that has file contents, bounds-checked. */
static const uint8_t *section_bytes(const struct image *im,
                                    const Elf64_Shdr *sh) {
  if (sh->sh_type == SHT_NOBITS || sh->sh_offset > im->len ||
      sh->sh_size > im->len - sh->sh_offset)
    return NULL;
  return im->p + sh->sh_offset;
}

/* Reads the ELF and section headers' geometry. 0 or -ENOEXEC. */
static int open_image(const void *p, size_t len, struct image *im) {
  Elf64_Ehdr eh;
  Elf64_Shdr sh0;

  im->p = p;
  im->len = len;
  im->shnum = 0;
  if (!read_at(im, 0, &eh, sizeof(eh)) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != HOST_ELFDATA)
    return -ENOEXEC;
  if (eh.e_shoff == 0)
    return 0; /* no section headers: no symbols */
  if (eh.e_shentsize < sizeof(Elf64_Shdr))
    return -ENOEXEC;
  im->shoff = eh.e_shoff;
  im->shentsize = eh.e_shentsize;
  im->shnum = eh.e_shnum;
  if (im->shnum == 0) {
    /* More than SHN_LORESERVE sections: the count is in section 0. */
    if (!read_at(im, im->shoff, &sh0, sizeof(sh0)))
      return -ENOEXEC;
    im->shnum = sh0.sh_size > SIZE_MAX ? SIZE_MAX : (size_t)sh0.sh_size;
  }
  if (im->shoff > len || im->shnum > (len - im->shoff) / im->shentsize)
    return -ENOEXEC;
  return 0;
}

static size_t shstrndx(const struct image *im) {
  Elf64_Ehdr eh;
  Elf64_Shdr sh0;

  if (!read_at(im, 0, &eh, sizeof(eh)))
    return 0;
  if (eh.e_shstrndx != SHN_XINDEX)
    return eh.e_shstrndx;
  return section(im, 0, &sh0) ? sh0.sh_link : 0;
}

/* Preference among symbols at one address, lower is better: a sized one,
 * then GLOBAL (or GNU_UNIQUE) before WEAK before LOCAL, then fewer leading
 * underscores. The shorter name then wins in cmp_pref(). */
static uint8_t rank(uint64_t size, unsigned bind, const char *name) {
  unsigned b = bind == STB_GLOBAL || bind == STB_GNU_UNIQUE ? 0
               : bind == STB_WEAK                           ? 1
               : bind == STB_LOCAL                          ? 2
                                                            : 3;
  unsigned u = 0;

  while (u < 3 && name[u] == '_')
    u++;
  return (uint8_t)((size ? 0 : 32) | b << 2 | u);
}

/* The end of section shndx when it is allocated and holds value, else 0. */
static uint64_t section_end(const struct image *im, unsigned shndx,
                            uint64_t value) {
  Elf64_Shdr sh;

  if (shndx >= SHN_LORESERVE || !section(im, shndx, &sh) ||
      !(sh.sh_flags & SHF_ALLOC) || value < sh.sh_addr ||
      sh.sh_size > UINT64_MAX - sh.sh_addr || value >= sh.sh_addr + sh.sh_size)
    return 0;
  return sh.sh_addr + sh.sh_size;
}

/* Appends the defined functions of symbol section sh. A corrupt section or
 * string table is skipped (0); -ENOMEM only on allocation failure. */
static int add_symbols(const struct image *im, const Elf64_Shdr *sh,
                       struct builder *b) {
  Elf64_Shdr strsh;
  const uint8_t *syms;
  const char *str;
  size_t count;

  if (sh->sh_entsize < sizeof(Elf64_Sym) || !(syms = section_bytes(im, sh)) ||
      !section(im, sh->sh_link, &strsh) || strsh.sh_type != SHT_STRTAB ||
      !(str = (const char *)section_bytes(im, &strsh)))
    return 0;
  count = sh->sh_size / sh->sh_entsize;
  for (size_t k = 1; k < count; k++) {
    Elf64_Sym s;
    unsigned type;
    size_t len;
    struct raw *r;

    memcpy(&s, syms + k * sh->sh_entsize, sizeof(s));
    type = ELF64_ST_TYPE(s.st_info);
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
        s.st_shndx == SHN_UNDEF || s.st_shndx == SHN_COMMON ||
        s.st_value == 0 || s.st_name == 0 || s.st_name >= strsh.sh_size)
      continue;
    len = strnlen(str + s.st_name, strsh.sh_size - s.st_name);
    if (len == strsh.sh_size - s.st_name || len > UINT32_MAX)
      continue; /* not NUL-terminated inside the table */
    if (b->n >= b->max)
      break;
    if (pst__array_reserve((void **)&b->v, &b->cap, b->n + 1, sizeof(*b->v)))
      return -ENOMEM;
    r = &b->v[b->n++];
    r->start = s.st_value;
    r->size = s.st_size;
    r->limit = s.st_size ? 0 : section_end(im, s.st_shndx, s.st_value);
    r->name = str + s.st_name;
    r->len = (uint32_t)len;
    r->rank = rank(s.st_size, ELF64_ST_BIND(s.st_info), r->name);
  }
  return 0;
}

/* Decompresses an xz stream of at most PST_SYMTAB_MAX_DEBUGDATA bytes into
 * *out (malloc'd). 0, or a negative error (corrupt, too big, no memory). */
static int unxz(const uint8_t *in, size_t in_len, uint8_t **out,
                size_t *out_len) {
  lzma_stream s = LZMA_STREAM_INIT;
  uint8_t *buf = NULL, *nb;
  size_t cap = in_len < (1 << 16) ? (1 << 18) : in_len * 4;
  lzma_ret ret;
  int err;

  if (lzma_stream_decoder(&s, XZ_MEMLIMIT, 0) != LZMA_OK)
    return -ENOMEM;
  s.next_in = in;
  s.avail_in = in_len;
  /* liblzma returns LZMA_BUF_ERROR when a call can make no progress (the
   * input ended early), so this loop ends. */
  for (;;) {
    if (!buf || s.avail_out == 0) {
      if (buf && cap == PST_SYMTAB_MAX_DEBUGDATA) {
        err = -EFBIG;
        goto err;
      }
      if (buf)
        cap *= 2;
      if (cap > PST_SYMTAB_MAX_DEBUGDATA)
        cap = PST_SYMTAB_MAX_DEBUGDATA;
      nb = realloc(buf, cap);
      if (!nb) {
        err = -ENOMEM;
        goto err;
      }
      buf = nb;
      s.next_out = buf + s.total_out;
      s.avail_out = cap - s.total_out;
    }
    ret = lzma_code(&s, LZMA_FINISH);
    if (ret == LZMA_STREAM_END)
      break;
    if (ret != LZMA_OK) {
      err = ret == LZMA_MEM_ERROR ? -ENOMEM : -EINVAL;
      goto err;
    }
  }
  *out = buf;
  *out_len = s.total_out;
  lzma_end(&s);
  return 0;
err:
  free(buf);
  lzma_end(&s);
  return err;
}

static int add_image(const struct image *im, struct builder *b, int depth);

/* Adds the symbols of the MiniDebugInfo ELF in section sh. Any problem with
 * it only leaves it out; -ENOMEM is the only error. */
static int add_debugdata(const struct image *im, const Elf64_Shdr *sh,
                         struct builder *b) {
  const uint8_t *xz = section_bytes(im, sh);
  struct image inner;
  size_t len;
  int err;

  if (!xz || b->inner)
    return 0;
  err = unxz(xz, sh->sh_size, &b->inner, &len);
  if (err) {
    pst__debug("symtab: .gnu_debugdata left out: %s", strerror(-err));
    return 0;
  }
  if (open_image(b->inner, len, &inner))
    return 0;
  b->max += len / sizeof(Elf64_Sym);
  return add_image(&inner, b, 1);
}

/* Adds every symbol section of im and, at depth 0, its MiniDebugInfo. */
static int add_image(const struct image *im, struct builder *b, int depth) {
  Elf64_Shdr names_sh;
  const char *names = NULL;
  int err;

  if (depth == 0 && section(im, shstrndx(im), &names_sh))
    names = (const char *)section_bytes(im, &names_sh);
  for (size_t i = 1; i < im->shnum; i++) {
    Elf64_Shdr sh;
    static const char dd[] = ".gnu_debugdata";
    if (!section(im, i, &sh))
      continue;
    if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM)
      err = add_symbols(im, &sh, b);
    else if (names && sh.sh_type == SHT_PROGBITS &&
             sh.sh_name < names_sh.sh_size &&
             names_sh.sh_size - sh.sh_name >= sizeof(dd) &&
             !memcmp(names + sh.sh_name, dd, sizeof(dd)))
      err = add_debugdata(im, &sh, b);
    else
      err = 0;
    if (err)
      return err;
  }
  return 0;
}

static int cmp_name(const struct raw *a, const struct raw *b) {
  int c = memcmp(a->name, b->name, a->len < b->len ? a->len : b->len);
  return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* Address, then name (to find duplicates), then preference. */
static int cmp_start_name(const void *pa, const void *pb) {
  const struct raw *a = pa, *b = pb;
  int c;

  if (a->start != b->start)
    return a->start < b->start ? -1 : 1;
  if ((c = cmp_name(a, b)))
    return c;
  return (a->rank > b->rank) - (a->rank < b->rank);
}

/* Preference among aliases (one address): rank, shorter name, name. */
static int cmp_pref(const void *pa, const void *pb) {
  const struct raw *a = pa, *b = pb;

  if (a->rank != b->rank)
    return a->rank < b->rank ? -1 : 1;
  if (a->len != b->len)
    return a->len < b->len ? -1 : 1;
  return cmp_name(a, b);
}

/* Sorts, drops duplicates (a global is in both .dynsym and .symtab), gives
 * zero-size symbols the room up to the next address (or their section's
 * end), and orders each address's aliases by preference. */
static void arrange(struct builder *b) {
  size_t n = 0, g, next;

  if (b->n == 0)
    return;
  qsort(b->v, b->n, sizeof(*b->v), cmp_start_name);
  for (size_t i = 0; i < b->n; i++)
    if (n == 0 || b->v[i].start != b->v[n - 1].start ||
        cmp_name(&b->v[i], &b->v[n - 1]))
      b->v[n++] = b->v[i];
  b->n = n;
  /* Groups of one address, from the last: next is the following group. */
  next = b->n;
  for (size_t end = b->n; end > 0; end = g) {
    g = end - 1;
    while (g > 0 && b->v[g - 1].start == b->v[g].start)
      g--;
    for (size_t i = g; i < end; i++) {
      struct raw *r = &b->v[i];
      uint64_t room;
      if (r->size)
        continue;
      room = next < b->n ? b->v[next].start - r->start : 0;
      if (r->limit && (!room || r->limit - r->start < room))
        room = r->limit - r->start;
      r->size = room ? room : 1; /* nothing known: its first byte only */
    }
    if (end - g > 1)
      qsort(b->v + g, end - g, sizeof(*b->v), cmp_pref);
    next = g;
  }
}

struct pool {
  char *p;
  size_t len, cap;
  size_t mark; /* where the name being demangled starts */
  bool overflow;
};

static int pool_append(struct pool *pl, const char *s, size_t n) {
  if (pst__array_reserve((void **)&pl->p, &pl->cap, pl->len + n + 1, 1))
    return -ENOMEM;
  memcpy(pl->p + pl->len, s, n);
  pl->len += n;
  return 0;
}

/* The demangler's output callback: appends up to MAX_DEMANGLED bytes of
 * the current name, else marks it as overflowing. */
static void pool_put(const char *s, size_t n, void *opaque) {
  struct pool *pl = opaque;

  if (pl->overflow || n > MAX_DEMANGLED ||
      pl->len - pl->mark + n > MAX_DEMANGLED || pool_append(pl, s, n))
    pl->overflow = true;
}

/* Appends r's name, demangled when it is a C++ one, with its NUL. Returns
 * its offset, or -ENOMEM / -EOVERFLOW (pool past 4 GiB). */
static int64_t pool_add(struct pool *pl, const struct raw *r) {
  pl->mark = pl->len;
  pl->overflow = false;
  if (pl->mark > UINT32_MAX)
    return -EOVERFLOW;
  if (r->len > 2 && r->len <= MAX_MANGLED && r->name[0] == '_' &&
      r->name[1] == 'Z') {
    if (!cplus_demangle_v3_callback(r->name, DMGL_PARAMS | DMGL_ANSI, pool_put,
                                    pl) ||
        pl->overflow)
      pl->len = pl->mark; /* keep the mangled name */
  }
  if (pl->len == pl->mark && pool_append(pl, r->name, r->len))
    return -ENOMEM;
  if (pool_append(pl, "", 1))
    return -ENOMEM;
  return (int64_t)pl->mark;
}

#ifndef NDEBUG
static void check_invariants(const struct pst__symtab *t) {
  for (size_t i = 0; i < t->n; i++) {
    if (t->v[i].size == 0 || t->v[i].name >= t->names_len ||
        (i > 0 && t->v[i - 1].start > t->v[i].start))
      abort();
  }
  if (t->names_len && t->names[t->names_len - 1] != '\0')
    abort();
}
#else
static void check_invariants(const struct pst__symtab *t) { (void)t; }
#endif

/* Sets the covered bits: the running maximum of the ends of all earlier
 * address groups, compared with each group's start. */
static void mark_covered(struct pst__symtab *t) {
  uint64_t max_end = 0, group_end = 0;

  for (size_t i = 0; i < t->n; i++) {
    uint64_t end = t->v[i].start + t->v[i].size;
    if (i > 0 && t->v[i].start != t->v[i - 1].start) {
      if (group_end > max_end)
        max_end = group_end;
      group_end = 0;
    }
    t->v[i].covered = max_end > t->v[i].start;
    if (end < t->v[i].start)
      end = UINT64_MAX; /* wrapped: a corrupt size near the top */
    if (end > group_end)
      group_end = end;
  }
}

int pst__symtab_build(const void *image, size_t len, struct pst__symtab **out) {
  return pst__symtab_build_debug(image, len, NULL, 0, out);
}

int pst__symtab_build_debug(const void *image, size_t len, const void *debug,
                            size_t debug_len, struct pst__symtab **out) {
  struct builder b = {0};
  struct pool pl = {0};
  struct pst__symtab *t = NULL;
  struct image im, dim;
  int err;

  err = open_image(image, len, &im);
  if (err)
    goto out;
  b.max = len / sizeof(Elf64_Sym);
  err = add_image(&im, &b, 0);
  if (err)
    goto out;
  /* The debug file's symbols have the image's link-time addresses
   * (objcopy --only-keep-debug keeps the section headers, with its code
   * sections as SHT_NOBITS), so they go into the same table; duplicates
   * of the image's own symbols are dropped by arrange(). */
  if (debug && open_image(debug, debug_len, &dim) == 0) {
    b.max += debug_len / sizeof(Elf64_Sym);
    err = add_image(&dim, &b, 0);
    if (err)
      goto out;
  } else if (debug) {
    pst__debug("symtab: separate debug file is not ELF64: left out");
  }
  arrange(&b);
  t = calloc(1, sizeof(*t));
  if (!t || (b.n && !(t->v = malloc(b.n * sizeof(*t->v))))) {
    err = -ENOMEM;
    goto out;
  }
  for (size_t i = 0; i < b.n; i++) {
    int64_t off = pool_add(&pl, &b.v[i]);
    if (off < 0) {
      err = (int)off;
      goto out;
    }
    t->v[i].start = b.v[i].start;
    t->v[i].size = b.v[i].size > MAX_SIZE ? MAX_SIZE : (uint32_t)b.v[i].size;
    t->v[i].name = (uint32_t)off;
  }
  t->n = b.n;
  mark_covered(t);
  /* Give back the growth slack of the pool. */
  if (pl.len && pl.len < pl.cap) {
    char *p = realloc(pl.p, pl.len);
    if (p)
      pl.p = p;
  }
  t->names = pl.p;
  t->names_len = pl.len;
  pl.p = NULL;
  check_invariants(t);
  *out = t;
  t = NULL;
out:
  pst__symtab_free(t);
  free(pl.p);
  free(b.v);
  free(b.inner);
  return err;
}

void pst__symtab_free(struct pst__symtab *t) {
  if (!t)
    return;
  free(t->v);
  free(t->names);
  free(t);
}

/* Index of the first entry whose start is above vaddr. */
static size_t upper_bound(const struct pst__symtab *t, uint64_t vaddr) {
  size_t lo = 0, hi = t->n;

  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (t->v[mid].start <= vaddr)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

const char *pst__symtab_lookup(const struct pst__symtab *t, uint64_t vaddr,
                               uint64_t *offset) {
  size_t end = upper_bound(t, vaddr), g;

  /* The nearest address group [g, end) first, its aliases in preference
   * order; then, only if an earlier symbol reaches past it, a few groups
   * before it (a symbol that encloses later ones). */
  for (int groups = 0; end > 0 && groups <= MAX_BACKSCAN; groups++) {
    for (g = end - 1; g > 0 && t->v[g - 1].start == t->v[g].start; g--)
      ;
    for (size_t i = g; i < end; i++) {
      if (vaddr - t->v[i].start < t->v[i].size) {
        if (offset)
          *offset = vaddr - t->v[i].start;
        return t->names + t->v[i].name;
      }
    }
    if (!t->v[g].covered)
      break;
    end = g;
  }
  return NULL;
}

/* Whether s is name or name plus a GCC clone suffix. */
static bool clone_of(const char *s, const char *name, size_t n) {
  if (strncmp(s, name, n))
    return false;
  return s[n] == '\0' || s[n] == '.' || !strncmp(s + n, " [clone ", 8);
}

int pst__symtab_ranges(const struct pst__symtab *t, const char *name,
                       uint64_t *starts, uint64_t *ends, int max) {
  size_t n = strlen(name);
  int found = 0;

  for (size_t i = 0; i < t->n; i++) {
    if (!clone_of(t->names + t->v[i].name, name, n))
      continue;
    if (found < max) {
      starts[found] = t->v[i].start;
      ends[found] = t->v[i].start + t->v[i].size;
    }
    if (found < INT32_MAX)
      found++;
  }
  return found;
}

size_t pst__symtab_count(const struct pst__symtab *t) { return t->n; }

size_t pst__symtab_memory(const struct pst__symtab *t) {
  return sizeof(*t) + t->n * sizeof(*t->v) + t->names_len;
}
