/* test-symtab.c: native symbol tables (src/native/symtab.c) on real files:
 * this machine's libc, every installed libpython and the Debian python3.11,
 * a C++ program and a MiniDebugInfo program built here, and corrupt
 * images (truncated, bytes flipped) that must never make it read out of
 * bounds. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf/elf.h"
#include "helpers.h"
#include "native/symtab.h"
#include "pystitch.h"
#include "task.h"

/* The whole file at path, read into a fresh heap buffer. */
static void *slurp(const char *path, size_t *len) {
  struct stat st;
  void *buf = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);

  if (fd < 0)
    return NULL;
  if (fstat(fd, &st) == 0 && (buf = malloc((size_t)st.st_size + 1))) {
    size_t got = 0;
    while (got < (size_t)st.st_size) {
      ssize_t r = read(fd, (char *)buf + got, (size_t)st.st_size - got);
      if (r <= 0)
        break;
      got += (size_t)r;
    }
    *len = got;
  }
  close(fd);
  return buf;
}

static struct pst__symtab *build_file(const char *path) {
  struct pst__symtab *t = NULL;
  size_t len = 0;
  void *img = slurp(path, &len);

  ASSERT(img != NULL);
  ASSERT_EQ(pst__symtab_build(img, len, &t), 0);
  free(img); /* the table keeps nothing of the image */
  return t;
}

static int elf_symbol(const char *path, const char *name, uint64_t *value,
                      uint64_t *size) {
  struct pst__elf *e;
  int fd = open(path, O_RDONLY | O_CLOEXEC), err;

  if (fd < 0 || pst__elf_open(fd, &e))
    return -1;
  err = pst__elf_symbol(e, name, value, size);
  pst__elf_close(e);
  return err;
}

static int is_one_of(const char *s, const char *a, const char *b) {
  return s && (!strcmp(s, a) || !strcmp(s, b));
}

TEST_IMPL(symtab_libc) {
  static const char libc[] = "/lib/x86_64-linux-gnu/libc.so.6";
  struct pst__symtab *t;
  uint64_t a, sz, off = 99, starts[4], ends[4];
  const char *name;
  char line[512], cmd[600];
  FILE *p;
  int checked = 0;

  if (access(libc, R_OK))
    SKIP("no %s", libc);
  t = build_file(libc);
  ASSERT_GT(pst__symtab_count(t), 1000);
  ASSERT_EQ(elf_symbol(libc, "__nanosleep", &a, &sz), 0);
  ASSERT_GT(sz, 5);
  name = pst__symtab_lookup(t, a, &off);
  ASSERT(is_one_of(name, "nanosleep", "__nanosleep"));
  ASSERT_EQ(off, 0);
  ASSERT_STR_EQ(pst__symtab_lookup(t, a + 5, &off), name);
  ASSERT_EQ(off, 5);
  ASSERT_EQ(pst__symtab_ranges(t, "nanosleep", starts, ends, 4), 1);
  ASSERT_EQ(starts[0], a);
  ASSERT_EQ(ends[0], a + sz);
  /* An IFUNC (the resolver's address). */
  ASSERT_EQ(elf_symbol(libc, "strcpy", &a, NULL), 0);
  name = pst__symtab_lookup(t, a, &off);
  ASSERT(name != NULL && strstr(name, "strcpy"));
  ASSERT_EQ(off, 0);
  /* Every defined function nm lists is found at offset 0. */
  snprintf(cmd, sizeof(cmd),
           "nm -D --defined-only --format=posix %s 2>/dev/null", libc);
  p = popen(cmd, "r");
  ASSERT(p != NULL);
  while (fgets(line, sizeof(line), p)) {
    char sym[400], type;
    unsigned long long v;
    if (sscanf(line, "%399s %c %llx", sym, &type, &v) != 3 ||
        !strchr("TtWi", type) || v == 0)
      continue;
    name = pst__symtab_lookup(t, v, &off);
    if (!name || off != 0)
      TEST_FAIL("%s at 0x%llx: %s +%" PRIu64, sym, v, name ? name : "NULL",
                off);
    checked++;
  }
  pclose(p);
  ASSERT_GT(checked, 1000);
  printf("# libc: %zu symbols, %zu bytes, %d nm functions checked\n",
         pst__symtab_count(t), pst__symtab_memory(t), checked);
  pst__symtab_free(t);
  return 0;
}

/* _PyEval_EvalFrameDefault and its .cold part (GCC's hot/cold split; in
 * the pyenv 3.11 and 3.12 builds of this machine) in one binary. */
