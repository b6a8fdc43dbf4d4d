/* sandbox.c: capabilities, no_new_privs and the seccomp filter (sandbox.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <seccomp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <ucontext.h>
#include <unistd.h>

#include "sandbox/sandbox.h"
#include "util/log.h"
#include "util/worker.h"

#ifndef CAP_CHECKPOINT_RESTORE
#define CAP_CHECKPOINT_RESTORE 40
#endif

static atomic_ulong violations;
/* What pst__sandbox_enter() did, for the threads that catch up. */
static struct pst__sandbox_opts entered_opts;
static int caps_dropped;   /* by it: threads drop theirs too */
static atomic_int entered; /* 1: the two above are set (release) */
static _Thread_local int this_thread_done;

/* LeakSanitizer stops the world at exit from a clone() of its own with
 * every signal blocked: a call the filter refuses there kills that clone
 * silently and leaves pystitch waiting for it forever. The sanitizer build
 * keeps the capabilities and no_new_privs, not the filter. */
#if defined(__SANITIZE_ADDRESS__)
static const int sanitizer_build = 1;
#else
static const int sanitizer_build = 0;
#endif

/* ---- capabilities ---- */

static int drop_caps(const struct pst__sandbox_opts *o) {
  cap_value_t keep[5];
  int nkeep = 0, err = 0;
  cap_t c;

  keep[nkeep++] = CAP_SYS_PTRACE;
  keep[nkeep++] = CAP_DAC_READ_SEARCH;
  if (CAP_CHECKPOINT_RESTORE <= (int)cap_max_bits() - 1)
    keep[nkeep++] = CAP_CHECKPOINT_RESTORE;
  if (o->keep_dac_override)
    keep[nkeep++] = CAP_DAC_OVERRIDE;
  if (o->keep_kill)
    keep[nkeep++] = CAP_KILL;
  /* The bounding set first: dropping from it needs CAP_SETPCAP, which the
   * sets below then lose. */
  for (cap_value_t v = 0; v < (cap_value_t)cap_max_bits(); v++) {
    int kept = 0;
    for (int i = 0; i < nkeep; i++)
      kept |= keep[i] == v;
    if (!kept && CAP_IS_SUPPORTED(v) && cap_get_bound(v) == 1 &&
        cap_drop_bound(v) < 0 && errno != EPERM)
      err = -errno;
  }
  cap_reset_ambient(); /* fails harmlessly where the kernel has none */
  c = cap_get_proc();
  if (!c)
    return -errno;
  /* Only what we hold is kept: a capability not permitted cannot be
   * raised. */
  {
    cap_t n = cap_init();
    if (!n) {
      cap_free(c);
      return -errno;
    }
    for (int i = 0; i < nkeep; i++) {
      cap_flag_value_t has = CAP_CLEAR;
      if (cap_get_flag(c, keep[i], CAP_PERMITTED, &has) == 0 &&
          has == CAP_SET) {
        cap_set_flag(n, CAP_PERMITTED, 1, &keep[i], CAP_SET);
        cap_set_flag(n, CAP_EFFECTIVE, 1, &keep[i], CAP_SET);
      }
    }
    if (cap_set_proc(n) < 0 && !err)
      err = -errno;
    cap_free(n);
  }
  cap_free(c);
  return err;
}

unsigned long long pst__sandbox_effective(void) {
  char buf[4096];
  unsigned long long v = 0;
  const char *p;
  ssize_t n;
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

  if (fd < 0)
    return 0;
  n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  p = strstr(buf, "\nCapEff:");
  if (p)
    sscanf(p + 8, "%llx", &v);
  return v;
}

int pst__sandbox_dir_needs_override(const char *dir) {
  struct stat st;

  if (geteuid() != 0)
    return 0; /* not root: no capability to keep anyway */
  if (stat(dir, &st) < 0)
    return 0;
  if (st.st_uid == geteuid())
    return !(st.st_mode & S_IWUSR) || !(st.st_mode & S_IXUSR);
  if (st.st_gid == getegid())
    return !(st.st_mode & S_IWGRP) || !(st.st_mode & S_IXGRP);
  return !(st.st_mode & S_IWOTH) || !(st.st_mode & S_IXOTH);
}

/* ---- the filter ---- */

/* Every system call the engine makes, measured with strace -f over record
 * (--all, --native, --async, --push, --rotate, -s), top and dump, plus
 * glibc's, libuv's and libcurl's own (threads, name resolution, TLS). */
/* clang-format off */
static const char *const allowed[] = {
    "read", "write", "readv", "writev", "pread64", "pwrite64", "lseek",
    "close", "close_range", "dup", "dup2", "dup3", "fcntl", "ioctl",
    "openat", "openat2", "open", "access", "faccessat", "faccessat2",
    "stat", "fstat", "lstat", "newfstatat", "statx", "statfs", "fstatfs",
    "readlink", "readlinkat", "getdents64", "getcwd", "rename", "renameat",
    "renameat2", "unlink", "unlinkat", "fsync", "fdatasync", "ftruncate",
    "fchmod", "umask", "memfd_create", "fadvise64", "pipe", "pipe2",
    "eventfd2", "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait",
    "epoll_pwait2", "poll", "ppoll", "select", "pselect6", "timerfd_create",
    "timerfd_settime", "timerfd_gettime", "signalfd4", "mmap", "munmap",
    "mprotect", "mremap", "madvise", "mincore", "msync", "brk",
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack",
    "rt_sigtimedwait", "restart_syscall", "clock_gettime", "clock_getres",
    "clock_nanosleep", "nanosleep", "gettimeofday", "time", "times",
    "getrusage", "sysinfo", "uname", "getpid", "gettid", "getppid",
    "getpgrp", "getuid", "geteuid", "getgid", "getegid", "getresuid",
    "capset", /* only lowers: a thread made before the sandbox catches up */
    "getresgid", "getgroups", "capget", "getrandom", "futex",
    "set_robust_list", "get_robust_list", "rseq", "set_tid_address",
    "clone", "clone3", "exit", "exit_group", "wait4", "waitid", "kill",
    "tgkill", "tkill", "prctl", "arch_prctl", "sched_yield",
    "sched_getaffinity", "sched_getparam", "sched_getscheduler",
    "getpriority", "getrlimit", "prlimit64", "membarrier",
    "process_vm_readv", "socket", "socketpair", "connect", "bind",
    "getsockname", "getpeername", "getsockopt", "setsockopt", "sendto",
    "recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg", "shutdown",
};
/* clang-format on */

