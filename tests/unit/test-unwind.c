/* test-unwind.c: native unwinding of real threads: tests/helpers/unwind-target
 * (a 40-deep recursion that spins, a thread blocked in read) and the main
 * thread of real Python interpreters (shared libpython 3.12, static 3.11).
 * Each thread is stopped only while it is unwound and must be running (or
 * sleeping) again afterwards. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elf/elf.h"
#include "helpers.h"
#include "native/module.h"
#include "native/unwind.h"
#include "proc/mem.h"
#include "proc/ptrace.h"
#include "pythons.h"
#include "spawn.h"
#include "task.h"

#define MAXF 256

struct helper {
  pid_t pid;
  FILE *out;
  FILE *in; /* its stdin, when started with a library */
  char path[512];
  uint64_t recurse, spin_fn, block_fn; /* runtime addresses */
  pid_t spin, block;
};

/* Starts unwind-target; with lib, it will dlopen lib on request. */
static void helper_start_lib(struct helper *h, const char *lib) {
  char line[256];
  char *argv[4];

  memset(h, 0, sizeof(*h));
  snprintf(h->path, sizeof(h->path), "%s/tests/helpers/unwind-target",
           test_builddir());
  argv[0] = h->path;
  argv[1] = "40";
  argv[2] = (char *)lib;
  argv[3] = NULL;
  h->pid = test_spawn(argv, &h->out, lib ? &h->in : NULL);
  ASSERT_GT(h->pid, 0);
  while (fgets(line, sizeof(line), h->out) && strncmp(line, "ready", 5)) {
    unsigned long long v;
    int t;
    if (sscanf(line, "recurse %llx", &v) == 1)
      h->recurse = v;
    else if (sscanf(line, "spin_fn %llx", &v) == 1)
      h->spin_fn = v;
    else if (sscanf(line, "block_fn %llx", &v) == 1)
      h->block_fn = v;
    else if (sscanf(line, "spin %d", &t) == 1)
      h->spin = t;
    else if (sscanf(line, "block %d", &t) == 1)
      h->block = t;
  }
  ASSERT(h->recurse && h->spin_fn && h->block_fn && h->spin && h->block);
}

static void helper_start(struct helper *h) { helper_start_lib(h, NULL); }

static void helper_stop(struct helper *h) {
  kill(h->pid, SIGKILL);
  waitpid(h->pid, NULL, 0);
  fclose(h->out);
  if (h->in)
    fclose(h->in);
}

/* [lo, hi) of symbol name of ELF file path at runtime, given the runtime
 * address of that symbol (bias = runtime - st_value) or, when rt is 0, a
 * known bias. 0 or PST_ENOSYM. */
static int sym_range(const char *path, const char *name, uint64_t rt,
                     uint64_t bias, uint64_t *lo, uint64_t *hi) {
  struct pst__elf *e;
  uint64_t v, sz;
  int err, fd = open(path, O_RDONLY | O_CLOEXEC);

  ASSERT(fd >= 0);
  ASSERT_EQ(pst__elf_open(fd, &e), 0);
  err = pst__elf_symbol(e, name, &v, &sz);
  if (err == 0) {
    ASSERT_GT(sz, 0);
    if (rt)
      bias = rt - v;
    *lo = v + bias;
    *hi = v + bias + sz;
  }
  pst__elf_close(e);
  return err;
}

/* The kernel state letter of tid from /proc/PID/task/TID/stat. */
static char thread_state(pid_t pid, pid_t tid) {
  char path[96], buf[512], *p;
  FILE *f;
  size_t n;

  snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
  f = fopen(path, "re");
  if (!f)
    return '?';
  n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  p = strrchr(buf, ')');
  return p && p[1] == ' ' ? p[2] : '?';
}

/* Stops tid, unwinds it, resumes it; checks it is not left stopped. */
static int unwind_stopped(struct pst__unwinder *u, pid_t pid, pid_t tid,
                          uint64_t *ips, uint64_t *sps) {
  int n, err = pst__ptrace_stop(tid);
  char st;

  if (err == -EPERM)
    SKIP("no ptrace permission");
  ASSERT_EQ(err, 0);
  n = pst__unwind_thread(u, tid, ips, sps, MAXF);
  pst__ptrace_resume(tid);
  st = thread_state(pid, tid);
  if (st == 't' || st == 'T')
    TEST_FAIL("thread %d left in state %c", (int)tid, st);
  return n;
}

