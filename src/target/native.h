/* native.h: one thread's native stack merged with its Python stack
 * (`--native`): stop the thread, unwind, walk, resume, symbolise, merge.
 * In target/, not native/: it composes native/ (unwind, symbolise, merge)
 * with python/ (the walk); native/ does not include python/.
 *
 * One struct pst__native_sampler per target process: it owns the unwinder
 * (unwind.h), the strings of native frame names and modules, a
 * direct-mapped cache of symbolised instruction pointers and the buffers
 * a sample needs, so that sampling allocates nothing.
 *
 * Ownership: pst__native_sampler_new() returns a sampler freed by
 * pst__native_sampler_free(). The struct pst__mem and the interpreter path
 * are borrowed and must outlive it. Frames written by pst__native_sample()
 * point into the sampler's strings (native frames) and the code cache of
 * the struct pst__py (Python frames): valid until the sampler, or the
 * target's pst__py, is freed.
 *
 * Threads: the loop thread only (it stops threads with ptrace).
 */
#ifndef PST_TARGET_NATIVE_H
#define PST_TARGET_NATIVE_H

#include <stdint.h>
#include <sys/types.h>

#include "pystitch.h"

struct pst__mem;
struct pst__modcache;
struct pst__py;
struct pst__py_hint;
struct pst__native_sampler;

/* Creates the sampler of process pid whose interpreter's code lives in
 * interp_path (libpython, or the python executable; borrowed). cache: the
 * target's module cache (one more reference taken), or NULL for a private
 * one. 0, -ENOMEM, -ESRCH, -ENOSYS (architecture). */
int pst__native_sampler_new(pid_t pid, struct pst__mem *mem,
                            const char *interp_path,
                            struct pst__modcache *cache,
                            struct pst__native_sampler **out);
void pst__native_sampler_free(struct pst__native_sampler *ns);

/* What one native sample is about. */
struct pst__native_req {
  pid_t tid;
  char state;                /* kernel state letter: D, T, t are refused */
  uint64_t tstate;           /* its PyThreadState, 0: native frames only */
  struct pst__py_hint *hint; /* the thread's walk hint (updated) */
  int keep_machinery;        /* --native-all: keep the interpreter's call
                               machinery frames */
  uint64_t *thread_obj;      /* where threading's Thread object goes when
                               the walk meets it, or NULL */
  int full_names;            /* C++ names whole, not their short form
                               (native/cxxname.h) */
  pid_t pid;                 /* its process */
  int schedfd;               /* its open schedstat, or -1 */
  int *sysfd;                /* its syscall file: opened here at first use
                                (-1 until then), or NULL: always stopped */
};

/* Stops thread r->tid (only it), reads its registers, native stack and
 * (with r->tstate) Python frames while it holds still, resumes it, then
 * merges both into out (at most max frames, innermost first). Returns the
 * frame count, or -EAGAIN (a thread in D, T or t is not stopped), or the
 * -errno of the stop or the unwind. A failed Python walk keeps the native
 * frames and is counted (pst_native_stats.python_errors). */
int pst__native_sample(struct pst__native_sampler *ns, struct pst__py *py,
                       struct pst__mem *mem, const struct pst__native_req *r,
                       struct pst_frame *out, int max, int *truncated);

/* Counters since the sampler was made. */
void pst__native_sampler_stats(const struct pst__native_sampler *ns,
                               struct pst_native_stats *out);

#endif
