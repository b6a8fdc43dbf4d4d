/* rootfs.h: opening a file a target names, resolved inside the target's own
 * root, so that nothing a (containerised) target controls can steer a
 * privileged pystitch to a host file, a FIFO or a device.
 *
 * Every path a target can name (its mapped files, its libc, debug files
 * found through its build-ids and .gnu_debuglink names) is opened with
 * these. A lookup:
 *   - starts at an O_PATH descriptor of the target's root (/proc/PID/root,
 *     which names its root even in another mount namespace);
 *   - resolves every component with openat2(RESOLVE_IN_ROOT |
 *     RESOLVE_NO_MAGICLINKS): an absolute symlink or ".." stops at that
 *     root, a /proc magic link is refused. Without openat2 (kernels before
 *     5.6) the components are walked one at a time with O_NOFOLLOW, each
 *     symlink read and followed inside the same root (at most 40);
 *   - ends on an O_PATH descriptor, so that nothing is opened yet: a FIFO
 *     would block, a device's open could have side effects, a terminal
 *     could become ours;
 *   - only a regular file is then opened for reading, through that
 *     descriptor (/proc/self/fd/N), O_NONBLOCK | O_NOCTTY | O_CLOEXEC.
 *
 * Functions return a descriptor the caller closes, or -errno: -ENOENT,
 * -EACCES, -ELOOP, -EXDEV (a magic link), -EINVAL (not a regular file). They
 * keep no state and may be called from any thread.
 */
#ifndef PST_PROC_ROOTFS_H
#define PST_PROC_ROOTFS_H

#include <sys/stat.h>
#include <sys/types.h>

/* An O_PATH descriptor of pid's root directory (/proc/pid/root); pid 0:
 * ours ("/"). -ESRCH when pid is gone, -EACCES when not ours to see. */
int pst__root_open(pid_t pid);

/* Opens path (absolute or relative to the root) inside rootfd read-only,
 * when it is a regular file; *st (may be NULL) gets its fstat. */
int pst__root_openat(int rootfd, const char *path, struct stat *st);

/* The same without openat2, as used where the kernel lacks it (exposed for
 * the unit tests, which check that both agree). */
int pst__root_openat_walk(int rootfd, const char *path, struct stat *st);

/* Opens a /proc magic link of the target (such as /proc/pid/map_files/...),
 * which names a file of the target without any path lookup, under the same
 * rules: O_PATH first, then only a regular file. */
int pst__root_open_magic(const char *proc_path, struct stat *st);

#endif
