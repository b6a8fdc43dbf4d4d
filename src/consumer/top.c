/* top.c: the top consumer: thread-samples counted by function (or line),
 * own and total, per interval and since the start; the threads seen. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "consumer/top.h"
#include "util/array.h"
#include "util/hash.h"

/* A function (or line): counters of the interval (_i) and since start. */
struct ent {
  char *name, *file;
  int line;
  uint32_t stamp; /* the sample that last counted it in total */
  uint64_t own_i, total_i, own_ns_i, total_ns_i;
  uint64_t own_a, total_a, own_ns_a, total_ns_a;
  uint64_t own_p, total_p, own_ns_p, total_ns_p; /* the last whole one */
};

struct key {
  const char *name, *file;
  int line;
};

struct pst__top {
  int by_line;
  struct ent *e;
  size_t ne, cap;
  struct pst__hash ids;
  uint32_t stamp;
  uint64_t samples_i, samples_a, samples_p; /* thread-samples, a stack */
  struct pst__top_thread *th;
  size_t nth, thcap;
  uint64_t gil_i; /* samples holding the GIL, this interval */
  struct pst__top_proc *procs;
  size_t nprocs, proccap;
  struct pst__top_row *rows; /* what pst__top_table() returned */
  size_t rowcap;
  pid_t filter_pid, filter_tid; /* pst__top_set_filter() */
};

int pst__top_new(int by_line, struct pst__top **out) {
  struct pst__top *t = calloc(1, sizeof(*t));

  if (!t)
    return -ENOMEM;
  t->by_line = by_line;
  *out = t;
  return 0;
}

void pst__top_free(struct pst__top *t) {
  if (!t)
    return;
  for (size_t i = 0; i < t->ne; i++) {
    free(t->e[i].name);
    free(t->e[i].file);
  }
  free(t->e);
  pst__hash_exit(&t->ids);
  free(t->th);
  free(t->procs);
  free(t->rows);
  free(t);
}

static int ent_eq(const void *ctx, uint32_t id, const void *key) {
  const struct ent *e = &((const struct pst__top *)ctx)->e[id];
  const struct key *k = key;

  return e->line == k->line && !strcmp(e->name, k->name) &&
         !strcmp(e->file, k->file);
}

/* The entry of frame f: its id, or -ENOMEM. */
static int64_t ent_of(struct pst__top *t, const struct pst_frame *f) {
  struct key k = {f->name ? f->name : "?", f->filename ? f->filename : "",
                  t->by_line ? f->line : 0};
  uint64_t h =
      pst__hash_mix(pst__hash_mix(pst__hash_str(k.name), pst__hash_str(k.file)),
                    (uint64_t)(unsigned)k.line);
  int64_t id = pst__hash_find(&t->ids, h, ent_eq, t, &k);
  struct ent *e;

  if (id >= 0)
    return id;
  if (t->ne >= UINT32_MAX - 1 ||
      pst__array_reserve((void **)&t->e, &t->cap, t->ne + 1, sizeof(*t->e)))
    return -ENOMEM;
  e = &t->e[t->ne];
  memset(e, 0, sizeof(*e));
  e->name = strdup(k.name);
  e->file = strdup(k.file);
  e->line = k.line;
  if (!e->name || !e->file || pst__hash_insert(&t->ids, h, (uint32_t)t->ne)) {
    free(e->name);
    free(e->file);
    return -ENOMEM;
  }
  return (int64_t)t->ne++;
}

static struct pst__top_thread *thread_of(struct pst__top *t, pid_t pid,
                                         pid_t tid) {
  struct pst__top_thread *x;

  for (size_t i = 0; i < t->nth; i++)
    if (t->th[i].tid == tid && t->th[i].pid == pid)
      return &t->th[i];
  if (pst__array_reserve((void **)&t->th, &t->thcap, t->nth + 1,
                         sizeof(*t->th)))
    return NULL;
  x = &t->th[t->nth++];
  memset(x, 0, sizeof(*x));
  x->pid = pid;
  x->tid = tid;
  x->holds_gil = -1;
  return x;
}

