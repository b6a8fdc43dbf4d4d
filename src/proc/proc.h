/* proc.h: what /proc says about a process and its threads.
 *
 * All functions read /proc afresh (no caching) and return 0 or -errno:
 * -ESRCH when the process or thread is gone.
 */
#ifndef PST_PROC_H
#define PST_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct pst__proc_status {
  char state; /* R, S, D, T, t, Z, X, ... */
  pid_t tgid;
  pid_t ppid;    /* parent (0 when it has none we can see) */
  pid_t nspid;   /* innermost NSpid (== pid outside namespaces) */
  uid_t uid;     /* real uid */
  pid_t tracer;  /* TracerPid: 0 when no debugger is attached */
  char name[64]; /* comm */
};

/* Reads up to len-1 bytes of a /proc file into buf (NUL-terminated).
 * Returns the length read or -errno (ENOENT of a pid dir becomes -ESRCH). */
ssize_t pst__proc_read(const char *path, char *buf, size_t len);

/* Parses /proc/pid/status into *st. 0, -ESRCH, or -errno. */
int pst__proc_status(pid_t pid, struct pst__proc_status *st);
/* The same from the text of a status file (NUL-terminated; split into
 * lines in place); nspid is pid unless an NSpid line says otherwise, and a
 * pid field that is not a number in [0, INT_MAX] reads as 0. Returns 0. */
int pst__proc_parse_status(char *buf, pid_t pid, struct pst__proc_status *st);

/* Lists /proc/pid/task. *tids is malloc'ed, the caller frees it. Returns the
 * count or -errno. */
int pst__proc_tasks(pid_t pid, pid_t **tids);

/* State letter and start time (clock ticks since boot) from the text of a
 * /proc stat file; the pair (tid, starttime) identifies a thread across tid
 * reuse. Either output may be NULL (the state alone is cheaper). 0 or
 * -EINVAL. */
int pst__proc_parse_stat(const char *buf, char *state, uint64_t *starttime);
/* The same for one thread of pid, read afresh. */
int pst__proc_task_stat(pid_t pid, pid_t tid, char *state, uint64_t *starttime);

/* Opens /proc/pid/task/tid/stat for repeated reads (O_CLOEXEC): the fd
 * names that thread for its whole life, and reads fail once it is gone,
 * even if the tid is reused. Returns the fd (the caller closes it), or
 * -ESRCH, or -errno. */
int pst__proc_task_stat_open(pid_t pid, pid_t tid);
/* Opens /proc/pid/task/tid/schedstat the same way (fd or -errno): its
 * three numbers cost the kernel a fifth of what stat does to format. */
int pst__proc_task_schedstat_open(pid_t pid, pid_t tid);
/* Time on a CPU and time waiting for one (run queue), in ns, through such
 * an fd, one pread: the first grows while the thread runs, their sum
 * whenever it was woken. The kernel brings a running thread's figures up
 * to date at its scheduler ticks and switches, so a read may be some
 * milliseconds behind. 0, -ESRCH (gone), -EBADF, -EINVAL, or -errno. */
int pst__proc_schedstat_fd(int fd, uint64_t *run_ns, uint64_t *wait_ns);
/* The same from the text of a schedstat file. 0 or -EINVAL. */
int pst__proc_parse_schedstat(const char *buf, uint64_t *run_ns,
                              uint64_t *wait_ns);

/* Opens /proc/pid/task/tid/syscall the same way (fd or -errno): where a
 * thread that is not running waits, without stopping it. */
int pst__proc_task_syscall_open(pid_t pid, pid_t tid);
/* A blocked thread's user stack pointer and program counter (and its
 * system call's number, -1 when it blocks outside one, in a page fault or
 * a stop), through such an fd, one pread: 0, -EBUSY when it is running
 * (the kernel reads only a thread that is off every CPU), -ESRCH (gone),
 * -EBADF, -EINVAL, or -errno. */
int pst__proc_syscall_fd(int fd, long *nr, uint64_t *sp, uint64_t *pc);
/* The same from the text of a syscall file ("NR ARG1..ARG6 SP PC",
 * "-1 SP PC" or "running"): 0, -EBUSY or -EINVAL. */
int pst__proc_parse_syscall(const char *buf, long *nr, uint64_t *sp,
                            uint64_t *pc);

/* State and start time through such an fd: one pread. 0, -ESRCH (the
 * thread is gone), -EBADF (fd < 0), -EINVAL, or -errno. */
int pst__proc_stat_fd(int fd, char *state, uint64_t *starttime);

/* What tells one program run in a process from another: the process's
 * start time (a pid reused by a new process has another one) and the
 * addresses the kernel chose for its code, stack, heap, arguments and
 * environment (an exec() maps a new program: with address randomisation
 * they change, without it the same program is laid out the same way). */
struct pst__proc_image {
  char state;         /* R, S, D, T, t, Z, X, ... */
  uint64_t starttime; /* clock ticks since boot (stat field 22) */
  uint64_t vsize;     /* bytes mapped (field 23); 0 when the process has no
                          address space (exiting, or a zombie) */
  uint64_t addr[5];   /* startcode, startstack, start_brk, arg_start,
                          env_start (fields 26, 28, 47, 48, 50); 0 when
                          the reader may not trace the process, for a
                          zombie, and in the middle of an execve() (the
                          new address space is there, not yet filled) */
};

/* Reads pid's image from /proc/pid/stat. 0, -ESRCH, or -errno. */
int pst__proc_image(pid_t pid, struct pst__proc_image *im);
/* The same from the text of a stat file (NUL-terminated). 0 or -EINVAL. */
int pst__proc_parse_image(const char *buf, struct pst__proc_image *im);

/* Thread name from /proc/pid/task/tid/comm, without the newline. */
int pst__proc_task_comm(pid_t pid, pid_t tid, char *buf, size_t len);

/* Target of /proc/pid/exe, as a path in the target's mount namespace. */
int pst__proc_exe(pid_t pid, char *buf, size_t len);

/* The integer value of KEY in the text of an environ file (len bytes of
 * NUL-ended NAME=VALUE strings, the last possibly cut short): 0 with *out
 * set, -ENOENT when KEY is not there, -EINVAL when its value is not a
 * decimal int (the target's environment is its own to write). */
int pst__proc_env_int(const char *buf, size_t len, const char *key, int *out);

/* A cmdline file's text (len bytes read, buf[len] its NUL) made one line:
 * the NULs between arguments become spaces, in place. */
void pst__proc_args_join(char *buf, size_t len);

/* The name of a container from the text of a cgroup file (NUL-terminated,
 * modified): the last part of the v2 line ("0::/system.slice/docker-ID.scope"
 * gives "docker-ID.scope"), else of the first line, else "pidns"; written
 * into out (size len, truncated, always NUL-terminated). */
void pst__proc_cgroup_name(char *buf, char *out, size_t len);

/* The next pid in a list of decimal pids separated by spaces (a children
 * file, NUL-terminated): 1 with *pid set and *p moved past it, 0 at the end.
 * Numbers that are not a pid (0, negative, beyond INT_MAX) are skipped. */
int pst__proc_next_pid(const char **p, pid_t *pid);

/* Appends the children of every thread of process pid to out[*n..max)
 * (*n moved on), leaving out those already there. 0, or -errno when its
 * threads cannot be listed. */
int pst__proc_children(pid_t pid, pid_t *out, int *n, int max);

/* The descendants of process root (children of any of its threads, theirs,
 * ...), breadth first, into out (at most max; root not included). Returns
 * how many, or -errno when root's own threads cannot be listed. */
int pst__proc_descendants(pid_t root, pid_t *out, int max);

#endif