static int in(uint64_t ip, uint64_t lo, uint64_t hi) {
  return ip >= lo && ip < hi;
}

/* The lookup address of frame i: a return address (i > 0) points after
 * its call, which may be the last instruction of the function. */
static uint64_t lookup_ip(const uint64_t *ips, int i) {
  return i ? ips[i] - 1 : ips[i];
}

static int module_is(struct pst__unwinder *u, uint64_t ip, const char *part) {
  const char *path;
  return pst__unwinder_module(u, ip, &path, NULL, NULL, NULL) == 0 &&
         strstr(path, part) != NULL;
}

static void print_stack(struct pst__unwinder *u, const char *what,
                        const uint64_t *ips, const uint64_t *sps, int n) {
  printf("# %s: %d frames\n", what, n);
  for (int i = 0; i < n; i++) {
    const char *path = "?";
    uint64_t bias = 0;
    pst__unwinder_module(u, lookup_ip(ips, i), &path, &bias, NULL, NULL);
    if (i < 3 || i > n - 5)
      printf("#   %2d ip 0x%llx sp 0x%llx %s+0x%llx\n", i,
             (unsigned long long)ips[i], (unsigned long long)sps[i], path,
             (unsigned long long)(ips[i] - bias));
  }
}

TEST_IMPL(unwind_spinning_thread) {
  struct helper h;
  struct pst__mem mem;
  struct pst__unwinder *u;
  uint64_t ips[MAXF], sps[MAXF], first[MAXF];
  uint64_t rlo, rhi, slo, shi;
  int n, nfirst = 0, in_recurse, i;
  struct pst__unwind_stats st;

  helper_start(&h);
  ASSERT_EQ(sym_range(h.path, "unwind_recurse", h.recurse, 0, &rlo, &rhi), 0);
  ASSERT_EQ(sym_range(h.path, "unwind_spin_thread", h.spin_fn, 0, &slo, &shi),
            0);
  pst__mem_init(&mem, h.pid);
  ASSERT_EQ(pst__unwinder_new(h.pid, &mem, NULL, &u), 0);
  /* Repeated: the first unwind fills libunwind's cache, later ones use it;
   * all must agree (the spin loop's pc may move inside unwind_recurse),
   * whatever the caching policy. The unlocked one must be available with
   * the libunwind we build against. */
  for (int round = 0; round < 60; round++) {
    if (round % 20 == 0)
      ASSERT_EQ(pst__unwinder_set_cache(u, round == 0 ? PST_UNWIND_CACHE_NONE
                                           : round == 20
                                               ? PST_UNWIND_CACHE_LOCKED
                                               : PST_UNWIND_CACHE_UNLOCKED),
                0);
    n = unwind_stopped(u, h.pid, h.spin, ips, sps);
    if (round == 0)
      print_stack(u, "spinning thread", ips, sps, n);
    ASSERT_GE(n, 42);
    in_recurse = 0;
    for (i = 0; i < n && in(lookup_ip(ips, i), rlo, rhi); i++)
      in_recurse++;
    ASSERT_EQ(in_recurse, 40);
    /* Then the thread function, then libc's start_thread and clone3. */
    ASSERT(in(lookup_ip(ips, 40), slo, shi));
    for (i = 41; i < n; i++)
      ASSERT(module_is(u, lookup_ip(ips, i), "libc"));
    for (i = 1; i < n; i++)
      ASSERT_GT(sps[i], sps[i - 1]);
    if (round == 0) {
      memcpy(first, ips, sizeof(ips));
      nfirst = n;
    } else {
      ASSERT_EQ(n, nfirst);
      for (i = 1; i < n; i++)
        ASSERT_EQ(ips[i], first[i]);
    }
  }
  pst__unwinder_stats(u, &st);
  printf("# %llu unwinds, %llu frames, %llu stack reads, %llu errors\n",
         (unsigned long long)st.unwinds, (unsigned long long)st.frames,
         (unsigned long long)st.stack_reads, (unsigned long long)st.errors);
  ASSERT_EQ(st.unwinds, 60);
  ASSERT_EQ(st.truncated, 0);
  pst__unwinder_free(u);
  pst__mem_exit(&mem);
  helper_stop(&h);
  return 0;
}