/* ptrace requests pystitch makes: seize, interrupt, continue and detach a
 * thread, read its registers or a word. Never one that writes. */
static const long ptrace_allowed[] = {
    PTRACE_SEIZE,    PTRACE_INTERRUPT,         PTRACE_CONT,
    PTRACE_DETACH,   PTRACE_GETREGS,           0x4204 /* GETREGSET */,
    PTRACE_PEEKDATA, 0x4201 /* GETEVENTMSG */,
};

static void on_sigsys(int sig, siginfo_t *si, void *ctx) {
  static const char pre[] = "pystitch: error: the sandbox refused system "
                            "call ";
  static const char post[] =
      " (a bug: please report it; --no-sandbox runs without the filter)\n";
  char num[24];
  int n = 0, v = si->si_syscall;
  ucontext_t *uc = ctx;

  (void)sig;
#if defined(__x86_64__)
  uc->uc_mcontext.gregs[REG_RAX] = -EPERM;
#elif defined(__aarch64__)
  uc->uc_mcontext.regs[0] = (unsigned long long)-EPERM;
#else
  (void)uc;
#endif
  if (atomic_fetch_add(&violations, 1) == 0) {
    char tmp[24];
    if (v < 0)
      v = 0;
    do
      tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) && n < (int)sizeof(tmp));
    for (int i = 0; i < n; i++)
      num[i] = tmp[n - 1 - i];
    if (write(2, pre, sizeof(pre) - 1) < 0 || write(2, num, (size_t)n) < 0 ||
        write(2, post, sizeof(post) - 1) < 0) {
      /* nothing more to do: the exit code says it too */
    }
    kill(getpid(), SIGTERM); /* stop as SIGTERM does: the profile is kept */
  }
}

static int load_filter(void) {
  struct sigaction sa;
  scmp_filter_ctx f;
  int err = 0;

  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = on_sigsys;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSYS, &sa, NULL) < 0)
    return -errno;
  f = seccomp_init(SCMP_ACT_TRAP);
  if (!f)
    return -ENOMEM;
  /* Every thread, not only this one (the push sender, libuv's pool). */
  err = seccomp_attr_set(f, SCMP_FLTATR_CTL_TSYNC, 1);
  if (err)
    goto out;
  for (size_t i = 0; i < sizeof(allowed) / sizeof(*allowed); i++) {
    int nr = seccomp_syscall_resolve_name(allowed[i]);
    if (nr == __NR_SCMP_ERROR || nr < 0)
      continue; /* not on this architecture */
    err = seccomp_rule_add(f, SCMP_ACT_ALLOW, nr, 0);
    if (err)
      goto out;
  }
  for (size_t i = 0; i < sizeof(ptrace_allowed) / sizeof(*ptrace_allowed);
       i++) {
    err =
        seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(ptrace), 1,
                         SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)ptrace_allowed[i]));
    if (err)
      goto out;
  }
  err = seccomp_load(f);
out:
  seccomp_release(f);
  return err;
}

int pst__sandbox_enter(const struct pst__sandbox_opts *o) {
  int err = 0, e;

  entered_opts = *o;
  this_thread_done = 1;
  if (geteuid() == 0 || pst__sandbox_effective()) {
    caps_dropped = 1;
    e = drop_caps(o);
    if (e) {
      pst__warn("sandbox: capabilities not reduced: %s", strerror(-e));
      err = e;
    }
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
    e = -errno;
    pst__warn("sandbox: no_new_privs not set: %s", strerror(-e));
    err = err ? err : e;
  }
  if (o->filter && sanitizer_build) {
    pst__info("sandbox: no system-call filter in a sanitizer build");
  } else if (o->filter) {
    e = load_filter();
    if (e) {
      pst__warn("sandbox: no system-call filter: %s", strerror(-e));
      err = err ? err : e;
    }
  }
  atomic_store_explicit(&entered, 1, memory_order_release);
  atomic_store(&pst__worker_hook, pst__sandbox_this_thread); /* threads made
                                                                before */
  pst__debug("sandbox: capabilities %llx, no_new_privs, %s",
             pst__sandbox_effective(), o->filter ? "filter" : "no filter");
  return err;
}

void pst__sandbox_this_thread(void) {
  int e;

  if (this_thread_done || !atomic_load_explicit(&entered, memory_order_acquire))
    return;
  this_thread_done = 1;
  if (caps_dropped && (e = drop_caps(&entered_opts)) != 0)
    pst__warn("sandbox: capabilities of thread %d not reduced: %s",
              (int)gettid(), strerror(-e));
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    pst__warn("sandbox: no_new_privs of thread %d not set: %s", (int)gettid(),
              strerror(errno));
}

unsigned long pst__sandbox_violations(void) { return atomic_load(&violations); }
