/* pprof.c: google/pprof's profile.proto (perftools.profiles.Profile),
 * serialized with protobuf-c (proto/profile.proto) and gzip-compressed with
 * zlib as it is stored on disk; read by `pprof`, `go tool pprof`, Pyroscope.
 *
 * Sample types are [samples/count, cpu/nanoseconds] (the default is cpu)
 * for a profile of CPU time (sampling mode cpu), [samples/count,
 * wall/nanoseconds] else; the period type is the second, with the
 * profile's period. One Sample per
 * thread and distinct stack, summing that thread's runs of the stack, with
 * the labels pid, tid (numbers), thread (its name), and rank, local_rank and
 * world_size (numbers) when the process has them. A run without a recorded
 * weight counts count * period nanoseconds.
 *
 * Every distinct frame is one Location (id = frame id + 1, no mapping, no
 * address) with one Line; functions are shared by the frames with the same
 * name and file (so pprof can aggregate by function or by line). Sample
 * stacks are written leaf first, as pprof wants (the profile's are root
 * first). Strings are made valid UTF-8 (protobuf requires it of string
 * fields). Comments hold the exporter and each process's label.
 */
#define ZLIB_CONST
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "output/writer.h"
#include "proto/profile.pb-c.h"
#include "util/array.h"
#include "util/hash.h"
#include "util/strtab.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__ValueType ValueType;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;

/* Labels per thread at most: pid, tid, thread, rank, local_rank,
 * world_size, role, ppid. */
#define MAX_LABELS 8

/* ---- string table: cleaned strings, each once ---- */

/* Index of s (cleaned) in the table, added if new; -ENOMEM. */
static int64_t str_index(struct pst__strtab *t, const char *s) {
  char *c = pst__writer_clean(s, 0);
  int64_t id = c ? pst__strtab_id(t, c) : -ENOMEM;

  free(c);
  return id;
}

/* ---- functions: one per (name, file) ---- */

struct functab {
  Function *v; /* id - 1 = index */
  size_t n, cap;
  struct pst__hash ids; /* hash of (name, file) -> index */
};

struct func_key {
  int64_t name, file; /* string indices */
};

static int func_eq(const void *ctx, uint32_t i, const void *key) {
  const struct functab *t = ctx;
  const struct func_key *k = key;
  return t->v[i].name == k->name && t->v[i].filename == k->file;
}

/* The id (1-based) of the function (name, file), added if new; -ENOMEM. */
static int64_t function_id(struct functab *t, int64_t name, int64_t file) {
  struct func_key k = {name, file};
  uint64_t h = pst__hash_u64((uint64_t)name << 32 | (uint64_t)file);
  int64_t i = pst__hash_find(&t->ids, h, func_eq, t, &k);

  if (i >= 0)
    return i + 1;
  if (pst__array_reserve((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v)) ||
      pst__hash_insert(&t->ids, h, (uint32_t)t->n))
    return -ENOMEM;
  perftools__profiles__function__init(&t->v[t->n]);
  t->v[t->n].id = t->n + 1;
  t->v[t->n].name = name;
  t->v[t->n].system_name = name;
  t->v[t->n].filename = file;
  return (int64_t)++t->n;
}

/* ---- gzip output as a protobuf-c buffer ---- */

struct gz_out {
  ProtobufCBuffer base; /* first: protobuf-c calls back with its address */
  z_stream zs;
  FILE *f;
  int err;
  unsigned char buf[1 << 16];
};

/* Runs deflate over what is in zs.next_in, writing all output to f. */
static int gz_run(struct gz_out *g, int flush) {
  for (;;) {
    size_t have;
    int rc;

    g->zs.next_out = g->buf;
    g->zs.avail_out = sizeof(g->buf);
    rc = deflate(&g->zs, flush);
    if (rc == Z_STREAM_ERROR)
      return -EIO;
    have = sizeof(g->buf) - g->zs.avail_out;
    if (have && fwrite(g->buf, 1, have, g->f) != have)
      return -EIO;
    if (flush == Z_FINISH ? rc == Z_STREAM_END : g->zs.avail_out != 0)
      return 0;
  }
}

static void gz_append(ProtobufCBuffer *b, size_t len, const uint8_t *data) {
  struct gz_out *g = (struct gz_out *)b;

  while (!g->err && len) {
    uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;

    g->zs.next_in = data;
    g->zs.avail_in = n;
    g->err = gz_run(g, Z_NO_FLUSH);
    data += n;
    len -= n;
  }
}