static int top_sample(void *ctx, const struct pst__sample *s) {
  struct pst__top *t = ctx;
  const struct pst_thread *th = s->thread;
  struct pst__top_thread *x = thread_of(t, s->proc->pid, th->tid);
  int counted;

  if (!x)
    return -ENOMEM;
  snprintf(x->name, sizeof(x->name), "%s", th->name);
  x->state = th->state;
  x->holds_gil = th->holds_gil;
  t->gil_i += th->holds_gil == 1;
  if (s->kind == PST_SK_IDLE) {
    x->idle++;
    return 0;
  }
  if (s->kind == PST_SK_ERROR) {
    x->errors++;
    return 0;
  }
  x->active++;
  x->running += !th->idle;
  x->stack_ns = s->t_ns ? s->t_ns : 1;
  x->nstack = 0;
  x->stack_truncated = th->truncated || th->nframes > PST_TOP_STACK_MAX;
  counted = (!t->filter_pid || t->filter_pid == s->proc->pid) &&
            (!t->filter_tid || t->filter_tid == th->tid);
  t->samples_i += counted;
  t->stamp++;
  for (size_t i = 0; i < th->nframes; i++) {
    int64_t id = ent_of(t, &th->frames[i]);
    struct ent *e;
    if (id < 0)
      return (int)id;
    e = &t->e[id];
    if (i < PST_TOP_STACK_MAX) {
      x->stack[i].ent = (uint32_t)id;
      x->stack[i].line = th->frames[i].line;
      x->nstack = (uint32_t)i + 1;
    }
    if (i == 0)
      x->top = e->name;
    if (!counted)
      continue;
    if (i == 0) {
      e->own_i++;
      e->own_ns_i += s->weight_ns;
    }
    if (e->stamp != t->stamp) { /* recursion counts once */
      e->stamp = t->stamp;
      e->total_i++;
      e->total_ns_i += s->weight_ns;
    }
  }
  return 0;
}

static int top_proc_begin(void *ctx, const struct pst__sample_proc *p,
                          void **proc_data) {
  struct pst__top *t = ctx;
  struct pst__top_proc *x = NULL;

  (void)proc_data;
  for (size_t i = 0; i < t->nprocs && !x; i++)
    if (t->procs[i].pid == p->pid)
      x = &t->procs[i]; /* again, after an exec */
  if (!x) {
    if (pst__array_reserve((void **)&t->procs, &t->proccap, t->nprocs + 1,
                           sizeof(*t->procs)))
      return -ENOMEM;
    x = &t->procs[t->nprocs++];
  }
  memset(x, 0, sizeof(*x));
  x->pid = p->pid;
  snprintf(x->cmdline, sizeof(x->cmdline), "%s", p->cmdline);
  snprintf(x->version, sizeof(x->version), "%s",
           p->info ? p->info->version : "?");
  x->free_threaded = p->info && p->info->free_threaded;
  x->rank = p->rank;
  x->local_rank = p->local_rank;
  x->world_size = p->world_size;
  return 0;
}

static void top_proc_end(void *ctx, const struct pst__sample_proc *p,
                         void *proc_data) {
  struct pst__top *t = ctx;

  (void)proc_data;
  for (size_t i = 0; i < t->nprocs; i++)
    if (t->procs[i].pid == p->pid)
      t->procs[i].ended = 1;
}

const struct pst__top_proc *pst__top_procs(const struct pst__top *t,
                                           size_t *n) {
  *n = t->nprocs;
  return t->procs;
}

uint64_t pst__top_gil_samples(const struct pst__top *t) { return t->gil_i; }

const struct pst__consumer_ops pst__top_consumer_ops = {
    .name = "top",
    .proc_begin = top_proc_begin,
    .proc_end = top_proc_end,
    .sample = top_sample,
};

