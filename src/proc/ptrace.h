/* ptrace.h: the only ptrace user: stops threads briefly, reads their thread
 * pointer and registers.
 *
 * A thread is stopped only for the few microseconds needed: PTRACE_SEIZE,
 * PTRACE_INTERRUPT, waitpid, read the register, PTRACE_DETACH (which resumes
 * it). Nothing stays attached between calls, so a profiler that dies leaves no
 * stopped thread behind. Must be called from one thread (ptrace's rule: only
 * the attaching thread may operate on the tracee).
 */
#ifndef PST_PTRACE_H
#define PST_PTRACE_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

/* Reads the thread pointer of thread tid (fsbase on x86_64, tpidr_el0 on
 * aarch64). Returns 0, -ESRCH (thread gone), -EPERM (no permission, or
 * another tracer such as gdb or strace holds the thread: check TracerPid),
 * or another -errno. Whatever happens, the thread is left detached and as
 * it was (running, or in the group-stop of a stopped process). A thread in
 * uninterruptible sleep (D) would block this call until it wakes: callers
 * skip such threads. */
int pst__ptrace_thread_pointer(pid_t tid, uint64_t *tp);

/* Stops thread tid (seize, interrupt, wait) so that its memory can be read
 * consistently; pst__ptrace_resume() detaches it again. Only this thread
 * stops; the rest of the process runs. 0 or -errno (the thread is then
 * left detached): -ESRCH when it exited, or was in execve() (what it ran
 * is gone: its process runs a new program). */
int pst__ptrace_stop(pid_t tid);
void pst__ptrace_resume(pid_t tid);

/* Reads the general registers of thread tid, which the caller stopped with
 * pst__ptrace_stop(): one PTRACE_GETREGS on x86_64, PTRACE_GETREGSET
 * (NT_PRSTATUS) on aarch64. 0, -ESRCH (gone, or not stopped by us), or
 * another -errno; *regs is undefined on failure. */
int pst__ptrace_getregs(pid_t tid, struct user_regs_struct *regs);

#endif
