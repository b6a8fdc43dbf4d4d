/* window.c: the windowed record consumer: a fresh profile per window (one
 * for all processes, or one per process), emitted and dropped at its end. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "consumer/window.h"
#include "util/clock.h"

/* A profile being filled, with the record consumer that fills it. */
struct slot {
  struct pst__profile *prof;
  struct pst__record_consumer *rc;
  uint64_t t0_ns;   /* engine time at its start: samples are rebased */
  uint64_t from_ns; /* wall clock at its start */
  int users;        /* processes feeding it */
};

/* A process being sampled: which slot it feeds, and the record
 * consumer's data for it. */
struct wproc {
  const struct pst__sample_proc *p;
  struct slot *slot;
  void *rec;
};

struct pst__window_consumer {
  struct pst__window_opts o;
  struct pst__window_stats st;
  struct slot *shared; /* one for all, when not per process */
  struct wproc **procs;
  size_t nprocs;
  uint64_t now_t;     /* the last tick's engine time */
  uint64_t next_roll; /* engine time at which the windows end */
};

static void slot_drop(struct slot *s) {
  if (!s)
    return;
  pst__record_consumer_free(s->rc);
  pst__profile_free(s->prof);
  s->rc = NULL;
  s->prof = NULL;
}

/* A new profile in s. 0 or -ENOMEM. */
static int slot_fill(struct pst__window_consumer *c, struct slot *s) {
  s->prof = pst__profile_new(c->o.period_ns);
  if (s->prof)
    pst__profile_set_cpu(s->prof, c->o.cpu);
  if (!s->prof || pst__record_consumer_new(s->prof, &c->o.view, &s->rc)) {
    slot_drop(s);
    return -ENOMEM;
  }
  s->t0_ns = c->now_t;
  s->from_ns = pst__profile_start_unix_ns(s->prof);
  return 0;
}

/* Emits s's profile when it has samples (proc: its process, or NULL). */
static void slot_emit(struct pst__window_consumer *c, struct slot *s,
                      const struct pst__sample_proc *proc) {
  struct pst__window_span span;

  if (!s->prof || !pst__profile_samples(s->prof))
    return;
  span = (struct pst__window_span){.from_unix_ns = s->from_ns,
                                   .until_unix_ns = pst__wall_ns(),
                                   .proc = proc,
                                   .samples = pst__profile_samples(s->prof)};
  if (c->o.emit(c->o.arg, s->prof, &span) < 0) {
    c->st.emit_errors++;
    return;
  }
  c->st.windows++;
  c->st.samples += span.samples;
}

/* Ends slot s's window: emits it, and starts the next with every process
 * that feeds it registered again. A process that cannot be (ENOMEM) loses
 * its samples until the next window. */
static void slot_roll(struct pst__window_consumer *c, struct slot *s,
                      const struct pst__sample_proc *proc) {
  slot_emit(c, s, proc);
  for (size_t i = 0; i < c->nprocs; i++) {
    struct wproc *w = c->procs[i];
    if (w->slot == s && w->rec)
      pst__record_consumer_ops.proc_end(s->rc, w->p, w->rec);
    if (w->slot == s)
      w->rec = NULL;
  }
  slot_drop(s);
  if (slot_fill(c, s))
    return;
  for (size_t i = 0; i < c->nprocs; i++) {
    struct wproc *w = c->procs[i];
    if (w->slot == s &&
        pst__record_consumer_ops.proc_begin(s->rc, w->p, &w->rec) < 0)
      w->rec = NULL;
  }
}

int pst__window_consumer_new(const struct pst__window_opts *o,
                             struct pst__window_consumer **out) {
  struct pst__window_consumer *c;

  if (!o->window_ns || !o->emit)
    return -EINVAL;
  c = calloc(1, sizeof(*c));
  if (!c)
    return -ENOMEM;
  c->o = *o;
  c->next_roll = o->window_ns;
  *out = c;
  return 0;
}

void pst__window_consumer_stats(const struct pst__window_consumer *c,
                                struct pst__window_stats *st) {
  *st = c->st;
}

