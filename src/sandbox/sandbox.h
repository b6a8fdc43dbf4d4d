/* sandbox.h: least privilege once sampling is set up. pystitch often runs
 * as root (record --all is a host-wide agent) and reads processes and
 * files that others control; once its first targets are attached it keeps
 * only what reading targets needs:
 *
 *   - capabilities: CAP_SYS_PTRACE (ptrace, process_vm_readv, /proc/PID of
 *     other users), CAP_DAC_READ_SEARCH (the files of a target's root), and
 *     CAP_CHECKPOINT_RESTORE where the kernel has it (/proc/PID/map_files);
 *     CAP_DAC_OVERRIDE only when the output's directory needs it, CAP_KILL
 *     only when a command was started as another user (it is signalled at
 *     the end). Every other capability leaves the effective, permitted,
 *     inheritable, ambient and bounding sets;
 *   - no_new_privs: nothing exec'd from here could gain a privilege;
 *   - with a filter (record --all, top --all): a seccomp filter that
 *     allows the system calls the engine makes and nothing else: no exec,
 *     no write to another process (process_vm_writev, ptrace POKE/SET
 *     requests), no mount, namespace, module or key calls. A call outside
 *     it fails with EPERM, is logged once with its number, and stops the
 *     recording the way SIGTERM does (the profile is written); the exit
 *     code then says so (pst__sandbox_violations()).
 *
 * Process-wide, called once from the main thread; nothing to free.
 */
#ifndef PST_SANDBOX_H
#define PST_SANDBOX_H

struct pst__sandbox_opts {
  int keep_dac_override; /* the output directory is not writable without */
  int keep_kill;         /* a command runs as another user */
  int filter;            /* install the seccomp filter */
};

/* Enters the sandbox. Returns 0, or -errno when a step failed (what was
 * done stays done; the caller decides whether to go on). A process without
 * capabilities (not root) only gets no_new_privs and the filter. */
int pst__sandbox_enter(const struct pst__sandbox_opts *o);

/* Whether the output directory dir needs CAP_DAC_OVERRIDE to be written by
 * this process's effective user and group (owner, group and other write
 * bits, as the kernel checks them). 1, 0, or 0 when dir cannot be read. */
int pst__sandbox_dir_needs_override(const char *dir);

/* Gives the calling thread the privileges the sandbox left (capabilities,
 * no_new_privs) when it was made before pst__sandbox_enter():
 * capabilities are per thread, and only the filter reaches every thread
 * by itself. Installed as pst__worker_hook (util/worker.h), so a worker
 * thread runs it before each job; once per thread, and a no-op before
 * the sandbox is entered or when it is not used. Any thread. */
void pst__sandbox_this_thread(void);

/* How many system calls the filter refused. */
unsigned long pst__sandbox_violations(void);

/* Capabilities of this process, as /proc/self/status shows them (CapEff),
 * for messages and tests. */
unsigned long long pst__sandbox_effective(void);

#endif
