/* writer.h: the output formats of a profile behind one ops table, and a save
 * that writes a file whole or not at all.
 *
 * Each format is a struct pst__writer_ops (folded.c, speedscope.c, chrome.c,
 * flamegraph.c, pprof.c); pst__writer_find() picks one by name for --format
 * and pst__writer_list() enumerates them for --help:
 *
 *   const struct pst__writer_ops *w = pst__writer_find("speedscope");
 *   if (!w)
 *     return usage_error();
 *   err = pst__writer_save(w, profile, "out.speedscope.json");
 *
 * Writers only read the profile (see profile/profile.h) and write to the
 * stream they are given; they never print anything else. They may run on a
 * worker thread (no shared mutable state), but not on the same profile while
 * it is being added to.
 *
 * The bottom of this header holds helpers shared by the writers.
 */
#ifndef PST_WRITER_H
#define PST_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"

struct pst__writer_ops {
  const char *name; /* --format value, e.g. "folded" */
  const char *ext;  /* usual file name extension, with its dot */
  const char *desc; /* one line for --help */
  /* Writes the whole of p to f (opened "wb"). Returns 0 or -errno (-ENOMEM,
   * -EIO). On failure f may hold partial output: pst__writer_save() throws it
   * away. The writer does not close f; stdio errors may be left for the
   * caller to find with fflush()/ferror(). */
  int (*write)(const struct pst__profile *p, FILE *f);
};

/* The writers, in the order pst__writer_list() gives them. */
extern const struct pst__writer_ops pst__writer_folded;
extern const struct pst__writer_ops pst__writer_speedscope;
extern const struct pst__writer_ops pst__writer_chrome;
extern const struct pst__writer_ops pst__writer_flamegraph;
extern const struct pst__writer_ops pst__writer_pprof;

/* The writer called name, or else the one whose extension is name (with or
 * without the leading dot: "svg", ".pb.gz"). A static borrowed pointer, or
 * NULL when none matches. */
const struct pst__writer_ops *pst__writer_find(const char *name);

/* Every writer, as a NULL-terminated static array:
 *
 *   for (const struct pst__writer_ops *const *w = pst__writer_list(); *w; w++)
 *     printf("  %-12s %s\n", (*w)->name, (*w)->desc);
 */
const struct pst__writer_ops *const *pst__writer_list(void);

/* Where a profile goes: the rule of -o.
 *
 *   "-", /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N
 *       pystitch's own descriptor 1, 2 or N (duplicated: no path lookup).
 *   a FIFO, character or block device or socket at the path itself (seen
 *   with lstat, not through a link)
 *       written into as it is: opened O_WRONLY|O_NOFOLLOW|O_NOCTTY and
 *       O_NONBLOCK (a FIFO without a reader fails with -ENXIO at once,
 *       never hangs), checked to be the very file looked at; refused with
 *       -EPERM when the directory lets others create entries (group or
 *       world writable, like /tmp) and the file is owned by neither us nor
 *       the directory's owner: another user may have planted it.
 *   anything else (nothing, a regular file, a symlink to anything)
 *       replaced: the output goes to a new temporary file beside path
 *       (created O_CREAT|O_EXCL|O_NOFOLLOW, mode 0644 less the umask),
 *       which is flushed, fsync()ed and renamed over path. A link is
 *       replaced, never followed; the old file's mode is not kept.
 */
enum pst__writer_kind {
  PST_WRITER_FILE = 0,    /* temporary file renamed over the path */
  PST_WRITER_OWN_FD = 1,  /* one of our descriptors, named */
  PST_WRITER_SPECIAL = 2, /* a FIFO, device or socket at the path */
};

/* The descriptor path names by the rule above ("-" and /dev/stdout give
 * 1), or -1 when it names none. Pure: nothing is looked up. */
int pst__writer_own_fd(const char *path);

/* The directory holding path ("." or "/" when that is all), malloc()ed
 * (the caller frees it), or NULL when out of memory. */
char *pst__writer_dir_of(const char *path);

/* Which way pst__writer_save() would write path, checked without writing
 * or creating anything: a pst__writer_kind, or -errno: -EISDIR (path is a
 * directory), -ENOENT or -ENOTDIR (its directory is missing), -EBADF (a
 * descriptor named that is not open for writing), -EPERM (a special file
 * that may have been planted, see above), -EINVAL (empty path). Whether
 * the directory is writable is not checked. */
int pst__writer_where(const char *path);

/* Writes p with w to path by the rule above; a file is written whole or
 * not at all. Returns 0, or -errno with path untouched and no temporary
 * file left behind: those of pst__writer_where(), -ENXIO (a FIFO nobody
 * reads, or a socket), -ESTALE (the special file was swapped while it
 * was opened), or whatever the writer, write(2), fsync(2) or rename(2)
 * failed with. */
int pst__writer_save(const struct pst__writer_ops *w,
                     const struct pst__profile *p, const char *path);

/* ---- helpers for the writers ---- */

/* Flags of pst__writer_clean() and pst__writer_label(). Ill-formed UTF-8 is
 * always replaced by U+FFFD, so the result is valid UTF-8. */
#define PST_CLEAN_CTRL 0x1 /* control characters (C0 and DEL) become ' ' */
#define PST_CLEAN_SEMI 0x2 /* ';' becomes ':' (folded stacks' separator) */

/* A cleaned copy of s (NULL is taken as ""), owned by the caller (free()), or
 * NULL when out of memory. */
char *pst__writer_clean(const char *s, unsigned flags);

/* The label of a frame, cleaned as by pst__writer_clean(): "name (file:line)",
 * "name (file)" when line is 0, "name" for a synthetic frame (empty file).
 * Owned by the caller (free()); NULL when out of memory. */
char *pst__writer_label(const struct pst__prof_frame *fr, unsigned flags);

/* Labels of every frame of p (index = frame id), as pst__writer_label(), in
 * an array owned by the caller and freed with pst__writer_labels_free(p, ..);
 * NULL when out of memory. */
char **pst__writer_labels(const struct pst__profile *p, unsigned flags);
void pst__writer_labels_free(const struct pst__profile *p, char **labels);

/* A process's label, cleaned as with PST_CLEAN_CTRL: its command line, or
 * "pid N" when that is unknown, then its distributed labels when it has
 * any: "python train.py [rank 0/2, local_rank 0]". Owned by the caller
 * (free()); NULL when out of memory. */
char *pst__writer_proc_label(const struct pst__prof_process *pr);

/* The number of Unicode characters of the valid UTF-8 string s. */
size_t pst__writer_utf8_chars(const char *s);

#endif
