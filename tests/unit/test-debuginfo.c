/* test-debuginfo.c: separate debug files (src/elf/debuginfo.c) and their
 * symbols merged into a module's table (symtab.c, module.c): a library built
 * and split here (build-id directory, .gnu_debuglink in the module's
 * .debug/ and under a debug directory, a target in its own root, mismatched
 * files refused), and this machine's libc6-dbg and python3.11-dbg files
 * where installed. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elf/debuginfo.h"
#include "elf/elf.h"
#include "helpers.h"
#include "native/module.h"
#include "native/symtab.h"
#include "proc/maps.h"
#include "pystitch.h"
#include "task.h"

/* A scratch directory, removed by cleanup(). */
static char dir[64];

static void cleanup(void) { test_rmrf(dir); }

static const char *at(const char *file) {
  static char path[16][256];
  static int next;
  char *p = path[next++ % 16]; /* a few may be in use at once */
  snprintf(p, sizeof(path[0]), "%s/%s", dir, file);
  return p;
}

/* Builds and splits tests/helpers/debuginfo-lib.c into dir (see
 * make-debuginfo.sh). 0, or -1 with the reason printed. */
static int make_lib(void) {
  char cmd[1024];

  if (system("for t in gcc objcopy strip readelf; do "
             "command -v $t >/dev/null || exit 1; done"))
    return printf("# missing one of gcc objcopy strip readelf\n"), -1;
  ASSERT_EQ(test_scratch(dir, sizeof(dir), "debuginfo"), 0);
  snprintf(cmd, sizeof(cmd),
           "sh %s/tests/helpers/make-debuginfo.sh "
           "%s/tests/helpers/debuginfo-lib.c %s",
           test_srcdir(), test_srcdir(), dir);
  return test_sh(cmd) ? -1 : 0;
}

static struct pst__elf *open_elf(const char *path) {
  struct pst__elf *e = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);

  ASSERT(fd >= 0);
  ASSERT_EQ(pst__elf_open(fd, &e), 0);
  return e;
}

static uint64_t symbol(const char *path, const char *name) {
  struct pst__elf *e = open_elf(path);
  uint64_t v = 0;

  ASSERT_EQ(pst__elf_symbol(e, name, &v, NULL), 0);
  pst__elf_close(e);
  return v;
}

/* The table of image e merged with its debug file d (NULL: alone). */
static struct pst__symtab *table(const struct pst__elf *e,
                                 const struct pst__elf *d) {
  struct pst__symtab *t = NULL;
  const void *img, *dimg = NULL;
  size_t len, dlen = 0;

  img = pst__elf_image(e, &len);
  if (d)
    dimg = pst__elf_image(d, &dlen);
  ASSERT_EQ(pst__symtab_build_debug(img, len, dimg, dlen, &t), 0);
  return t;
}

static int name_is(const char *got, const char *want) {
  return got && !strcmp(got, want);
}

/* Finds the debug file of the image at path with w and checks that the
 * merged table names the static functions at their link-time addresses;
 * found must end with want_suffix. */
static void check_found(const char *path, struct pst__debuginfo_where *w,
                        enum pst__debuginfo_how want_how,
                        const char *want_suffix) {
  uint64_t fn = symbol(at("full.so"), "pst_dbg_static_fn"),
           th = symbol(at("full.so"), "pst_dbg_thread_main"), off = 9;
  struct pst__elf *e = open_elf(path), *d = NULL;
  enum pst__debuginfo_how how = 0;
  struct pst__symtab *t;
  char found[4096] = "";
  size_t fl, sl = strlen(want_suffix);

  w->path = path;
  ASSERT_EQ(pst__debuginfo_open(e, w, &d, found, sizeof(found), &how), 0);
  printf("# %s: %s\n", path, found);
  ASSERT_EQ(how, want_how);
  fl = strlen(found);
  ASSERT(fl >= sl && !strcmp(found + fl - sl, want_suffix));
  t = table(e, d);
  ASSERT_STR_EQ(pst__symtab_lookup(t, fn, &off), "pst_dbg_static_fn");
  ASSERT_EQ(off, 0);
  ASSERT_STR_EQ(pst__symtab_lookup(t, th + 2, &off), "pst_dbg_thread_main");
  ASSERT_EQ(off, 2);
  /* The image's own dynamic symbols are still there, once. */
  ASSERT_STR_EQ(
      pst__symtab_lookup(t, symbol(at("full.so"), "pst_dbg_start"), &off),
      "pst_dbg_start");
  pst__symtab_free(t);
  pst__elf_close(d);
  pst__elf_close(e);
}