static void check_eval(const char *path) {
  static const char eval[] = "_PyEval_EvalFrameDefault";
  struct pst__symtab *t;
  uint64_t a, sz, cold, cold_sz, off, starts[8], ends[8];
  int has_cold, n;

  if (elf_symbol(path, eval, &a, &sz)) {
    printf("# %s: no %s in the file, skipped\n", path, eval);
    return;
  }
  has_cold =
      elf_symbol(path, "_PyEval_EvalFrameDefault.cold", &cold, &cold_sz) == 0;
  t = build_file(path);
  ASSERT_STR_EQ(pst__symtab_lookup(t, a, &off), eval);
  ASSERT_EQ(off, 0);
  ASSERT_STR_EQ(pst__symtab_lookup(t, a + sz - 1, &off), eval);
  ASSERT_EQ(off, sz - 1);
  n = pst__symtab_ranges(t, eval, starts, ends, 8);
  ASSERT_EQ(n, 1 + has_cold);
  for (int i = 0; i < n; i++) {
    if (starts[i] == a) {
      ASSERT_EQ(ends[i], a + sz);
    } else {
      ASSERT(has_cold);
      ASSERT_EQ(starts[i], cold);
      ASSERT_EQ(ends[i], cold + (cold_sz ? cold_sz : ends[i] - cold));
    }
  }
  if (has_cold) {
    ASSERT_STR_EQ(pst__symtab_lookup(t, cold, &off),
                  "_PyEval_EvalFrameDefault.cold");
    ASSERT_EQ(off, 0);
  }
  printf("# %s: %s%s, %zu symbols\n", path, eval, has_cold ? " + .cold" : "",
         pst__symtab_count(t));
  pst__symtab_free(t);
}

TEST_IMPL(symtab_python) {
  glob_t g;
  int files = 0;

  if (access("/usr/bin/python3.11", R_OK) == 0) {
    check_eval("/usr/bin/python3.11");
    files++;
  }
  if (glob("/root/.pyenv/versions/*/lib/libpython3.*.so", 0, NULL, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; i++, files++)
      check_eval(g.gl_pathv[i]);
    globfree(&g);
  }
  if (!files)
    SKIP("no /usr/bin/python3.11 and no pyenv libpython3.*.so");
  return 0;
}

/* A scratch directory, removed by cleanup(). */
static char scratch[64];

static void make_scratch(void) {
  ASSERT_EQ(test_scratch(scratch, sizeof(scratch), "symtab"), 0);
}

static void cleanup(void) { test_rmrf(scratch); }

TEST_IMPL(symtab_cxx) {
  static const struct {
    const char *mangled, *demangled;
  } names[] = {
      {"_ZN2ns3FooIiE3barEi", "ns::Foo<int>::bar(int)"},
      {"_ZN2ns3FooIlE3barEl", "ns::Foo<long>::bar(long)"},
      {"_ZN2ns4overEi", "ns::over(int)"},
      {"_ZN2ns4overEd", "ns::over(double)"},
  };
  struct pst__symtab *t;
  char cmd[1024], bin[128];
  uint64_t a, off, s, e;

  if (system("command -v g++ >/dev/null 2>&1"))
    SKIP("no g++");
  make_scratch();
  snprintf(bin, sizeof(bin), "%s/cxx", scratch);
  snprintf(cmd, sizeof(cmd), "g++ -O1 -o %s %s/tests/helpers/symtab-cxx.cc",
           bin, test_srcdir());
  ASSERT_EQ(test_sh(cmd), 0);
  t = build_file(bin);
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    ASSERT_EQ(elf_symbol(bin, names[i].mangled, &a, NULL), 0);
    ASSERT_STR_EQ(pst__symtab_lookup(t, a, &off), names[i].demangled);
    ASSERT_EQ(off, 0);
    ASSERT_EQ(pst__symtab_ranges(t, names[i].demangled, &s, &e, 1), 1);
    ASSERT_EQ(s, a);
  }
  /* A prefix that is not followed by a clone suffix does not match. */
  ASSERT_EQ(pst__symtab_ranges(t, "ns::over", &s, &e, 1), 0);
  pst__symtab_free(t);
  cleanup();
  return 0;
}

/* Builds tests/helpers/symtab-mini.c into the scratch directory and makes
 * its MiniDebugInfo twin: mini (full symbols), mini-dd.stripped (no symbol
 * table) and mini-dd (stripped plus .gnu_debugdata), compressed with xz's
 * options xz_opt ("" for the defaults, as distributions do). 0, or -1 with
 * the reason printed. */
static int make_mini(const char *xz_opt) {
  char cmd[1024];

  if (system("for t in gcc nm objcopy strip xz comm; do "
             "command -v $t >/dev/null || exit 1; done"))
    return printf("# missing one of gcc nm objcopy strip xz comm\n"), -1;
  make_scratch();
  snprintf(cmd, sizeof(cmd),
           "gcc -O1 -o %s/mini %s/tests/helpers/symtab-mini.c && "
           "XZ_OPT='%s' sh %s/tests/helpers/make-minidebuginfo.sh "
           "%s/mini %s/mini-dd",
           scratch, test_srcdir(), xz_opt, test_srcdir(), scratch, scratch);
  return test_sh(cmd) ? -1 : 0;
}