void pst__window_consumer_free(struct pst__window_consumer *c) {
  if (!c)
    return;
  for (size_t i = 0; i < c->nprocs; i++) {
    struct wproc *w = c->procs[i];
    if (w->rec && w->slot->rc)
      pst__record_consumer_ops.proc_end(w->slot->rc, w->p, w->rec);
    if (w->slot != c->shared) {
      slot_drop(w->slot);
      free(w->slot);
    }
    free(w);
  }
  free(c->procs);
  slot_drop(c->shared);
  free(c->shared);
  free(c);
}

static int proc_begin(void *ctx, const struct pst__sample_proc *p,
                      void **data) {
  struct pst__window_consumer *c = ctx;
  struct wproc *w, **np;
  struct slot *s;

  np = realloc(c->procs, (c->nprocs + 1) * sizeof(*np));
  if (!np)
    return -ENOMEM;
  c->procs = np;
  w = calloc(1, sizeof(*w));
  if (!w)
    return -ENOMEM;
  s = c->o.per_process ? NULL : c->shared;
  if (!s) {
    s = calloc(1, sizeof(*s));
    if (!s || slot_fill(c, s)) {
      free(s);
      free(w);
      return -ENOMEM;
    }
    if (!c->o.per_process)
      c->shared = s;
  } else if (!s->prof && slot_fill(c, s)) {
    free(w);
    return -ENOMEM;
  }
  w->p = p;
  w->slot = s;
  if (pst__record_consumer_ops.proc_begin(s->rc, p, &w->rec) < 0) {
    if (c->o.per_process) {
      slot_drop(s);
      free(s);
    }
    free(w);
    return -ENOMEM;
  }
  s->users++;
  c->procs[c->nprocs++] = w;
  *data = w;
  return 0;
}

static void proc_end(void *ctx, const struct pst__sample_proc *p, void *data) {
  struct pst__window_consumer *c = ctx;
  struct wproc *w = data;
  struct slot *s = w->slot;

  /* Its samples so far: its own window now, or, in the shared one, with
   * the others' (emitted now when it was the last). */
  if (c->o.per_process || s->users == 1)
    slot_emit(c, s, c->o.per_process ? p : NULL);
  if (w->rec)
    pst__record_consumer_ops.proc_end(s->rc, p, w->rec);
  for (size_t i = 0; i < c->nprocs; i++)
    if (c->procs[i] == w) {
      c->procs[i] = c->procs[--c->nprocs];
      break;
    }
  s->users--;
  if (c->o.per_process) {
    slot_drop(s);
    free(s);
  } else if (!s->users) {
    slot_drop(s); /* a process begun later starts a new window */
  }
  free(w);
}

static int sample(void *ctx, const struct pst__sample *s) {
  struct wproc *w = s->proc_data;
  struct pst__sample rebased;

  (void)ctx;
  if (!w->rec)
    return s->kind == PST_SK_STACK ? -ENOMEM : 0;
  rebased = *s;
  rebased.proc_data = w->rec;
  rebased.t_ns = s->t_ns > w->slot->t0_ns ? s->t_ns - w->slot->t0_ns : 0;
  return pst__record_consumer_ops.sample(w->slot->rc, &rebased);
}

static int tick(void *ctx, uint64_t t_ns, const struct pst__sampler_stats *st) {
  struct pst__window_consumer *c = ctx;

  (void)st;
  c->now_t = t_ns;
  if (t_ns < c->next_roll)
    return 0;
  /* The next end one window on (or from now, after a stall). */
  c->next_roll += c->o.window_ns;
  if (c->next_roll <= t_ns)
    c->next_roll = t_ns + c->o.window_ns;
  if (!c->o.per_process) {
    if (c->shared && c->shared->prof)
      slot_roll(c, c->shared, NULL);
    return 0;
  }
  for (size_t i = 0; i < c->nprocs; i++)
    slot_roll(c, c->procs[i]->slot, c->procs[i]->p);
  return 0;
}

const struct pst__consumer_ops pst__window_consumer_ops = {
    .name = "window",
    .proc_begin = proc_begin,
    .proc_end = proc_end,
    .sample = sample,
    .tick = tick,
};
