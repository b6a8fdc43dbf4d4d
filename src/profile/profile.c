/* profile.c: frames and stacks deduplicated by hash, samples kept as
 * per-thread runs (see profile.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/array.h"
#include "util/clock.h"
#include "util/hash.h"
#include "util/strtab.h"

struct thread_runs {
  struct pst__prof_thread t;
  struct pst__prof_run *runs;
  size_t n, cap;
};

struct pst__profile {
  uint64_t period_ns, start_unix_ns, samples;
  int cpu;     /* weights are CPU time (else wall time) */
  int periods; /* a sample counts the whole periods of its weight */
  struct pst__strtab *strings;
  struct pst__prof_frame *frames;
  size_t nframes, frames_cap;
  struct pst__hash frame_ids; /* frame hash -> frame id */
  uint32_t *stack_data;       /* all stacks' frame ids, concatenated */
  size_t stack_data_n, stack_data_cap;
  size_t *stack_off; /* stack i: stack_data[off[i] .. off[i+1]) */
  size_t nstacks, stacks_cap;
  struct pst__hash stack_ids; /* stack hash -> stack id */
  struct pst__prof_process *procs;
  size_t nprocs;
  struct thread_runs *threads;
  size_t nthreads, threads_cap;
  struct pst__hash thread_ids; /* (process, tid) -> thread (5000 threads:
                                  a scan per new thread was 12M steps) */
};

/* ---- frames ---- */

static uint64_t frame_hash(const struct pst__prof_frame *f) {
  /* Strings are interned: their addresses identify them. */
  return pst__hash_mix(
      pst__hash_mix(pst__hash_u64((uintptr_t)f->name), (uintptr_t)f->file),
      (uint64_t)f->line);
}

static int frame_eq(const void *ctx, uint32_t id, const void *key) {
  const struct pst__profile *p = ctx;
  const struct pst__prof_frame *a = &p->frames[id], *b = key;
  return a->name == b->name && a->file == b->file && a->line == b->line;
}

static int64_t frame_id(struct pst__profile *p,
                        const struct pst__prof_frame *in, int interned) {
  struct pst__prof_frame f;
  uint64_t h;
  int64_t id;

  if (interned) {
    f = *in;
  } else {
    f.name = pst__strtab_intern(p->strings, in->name ? in->name : "?");
    f.file = pst__strtab_intern(p->strings, in->file ? in->file : "");
    f.line = in->line;
  }
  if (!f.name || !f.file)
    return -ENOMEM;
  h = frame_hash(&f);
  id = pst__hash_find(&p->frame_ids, h, frame_eq, p, &f);
  if (id >= 0)
    return id;
  if (pst__array_reserve((void **)&p->frames, &p->frames_cap, p->nframes + 1,
                         sizeof(*p->frames)) ||
      pst__hash_insert(&p->frame_ids, h, (uint32_t)p->nframes))
    return -ENOMEM;
  p->frames[p->nframes] = f;
  return (int64_t)p->nframes++;
}

/* ---- stacks ---- */

struct stack_key {
  const uint32_t *ids;
  size_t n;
};

static uint64_t ids_hash(const uint32_t *ids, size_t n) {
  uint64_t h = n;
  for (size_t i = 0; i < n; i++)
    h = pst__hash_mix(h, ids[i]);
  return h;
}

static int stack_eq(const void *ctx, uint32_t id, const void *key) {
  const struct pst__profile *p = ctx;
  const struct stack_key *k = key;
  size_t n = p->stack_off[id + 1] - p->stack_off[id];
  return n == k->n &&
         !memcmp(p->stack_data + p->stack_off[id], k->ids, n * sizeof(*k->ids));
}

