/* policy.c: the one place that turns what the user asked for into what a
 * sample reads: a struct pst_policy into pst_target_sample() flags, and
 * those flags into what this target can do (no GIL, --native, --blocking).
 * Which thread is then read is decided per thread by sample.c's decide(). */
#include "pystitch.h"
#include "target/internal.h"

int pst_policy_flags(const struct pst_policy *p) {
  int f = 0;

  if (p->blocking)
    f |= PST_SAMPLE_BLOCKING;
  if (!p->nonblocking)
    f |= PST_SAMPLE_EXACT;
  if (p->native)
    f |= PST_SAMPLE_NATIVE | (p->native > 1 ? PST_SAMPLE_NATIVE_ALL : 0);
  if (p->mode == PST_MODE_CPU)
    f |= PST_SAMPLE_ON_CPU;
  if (p->mode == PST_MODE_GIL)
    f |= PST_SAMPLE_GIL_ONLY;
  if ((p->mode == PST_MODE_WALL || p->mode == PST_MODE_EXCEPTION) && !p->states)
    f |= PST_SAMPLE_NO_ACTIVITY;
  if (p->mode == PST_MODE_EXCEPTION)
    f |= PST_SAMPLE_EXCEPTION | PST_SAMPLE_EXC_ONLY;
  if (p->exceptions)
    f |= PST_SAMPLE_EXCEPTION;
  if (!p->no_gc)
    f |= PST_SAMPLE_GC;
  if (p->native && p->full_names)
    f |= PST_SAMPLE_FULL_NAMES;
  if (p->mark_native && !p->native)
    f |= PST_SAMPLE_MARK_NATIVE;
  return f;
}

void pst_target_set_period(struct pst_target *t, uint64_t period_ns) {
  t->period_ns = period_ns;
}

void pst_target_set_stop_deadline(struct pst_target *t, uint64_t deadline_ns) {
  t->stop_deadline_ns = deadline_ns;
}

int pst__target_flags(const struct pst_target *t, int flags) {
  /* --native must skip threads in D (ptrace would wait for them) and
   * --blocking must see T and D: both need the kernel state. */
  if (flags & (PST_SAMPLE_NATIVE | PST_SAMPLE_BLOCKING))
    flags &= ~PST_SAMPLE_NO_ACTIVITY;
  /* No GIL (free-threaded): --gil keeps the threads on CPU instead; the
   * sampler said so when it attached. */
  if ((flags & PST_SAMPLE_GIL_ONLY) && t->py.lay.free_threaded)
    flags = (flags & ~(PST_SAMPLE_GIL_ONLY | PST_SAMPLE_NO_ACTIVITY)) |
            PST_SAMPLE_ON_CPU;
  /* On CPU is told by the run time: the state letter is not needed for
   * that, but the time is. */
  if (flags & PST_SAMPLE_ON_CPU)
    flags &= ~PST_SAMPLE_NO_ACTIVITY;
  return flags;
}
