/* chrome.c: the Chrome trace event format (JSON object form), read by
 * Perfetto (ui.perfetto.dev) and chrome://tracing: each thread's samples as
 * a flame chart over time.
 *
 * Metadata events ("ph":"M") name the processes (command line and ranks;
 * process_sort_index orders them by rank) and threads. Each run of a thread
 * covers [first sample, last sample + its average weight); the end is
 * stretched to the next run's start when the gap is at most two sample
 * weights (timer jitter), so consecutive runs touch. Every level of a run's
 * stack is a complete event ("ph":"X"); a level continues the event of the
 * previous run when the runs touch and the stacks agree from the root down
 * to that level, so a frame that stays on the stack is one long event with
 * its changing callees nested in it. ts and dur are microseconds (exact to
 * the nanosecond, three decimals) since the recording began; the start time
 * in Unix nanoseconds is in otherData. Events of a thread are written
 * parents first in start order, the order trace viewers nest them in.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/json.h"
#include "output/writer.h"
#include "util/array.h"

/* One complete event: a frame held on the stack from b to e (ns). */
struct slice {
  uint32_t frame;
  uint64_t b, e;
};

struct slices {
  struct slice *v;
  size_t n, cap;
  uint32_t *open; /* index in v of the event open at each depth */
  size_t open_cap;
};

/* The time one sample of r stands for. */
static uint64_t sample_weight(const struct pst__prof_run *r, uint64_t period) {
  uint64_t w = r->count ? r->weight_ns / r->count : 0;
  return w ? w : period;
}

#ifndef NDEBUG
/* No event ends before it starts. (Nesting and start order follow from
 * the runs' time order, which the profile guarantees, and are checked by
 * the unit tests.) */
static void check_invariants(const struct slices *s) {
  for (size_t i = 0; i < s->n; i++)
    assert(s->v[i].b <= s->v[i].e);
}
#else
static void check_invariants(const struct slices *s) { (void)s; }
#endif

/* Turns the runs of thread ti into s->v (cleared first). */
static int build_slices(const struct pst__profile *p, uint32_t ti,
                        struct slices *s) {
  uint64_t period = pst__profile_period_ns(p), prev_e = 0;
  size_t nruns, depth = 0;
  const struct pst__prof_run *runs = pst__profile_runs(p, ti, &nruns);

  s->n = 0;
  for (size_t r = 0; r < nruns; r++) {
    uint64_t w = sample_weight(&runs[r], period);
    uint64_t b = runs[r].start_ns, e = runs[r].end_ns + w;
    size_t n, k = 0;
    const uint32_t *ids = pst__profile_stack(p, runs[r].stack, &n);

    if (r + 1 < nruns && runs[r + 1].start_ns <= runs[r].end_ns + 2 * w)
      e = runs[r + 1].start_ns;
    if (e < b)
      e = b;
    if (r > 0 && prev_e == b)
      while (k < depth && k < n && s->v[s->open[k]].frame == ids[k])
        k++;
    for (size_t d = 0; d < k; d++)
      s->v[s->open[d]].e = e;
    if (pst__array_reserve((void **)&s->v, &s->cap, s->n + (n - k),
                           sizeof(*s->v)) ||
        pst__array_reserve((void **)&s->open, &s->open_cap, n,
                           sizeof(*s->open)))
      return -ENOMEM;
    for (size_t d = k; d < n; d++) {
      s->open[d] = (uint32_t)s->n;
      s->v[s->n++] = (struct slice){ids[d], b, e};
    }
    depth = n;
    prev_e = e;
  }
  check_invariants(s);
  return 0;
}

static void write_meta(struct pst__json *j, const char *what, int pid, int tid,
                       const char *key, const char *str, int64_t num) {
  pst__json_object_begin(j);
  pst__json_kv_string(j, "ph", "M");
  pst__json_kv_string(j, "name", what);
  pst__json_kv_int(j, "pid", pid);
  pst__json_kv_int(j, "tid", tid);
  pst__json_key(j, "args");
  pst__json_object_begin(j);
  if (str)
    pst__json_kv_string(j, key, str);
  else
    pst__json_kv_int(j, key, num);
  pst__json_object_end(j);
  pst__json_object_end(j);
}