static int not_found(const char *path, struct pst__debuginfo_where *w) {
  struct pst__elf *e = open_elf(path), *d = NULL;
  int err;

  w->path = path;
  err = pst__debuginfo_open(e, w, &d, NULL, 0, NULL);
  pst__elf_close(d);
  pst__elf_close(e);
  return err == -ENOENT;
}

TEST_IMPL(debuginfo_split_library) {
  struct pst__debuginfo_where w = {0};
  struct pst__elf *e;
  const uint8_t *id, *id2;
  const char *link;
  size_t id_len, id2_len, len;
  uint32_t crc;
  uint64_t a, s;
  char hex[129] = "", want[129] = "", cmd[1024];
  struct pst__symtab *t;
  FILE *f;

  if (make_lib())
    SKIP("could not build and split the library");
  /* Build-ids: the stripped image keeps the note, the debug file too. */
  e = open_elf(at("bid/libpstdbg.so"));
  ASSERT_EQ(pst__debuginfo_build_id(e, &id, &id_len), 0);
  ASSERT_EQ(id_len, 20);
  for (size_t i = 0; i < id_len; i++)
    snprintf(hex + 2 * i, 3, "%02x", id[i]);
  f = fopen(at("build-id"), "r");
  ASSERT(f && fscanf(f, "%128s", want) == 1);
  fclose(f);
  ASSERT_STR_EQ(hex, want);
  ASSERT_EQ(pst__elf_section(e, ".symtab", &a, &s), PST_ENOSYM);
  ASSERT_EQ(pst__debuginfo_debuglink(e, &link, &crc), PST_ENOSYM);
  /* Stripped, the static function has no name. */
  t = table(e, NULL);
  ASSERT(!name_is(
      pst__symtab_lookup(t, symbol(at("full.so"), "pst_dbg_static_fn"), NULL),
      "pst_dbg_static_fn"));
  pst__symtab_free(t);
  pst__elf_close(e);
  {
    struct pst__elf *d = open_elf(at("link/.debug/libpstdbg.so.debug"));
    const void *img = pst__elf_image(d, &len);
    ASSERT_EQ(pst__debuginfo_build_id(d, &id2, &id2_len), 0);
    ASSERT_EQ(id2_len, 20);
    e = open_elf(at("link/libpstdbg.so"));
    ASSERT_EQ(pst__debuginfo_debuglink(e, &link, &crc), 0);
    ASSERT_STR_EQ(link, "libpstdbg.so.debug");
    ASSERT_EQ(crc, pst__debuginfo_crc32(img, len));
    pst__elf_close(e);
    pst__elf_close(d);
  }

  /* 1. By build-id, in a debug directory given as a parameter... */
  w.dirs = at("debugroot/usr/lib/debug");
  check_found(at("bid/libpstdbg.so"), &w, PST_DEBUGINFO_BUILD_ID, ".debug");
  /* ...and through PST_DEBUG_DIRS (one of several, with a trailing /). */
  w.dirs = NULL;
  snprintf(cmd, sizeof(cmd), "/nonexistent:%s/", at("debugroot/usr/lib/debug"));
  setenv("PST_DEBUG_DIRS", cmd, 1);
  check_found(at("bid/libpstdbg.so"), &w, PST_DEBUGINFO_BUILD_ID, ".debug");
  /* No debug directory: nothing for an image without a link. */
  setenv("PST_DEBUG_DIRS", "", 1);
  ASSERT(not_found(at("bid/libpstdbg.so"), &w));

  /* 2. By .gnu_debuglink: the module's .debug/ directory... */
  check_found(at("link/libpstdbg.so"), &w, PST_DEBUGINFO_DEBUGLINK,
              "/link/.debug/libpstdbg.so.debug");
  /* ...the module's own directory... */
  snprintf(cmd, sizeof(cmd),
           "mkdir -p %s/own && cp %s/link/libpstdbg.so "
           "%s/link/.debug/libpstdbg.so.debug %s/own/",
           dir, dir, dir, dir);
  ASSERT_EQ(test_sh(cmd), 0);
  check_found(at("own/libpstdbg.so"), &w, PST_DEBUGINFO_DEBUGLINK,
              "/own/libpstdbg.so.debug");
  /* ...and DEBUGDIR/MODULE-DIR/NAME. */
  snprintf(cmd, sizeof(cmd),
           "mkdir -p %s/gl %s/dd%s/gl && cp %s/link/libpstdbg.so %s/gl/ && "
           "cp %s/link/.debug/libpstdbg.so.debug %s/dd%s/gl/",
           dir, dir, dir, dir, dir, dir, dir, dir);
  ASSERT_EQ(test_sh(cmd), 0);
  w.dirs = at("dd");
  check_found(at("gl/libpstdbg.so"), &w, PST_DEBUGINFO_DEBUGLINK,
              "/gl/libpstdbg.so.debug");

  /* Refused: another build's debug file under this build-id... */
  snprintf(
      cmd, sizeof(cmd),
      "cp %s/other.debug %s/debugroot/usr/lib/debug/.build-id/%.2s/%s.debug",
      dir, dir, want, want + 2);
  ASSERT_EQ(test_sh(cmd), 0);
  w.dirs = at("debugroot/usr/lib/debug");
  ASSERT(not_found(at("bid/libpstdbg.so"), &w));
  /* ...or under the link's name (build-id and CRC differ)... */
  w.dirs = "";
  snprintf(cmd, sizeof(cmd), "cp %s/other.debug %s/own/libpstdbg.so.debug", dir,
           dir);
  ASSERT_EQ(test_sh(cmd), 0);
  ASSERT(not_found(at("own/libpstdbg.so"), &w));
  /* ...or the right build-id with other bytes: the CRC differs. */
  snprintf(cmd, sizeof(cmd), "printf x >> %s/link/.debug/libpstdbg.so.debug",
           dir);
  ASSERT_EQ(test_sh(cmd), 0);
  ASSERT(not_found(at("link/libpstdbg.so"), &w));
  cleanup();
  return 0;
}

