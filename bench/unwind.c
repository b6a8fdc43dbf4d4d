/* unwind.c: benchmark of native unwinding per libunwind caching policy.
 *
 * Starts tests/helpers/unwind-target (a thread spinning DEPTH calls deep),
 * and for each policy: stops that thread, unwinds it N times (registers and
 * stack read afresh each time, as in a sample), resumes it; then N/10 full
 * samples (stop, unwind, resume). Prints microseconds per unwind, frames,
 * process_vm_readv batches and rt_sigprocmask calls per unwind (counted by
 * wrapping sigprocmask, which libunwind calls through the PLT).
 *
 * usage: bench/unwind [-n N] [-d DEPTH] [-p none|locked|unlocked|all]
 *        [-t helper]
 * Build dir default for the helper: $PST_BUILDDIR or ".".
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "native/unwind.h"
#include "proc/mem.h"
#include "proc/ptrace.h"
#include "pystitch.h"
#include "util/clock.h"

static unsigned long n_sigprocmask;

/* Counts libunwind's signal masking (its lock_acquire/lock_release).
 * Exported (the build hides symbols by default) so that it interposes. */
__attribute__((visibility("default"))) int
sigprocmask(int how, const sigset_t *set, sigset_t *old) {
  static int (*real)(int, const sigset_t *, sigset_t *);
  if (!real)
    *(void **)&real = dlsym(RTLD_NEXT, "sigprocmask");
  n_sigprocmask++;
  return real(how, set, old);
}

static double now_us(void) { return (double)pst__now_ns() / 1e3; }

static const struct {
  const char *name;
  enum pst__unwind_cache policy;
  const char *libunwind;
} policies[] = {
    {"none", PST_UNWIND_CACHE_NONE, "UNW_CACHE_NONE"},
    {"locked", PST_UNWIND_CACHE_LOCKED, "UNW_CACHE_GLOBAL"},
    {"unlocked", PST_UNWIND_CACHE_UNLOCKED, "UNW_CACHE_PER_THREAD"},
};

static int run(pid_t pid, pid_t tid, int pi, int n) {
  struct pst__mem mem;
  struct pst__unwinder *u;
  struct pst__unwind_stats s0, s1;
  uint64_t ips[256], sps[256], reads0;
  unsigned long masks0;
  double t0, t_unwind, t_sample;
  int err, frames = 0;

  pst__mem_init(&mem, pid);
  err = pst__unwinder_new(pid, &mem, NULL, &u);
  if (!err)
    err = pst__unwinder_set_cache(u, policies[pi].policy);
  if (err) {
    fprintf(stderr, "unwinder: %s\n", pst_strerror(err));
    return 1;
  }
  /* Warm-up: modules opened, libunwind's cache filled. */
  if ((err = pst__ptrace_stop(tid)) != 0) {
    fprintf(stderr, "stop %d: %s\n", (int)tid, pst_strerror(err));
    return 1;
  }
  frames = pst__unwind_thread(u, tid, ips, sps, 256);
  pst__unwinder_stats(u, &s0);
  reads0 = mem.reads;
  masks0 = n_sigprocmask;
  t0 = now_us();
  for (int i = 0; i < n; i++)
    if (pst__unwind_thread(u, tid, ips, sps, 256) != frames) {
      fprintf(stderr, "unwind %d: frame count changed\n", i);
      break;
    }
  t_unwind = (now_us() - t0) / n;
  pst__ptrace_resume(tid);
  pst__unwinder_stats(u, &s1);
  printf("%-9s %-21s %4d frames  %7.2f us/unwind  %5.2f us/frame  "
         "%.2f process_vm_readv  %.2f rt_sigprocmask per unwind\n",
         policies[pi].name, policies[pi].libunwind, frames, t_unwind,
         t_unwind / frames, (double)(mem.reads - reads0) / n,
         (double)(n_sigprocmask - masks0) / n);
  (void)s1;
  /* Whole samples: the thread stopped and resumed around each unwind. */
  t0 = now_us();
  for (int i = 0; i < n / 10; i++) {
    if (pst__ptrace_stop(tid) != 0)
      break;
    pst__unwind_thread(u, tid, ips, sps, 256);
    pst__ptrace_resume(tid);
  }
  t_sample = (now_us() - t0) / (n / 10);
  printf("%-9s %-21s %4s         %7.2f us/sample (stop + unwind + resume)\n",
         policies[pi].name, "", "", t_sample);
  pst__unwinder_free(u);
  pst__mem_exit(&mem);
  return 0;
}

int main(int argc, char **argv) {
  const char *policy = "all", *dir = getenv("PST_BUILDDIR");
  char helper[512], line[256], depth[16] = "40";
  int n = 20000, opt, fd[2], rc = 0;
  pid_t pid, spin = 0;
  FILE *f;

  snprintf(helper, sizeof(helper), "%s/tests/helpers/unwind-target",
           dir ? dir : ".");
  while ((opt = getopt(argc, argv, "n:d:p:t:")) != -1) {
    switch (opt) {
    case 'n':
      n = atoi(optarg);
      break;
    case 'd':
      snprintf(depth, sizeof(depth), "%s", optarg);
      break;
    case 'p':
      policy = optarg;
      break;
    case 't':
      snprintf(helper, sizeof(helper), "%s", optarg);
      break;
    default:
      fprintf(stderr,
              "usage: %s [-n N] [-d DEPTH] "
              "[-p none|locked|unlocked|all] [-t helper]\n",
              argv[0]);
      return 2;
    }
  }
  if (n < 10) {
    fprintf(stderr, "-n: at least 10\n");
    return 2;
  }
  if (pipe(fd) != 0)
    return 1;
  pid = fork();
  if (pid == 0) {
    dup2(fd[1], 1);
    execl(helper, helper, depth, (char *)NULL);
    _exit(127);
  }
  close(fd[1]);
  f = fdopen(fd[0], "r");
  while (fgets(line, sizeof(line), f) && strncmp(line, "ready", 5))
    sscanf(line, "spin %d", &spin);
  if (!spin) {
    fprintf(stderr, "%s did not start\n", helper);
    return 1;
  }
  printf("# %d unwinds of a thread %s calls deep per policy\n", n, depth);
  for (size_t i = 0; i < sizeof(policies) / sizeof(*policies); i++)
    if (!strcmp(policy, "all") || !strcmp(policy, policies[i].name))
      rc |= run(pid, spin, (int)i, n);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return rc;
}