static int write_metadata(const struct pst__profile *p, struct pst__json *j) {
  size_t nprocs = pst__profile_nprocesses(p),
         nthreads = pst__profile_nthreads(p);

  for (uint32_t i = 0; i < nprocs; i++) {
    const struct pst__prof_process *pr = pst__profile_proc(p, i);
    char *label = pst__writer_proc_label(pr);

    if (!label)
      return -ENOMEM;
    write_meta(j, "process_name", pr->pid, 0, "name", label, 0);
    free(label);
    if (pr->rank >= 0)
      write_meta(j, "process_sort_index", pr->pid, 0, "sort_index", NULL,
                 pr->rank);
  }
  for (uint32_t i = 0; i < nthreads; i++) {
    const struct pst__prof_thread *t = pst__profile_thread_at(p, i);
    const struct pst__prof_process *pr = pst__profile_proc(p, t->process);

    write_meta(j, "thread_name", pr ? pr->pid : 0, t->tid, "name", t->name, 0);
  }
  return 0;
}

static void write_slices(const struct pst__profile *p, struct pst__json *j,
                         const struct slices *s, int pid, int tid) {
  for (size_t i = 0; i < s->n; i++) {
    const struct pst__prof_frame *fr = pst__profile_frame(p, s->v[i].frame);

    pst__json_object_begin(j);
    pst__json_kv_string(j, "ph", "X");
    pst__json_kv_string(j, "name", fr->name);
    pst__json_kv_int(j, "pid", pid);
    pst__json_kv_int(j, "tid", tid);
    pst__json_key(j, "ts");
    pst__json_fixed(j, s->v[i].b, 3);
    pst__json_key(j, "dur");
    pst__json_fixed(j, s->v[i].e - s->v[i].b, 3);
    if (fr->file && *fr->file) {
      pst__json_key(j, "args");
      pst__json_object_begin(j);
      pst__json_kv_string(j, "file", fr->file);
      if (fr->line > 0)
        pst__json_kv_int(j, "line", fr->line);
      pst__json_object_end(j);
    }
    pst__json_object_end(j);
  }
}

static int chrome_write(const struct pst__profile *p, FILE *f) {
  size_t nthreads = pst__profile_nthreads(p);
  struct slices s = {0};
  struct pst__json j;
  int err;

  pst__json_init(&j, f);
  pst__json_object_begin(&j);
  pst__json_key(&j, "traceEvents");
  pst__json_array_begin(&j);
  err = write_metadata(p, &j);
  if (err)
    goto out;
  for (uint32_t t = 0; t < nthreads; t++) {
    const struct pst__prof_thread *th = pst__profile_thread_at(p, t);
    const struct pst__prof_process *pr = pst__profile_proc(p, th->process);

    err = build_slices(p, t, &s);
    if (err)
      goto out;
    write_slices(p, &j, &s, pr ? pr->pid : 0, th->tid);
  }
  pst__json_array_end(&j);
  pst__json_kv_string(&j, "displayTimeUnit", "ms");
  pst__json_key(&j, "otherData");
  pst__json_object_begin(&j);
  pst__json_kv_string(&j, "exporter", PACKAGE_NAME " " PACKAGE_VERSION);
  pst__json_kv_uint(&j, "period_ns", pst__profile_period_ns(p));
  pst__json_kv_uint(&j, "start_unix_ns", pst__profile_start_unix_ns(p));
  pst__json_kv_uint(&j, "samples", pst__profile_samples(p));
  pst__json_object_end(&j);
  pst__json_object_end(&j);
  err = pst__json_finish(&j);
out:
  free(s.v);
  free(s.open);
  return err;
}

const struct pst__writer_ops pst__writer_chrome = {
    .name = "chrome",
    .ext = ".trace.json",
    .desc = "Chrome trace events: per-thread flame charts over time (Perfetto)",
    .write = chrome_write,
};