/* A process whose root is dir (a container's view without the rest):
 * forked, chroot()ed, paused. Returns its pid, or -1 when chroot is not
 * permitted. */
static pid_t chrooted_child(void) {
  int p[2];
  char c = 0;
  pid_t pid;

  ASSERT(pipe(p) == 0);
  pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    c = chroot(dir) == 0 && chdir("/") == 0 ? 'y' : 'n';
    if (write(p[1], &c, 1) != 1 || c != 'y')
      _exit(1);
    for (;;)
      pause();
  }
  close(p[1]);
  if (read(p[0], &c, 1) != 1 || c != 'y') {
    waitpid(pid, NULL, 0);
    pid = -1;
  }
  close(p[0]);
  return pid;
}

TEST_IMPL(debuginfo_target_root) {
  struct pst__debuginfo_where w = {0};
  struct pst__elf *e, *d = NULL;
  char found[4096], prefix[64];
  pid_t pid;

  if (make_lib())
    SKIP("could not build and split the library");
  pid = chrooted_child();
  if (pid < 0) {
    cleanup();
    SKIP("chroot not permitted");
  }
  snprintf(prefix, sizeof(prefix), "/proc/%d/root/", (int)pid);
  /* The target sees the library at /bid/libpstdbg.so and its debug
   * directory at /debugroot/usr/lib/debug, which we do not have. */
  w.pid = pid;
  w.dirs = "/debugroot/usr/lib/debug";
  w.path = "/bid/libpstdbg.so";
  e = open_elf(at("bid/libpstdbg.so"));
  ASSERT_EQ(pst__debuginfo_open(e, &w, &d, found, sizeof(found), NULL), 0);
  printf("# %s\n", found);
  ASSERT(!strncmp(found, prefix, strlen(prefix)));
  ASSERT(strstr(found, "/debugroot/usr/lib/debug/.build-id/"));
  pst__elf_close(d);
  pst__elf_close(e);
  /* Its .gnu_debuglink, in the module's .debug/ as the target sees it. */
  w.dirs = "";
  w.path = "/link/libpstdbg.so";
  e = open_elf(at("link/libpstdbg.so"));
  d = NULL;
  ASSERT_EQ(pst__debuginfo_open(e, &w, &d, found, sizeof(found), NULL), 0);
  printf("# %s\n", found);
  ASSERT(!strncmp(found, prefix, strlen(prefix)));
  ASSERT(strstr(found, "/link/.debug/libpstdbg.so.debug"));
  pst__elf_close(d);
  pst__elf_close(e);
  /* Without the target, neither is found in our root. */
  w.pid = 0;
  w.dirs = "/debugroot/usr/lib/debug";
  w.path = "/bid/libpstdbg.so";
  ASSERT(not_found(at("bid/libpstdbg.so"), &w));
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  cleanup();
  return 0;
}

/* Through module.c as the samplers use it: the stripped library mapped in
 * this process, its module's table built with the debug file found by
 * build-id through PST_DEBUG_DIRS. */
