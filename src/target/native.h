/* native.h: one thread's native stack merged with its Python stack
 * (`--native`): stop the thread, unwind, walk, resume, symbolise, merge.
 * In target/, not native/: it composes native/ (unwind, symbolise, merge)
 * with python/ (the walk); native/ does not include python/.
 *
 * One struct pst_native_sampler per target process: it owns the unwinder
 * (unwind.h), the strings of native frame names and modules, a
 * direct-mapped cache of symbolised instruction pointers and the buffers
 * a sample needs, so that sampling allocates nothing.
 *
 * Ownership: pst_native_sampler_new() returns a sampler freed by
 * pst_native_sampler_free(). The struct pst_mem and the interpreter path
 * are borrowed and must outlive it. Frames written by pst_native_sample()
 * point into the sampler's strings (native frames) and the code cache of
 * the struct pst_py (Python frames): valid until the sampler, or the
 * target's pst_py, is freed.
 *
 * Threads: the loop thread only (it stops threads with ptrace).
 */
#ifndef PST_TARGET_NATIVE_H
#define PST_TARGET_NATIVE_H

#include <stdint.h>
#include <sys/types.h>

#include "pystitch.h"

struct pst_mem;
struct pst_modcache;
struct pst_py;
struct pst_py_hint;
struct pst_native_sampler;

/* Creates the sampler of process pid whose interpreter's code lives in
 * interp_path (libpython, or the python executable; borrowed). cache: the
 * target's module cache (one more reference taken), or NULL for a private
 * one. 0, -ENOMEM, -ESRCH, -ENOSYS (architecture). */
int pst_native_sampler_new(pid_t pid, struct pst_mem *mem,
                           const char *interp_path, struct pst_modcache *cache,
                           struct pst_native_sampler **out);
void pst_native_sampler_free(struct pst_native_sampler *ns);

/* What one native sample is about. */
struct pst_native_req {
  pid_t tid;
  char state;               /* kernel state letter: D, T, t are refused */
  uint64_t tstate;          /* its PyThreadState, 0: native frames only */
  struct pst_py_hint *hint; /* the thread's walk hint (updated) */
  int keep_machinery;       /* --native-all: keep the interpreter's call
                               machinery frames */
  uint64_t *thread_obj;     /* where threading's Thread object goes when
                               the walk meets it, or NULL */
};

/* Stops thread r->tid (only it), reads its registers, native stack and
 * (with r->tstate) Python frames while it holds still, resumes it, then
 * merges both into out (at most max frames, innermost first). Returns the
 * frame count, or -EAGAIN (a thread in D, T or t is not stopped), or the
 * -errno of the stop or the unwind. A failed Python walk keeps the native
 * frames and is counted (pst_native_stats.python_errors). */
int pst_native_sample(struct pst_native_sampler *ns, struct pst_py *py,
                      struct pst_mem *mem, const struct pst_native_req *r,
                      struct pst_frame *out, int max, int *truncated);

/* Counters since the sampler was made. */
void pst_native_sampler_stats(const struct pst_native_sampler *ns,
                              struct pst_native_stats *out);

#endif
