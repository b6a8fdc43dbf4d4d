/* debuginfo.h: finding the separate debug file of a stripped ELF image, the
 * way gdb and perf find it, so that its .symtab names the static functions
 * the stripped image lost.
 *
 * Distributions strip .symtab from what they install and ship it apart:
 * Debian's libc6-dbg, python3.X-dbg and the -dbgsym packages put
 * /usr/lib/debug/.build-id/xx/yyyy.debug files (xx the first byte of the
 * image's NT_GNU_BUILD_ID, yyyy the rest, in hex); objcopy
 * --add-gnu-debuglink leaves the file's name and its CRC-32 in the image's
 * .gnu_debuglink section. Search order (gdb's, "Separate Debug Files"):
 *   1. by build-id: ROOT DIR/.build-id/xx/yyyy.debug for every debug
 *      directory DIR;
 *   2. by .gnu_debuglink name N, with MOD the directory of the image as the
 *      target sees it: ROOT MOD/N, ROOT MOD/.debug/N, ROOT DIR MOD/N.
 * ROOT is first the target's root (/proc/PID/root, when the target lives in
 * another mount namespace, a container, whose root differs from ours), then
 * ours; paths are resolved inside each root (proc/rootfs.h: a symlink in a
 * container never leads to a host file, a FIFO or a device is never
 * opened), and the image's own directory MOD is searched in our root only
 * when the target shares it. A candidate is taken only when it matches: its build-id equals the
 * image's when the image has one (a debug file without a build-id is then
 * refused), and a file found by name has the CRC-32 the link names (the
 * whole file is read once for that). A candidate that is the image itself
 * (same device and inode) is skipped.
 *
 * Debug directories: the colon-separated list in the `dirs` argument, else
 * in the environment variable PST_DEBUG_DIRS, else /usr/lib/debug (gdb's
 * debug-file-directory). PST_DEBUG_DIRS set but empty searches no debug
 * directory (only the image's own directory and its .debug/).
 *
 * Only the caller's thread; no state between calls.
 */
#ifndef PST_ELF_DEBUGINFO_H
#define PST_ELF_DEBUGINFO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct pst__elf;

/* How a debug file was found (pst__debuginfo_open's *how). */
enum pst__debuginfo_how {
  PST_DEBUGINFO_BUILD_ID = 1, /* .build-id/xx/yyyy.debug */
  PST_DEBUGINFO_DEBUGLINK,    /* the .gnu_debuglink name, CRC checked */
};

/* Where to look for the debug file of one image. */
struct pst__debuginfo_where {
  const char *path; /* the image's path as the target sees it (maps), for
                       the .gnu_debuglink directories; NULL: none */
  pid_t pid;        /* the target, whose root is searched first; 0: ours
                       only */
  const char *dirs; /* colon-separated debug directories; NULL: from
                       PST_DEBUG_DIRS, else /usr/lib/debug */
  dev_t dev;        /* the image's file (skipped as a candidate); */
  uint64_t inode;   /* both 0 when unknown */
};

/* The GNU build-id of e (NT_GNU_BUILD_ID in .note.gnu.build-id): *id is
 * borrowed from e's mapping, *len its length in bytes (1 to 64). 0, or
 * PST_ENOSYM when e has none (or a malformed note). */
int pst__debuginfo_build_id(const struct pst__elf *e, const uint8_t **id,
                            size_t *len);

/* The .gnu_debuglink of e: the file name (borrowed, NUL-terminated, no
 * '/') and the CRC-32 of that file. 0 or PST_ENOSYM. */
int pst__debuginfo_debuglink(const struct pst__elf *e, const char **name,
                             uint32_t *crc);

/* The CRC-32 .gnu_debuglink uses (zlib's crc32, ISO 3309) of
 * [buf, buf + len). */
uint32_t pst__debuginfo_crc32(const void *buf, size_t len);

/* Finds and opens the debug file of image e (search order above). Returns
 * 0 with *out, a new pst__elf the caller closes with pst__elf_close(),
 * found (if non-NULL) filled with the path opened (as we opened it, e.g.
 * /proc/PID/root/usr/lib/debug/...) and *how (if non-NULL); -ENOENT when
 * none is found or none matches (the candidates refused are logged at
 * debug level), -ENOMEM. */
int pst__debuginfo_open(const struct pst__elf *e,
                        const struct pst__debuginfo_where *w,
                        struct pst__elf **out, char *found, size_t found_len,
                        enum pst__debuginfo_how *how);

#endif