void pst__top_roll(struct pst__top *t) {
  size_t j = 0;

  for (size_t i = 0; i < t->ne; i++) {
    struct ent *e = &t->e[i];
    e->own_p = e->own_i;
    e->total_p = e->total_i;
    e->own_ns_p = e->own_ns_i;
    e->total_ns_p = e->total_ns_i;
    e->own_a += e->own_i;
    e->total_a += e->total_i;
    e->own_ns_a += e->own_ns_i;
    e->total_ns_a += e->total_ns_i;
    e->own_i = e->total_i = e->own_ns_i = e->total_ns_i = 0;
  }
  t->samples_a += t->samples_i;
  t->samples_p = t->samples_i;
  t->samples_i = 0;
  t->gil_i = 0;
  /* Threads not seen for a whole interval have ended (or their process
   * has): they leave the pane. */
  for (size_t i = 0; i < t->nth; i++) {
    struct pst__top_thread *x = &t->th[i];
    if (!x->active && !x->idle && !x->errors)
      continue;
    x->active_p = x->active;
    x->idle_p = x->idle;
    x->active = x->idle = x->errors = x->running = 0;
    t->th[j++] = *x;
  }
  t->nth = j;
}

static enum pst__top_sort sort_by;

static uint64_t sort_key(const struct pst__top_row *r) {
  switch (sort_by) {
  case PST_TOP_TOTAL:
    return r->total;
  case PST_TOP_OWN_TIME:
    return r->own_ns;
  case PST_TOP_TOTAL_TIME:
    return r->total_ns;
  default:
    return r->own;
  }
}

static int row_cmp(const void *a, const void *b) {
  const struct pst__top_row *x = a, *y = b;
  uint64_t kx = sort_key(x), ky = sort_key(y);
  int c;

  if (kx != ky)
    return kx < ky ? 1 : -1;
  if (x->total != y->total)
    return x->total < y->total ? 1 : -1;
  c = strcmp(x->name, y->name);
  return c ? c : x->line - y->line;
}

size_t pst__top_table(struct pst__top *t, enum pst__top_window w,
                      enum pst__top_sort by, struct pst__top_row *rows,
                      size_t max, uint64_t *samples) {
  size_t n = 0;

  *samples = w == PST_TOP_ALL    ? t->samples_a + t->samples_i
             : w == PST_TOP_LAST ? t->samples_p
                                 : t->samples_i;
  if (pst__array_reserve((void **)&t->rows, &t->rowcap, t->ne + 1,
                         sizeof(*t->rows)))
    return 0;
  for (size_t i = 0; i < t->ne; i++) {
    const struct ent *e = &t->e[i];
    struct pst__top_row *r = &t->rows[n];
    r->name = e->name;
    r->file = e->file;
    r->line = e->line;
    if (w == PST_TOP_LAST) {
      r->own = e->own_p;
      r->total = e->total_p;
      r->own_ns = e->own_ns_p;
      r->total_ns = e->total_ns_p;
    } else {
      int all = w == PST_TOP_ALL;
      r->own = e->own_i + (all ? e->own_a : 0);
      r->total = e->total_i + (all ? e->total_a : 0);
      r->own_ns = e->own_ns_i + (all ? e->own_ns_a : 0);
      r->total_ns = e->total_ns_i + (all ? e->total_ns_a : 0);
    }
    n += r->total > 0;
  }
  sort_by = by;
  qsort(t->rows, n, sizeof(*t->rows), row_cmp);
  memcpy(rows, t->rows, (n < max ? n : max) * sizeof(*rows));
  return n;
}

void pst__top_set_filter(struct pst__top *t, pid_t pid, pid_t tid) {
  if (t->filter_pid == pid && t->filter_tid == tid)
    return;
  t->filter_pid = pid;
  t->filter_tid = tid;
  for (size_t i = 0; i < t->ne; i++) {
    struct ent *e = &t->e[i];
    e->own_i = e->total_i = e->own_ns_i = e->total_ns_i = 0;
    e->own_a = e->total_a = e->own_ns_a = e->total_ns_a = 0;
    e->own_p = e->total_p = e->own_ns_p = e->total_ns_p = 0;
  }
  t->samples_i = t->samples_a = t->samples_p = 0;
}

size_t pst__top_stack(const struct pst__top *t, const struct pst__top_thread *x,
                      struct pst__top_frame *out, size_t max) {
  size_t n = x->nstack < max ? x->nstack : max;

  for (size_t i = 0; i < n; i++) {
    const struct ent *e = &t->e[x->stack[i].ent];
    out[i] = (struct pst__top_frame){e->name, e->file, x->stack[i].line};
  }
  return x->nstack;
}

const struct pst__top_thread *pst__top_threads(const struct pst__top *t,
                                               size_t *n) {
  *n = t->nth;
  return t->th;
}
