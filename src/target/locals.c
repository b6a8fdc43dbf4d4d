/* locals.c: pst_target_locals(): one thread's Python stack read again with
 * the thread stopped, with every frame's local variables (python/locals.c
 * reads them), for `dump --locals`. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proc/ptrace.h"
#include "target/internal.h"

#define LOCALS_MAX 4096 /* locals of one thread read at most, all frames */

/* The buffers, once: frames, per-frame entries and the locals' texts. */
static int buffers(struct pst_target *t) {
  if (t->loc_frames)
    return 0;
  t->loc_frames = calloc(PST_TARGET_FRAMES_MAX, sizeof(*t->loc_frames));
  t->loc_per_frame = calloc(PST_TARGET_FRAMES_MAX, sizeof(*t->loc_per_frame));
  t->loc_vars = calloc(LOCALS_MAX, sizeof(*t->loc_vars));
  t->loc_text = calloc(LOCALS_MAX, sizeof(*t->loc_text));
  if (t->loc_frames && t->loc_per_frame && t->loc_vars && t->loc_text)
    return 0;
  free(t->loc_frames);
  free(t->loc_per_frame);
  free(t->loc_vars);
  free(t->loc_text);
  t->loc_frames = NULL;
  t->loc_per_frame = NULL;
  t->loc_vars = NULL;
  t->loc_text = NULL;
  return -ENOMEM;
}

int pst_target_locals(struct pst_target *t, pid_t tid,
                      const struct pst_thread **th,
                      const struct pst_frame_locals **locals) {
  struct pst__tthread *x = NULL;
  struct pst_thread *out = &t->loc_thread;
  uint64_t top[2];
  int n, stopped = 0, used = 0;

  for (size_t i = 0; i < t->nthreads && !x; i++)
    if (t->threads[i].th.tid == tid)
      x = &t->threads[i];
  if (!x || !x->th.tstate)
    return -ENOENT;
  n = buffers(t);
  if (n)
    return n;
  *out = x->th;
  out->frames = t->loc_frames;
  out->nframes = 0;
  out->error = 0;
  /* Stopped, so that every local is read at one instant with its stack
   * (a thread in D or T holds still without it). */
  if (pst__tthread_may_stop(x->th.state) && pst__ptrace_stop(tid) == 0)
    stopped = 1;
  n = pst__py_walk(&t->py, &t->mem, x->th.tstate, &x->hint, NULL, t->loc_frames,
                   PST_TARGET_FRAMES_MAX, &out->truncated, NULL, top);
  for (int k = 0; k < n; k++) {
    struct pst_frame_locals *fl = &t->loc_per_frame[k];
    uint64_t frame, code;
    int got = -EINVAL;
    fl->n = fl->total = 0;
    fl->vars = t->loc_vars + used;
    if (pst__py_walked_frame(&t->py, k, n, &frame, &code) == 0)
      got = pst__py_frame_locals(
          &t->py, &t->mem, frame, code, t->loc_text + used,
          LOCALS_MAX - used < PST_PY_LOCALS_MAX ? LOCALS_MAX - used
                                                : PST_PY_LOCALS_MAX,
          &fl->total);
    if (got == -ENOSYS) {
      n = got;
      break;
    }
    for (int j = 0; j < got; j++)
      t->loc_vars[used + j] = (struct pst_local){t->loc_text[used + j].name,
                                                 t->loc_text[used + j].value};
    fl->n = got > 0 ? got : 0;
    used += fl->n;
  }
  if (stopped)
    pst__ptrace_resume(tid);
  if (n < 0) {
    out->error = n;
    return n;
  }
  out->nframes = (size_t)n;
  *th = out;
  *locals = t->loc_per_frame;
  return n;
}