TEST_IMPL(debuginfo_module_symtab) {
  struct pst__modcache *c;
  struct pst__module *m;
  const struct pst__map *mp = NULL;
  const struct pst__symtab *t;
  struct pst__maps maps;
  uint64_t bias, off = 9, touch;
  void *h, *rt_touch;
  const char *path;

  if (make_lib())
    SKIP("could not build and split the library");
  setenv("PST_DEBUG_DIRS", at("debugroot/usr/lib/debug"), 1);
  path = at("bid/libpstdbg.so");
  h = dlopen(path, RTLD_NOW);
  ASSERT(h != NULL);
  rt_touch = dlsym(h, "pst_dbg_touch");
  ASSERT(rt_touch != NULL);
  ASSERT_EQ(pst__maps_load(getpid(), &maps), 0);
  for (size_t i = 0; i < maps.n && !mp; i++)
    if (!strcmp(maps.v[i].path, path))
      mp = &maps.v[i];
  ASSERT(mp != NULL);
  ASSERT_EQ(pst__modcache_new(&c), 0);
  ASSERT_EQ(pst__module_get(c, getpid(), mp, &m), 0);
  ASSERT_STR_EQ(pst__module_path(m), path);
  ASSERT(pst__module_debug_file(m) == NULL); /* not looked for yet */
  ASSERT_EQ(pst__module_bias(m, mp, &bias), 0);
  touch = symbol(at("full.so"), "pst_dbg_touch");
  ASSERT_EQ((uint64_t)(uintptr_t)rt_touch - bias, touch);
  t = pst__module_symtab(m);
  ASSERT(t != NULL);
  ASSERT(pst__module_debug_file(m) != NULL);
  ASSERT(strstr(pst__module_debug_file(m), "/.build-id/"));
  ASSERT_STR_EQ(pst__symtab_lookup(
                    t, symbol(at("full.so"), "pst_dbg_static_fn") + 1, &off),
                "pst_dbg_static_fn");
  ASSERT_EQ(off, 1);
  pst__module_put(m);
  pst__modcache_put(c);
  pst__maps_exit(&maps);
  dlclose(h);
  cleanup();
  return 0;
}

/* The debug file of a real stripped image, by build-id in /usr/lib/debug:
 * its table names static_fn (absent from .dynsym) at the address the debug
 * file gives. skip_why names the package when it is not installed. */
static int check_real(const char *image, const char *static_fn,
                      const char *package) {
  struct pst__debuginfo_where w = {.path = image, .dirs = "/usr/lib/debug"};
  struct pst__elf *e, *d = NULL;
  struct pst__symtab *t;
  const uint8_t *id;
  size_t id_len;
  uint64_t a, s, off = 9;
  char found[4096], hex[129] = "";
  int err;

  if (access(image, R_OK))
    SKIP("no %s", image);
  e = open_elf(image);
  ASSERT_EQ(pst__debuginfo_build_id(e, &id, &id_len), 0);
  for (size_t i = 0; i < id_len; i++)
    snprintf(hex + 2 * i, 3, "%02x", id[i]);
  ASSERT_EQ(pst__elf_section(e, ".symtab", &a, &s), PST_ENOSYM);
  err = pst__debuginfo_open(e, &w, &d, found, sizeof(found), NULL);
  if (err) {
    pst__elf_close(e);
    SKIP("no debug file for %s (build-id %s): %s not installed, or of "
         "another version",
         image, hex, package);
  }
  printf("# %s (build-id %s): %s\n", image, hex, found);
  ASSERT_EQ(pst__elf_symbol(d, static_fn, &a, NULL), 0);
  t = table(e, NULL);
  ASSERT(!name_is(pst__symtab_lookup(t, a, NULL), static_fn));
  pst__symtab_free(t);
  t = table(e, d);
  ASSERT_STR_EQ(pst__symtab_lookup(t, a, &off), static_fn);
  ASSERT_EQ(off, 0);
  printf("# %zu symbols with the debug file\n", pst__symtab_count(t));
  pst__symtab_free(t);
  pst__elf_close(d);
  pst__elf_close(e);
  return 0;
}

/* Debian's libc6-dbg: glibc's start_thread (static in nptl) is the outer
 * frame of every thread that pthread_create starts. */
TEST_IMPL(debuginfo_libc6_dbg) {
  return check_real("/lib/x86_64-linux-gnu/libc.so.6", "start_thread",
                    "libc6-dbg");
}

/* Debian's python3.11-dbg ships the debug file of /usr/bin/python3.11 (of
 * the same package version): pythread_wrapper is the start routine of every
 * thread that CPython starts. */
TEST_IMPL(debuginfo_python311_dbg) {
  return check_real("/usr/bin/python3.11", "pythread_wrapper",
                    "python3.11-dbg");
}