static int64_t stack_id(struct pst__profile *p, const uint32_t *ids, size_t n) {
  struct stack_key k = {ids, n};
  uint64_t h = ids_hash(ids, n);
  int64_t id = pst__hash_find(&p->stack_ids, h, stack_eq, p, &k);

  if (id >= 0)
    return id;
  if (pst__array_reserve((void **)&p->stack_data, &p->stack_data_cap,
                         p->stack_data_n + n, sizeof(*p->stack_data)) ||
      pst__array_reserve((void **)&p->stack_off, &p->stacks_cap, p->nstacks + 2,
                         sizeof(*p->stack_off)) ||
      pst__hash_insert(&p->stack_ids, h, (uint32_t)p->nstacks))
    return -ENOMEM;
  memcpy(p->stack_data + p->stack_data_n, ids, n * sizeof(*ids));
  p->stack_data_n += n;
  p->stack_off[p->nstacks + 1] = p->stack_data_n;
  return (int64_t)p->nstacks++;
}

/* ---- public ---- */

struct pst__profile *pst__profile_new(uint64_t period_ns) {
  struct pst__profile *p = calloc(1, sizeof(*p));

  if (!p)
    return NULL;
  p->period_ns = period_ns;
  p->cpu = 1; /* pst__profile_set_cpu(p, 0) for wall time */
  p->start_unix_ns = pst__wall_ns();
  p->strings = pst__strtab_new();
  p->stack_off = calloc(2, sizeof(*p->stack_off));
  p->stacks_cap = 2;
  /* Never NULL, even while every stack is empty: pointer arithmetic and
   * memcpy/memcmp on NULL are undefined even for 0 bytes. */
  p->stack_data = calloc(16, sizeof(*p->stack_data));
  p->stack_data_cap = 16;
  if (!p->strings || !p->stack_off || !p->stack_data ||
      pst__hash_init(&p->frame_ids, 256) ||
      pst__hash_init(&p->stack_ids, 256)) {
    pst__profile_free(p);
    return NULL;
  }
  return p;
}

void pst__profile_free(struct pst__profile *p) {
  if (!p)
    return;
  for (size_t i = 0; i < p->nthreads; i++)
    free(p->threads[i].runs);
  free(p->threads);
  free(p->procs);
  free(p->frames);
  pst__hash_exit(&p->frame_ids);
  pst__hash_exit(&p->thread_ids);
  pst__hash_exit(&p->stack_ids);
  free(p->stack_data);
  free(p->stack_off);
  pst__strtab_free(p->strings);
  free(p);
}

int pst__profile_process(struct pst__profile *p, int pid, const char *cmdline,
                         int rank, int local_rank, int world_size) {
  struct pst__prof_process *np;
  const char *cmd;

  for (size_t i = 0; i < p->nprocs; i++)
    if (p->procs[i].pid == pid)
      return (int)i;
  cmd = pst__strtab_intern(p->strings, cmdline ? cmdline : "");
  if (!cmd)
    return -ENOMEM;
  /* Stored at once: the old array may be freed by a successful realloc. */
  np = realloc(p->procs, (p->nprocs + 1) * sizeof(*np));
  if (!np)
    return -ENOMEM;
  p->procs = np;
  p->procs[p->nprocs] = (struct pst__prof_process){
      pid,        cmd,        rank,
      local_rank, world_size, pst__strtab_intern(p->strings, ""),
      0};
  if (!p->procs[p->nprocs].role)
    return -ENOMEM;
  return (int)p->nprocs++;
}

int pst__profile_process_role(struct pst__profile *p, uint32_t proc,
                              const char *role, int ppid) {
  const char *r;

  if (proc >= p->nprocs)
    return -EINVAL;
  r = pst__strtab_intern(p->strings, role ? role : "");
  if (!r)
    return -ENOMEM;
  p->procs[proc].role = r;
  p->procs[proc].ppid = ppid;
  return 0;
}

struct thread_key {
  uint32_t proc;
  int tid;
};

static int thread_eq(const void *ctx, uint32_t id, const void *key) {
  const struct pst__profile *p = ctx;
  const struct thread_key *k = key;

  return p->threads[id].t.process == k->proc && p->threads[id].t.tid == k->tid;
}

