/* window.h: the consumer of always-on recording: thread-samples into a
 * profile per time window (the record consumer's profile, built the same
 * way), handed to a callback and dropped at the end of each window, so
 * that memory stays flat however long the run.
 *
 * Two groupings: one profile for every process (`record --rotate`: one
 * file per window), or one profile per process (`record --push`: each
 * process's profile carries its own labels). A window ends when the tick
 * after its end comes, when sampling stops, and, per process, when the
 * process ends (its part of the window is emitted then). Windows without
 * a sample are not emitted.
 *
 * Threading: runs on the engine's thread, like every consumer; emit is
 * called there too and must not block for long (serialize, then hand the
 * bytes to another thread).
 * Ownership: pst__window_consumer_new() copies the options; the profile
 * given to emit is borrowed for the call and freed after it (the window
 * consumer owns every profile). Hand the consumer to the engine as
 * {&pst__window_consumer_ops, consumer}; after pst__sampler_run() returns,
 * pst__window_consumer_free() emits nothing more (the engine's proc_end of
 * every process has emitted the last windows).
 */
#ifndef PST_CONSUMER_WINDOW_H
#define PST_CONSUMER_WINDOW_H

#include <stdint.h>

#include "consumer/record.h"
#include "profile/profile.h"
#include "sampler/sampler.h"

struct pst__window_span {
  uint64_t from_unix_ns, until_unix_ns; /* the window's bounds, wall clock */
  const struct pst__sample_proc *proc;  /* per-process grouping: its process;
                                         NULL when all are in one */
  uint64_t samples;                     /* in the profile */
};

/* 0, or -errno (counted in the consumer's emit_errors). */
typedef int (*pst__window_emit_fn)(void *arg, const struct pst__profile *prof,
                                   const struct pst__window_span *span);

struct pst__window_opts {
  uint64_t window_ns;
  uint64_t period_ns; /* the sampling period, for the profiles */
  int cpu;            /* their weights are CPU time (pst__profile_set_cpu) */
  int per_process;    /* a profile per process, else one for all */
  struct pst__record_view view;
  pst__window_emit_fn emit;
  void *arg;
};

struct pst__window_stats {
  uint64_t windows;     /* profiles emitted */
  uint64_t samples;     /* samples in them */
  uint64_t emit_errors; /* emits that failed */
};

struct pst__window_consumer;

extern const struct pst__consumer_ops pst__window_consumer_ops;

/* 0 and *out, or -ENOMEM / -EINVAL (window_ns or emit missing). */
int pst__window_consumer_new(const struct pst__window_opts *o,
                             struct pst__window_consumer **out);
void pst__window_consumer_stats(const struct pst__window_consumer *c,
                                struct pst__window_stats *st);
void pst__window_consumer_free(struct pst__window_consumer *c);

#endif
