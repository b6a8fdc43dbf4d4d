/* ptrace.c: brief stops of one thread: thread pointer, registers. */
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>

#include "proc/ptrace.h"
#include "util/log.h"

#ifndef NT_ARM_TLS
#define NT_ARM_TLS 0x401 /* aarch64 tpidr_el0, <elf.h> may lack it */
#endif

static int read_tp(pid_t tid, uint64_t *tp) {
#if defined(__x86_64__)
  struct user_regs_struct regs;
  if (ptrace(PTRACE_GETREGS, tid, NULL, &regs) < 0)
    return -errno;
  *tp = regs.fs_base;
  return 0;
#elif defined(__aarch64__)
  uint64_t v;
  struct iovec iov = {&v, sizeof(v)};
  if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_ARM_TLS, &iov) < 0)
    return -errno;
  *tp = v;
  return 0;
#else
  (void)tid;
  (void)tp;
  return -ENOSYS;
#endif
}

/* Signals re-injected while waiting for our interrupt before we give up
 * on it (a signal storm); the thread is then still detached cleanly. */
#define REINJECT_MAX 1000

/* Waits for the interrupt stop of tid. Other stops (a signal arriving in
 * between) are passed on with PTRACE_CONT and waited for again, so the
 * thread does not lose the signal. Returns 0 with the thread in a
 * ptrace-stop, -ESRCH when it exited, or another -errno with the thread
 * running (still attached: the caller must use detach_running()). */
static int wait_stop(pid_t tid) {
  int status, reinjected = 0;

  for (;;) {
    pid_t r = waitpid(tid, &status, __WALL);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    if (WIFEXITED(status) || WIFSIGNALED(status))
      return -ESRCH;
    if (!WIFSTOPPED(status))
      continue;
    /* PTRACE_INTERRUPT stops with SIGTRAP | PTRACE_EVENT_STOP << 8; a
     * group-stop (the process got SIGSTOP) reports the stopping signal with
     * the same event: either way the thread is in a ptrace-stop we can read
     * and then leave as it was. */
    if ((status >> 16) == PTRACE_EVENT_STOP)
      return 0;
    /* An execve() under way when we seized it: an interrupt sent then can
     * be dropped by the exec (seen: a leader seized in the middle of
     * execve never stopped, and this wait never returned). Seized with
     * PTRACE_O_TRACEEXEC, the exec stops it instead: a ptrace-stop too,
     * but of a new program, so the caller must not read it as the old. */
    if ((status >> 16) == PTRACE_EVENT_EXEC)
      return -ESTALE;
    /* A signal-delivery stop: re-inject it and wait for our interrupt. */
    if (ptrace(PTRACE_CONT, tid, NULL, (void *)(long)WSTOPSIG(status)) < 0)
      return -errno;
    if (++reinjected == REINJECT_MAX)
      return -EAGAIN;
  }
}

/* Leaves tid detached whatever state the attempt left it in. PTRACE_DETACH
 * only works from a ptrace-stop; a running tracee is interrupted first. */
static void detach(pid_t tid, int stopped) {
  for (int attempt = 0; attempt < 3; attempt++) {
    if (stopped && ptrace(PTRACE_DETACH, tid, NULL, NULL) == 0)
      return;
    if (stopped && errno == ESRCH && kill(tid, 0) < 0)
      return; /* gone */
    if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0 && errno == ESRCH)
      return; /* not ours any more, or gone */
    switch (wait_stop(tid)) {
    case 0:
    case -ESTALE: /* stopped at an exec */
      stopped = 1;
      break;
    case -ESRCH:
      return; /* exited, and reaped */
    default:
      stopped = 0;
    }
  }
  pst__warn("could not detach from thread %d; it stays traced until "
            "pystitch exits",
            (int)tid);
}

int pst__ptrace_stop(pid_t tid) {
  int err;

  if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(long)PTRACE_O_TRACEEXEC) < 0)
    return -errno;
  if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0) {
    err = -errno;
    detach(tid, 0);
    return err;
  }
  err = wait_stop(tid);
  if (err && err != -ESRCH)
    detach(tid, err == -ESTALE);
  return err == -ESTALE ? -ESRCH : err; /* the thread we knew is gone */
}

void pst__ptrace_resume(pid_t tid) { detach(tid, 1); }

int pst__ptrace_thread_pointer(pid_t tid, uint64_t *tp) {
  int err = pst__ptrace_stop(tid);

  if (err)
    return err;
  err = read_tp(tid, tp);
  /* PTRACE_DETACH from the interrupt stop resumes the thread (or leaves it
   * in its group-stop if the process was stopped). */
  pst__ptrace_resume(tid);
  return err;
}

int pst__ptrace_getregs(pid_t tid, struct user_regs_struct *regs) {
#if defined(__x86_64__)
  if (ptrace(PTRACE_GETREGS, tid, NULL, regs) < 0)
    return -errno;
  return 0;
#elif defined(__aarch64__)
  struct iovec iov = {regs, sizeof(*regs)};
  if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &iov) < 0)
    return -errno;
  return 0;
#else
  (void)tid;
  (void)regs;
  return -ENOSYS;
#endif
}