int pst__profile_thread(struct pst__profile *p, uint32_t proc, int tid,
                        const char *name) {
  const char *nm = pst__strtab_intern(p->strings, name ? name : "");
  struct thread_key key = {proc, tid};
  uint64_t h = pst__hash_mix(pst__hash_u64(proc), (uint64_t)(uint32_t)tid);
  int64_t id = pst__hash_find(&p->thread_ids, h, thread_eq, p, &key);

  if (!nm)
    return -ENOMEM;
  if (id >= 0) {
    p->threads[id].t.name = nm;
    return (int)id;
  }
  if (pst__array_reserve((void **)&p->threads, &p->threads_cap, p->nthreads + 1,
                         sizeof(*p->threads)) ||
      pst__hash_insert(&p->thread_ids, h, (uint32_t)p->nthreads))
    return -ENOMEM;
  memset(&p->threads[p->nthreads], 0, sizeof(*p->threads));
  p->threads[p->nthreads].t = (struct pst__prof_thread){proc, tid, nm};
  return (int)p->nthreads++;
}

#define STACK_MAX 4096

const char *pst__profile_intern(struct pst__profile *p, const char *s) {
  return pst__strtab_intern(p->strings, s ? s : "");
}

static int64_t add(struct pst__profile *p, uint32_t thread,
                   const struct pst__prof_frame *frames, size_t n,
                   uint64_t t_ns, uint64_t weight_ns, int interned);
static int add_run(struct pst__profile *p, uint32_t thread, uint32_t sid,
                   uint64_t t_ns, uint64_t weight_ns);

int pst__profile_add(struct pst__profile *p, uint32_t thread,
                     const struct pst__prof_frame *frames, size_t n,
                     uint64_t t_ns, uint64_t weight_ns) {
  int64_t sid = add(p, thread, frames, n, t_ns, weight_ns, 0);
  return sid < 0 ? (int)sid : 0;
}

int pst__profile_add_interned(struct pst__profile *p, uint32_t thread,
                              const struct pst__prof_frame *frames, size_t n,
                              uint64_t t_ns, uint64_t weight_ns) {
  int64_t sid = add(p, thread, frames, n, t_ns, weight_ns, 1);
  return sid < 0 ? (int)sid : 0;
}

int64_t pst__profile_add_interned_id(struct pst__profile *p, uint32_t thread,
                                     const struct pst__prof_frame *frames,
                                     size_t n, uint64_t t_ns,
                                     uint64_t weight_ns) {
  return add(p, thread, frames, n, t_ns, weight_ns, 1);
}

int pst__profile_add_stack(struct pst__profile *p, uint32_t thread,
                           uint32_t stack, uint64_t t_ns, uint64_t weight_ns) {
  if (stack >= p->nstacks)
    return -EINVAL;
  return add_run(p, thread, stack, t_ns, weight_ns);
}

/* Adds the stack (frames, root first) to thread's runs; its stack id, or
 * -errno. */
static int64_t add(struct pst__profile *p, uint32_t thread,
                   const struct pst__prof_frame *frames, size_t n,
                   uint64_t t_ns, uint64_t weight_ns, int interned) {
  uint32_t ids[STACK_MAX];
  int64_t sid;
  int err;

  if (thread >= p->nthreads)
    return -EINVAL;
  if (n > STACK_MAX)
    n = STACK_MAX; /* keep the root end: the writers' aggregation needs it */
  for (size_t i = 0; i < n; i++) {
    int64_t id = frame_id(p, &frames[i], interned);
    if (id < 0)
      return id;
    ids[i] = (uint32_t)id;
  }
  sid = stack_id(p, ids, n);
  if (sid < 0)
    return sid;
  err = add_run(p, thread, (uint32_t)sid, t_ns, weight_ns);
  return err ? err : sid;
}