static const char *at(const char *file) {
  static char path[160];
  snprintf(path, sizeof(path), "%s/%s", scratch, file);
  return path;
}

TEST_IMPL(symtab_minidebuginfo) {
  struct pst__symtab *t;
  uint64_t local, zero, main_fn, off, size, dd;
  size_t stripped_count;

  if (make_mini(""))
    SKIP("could not build the MiniDebugInfo program");
  ASSERT_EQ(elf_symbol(at("mini"), "symtab_local_fn", &local, NULL), 0);
  ASSERT_EQ(elf_symbol(at("mini"), "symtab_zero_size", &zero, &size), 0);
  ASSERT_EQ(size, 0);
  ASSERT_EQ(elf_symbol(at("mini"), "main", &main_fn, NULL), 0);
  /* The stripped file has no symbol for them. */
  ASSERT(elf_symbol(at("mini-dd"), "symtab_local_fn", &off, NULL) != 0);
  t = build_file(at("mini-dd.stripped"));
  ASSERT(pst__symtab_lookup(t, local, &off) == NULL);
  stripped_count = pst__symtab_count(t);
  pst__symtab_free(t);
  /* With .gnu_debugdata they are back. */
  {
    struct pst__elf *e;
    int fd = open(at("mini-dd"), O_RDONLY | O_CLOEXEC);
    ASSERT(fd >= 0);
    ASSERT_EQ(pst__elf_open(fd, &e), 0);
    ASSERT_EQ(pst__elf_section(e, ".gnu_debugdata", &dd, &size), 0);
    ASSERT_EQ(pst__elf_section(e, ".symtab", &dd, &size), PST_ENOSYM);
    pst__elf_close(e);
  }
  t = build_file(at("mini-dd"));
  ASSERT_STR_EQ(pst__symtab_lookup(t, local, &off), "symtab_local_fn");
  ASSERT_EQ(off, 0);
  ASSERT_STR_EQ(pst__symtab_lookup(t, local + 3, &off), "symtab_local_fn");
  ASSERT_EQ(off, 3);
  ASSERT_STR_EQ(pst__symtab_lookup(t, main_fn, &off), "main");
  /* A size-0 symbol covers the bytes up to the next one. */
  ASSERT_STR_EQ(pst__symtab_lookup(t, zero + 4, &off), "symtab_zero_size");
  ASSERT_EQ(off, 4);
  pst__symtab_free(t);
  /* A .gnu_debugdata that inflates past the cap (65 MiB of zeros) is left
   * out: the stripped file's table, no error. */
  {
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "head -c 68157440 /dev/zero | xz -0 > %s/bomb.xz && "
             "objcopy --add-section .gnu_debugdata=%s/bomb.xz "
             "%s/mini-dd.stripped %s/bomb",
             scratch, scratch, scratch, scratch);
    ASSERT_EQ(test_sh(cmd), 0);
  }
  t = build_file(at("bomb"));
  ASSERT(pst__symtab_lookup(t, local, &off) == NULL);
  ASSERT_EQ(pst__symtab_count(t), stripped_count);
  pst__symtab_free(t);
  cleanup();
  return 0;
}

/* A copy of an image that ends right before an inaccessible page (and
 * starts less than a page after another), so that any read past either
 * end faults instead of going unnoticed. */
struct guarded {
  uint8_t *map;
  size_t map_len;
  uint8_t *img;
};