TEST_IMPL(unwind_blocked_thread) {
  struct helper h;
  struct pst__mem mem;
  struct pst__unwinder *u;
  uint64_t ips[MAXF], sps[MAXF], blo, bhi;
  int n, found = -1;

  helper_start(&h);
  ASSERT_EQ(sym_range(h.path, "unwind_block_thread", h.block_fn, 0, &blo, &bhi),
            0);
  pst__mem_init(&mem, h.pid);
  ASSERT_EQ(pst__unwinder_new(h.pid, &mem, NULL, &u), 0);
  n = unwind_stopped(u, h.pid, h.block, ips, sps);
  print_stack(u, "blocked thread", ips, sps, n);
  ASSERT_GE(n, 3);
  ASSERT(module_is(u, ips[0], "libc")); /* read() */
  for (int i = 1; i < n; i++)
    if (in(lookup_ip(ips, i), blo, bhi))
      found = i;
  ASSERT_GT(found, 0);
  ASSERT(module_is(u, lookup_ip(ips, n - 1), "libc"));
  /* Still blocked in read, not killed or stopped by the interruption. */
  ASSERT_EQ(kill(h.pid, 0), 0);
  pst__unwinder_free(u);
  pst__mem_exit(&mem);
  helper_stop(&h);
  return 0;
}

/* A thread that is not stopped by us: registers cannot be read. */
TEST_IMPL(unwind_not_stopped) {
  struct helper h;
  struct pst__mem mem;
  struct pst__unwinder *u;
  uint64_t ips[4];

  helper_start(&h);
  pst__mem_init(&mem, h.pid);
  ASSERT_EQ(pst__unwinder_new(h.pid, &mem, NULL, &u), 0);
  ASSERT_EQ(pst__unwind_thread(u, h.spin, ips, NULL, 4), -ESRCH);
  ASSERT_EQ(pst__unwind_thread(u, h.spin, ips, NULL, 0), -EINVAL);
  ASSERT_EQ(pst__unwinder_refresh(u), 0);
  pst__unwinder_free(u);
  pst__mem_exit(&mem);
  helper_stop(&h);
  return 0;
}

/* A short max: exactly max frames, counted as truncated. */
TEST_IMPL(unwind_max_frames) {
  struct helper h;
  struct pst__mem mem;
  struct pst__unwinder *u;
  struct pst__unwind_stats st;
  uint64_t ips[5];

  helper_start(&h);
  pst__mem_init(&mem, h.pid);
  ASSERT_EQ(pst__unwinder_new(h.pid, &mem, NULL, &u), 0);
  ASSERT_EQ(pst__ptrace_stop(h.spin), 0);
  ASSERT_EQ(pst__unwind_thread(u, h.spin, ips, NULL, 5), 5);
  ASSERT_EQ(pst__unwind_thread(u, h.spin, ips, NULL, 1), 1);
  pst__ptrace_resume(h.spin);
  pst__unwinder_stats(u, &st);
  ASSERT_EQ(st.truncated, 2);
  pst__unwinder_free(u);
  pst__mem_exit(&mem);
  helper_stop(&h);
  return 0;
}

/* The main thread of python (path), busy in a loop, unwinds through the
 * eval function of libpython or of the static executable. */