/* One sample of stack sid in thread's runs. 0 or -errno. */
static int add_run(struct pst__profile *p, uint32_t thread, uint32_t sid,
                   uint64_t t_ns, uint64_t weight_ns) {
  struct thread_runs *tr;
  struct pst__prof_run *last;
  uint32_t k;

  if (thread >= p->nthreads)
    return -EINVAL;
  tr = &p->threads[thread];
  last = tr->n ? &tr->runs[tr->n - 1] : NULL;
  /* CPU time (mode cpu) comes in steps of the kernel's scheduler tick:
   * a sample that stands for k periods of it counts k. */
  k = p->periods && p->period_ns && weight_ns > p->period_ns
          ? (uint32_t)(weight_ns / p->period_ns)
          : 1;
  if (last && last->stack == sid) {
    last->count += k;
    last->end_ns = t_ns;
    last->weight_ns += weight_ns;
  } else {
    if (pst__array_reserve((void **)&tr->runs, &tr->cap, tr->n + 1,
                           sizeof(*tr->runs)))
      return -ENOMEM;
    tr->runs[tr->n++] = (struct pst__prof_run){sid, k, t_ns, t_ns, weight_ns};
  }
  p->samples += k;
  return 0;
}

uint64_t pst__profile_period_ns(const struct pst__profile *p) {
  return p->period_ns;
}

void pst__profile_set_cpu(struct pst__profile *p, int cpu) {
  p->cpu = cpu;
  p->periods = cpu;
}

int pst__profile_cpu(const struct pst__profile *p) { return p->cpu; }

uint64_t pst__profile_start_unix_ns(const struct pst__profile *p) {
  return p->start_unix_ns;
}

size_t pst__profile_nframes(const struct pst__profile *p) { return p->nframes; }

const struct pst__prof_frame *pst__profile_frame(const struct pst__profile *p,
                                                 uint32_t id) {
  return id < p->nframes ? &p->frames[id] : NULL;
}

size_t pst__profile_nstacks(const struct pst__profile *p) { return p->nstacks; }

const uint32_t *pst__profile_stack(const struct pst__profile *p, uint32_t id,
                                   size_t *n) {
  if (id >= p->nstacks) {
    *n = 0;
    return NULL;
  }
  *n = p->stack_off[id + 1] - p->stack_off[id];
  return p->stack_data + p->stack_off[id];
}

size_t pst__profile_nprocesses(const struct pst__profile *p) {
  return p->nprocs;
}

const struct pst__prof_process *pst__profile_proc(const struct pst__profile *p,
                                                  uint32_t i) {
  return i < p->nprocs ? &p->procs[i] : NULL;
}

size_t pst__profile_nthreads(const struct pst__profile *p) {
  return p->nthreads;
}

const struct pst__prof_thread *
pst__profile_thread_at(const struct pst__profile *p, uint32_t i) {
  return i < p->nthreads ? &p->threads[i].t : NULL;
}

const struct pst__prof_run *pst__profile_runs(const struct pst__profile *p,
                                              uint32_t thread, size_t *n) {
  if (thread >= p->nthreads) {
    *n = 0;
    return NULL;
  }
  *n = p->threads[thread].n;
  return p->threads[thread].runs;
}

uint64_t pst__profile_samples(const struct pst__profile *p) {
  return p->samples;
}

void pst__profile_stack_totals(const struct pst__profile *p, uint64_t *counts,
                               uint64_t *weights_ns) {
  if (counts)
    memset(counts, 0, p->nstacks * sizeof(*counts));
  if (weights_ns)
    memset(weights_ns, 0, p->nstacks * sizeof(*weights_ns));
  for (size_t t = 0; t < p->nthreads; t++)
    for (size_t r = 0; r < p->threads[t].n; r++) {
      const struct pst__prof_run *run = &p->threads[t].runs[r];
      if (counts)
        counts[run->stack] += run->count;
      if (weights_ns)
        weights_ns[run->stack] += run->weight_ns;
    }
}