/* Packs prof into f, gzip-compressed. */
static int write_gzipped(const Profile *prof, FILE *f) {
  struct gz_out *g = calloc(1, sizeof(*g));
  int err;

  if (!g)
    return -ENOMEM;
  g->base.append = gz_append;
  g->f = f;
  /* windowBits 15 + 16: a gzip header and trailer instead of zlib's. */
  if (deflateInit2(&g->zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    free(g);
    return -ENOMEM;
  }
  perftools__profiles__profile__pack_to_buffer(prof, &g->base);
  err = g->err;
  if (!err) {
    g->zs.next_in = NULL;
    g->zs.avail_in = 0;
    err = gz_run(g, Z_FINISH);
  }
  deflateEnd(&g->zs);
  free(g);
  return err;
}

/* ---- the profile ---- */

/* A thread's samples of one stack. */
struct agg {
  uint32_t thread, stack;
  uint64_t count, weight;
};

struct pprof {
  struct pst__strtab *strs;
  struct functab funcs;
  struct agg *aggs;
  size_t naggs, aggs_cap;
  Location *locs;
  Line *lines;
  Line **line_ptrs;
  Location **loc_ptrs;
  Function **func_ptrs;
  Label *labels; /* MAX_LABELS per thread */
  Label **label_ptrs;
  size_t *nlabels; /* per thread */
  Sample *samples;
  Sample **sample_ptrs;
  uint64_t *loc_ids;
  int64_t *values;
  int64_t *comments;
  size_t ncomments;
};

static uint64_t run_weight(const struct pst__prof_run *r, uint64_t period) {
  return r->weight_ns ? r->weight_ns : r->count * period;
}

/* Sums each thread's runs by stack into pp->aggs, threads in order and
 * stacks in order of first appearance. Also finds the last sample's end. */
static int aggregate(const struct pst__profile *p, struct pprof *pp,
                     uint64_t *end_ns) {
  size_t nstacks = pst__profile_nstacks(p), nthreads = pst__profile_nthreads(p);
  uint64_t period = pst__profile_period_ns(p);
  uint32_t *slot = calloc(nstacks + 1, sizeof(*slot));
  int err = -ENOMEM;

  if (!slot)
    goto out;
  /* slot[s]: index in aggs of this thread's stack s, valid when it points
   * at an entry of the current thread with stack s. */
  for (uint32_t t = 0; t < nthreads; t++) {
    size_t nruns, first = pp->naggs;
    const struct pst__prof_run *runs = pst__profile_runs(p, t, &nruns);

    for (size_t r = 0; r < nruns; r++) {
      uint32_t s = runs[r].stack, i = slot[s];
      uint64_t w = run_weight(&runs[r], period);
      /* The last sample stands for the time after it. */
      uint64_t end = runs[r].end_ns + w / (runs[r].count ? runs[r].count : 1);

      if (end > *end_ns)
        *end_ns = end;
      if (i >= first && i < pp->naggs && pp->aggs[i].stack == s) {
        pp->aggs[i].count += runs[r].count;
        pp->aggs[i].weight += w;
        continue;
      }
      if (pst__array_reserve((void **)&pp->aggs, &pp->aggs_cap, pp->naggs + 1,
                             sizeof(*pp->aggs)))
        goto out;
      slot[s] = (uint32_t)pp->naggs;
      pp->aggs[pp->naggs++] = (struct agg){t, s, runs[r].count, w};
    }
  }
  err = 0;
out:
  free(slot);
  return err;
}

/* Fills in locations, one per frame, and their functions. */
static int build_locations(const struct pst__profile *p, struct pprof *pp) {
  size_t nframes = pst__profile_nframes(p);

  pp->locs = calloc(nframes + 1, sizeof(*pp->locs));
  pp->lines = calloc(nframes + 1, sizeof(*pp->lines));
  pp->line_ptrs = calloc(nframes + 1, sizeof(*pp->line_ptrs));
  pp->loc_ptrs = calloc(nframes + 1, sizeof(*pp->loc_ptrs));
  if (!pp->locs || !pp->lines || !pp->line_ptrs || !pp->loc_ptrs)
    return -ENOMEM;
  for (uint32_t i = 0; i < nframes; i++) {
    const struct pst__prof_frame *fr = pst__profile_frame(p, i);
    int64_t name = str_index(pp->strs, fr->name);
    int64_t file = str_index(pp->strs, fr->file);
    int64_t fn =
        name < 0 || file < 0 ? -ENOMEM : function_id(&pp->funcs, name, file);

    if (fn < 0)
      return (int)fn;
    perftools__profiles__line__init(&pp->lines[i]);
    pp->lines[i].function_id = (uint64_t)fn;
    pp->lines[i].line = fr->line;
    pp->line_ptrs[i] = &pp->lines[i];
    perftools__profiles__location__init(&pp->locs[i]);
    pp->locs[i].id = i + 1;
    pp->locs[i].n_line = 1;
    pp->locs[i].line = &pp->line_ptrs[i];
    pp->loc_ptrs[i] = &pp->locs[i];
  }
  pp->func_ptrs = calloc(pp->funcs.n + 1, sizeof(*pp->func_ptrs));
  if (!pp->func_ptrs)
    return -ENOMEM;
  for (size_t i = 0; i < pp->funcs.n; i++)
    pp->func_ptrs[i] = &pp->funcs.v[i];
  return 0;
}

static int add_label(struct pprof *pp, Label *l, const char *key,
                     const char *str, int64_t num) {
  int64_t k = str_index(pp->strs, key), s = str ? str_index(pp->strs, str) : 0;

  if (k < 0 || s < 0)
    return -ENOMEM;
  perftools__profiles__label__init(l);
  l->key = k;
  if (str)
    l->str = s;
  else
    l->num = num;
  return 0;
}

/* Fills in each thread's labels. */
static int build_labels(const struct pst__profile *p, struct pprof *pp) {
  size_t nthreads = pst__profile_nthreads(p);

  pp->labels = calloc(nthreads * MAX_LABELS + 1, sizeof(*pp->labels));
  pp->label_ptrs = calloc(nthreads * MAX_LABELS + 1, sizeof(*pp->label_ptrs));
  pp->nlabels = calloc(nthreads + 1, sizeof(*pp->nlabels));
  if (!pp->labels || !pp->label_ptrs || !pp->nlabels)
    return -ENOMEM;
  for (uint32_t t = 0; t < nthreads; t++) {
    const struct pst__prof_thread *th = pst__profile_thread_at(p, t);
    const struct pst__prof_process *pr = pst__profile_proc(p, th->process);
    Label *l = &pp->labels[t * MAX_LABELS];
    size_t n = 0;
    int err = 0;

    if (pr)
      err |= add_label(pp, &l[n++], "pid", NULL, pr->pid);
    err |= add_label(pp, &l[n++], "tid", NULL, th->tid);
    err |= add_label(pp, &l[n++], "thread", th->name ? th->name : "", 0);
    if (pr && pr->rank >= 0)
      err |= add_label(pp, &l[n++], "rank", NULL, pr->rank);
    if (pr && pr->local_rank >= 0)
      err |= add_label(pp, &l[n++], "local_rank", NULL, pr->local_rank);
    if (pr && pr->world_size >= 0)
      err |= add_label(pp, &l[n++], "world_size", NULL, pr->world_size);
    if (pr && pr->role && pr->role[0])
      err |= add_label(pp, &l[n++], "role", pr->role, 0);
    if (pr && pr->ppid > 0)
      err |= add_label(pp, &l[n++], "ppid", NULL, pr->ppid);
    if (err)
      return -ENOMEM;
    for (size_t i = 0; i < n; i++)
      pp->label_ptrs[t * MAX_LABELS + i] = &l[i];
    pp->nlabels[t] = n;
  }
  return 0;
}

/* Fills in one Sample per aggregate, stacks leaf first. */
static int build_samples(const struct pst__profile *p, struct pprof *pp) {
  size_t total = 0, at = 0;

  for (size_t i = 0; i < pp->naggs; i++) {
    size_t n;
    pst__profile_stack(p, pp->aggs[i].stack, &n);
    total += n;
  }
  pp->samples = calloc(pp->naggs + 1, sizeof(*pp->samples));
  pp->sample_ptrs = calloc(pp->naggs + 1, sizeof(*pp->sample_ptrs));
  pp->values = calloc(2 * pp->naggs + 1, sizeof(*pp->values));
  pp->loc_ids = calloc(total + 1, sizeof(*pp->loc_ids));
  if (!pp->samples || !pp->sample_ptrs || !pp->values || !pp->loc_ids)
    return -ENOMEM;
  for (size_t i = 0; i < pp->naggs; i++) {
    const struct agg *a = &pp->aggs[i];
    Sample *s = &pp->samples[i];
    size_t n;
    const uint32_t *ids = pst__profile_stack(p, a->stack, &n);

    perftools__profiles__sample__init(s);
    s->n_location_id = n;
    s->location_id = &pp->loc_ids[at];
    for (size_t d = 0; d < n; d++) /* root first -> leaf first */
      pp->loc_ids[at + d] = (uint64_t)ids[n - 1 - d] + 1;
    at += n;
    pp->values[2 * i] = (int64_t)a->count;
    pp->values[2 * i + 1] = (int64_t)a->weight;
    s->n_value = 2;
    s->value = &pp->values[2 * i];
    s->n_label = pp->nlabels[a->thread];
    s->label = &pp->label_ptrs[a->thread * MAX_LABELS];
    pp->sample_ptrs[i] = s;
  }
  return 0;
}

/* Comments: the exporter, then "pid N: <process label>" per process. */
static int build_comments(const struct pst__profile *p, struct pprof *pp) {
  size_t nprocs = pst__profile_nprocesses(p);
  int64_t idx;

  pp->comments = calloc(nprocs + 1, sizeof(*pp->comments));
  if (!pp->comments)
    return -ENOMEM;
  idx = str_index(pp->strs, "exported by " PACKAGE_NAME " " PACKAGE_VERSION);
  if (idx < 0)
    return -ENOMEM;
  pp->comments[pp->ncomments++] = idx;
  for (uint32_t i = 0; i < nprocs; i++) {
    const struct pst__prof_process *pr = pst__profile_proc(p, i);
    char *label = pst__writer_proc_label(pr), *line;
    size_t size;

    if (!label)
      return -ENOMEM;
    size = strlen(label) + 32;
    line = malloc(size);
    if (line) {
      snprintf(line, size, "pid %d: %s", pr->pid, label);
      idx = str_index(pp->strs, line);
    }
    free(label);
    free(line);
    if (!line || idx < 0)
      return -ENOMEM;
    pp->comments[pp->ncomments++] = idx;
  }
  return 0;
}

static void pprof_free(struct pprof *pp) {
  pst__strtab_free(pp->strs);
  free(pp->funcs.v);
  pst__hash_exit(&pp->funcs.ids);
  free(pp->aggs);
  free(pp->locs);
  free(pp->lines);
  free(pp->line_ptrs);
  free(pp->loc_ptrs);
  free(pp->func_ptrs);
  free(pp->labels);
  free(pp->label_ptrs);
  free(pp->nlabels);
  free(pp->samples);
  free(pp->sample_ptrs);
  free(pp->loc_ids);
  free(pp->values);
  free(pp->comments);
}

static int pprof_write(const struct pst__profile *p, FILE *f) {
  Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
  ValueType types[2] = {PERFTOOLS__PROFILES__VALUE_TYPE__INIT,
                        PERFTOOLS__PROFILES__VALUE_TYPE__INIT};
  ValueType period_type = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
  ValueType *type_ptrs[2] = {&types[0], &types[1]};
  struct pprof pp = {0};
  uint64_t end_ns = 0;
  int64_t idx[5];
  int err;

  err = -ENOMEM;
  pp.strs = pst__strtab_new();
  if (!pp.strs)
    goto out;
  /* string_table[0] must be "". */
  idx[0] = str_index(pp.strs, "");
  idx[1] = str_index(pp.strs, "samples");
  idx[2] = str_index(pp.strs, "count");
  idx[3] = str_index(pp.strs, pst__profile_cpu(p) ? "cpu" : "wall");
  idx[4] = str_index(pp.strs, "nanoseconds");
  for (int i = 0; i < 5; i++)
    if (idx[i] < 0)
      goto out;
  err = aggregate(p, &pp, &end_ns);
  if (!err)
    err = build_locations(p, &pp);
  if (!err)
    err = build_labels(p, &pp);
  if (!err)
    err = build_samples(p, &pp);
  if (!err)
    err = build_comments(p, &pp);
  if (err)
    goto out;

  types[0].type = idx[1];
  types[0].unit = idx[2];
  types[1].type = idx[3];
  /* Read through type_ptrs (cppcheck does not follow the pointer). */
  /* cppcheck-suppress unreadVariable */
  types[1].unit = idx[4];
  period_type.type = idx[3];
  period_type.unit = idx[4];
  prof.n_sample_type = 2;
  prof.sample_type = type_ptrs;
  prof.n_sample = pp.naggs;
  prof.sample = pp.sample_ptrs;
  prof.n_location = pst__profile_nframes(p);
  prof.location = pp.loc_ptrs;
  prof.n_function = pp.funcs.n;
  prof.function = pp.func_ptrs;
  prof.n_string_table = pst__strtab_count(pp.strs);
  /* protobuf-c only reads the strings (its field is not const). */
  prof.string_table = (char **)pst__strtab_strings(pp.strs);
  prof.time_nanos = (int64_t)pst__profile_start_unix_ns(p);
  prof.duration_nanos = (int64_t)end_ns;
  prof.period_type = &period_type;
  prof.period = (int64_t)pst__profile_period_ns(p);
  prof.n_comment = pp.ncomments;
  prof.comment = pp.comments;
  prof.default_sample_type = idx[3];
  err = write_gzipped(&prof, f);
out:
  pprof_free(&pp);
  return err;
}

const struct pst__writer_ops pst__writer_pprof = {
    .name = "pprof",
    .ext = ".pb.gz",
    .desc = "pprof profile.proto, gzipped (pprof, go tool pprof, Pyroscope)",
    .write = pprof_write,
};