static int unwind_python(const char *python) {
  char line[64], *argv[4];
  struct pst__mem mem;
  struct pst__unwinder *u;
  struct pst__modcache *cache;
  uint64_t ips[MAXF], sps[MAXF];
  int n, evals = 0, nlibc = 0;
  pid_t pid;
  FILE *out;

  argv[0] = (char *)python;
  argv[1] = "-c";
  argv[2] = "import sys\n"
            "def spin(n):\n"
            "    if n: return spin(n - 1)\n"
            "    sys.stdout.write('go\\n'); sys.stdout.flush()\n"
            "    while True: pass\n"
            "spin(5)\n";
  argv[3] = NULL;
  pid = test_spawn(argv, &out, NULL);
  ASSERT_GT(pid, 0);
  ASSERT(fgets(line, sizeof(line), out) != NULL);
  ASSERT_STR_EQ(line, "go\n");
  pst__mem_init(&mem, pid);
  /* A shared cache, as the sampler would hold one for every target. */
  ASSERT_EQ(pst__modcache_new(&cache), 0);
  ASSERT_EQ(pst__unwinder_new(pid, &mem, cache, &u), 0);
  pst__modcache_put(cache);
  for (int round = 0; round < 20; round++) {
    n = unwind_stopped(u, pid, pid, ips, sps);
    if (round == 0)
      print_stack(u, python, ips, sps, n);
    ASSERT_GE(n, 5);
    evals = 0;
    for (int i = 0; i < n; i++) {
      const char *path;
      uint64_t bias, lo, hi;
      uint64_t ip = lookup_ip(ips, i);
      if (pst__unwinder_module(u, ip, &path, &bias, NULL, NULL) != 0 ||
          !strstr(path, "python"))
        continue;
      /* The executable of a shared build has no eval function. */
      if (sym_range(path, "_PyEval_EvalFrameDefault", 0, bias, &lo, &hi) == 0)
        evals += in(ip, lo, hi);
    }
    ASSERT_GE(evals, 1);
    /* The outermost frames: __libc_start_call_main, __libc_start_main. */
    nlibc = module_is(u, lookup_ip(ips, n - 1), "libc");
    ASSERT(nlibc || module_is(u, lookup_ip(ips, n - 1), "python"));
  }
  printf("# %s: %d eval frames\n", python, evals);
  pst__unwinder_free(u);
  pst__mem_exit(&mem);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  fclose(out);
  return 0;
}

TEST_IMPL(unwind_python312_shared) {
  char path[512];

  if (find_python(3, 12, path, sizeof(path)) != 0 || !strstr(path, "/.pyenv/"))
    SKIP("no pyenv python3.12 (shared libpython)");
  return unwind_python(path);
}

TEST_IMPL(unwind_python311_static) {
  if (access("/usr/bin/python3.11", X_OK) != 0)
    SKIP("/usr/bin/python3.11 absent");
  return unwind_python("/usr/bin/python3.11");
}

/* A library dlopen()ed after the unwinder loaded the maps: the unwind
 * finds its IP in no mapping, reloads the maps and goes on through it. */
TEST_IMPL(unwind_dlopen_later) {
  struct helper h;
  struct pst__mem mem;
  struct pst__unwinder *u;
  struct pst__unwind_stats st;
  uint64_t ips[MAXF], sps[MAXF], slo, shi;
  char lib[512], line[64];
  int n, tid = 0, found = 0;

  snprintf(lib, sizeof(lib), "%s/tests/helpers/.libs/unwind-spin-lib.so",
           test_builddir());
  if (access(lib, R_OK) != 0)
    SKIP("%s not built", lib);
  helper_start_lib(&h, lib);
  pst__mem_init(&mem, h.pid);
  ASSERT_EQ(pst__unwinder_new(h.pid, &mem, NULL, &u), 0);
  fputs("go\n", h.in);
  fflush(h.in);
  ASSERT(fgets(line, sizeof(line), h.out) != NULL);
  ASSERT_EQ(sscanf(line, "lib %d", &tid), 1);
  /* Past the reload rate limit, which starts at pst__unwinder_new. */
  usleep((PST_UNWIND_RELOAD_MS + 20) * 1000);
  n = unwind_stopped(u, h.pid, tid, ips, sps);
  print_stack(u, "thread in a dlopen()ed library", ips, sps, n);
  pst__unwinder_stats(u, &st);
  ASSERT_GE(st.maps_reloads, 1);
  ASSERT(module_is(u, ips[0], "unwind-spin-lib"));
  /* unwind_lib_thread's runtime range, with the executable's bias found
   * from unwind_recurse's printed address. */
  {
    uint64_t rt, v0, v1;
    ASSERT_EQ(sym_range(h.path, "unwind_recurse", h.recurse, 0, &rt, &v1), 0);
    ASSERT_EQ(sym_range(h.path, "unwind_recurse", 0, 0, &v0, &v1), 0);
    ASSERT_EQ(sym_range(h.path, "unwind_lib_thread", 0, rt - v0, &slo, &shi),
              0);
  }
  for (int i = 1; i < n; i++)
    found += in(lookup_ip(ips, i), slo, shi);
  ASSERT_EQ(found, 1);
  ASSERT(module_is(u, lookup_ip(ips, n - 1), "libc"));
  pst__unwinder_free(u);
  pst__mem_exit(&mem);
  helper_stop(&h);
  return 0;
}
