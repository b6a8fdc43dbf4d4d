/* speedscope.c: speedscope's JSON file format
 * (https://www.speedscope.app/file-format-schema.json): the profile's frames
 * shared by one "sampled" profile per thread.
 *
 * Each run of a thread becomes one sample (its stack, root first, as frame
 * indexes) weighted by the run's weight in nanoseconds, so the "time order"
 * view shows the thread's stacks in the order they were seen, and the
 * "left heavy" and "sandwich" views aggregate them. A run without a recorded
 * weight stands for count * period. Time order keeps the clock: where a
 * thread was not sampled (idle, or off CPU when the weights are CPU time)
 * an empty sample stands for the gap, so that a run is drawn at the time
 * it was seen. startValue is the thread's first sample time (since the
 * recording began); endValue is startValue plus the sum of the weights
 * and gaps, which reaches the end of its last sample (its time plus its
 * weight).
 * Threads without samples are left out; a profile with no samples at all
 * still gets one empty profile, which speedscope needs to open the file.
 * The file opens on the main thread of the busiest process (the most
 * sampled time), else its busiest thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/json.h"
#include "output/writer.h"

#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"

static uint64_t run_weight(const struct pst__prof_run *r, uint64_t period) {
  return r->weight_ns ? r->weight_ns : r->count * period;
}

/* The profile's name: "thread TID NAME" and its process's label. */
static char *thread_title(const struct pst__profile *p,
                          const struct pst__prof_thread *t) {
  const struct pst__prof_process *pr = pst__profile_proc(p, t->process);
  char *name = pst__writer_clean(t->name, PST_CLEAN_CTRL);
  char *proc = pr ? pst__writer_proc_label(pr) : NULL;
  char *buf = NULL;
  size_t size;

  if (!name || (pr && !proc))
    goto out;
  size = strlen(name) + (proc ? strlen(proc) : 0) + 64;
  buf = malloc(size);
  if (!buf)
    goto out;
  if (pr && pr->cmdline && *pr->cmdline)
    snprintf(buf, size, "thread %d %s (pid %d: %s)", t->tid, name, pr->pid,
             proc);
  else if (pr) /* the label starts with "pid N" */
    snprintf(buf, size, "thread %d %s (%s)", t->tid, name, proc);
  else
    snprintf(buf, size, "thread %d %s", t->tid, name);
out:
  free(name);
  free(proc);
  return buf;
}

static void write_frames(const struct pst__profile *p, struct pst__json *j) {
  size_t n = pst__profile_nframes(p);

  pst__json_key(j, "shared");
  pst__json_object_begin(j);
  pst__json_key(j, "frames");
  pst__json_array_begin(j);
  for (uint32_t i = 0; i < n; i++) {
    const struct pst__prof_frame *fr = pst__profile_frame(p, i);

    pst__json_object_begin(j);
    pst__json_kv_string(j, "name", fr->name);
    if (fr->file && *fr->file)
      pst__json_kv_string(j, "file", fr->file);
    if (fr->line > 0)
      pst__json_kv_int(j, "line", fr->line);
    pst__json_object_end(j);
  }
  pst__json_array_end(j);
  pst__json_object_end(j);
}

/* Emits thread ti's runs as speedscope samples (stacks: 1) or their
 * weights (0), the gaps as empty samples (j NULL: nothing); returns where
 * the time axis ends. A run whose samples were apart (the thread unsampled in between)
 * covers that time too: the rest of it follows the run as a gap. */
static uint64_t emit_runs(const struct pst__profile *p, struct pst__json *j,
                          const struct pst__prof_run *runs, size_t nruns,
                          uint64_t start, int stacks) {
  uint64_t period = pst__profile_period_ns(p), at = start;

  for (size_t r = 0; r < nruns; r++) {
    uint64_t w = run_weight(&runs[r], period);
    uint64_t last = runs[r].end_ns + w / (runs[r].count ? runs[r].count : 1);
    size_t n;
    const uint32_t *ids = pst__profile_stack(p, runs[r].stack, &n);

    for (int part = 0; part < 3; part++) {
      uint64_t len = part == 0
                         ? (runs[r].start_ns > at ? runs[r].start_ns - at : 0)
                     : part == 1 ? w
                                 : (last > at ? last - at : 0);
      if (part != 1 && !len)
        continue;
      if (!j) {
        /* the end alone */
      } else if (!stacks) {
        pst__json_uint(j, len);
      } else {
        pst__json_array_begin(j);
        for (size_t i = 0; part == 1 && i < n; i++)
          pst__json_uint(j, ids[i]);
        pst__json_array_end(j);
      }
      at += len;
    }
  }
  return at;
}