static void guard_init(struct guarded *g, size_t cap) {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  size_t body = (cap + pg - 1) / pg * pg;

  g->map_len = body + 2 * pg;
  g->map = mmap(NULL, g->map_len, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT(g->map != MAP_FAILED);
  ASSERT_EQ(mprotect(g->map, pg, PROT_NONE), 0);
  ASSERT_EQ(mprotect(g->map + pg + body, pg, PROT_NONE), 0);
  g->img = g->map + pg + body; /* the end; callers step back by len */
}

/* Places len bytes of src to end at the guard page; returns where. */
static const uint8_t *guard_put(struct guarded *g, const uint8_t *src,
                                size_t len) {
  uint8_t *p = g->img - len;
  memmove(p, src, len);
  return p;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* Builds from img[0, len) and checks the table is usable. */
static void build_any(const uint8_t *img, size_t len) {
  struct pst__symtab *t = NULL;
  uint64_t s, e, off;
  int err = pst__symtab_build(img, len, &t);

  if (err) {
    ASSERT(err == -ENOEXEC || err == -ENOMEM);
    return;
  }
  (void)pst__symtab_lookup(t, 0x1139, &off);
  (void)pst__symtab_ranges(t, "main", &s, &e, 1);
  pst__symtab_free(t);
}

/* count mutations of buf (len bytes), each flipping 1-4 random bytes of
 * [lo, hi) (or the ELF/section headers half the time), built from a
 * guarded copy and then undone. */
static void flip_runs(struct guarded *g, uint8_t *buf, size_t len, int count,
                      size_t lo, size_t hi) {
  uint64_t shoff;

  memcpy(&shoff, buf + 0x28, sizeof(shoff));
  for (int i = 0; i < count; i++) {
    size_t pos[4];
    uint8_t old[4];
    int n = 1 + (int)(next_rand() % 4);
    for (int k = 0; k < n; k++) {
      uint64_t r = next_rand();
      if (r & 1)
        pos[k] = lo + (r >> 8) % (hi - lo);
      else if (r & 2)
        pos[k] = (r >> 8) % 64;
      else
        pos[k] = shoff < len ? shoff + (r >> 8) % (len - shoff) : 0;
      old[k] = buf[pos[k]];
      buf[pos[k]] ^= (uint8_t)(1u << ((r >> 4) & 7)) | (uint8_t)(r >> 56);
    }
    build_any(guard_put(g, buf, len), len);
    for (int k = n - 1; k >= 0; k--)
      buf[pos[k]] = old[k];
  }
}

TEST_IMPL(symtab_corrupt) {
  static const char libc[] = "/lib/x86_64-linux-gnu/libc.so.6";
  struct guarded g;
  size_t len, dd_off;
  uint8_t *buf;
  uint64_t dd, dd_size;
  int builds = 0;

  /* A 64 KiB dictionary instead of xz's default 8 MiB: each decoder then
   * allocates 64 KiB, not 8 MiB, which keeps thousands of builds quick
   * (under ASan too). */
  if (make_mini("--lzma2=preset=6,dict=64KiB"))
    SKIP("could not build the MiniDebugInfo program");
  buf = slurp(at("mini-dd"), &len);
  ASSERT(buf != NULL);
  /* Intact, it has the local function only MiniDebugInfo holds: the flips
   * below do reach the decompressed ELF. */
  {
    struct pst__symtab *t;
    uint64_t s, e;
    ASSERT_EQ(pst__symtab_build(buf, len, &t), 0);
    ASSERT_EQ(pst__symtab_ranges(t, "symtab_local_fn", &s, &e, 1), 1);
    pst__symtab_free(t);
  }
  guard_init(&g, len);
  /* Every truncation. */
  for (size_t n = 0; n <= len; n++, builds++)
    build_any(guard_put(&g, buf, n), n);
  /* Byte flips, some of them inside the compressed MiniDebugInfo. */
  {
    struct pst__elf *e;
    const void *p;
    int fd = open(at("mini-dd"), O_RDONLY | O_CLOEXEC);
    ASSERT_EQ(pst__elf_open(fd, &e), 0);
    ASSERT_EQ(pst__elf_section(e, ".gnu_debugdata", &dd, &dd_size), 0);
    p = pst__elf_section_bytes(e, ".gnu_debugdata", &dd_size);
    ASSERT(p != NULL);
    pst__elf_close(e);
    /* Its file offset: find the xz magic. */
    dd_off = 0;
    for (size_t i = 0; i + 6 <= len; i++)
      if (!memcmp(buf + i, "\3757zXZ\0", 6)) {
        dd_off = i;
        break;
      }
    ASSERT_GT(dd_off, 0);
  }
  flip_runs(&g, buf, len, 2000, 0, len);
  flip_runs(&g, buf, len, 800, dd_off, dd_off + dd_size);
  builds += 2800;
  munmap(g.map, g.map_len);
  free(buf);
  cleanup();
  /* A big real file: flips in its headers, symbol and string tables. */
  if ((buf = slurp(libc, &len))) {
    uint64_t a, sz, s2, sz2;
    struct pst__elf *e;
    int fd = open(libc, O_RDONLY | O_CLOEXEC);
    ASSERT_EQ(pst__elf_open(fd, &e), 0);
    ASSERT_EQ(pst__elf_section(e, ".dynsym", &a, &sz), 0);
    ASSERT_EQ(pst__elf_section(e, ".dynstr", &s2, &sz2), 0);
    pst__elf_close(e);
    guard_init(&g, len);
    /* .dynsym and .dynstr are adjacent at the file's start (their file
     * offsets equal their addresses in libc). */
    ASSERT(a < len && s2 + sz2 <= len);
    flip_runs(&g, buf, len, 600, a, s2 + sz2);
    builds += 600;
    for (size_t n = len - 4096; n <= len; n += 7, builds++)
      build_any(guard_put(&g, buf, n), n);
    munmap(g.map, g.map_len);
    free(buf);
  }
  printf("# %d corrupt images built without a fault\n", builds);
  return 0;
}
