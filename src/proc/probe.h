/* probe.h: what the engine asks of a process it may record, from /proc:
 * its command line, an integer of its environment, its container, and a
 * cheap "does it look like Python" for the host scan.
 *
 * Everything read here is the target's to write: bounded reads, parsed by
 * the pure functions of proc.h (which the fuzz harness covers). No
 * function keeps state or allocates; any thread may call them.
 */
#ifndef PST_PROC_PROBE_H
#define PST_PROC_PROBE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Process pid's command line, its arguments joined by spaces, into buf
 * (size len, truncated, NUL-terminated); "" when it cannot be read. */
void pst__probe_cmdline(pid_t pid, char *buf, size_t len);

/* The integer value of environment variable key of process pid (the
 * first 64 KiB of its environ): 0 with *out set, -ENOENT when absent,
 * -EINVAL when not a decimal int, or -errno of the read. */
int pst__probe_env_int(pid_t pid, const char *key, int *out);

/* The inode of the pid namespace of process pid (0: our own), 0 when it
 * cannot be read. */
uint64_t pst__probe_pidns(pid_t pid);

/* Process pid in another pid namespace than ours (ns, from
 * pst__probe_pidns(0)): the last part of its cgroup path (a container's
 * id or name) into out; else, or when unknown, "". */
void pst__probe_container(pid_t pid, uint64_t ns, char *out, size_t len);

/* A cheap first look for the host scan: 1 when its executable's name
 * starts with "python" or its maps name a libpython (an embedding
 * program: uwsgi, a C++ host), else 0. Attaching decides. */
int pst__probe_looks_python(pid_t pid);

#endif