static int write_thread(const struct pst__profile *p, struct pst__json *j,
                        uint32_t ti) {
  const struct pst__prof_thread *t = pst__profile_thread_at(p, ti);
  size_t nruns;
  const struct pst__prof_run *runs = pst__profile_runs(p, ti, &nruns);
  char *title = thread_title(p, t);
  uint64_t start, end;

  if (!title)
    return -ENOMEM;
  start = runs[0].start_ns;
  end = emit_runs(p, NULL, runs, nruns, start, 0); /* the axis's end */
  pst__json_object_begin(j);
  pst__json_kv_string(j, "type", "sampled");
  pst__json_kv_string(j, "name", title);
  pst__json_kv_string(j, "unit", "nanoseconds");
  pst__json_kv_uint(j, "startValue", start);
  pst__json_kv_uint(j, "endValue", end);
  pst__json_key(j, "samples");
  pst__json_array_begin(j);
  emit_runs(p, j, runs, nruns, start, 1);
  pst__json_array_end(j);
  pst__json_key(j, "weights");
  pst__json_array_begin(j);
  emit_runs(p, j, runs, nruns, start, 0);
  pst__json_array_end(j);
  pst__json_object_end(j);
  free(title);
  return 0;
}

/* The profile to open on, as an index among the threads with samples:
 * the main thread of the process with the most sampled time, else that
 * process's busiest thread; 0 when no thread has samples or no memory. */
static uint64_t first_profile(const struct pst__profile *p) {
  size_t nthreads = pst__profile_nthreads(p), nprocs = 0, best_proc = 0;
  uint64_t *per_proc, *per_thread, period = pst__profile_period_ns(p);
  uint64_t index = 0, pick = 0, best = 0;
  int found = 0;

  for (size_t t = 0; t < nthreads; t++)
    if (pst__profile_thread_at(p, (uint32_t)t)->process + 1 > nprocs)
      nprocs = pst__profile_thread_at(p, (uint32_t)t)->process + 1;
  per_proc = calloc(nprocs + 1, sizeof(*per_proc));
  per_thread = calloc(nthreads + 1, sizeof(*per_thread));
  if (!per_proc || !per_thread)
    goto out;
  for (size_t t = 0; t < nthreads; t++) {
    size_t nruns;
    const struct pst__prof_run *runs =
        pst__profile_runs(p, (uint32_t)t, &nruns);
    for (size_t r = 0; r < nruns; r++)
      per_thread[t] += run_weight(&runs[r], period);
    per_proc[pst__profile_thread_at(p, (uint32_t)t)->process] += per_thread[t];
  }
  for (size_t k = 0; k < nprocs; k++)
    if (per_proc[k] > per_proc[best_proc])
      best_proc = k;
  best = 0;
  for (size_t t = 0; t < nthreads; t++) {
    const struct pst__prof_thread *th = pst__profile_thread_at(p, (uint32_t)t);
    const struct pst__prof_process *pr;
    if (!per_thread[t])
      continue;
    pr = pst__profile_proc(p, th->process);
    if (th->process == best_proc && pr && th->tid == pr->pid) {
      pick = index; /* its main thread */
      found = 1;
    } else if (!found && th->process == best_proc && per_thread[t] > best) {
      pick = index;
      best = per_thread[t];
    }
    index++;
  }
out:
  free(per_proc);
  free(per_thread);
  return pick;
}

static int speedscope_write(const struct pst__profile *p, FILE *f) {
  size_t nthreads = pst__profile_nthreads(p), written = 0;
  struct pst__json j;
  int err;

  pst__json_init(&j, f);
  pst__json_object_begin(&j);
  pst__json_kv_string(&j, "$schema", SPEEDSCOPE_SCHEMA);
  pst__json_kv_string(&j, "exporter", PACKAGE_NAME " " PACKAGE_VERSION);
  pst__json_kv_string(&j, "name", "pystitch profile");
  pst__json_kv_uint(&j, "activeProfileIndex", first_profile(p));
  write_frames(p, &j);
  pst__json_key(&j, "profiles");
  pst__json_array_begin(&j);
  for (uint32_t t = 0; t < nthreads; t++) {
    size_t nruns;

    pst__profile_runs(p, t, &nruns);
    if (!nruns)
      continue;
    err = write_thread(p, &j, t);
    if (err)
      return err;
    written++;
  }
  if (!written) {
    pst__json_object_begin(&j);
    pst__json_kv_string(&j, "type", "sampled");
    pst__json_kv_string(&j, "name", "no samples");
    pst__json_kv_string(&j, "unit", "nanoseconds");
    pst__json_kv_uint(&j, "startValue", 0);
    pst__json_kv_uint(&j, "endValue", 0);
    pst__json_key(&j, "samples");
    pst__json_array_begin(&j);
    pst__json_array_end(&j);
    pst__json_key(&j, "weights");
    pst__json_array_begin(&j);
    pst__json_array_end(&j);
    pst__json_object_end(&j);
  }
  pst__json_array_end(&j);
  pst__json_object_end(&j);
  return pst__json_finish(&j);
}

const struct pst__writer_ops pst__writer_speedscope = {
    .name = "speedscope",
    .ext = ".speedscope.json",
    .desc = "speedscope JSON, one sampled profile per thread, time ordered",
    .write = speedscope_write,
};
