/* writer.h: the output formats of a profile behind one ops table, and a save
 * that writes a file whole or not at all.
 *
 * Each format is a struct pst_writer_ops (folded.c, speedscope.c, chrome.c,
 * flamegraph.c, pprof.c); pst_writer_find() picks one by name for --format
 * and pst_writer_list() enumerates them for --help:
 *
 *   const struct pst_writer_ops *w = pst_writer_find("speedscope");
 *   if (!w)
 *     return usage_error();
 *   err = pst_writer_save(w, profile, "out.speedscope.json");
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

struct pst_writer_ops {
  const char *name; /* --format value, e.g. "folded" */
  const char *ext;  /* usual file name extension, with its dot */
  const char *desc; /* one line for --help */
  /* Writes the whole of p to f (opened "wb"). Returns 0 or -errno (-ENOMEM,
   * -EIO). On failure f may hold partial output: pst_writer_save() throws it
   * away. The writer does not close f; stdio errors may be left for the
   * caller to find with fflush()/ferror(). */
  int (*write)(const struct pst_profile *p, FILE *f);
};

/* The writers, in the order pst_writer_list() gives them. */
extern const struct pst_writer_ops pst_writer_folded;
extern const struct pst_writer_ops pst_writer_speedscope;
extern const struct pst_writer_ops pst_writer_chrome;
extern const struct pst_writer_ops pst_writer_flamegraph;
extern const struct pst_writer_ops pst_writer_pprof;

/* The writer called name, or else the one whose extension is name (with or
 * without the leading dot: "svg", ".pb.gz"). A static borrowed pointer, or
 * NULL when none matches. */
const struct pst_writer_ops *pst_writer_find(const char *name);

/* Every writer, as a NULL-terminated static array:
 *
 *   for (const struct pst_writer_ops *const *w = pst_writer_list(); *w; w++)
 *     printf("  %-12s %s\n", (*w)->name, (*w)->desc);
 */
const struct pst_writer_ops *const *pst_writer_list(void);

/* Writes p with w to path, atomically: the output goes to a new temporary
 * file beside path (created O_EXCL|O_NOFOLLOW, mode 0644 less the umask),
 * which is flushed, fsync()ed and renamed over path. Returns 0, or -errno
 * with path untouched and no temporary file left behind: -EISDIR when path
 * is a directory, -ENOENT when its directory does not exist, -EINVAL for a
 * NULL or empty argument, or whatever the writer, write(2), fsync(2) or
 * rename(2) failed with. An existing file at path is replaced (a symlink at
 * path is replaced by the file, not followed), and its mode is not kept. */
int pst_writer_save(const struct pst_writer_ops *w, const struct pst_profile *p,
                    const char *path);

/* ---- helpers for the writers ---- */

/* Flags of pst_writer_clean() and pst_writer_label(). Ill-formed UTF-8 is
 * always replaced by U+FFFD, so the result is valid UTF-8. */
#define PST_CLEAN_CTRL 0x1 /* control characters (C0 and DEL) become ' ' */
#define PST_CLEAN_SEMI 0x2 /* ';' becomes ':' (folded stacks' separator) */

/* A cleaned copy of s (NULL is taken as ""), owned by the caller (free()), or
 * NULL when out of memory. */
char *pst_writer_clean(const char *s, unsigned flags);

/* The label of a frame, cleaned as by pst_writer_clean(): "name (file:line)",
 * "name (file)" when line is 0, "name" for a synthetic frame (empty file).
 * Owned by the caller (free()); NULL when out of memory. */
char *pst_writer_label(const struct pst_prof_frame *fr, unsigned flags);

/* Labels of every frame of p (index = frame id), as pst_writer_label(), in
 * an array owned by the caller and freed with pst_writer_labels_free(p, ..);
 * NULL when out of memory. */
char **pst_writer_labels(const struct pst_profile *p, unsigned flags);
void pst_writer_labels_free(const struct pst_profile *p, char **labels);

/* A process's label, cleaned as with PST_CLEAN_CTRL: its command line, or
 * "pid N" when that is unknown, then its distributed labels when it has
 * any: "python train.py [rank 0/2, local_rank 0]". Owned by the caller
 * (free()); NULL when out of memory. */
char *pst_writer_proc_label(const struct pst_prof_process *pr);

/* The number of Unicode characters of the valid UTF-8 string s. */
size_t pst_writer_utf8_chars(const char *s);

#endif
