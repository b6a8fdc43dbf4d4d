/* profile.c: benchmark of the profile builder and the output writers, and
 * a fixed input for comparing the writers' output across changes.
 *
 * Builds a profile of -n samples over 8 threads from a seeded random walk
 * (2000 stacks 10 to 60 deep sharing prefixes, a thread on one for a few
 * samples, 3000 functions,
 * names with XML, JSON and folded specials and ill-formed UTF-8), or from a
 * folded file (-f, e.g. a recording's), once through
 * pst__profile_add_interned() (the sampler's path) and once through
 * pst__profile_add(). Then writes it -r times in every format to /dev/null.
 * Prints nanoseconds per sample and per frame for the builds and
 * milliseconds per write (the best of the repeats).
 *
 * With -o DIR each format is also written to DIR/profile<ext>. The
 * profile's wall-clock start is fixed (CLOCK_REALTIME is interposed below),
 * so the files depend only on the input and can be compared byte for byte.
 *
 * usage: bench/profile [-n SAMPLES] [-r REPEATS] [-f FOLDED] [-o DIR]
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "output/writer.h"
#include "profile/profile.h"
#include "util/clock.h"

#define NFUNCS 3000
#define NTHREADS 8
#define DEPTH_MAX 64
#define NSTACKS 2000

/* The profile's start time, fixed so that -o output is reproducible.
 * Exported (the build hides symbols by default) so that it interposes. */
__attribute__((visibility("default"))) int clock_gettime(clockid_t id,
                                                         struct timespec *ts) {
  static int (*real)(clockid_t, struct timespec *);
  if (id == CLOCK_REALTIME) {
    ts->tv_sec = 1700000000;
    ts->tv_nsec = 123456789;
    return 0;
  }
  if (!real)
    *(void **)&real = dlsym(RTLD_NEXT, "clock_gettime");
  return real(id, ts);
}

static uint64_t rng = 42;
static uint32_t rnd(uint32_t n) {
  rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)((rng >> 33) % n);
}

/* One sample: thread index, depth, frames (indices into the pool). */
struct sample {
  uint32_t thread, n, first;
};

struct input {
  struct pst__prof_frame *pool; /* frames, strings owned by names */
  char **names;
  size_t npool;
  uint32_t *frames; /* all samples' frame indices, root first */
  size_t nframes;
  struct sample *s;
  size_t ns;
};

static void add_name(struct input *in, char *name, char *file, int line) {
  in->names[in->npool] = name;
  in->pool[in->npool++] = (struct pst__prof_frame){name, file, line};
}

static int gen(struct input *in, size_t n) {
  static uint32_t tmpl[NSTACKS][DEPTH_MAX], tdepth[NSTACKS];
  uint32_t cur[1][DEPTH_MAX], depth[NTHREADS];
  static char *files[40];
  char buf[128];

  in->pool = calloc(NFUNCS + NTHREADS + 1, sizeof(*in->pool));
  in->names = calloc(NFUNCS + NTHREADS + 1, sizeof(*in->names));
  in->s = calloc(n, sizeof(*in->s));
  in->frames = calloc(n * DEPTH_MAX, sizeof(*in->frames));
  if (!in->pool || !in->names || !in->s || !in->frames)
    return -ENOMEM;
  for (int i = 0; i < 40; i++) {
    snprintf(buf, sizeof(buf), "/usr/lib/python3.12/pkg%d/module_%d.py", i % 7,
             i);
    files[i] = strdup(buf);
  }
  files[39] = strdup("/usr/lib/libpython3.12.so.1.0");
  for (int i = 0; i < NTHREADS; i++) {
    snprintf(buf, sizeof(buf), "thread %d \"worker-%d\"", 1000 + i, i);
    add_name(in, strdup(buf), "", 0);
  }
  for (int i = 0; i < NFUNCS; i++) {
    static const char *const odd[] = {"<lambda>",    "a;b",      "x&y\"'z",
                                      "bad\xff\xfe", "nl\nname", "caf\xc3\xa9",
                                      "over\xc0\xaf"};
    if (i % 100 == 0)
      snprintf(buf, sizeof(buf), "%s_%d", odd[(i / 100) % 7], i);
    else
      snprintf(buf, sizeof(buf), "Class%d.method_%d", i % 97, i);
    add_name(in, strdup(buf), files[rnd(40)], 1 + (int)rnd(2000));
  }
  /* The call tree: NSTACKS stacks made by a random walk (so that they
   * share prefixes); a thread stays on one for a few samples, mostly on
   * the first hundred. */
  depth[0] = 10;
  for (uint32_t d = 0; d < depth[0]; d++)
    cur[0][d] = NTHREADS + rnd(NFUNCS);
  for (int k = 0; k < NSTACKS; k++) {
    uint32_t keep = depth[0] - 1 - rnd(3);

    depth[0] = keep + rnd(5);
    if (depth[0] < 10)
      depth[0] = 10;
    if (depth[0] > 60)
      depth[0] = 60;
    for (uint32_t d = keep; d < depth[0]; d++)
      cur[0][d] = NTHREADS + (rnd(2) ? rnd(200) : rnd(NFUNCS));
    tdepth[k] = depth[0];
    memcpy(tmpl[k], cur[0], sizeof(cur[0]));
  }
  for (int t = 0; t < NTHREADS; t++)
    depth[t] = (uint32_t)rnd(NSTACKS);
  for (size_t i = 0; i < n; i++) {
    uint32_t t = (uint32_t)(i % NTHREADS), k;

    if (!rnd(3))
      depth[t] = rnd(2) ? rnd(100) : rnd(NSTACKS);
    k = depth[t];
    in->s[i] = (struct sample){t, tdepth[k] + 1, (uint32_t)in->nframes};
    in->frames[in->nframes++] = t; /* the thread's root frame */
    for (uint32_t d = 0; d < tdepth[k]; d++)
      in->frames[in->nframes++] = tmpl[k][d];
  }
  in->ns = n;
  return 0;
}

/* Reads a folded file ("a;b;c count") as samples of one thread, each line
 * count times; frames "name (file:line)" are split back into their parts. */
static int load_folded(struct input *in, const char *path) {
  FILE *f = fopen(path, "r");
  char *line = NULL;
  size_t cap = 0, pool_cap = 0, frames_cap = 0, s_cap = 0;
  ssize_t len;

  if (!f)
    return -errno;
  while ((len = getline(&line, &cap, f)) > 0) {
    char *sp = strrchr(line, ' '), *tok, *save = NULL;
    uint32_t first = (uint32_t)in->nframes, n = 0;
    long count;

    if (!sp)
      continue;
    *sp = '\0';
    count = strtol(sp + 1, NULL, 10);
    for (tok = strtok_r(line, ";", &save); tok;
         tok = strtok_r(NULL, ";", &save)) {
      char *name = strdup(tok), *paren = strstr(name, " ("), *file = "";
      int ln = 0;

      if (paren && name[strlen(name) - 1] == ')') {
        char *colon;
        *paren = '\0';
        file = paren + 2;
        file[strlen(file) - 1] = '\0';
        colon = strrchr(file, ':');
        if (colon) {
          *colon = '\0';
          ln = atoi(colon + 1);
        }
      }
      if (in->npool == pool_cap) {
        pool_cap = pool_cap ? 2 * pool_cap : 1024;
        in->pool = realloc(in->pool, pool_cap * sizeof(*in->pool));
        in->names = realloc(in->names, pool_cap * sizeof(*in->names));
      }
      if (in->nframes == frames_cap) {
        frames_cap = frames_cap ? 2 * frames_cap : 4096;
        in->frames = realloc(in->frames, frames_cap * sizeof(*in->frames));
      }
      in->frames[in->nframes++] = (uint32_t)in->npool;
      add_name(in, name, file, ln);
      n++;
    }
    for (long c = 0; c < count; c++) {
      if (in->ns == s_cap) {
        s_cap = s_cap ? 2 * s_cap : 4096;
        in->s = realloc(in->s, s_cap * sizeof(*in->s));
      }
      in->s[in->ns++] = (struct sample){0, n, first};
    }
  }
  free(line);
  fclose(f);
  return 0;
}

/* Builds the profile of in; interned: through pst__profile_add_interned()
 * with the strings interned once beforehand, as the sampler does. */
static struct pst__profile *build(const struct input *in, int interned,
                                  double *ms) {
  struct pst__profile *p = pst__profile_new(10000000);
  struct pst__prof_frame *pool = malloc((in->npool + 1) * sizeof(*pool));
  struct pst__prof_frame st[DEPTH_MAX * 4];
  double t0;
  int proc;

  if (!p || !pool)
    exit(1);
  proc = pst__profile_process(p, 100, "python bench.py", -1, -1, -1);
  for (int t = 0; t < NTHREADS; t++)
    pst__profile_thread(p, (uint32_t)proc, 1000 + t, "worker");
  for (size_t i = 0; i < in->npool; i++) {
    pool[i] = in->pool[i];
    if (interned) {
      pool[i].name = pst__profile_intern(p, pool[i].name);
      pool[i].file = pst__profile_intern(p, pool[i].file);
    }
  }
  t0 = pst__now_ms();
  for (size_t i = 0; i < in->ns; i++) {
    const struct sample *s = &in->s[i];
    uint32_t n = s->n > DEPTH_MAX * 4 ? DEPTH_MAX * 4 : s->n;

    for (uint32_t d = 0; d < n; d++)
      st[d] = pool[in->frames[s->first + d]];
    if ((interned ? pst__profile_add_interned : pst__profile_add)(
            p, s->thread, st, n, i * 10000000ULL, 10000000) != 0)
      exit(1);
  }
  *ms = pst__now_ms() - t0;
  free(pool);
  return p;
}

int main(int argc, char **argv) {
  const char *folded = NULL, *outdir = NULL;
  struct input in = {0};
  size_t n = 100000;
  int repeats = 5, opt;
  double ms_i = 1e30, ms_s = 1e30, ms;
  struct pst__profile *p = NULL;

  while ((opt = getopt(argc, argv, "n:r:f:o:")) != -1) {
    switch (opt) {
    case 'n':
      n = strtoul(optarg, NULL, 10);
      break;
    case 'r':
      repeats = atoi(optarg);
      break;
    case 'f':
      folded = optarg;
      break;
    case 'o':
      outdir = optarg;
      break;
    default:
      fprintf(stderr,
              "usage: %s [-n SAMPLES] [-r REPEATS] [-f FOLDED] [-o DIR]\n",
              argv[0]);
      return 2;
    }
  }
  if ((folded ? load_folded(&in, folded) : gen(&in, n)) != 0) {
    fprintf(stderr, "cannot read the input\n");
    return 1;
  }
  for (int r = 0; r < repeats; r++) {
    struct pst__profile *q = build(&in, 0, &ms);
    if (ms < ms_s)
      ms_s = ms;
    pst__profile_free(q);
    q = build(&in, 1, &ms);
    if (ms < ms_i)
      ms_i = ms;
    if (p)
      pst__profile_free(p);
    p = q;
  }
  printf("input: %zu samples, %zu frames, %zu distinct frames, %zu stacks\n",
         in.ns, in.nframes, pst__profile_nframes(p), pst__profile_nstacks(p));
  printf("%-24s %8.1f ns/sample %6.2f ns/frame\n", "add_interned",
         ms_i * 1e6 / (double)in.ns, ms_i * 1e6 / (double)in.nframes);
  printf("%-24s %8.1f ns/sample %6.2f ns/frame\n", "add (strings hashed)",
         ms_s * 1e6 / (double)in.ns, ms_s * 1e6 / (double)in.nframes);
  for (const struct pst__writer_ops *const *w = pst__writer_list(); *w; w++) {
    double best = 1e30;

    for (int r = 0; r < repeats; r++) {
      FILE *f = fopen("/dev/null", "wb");
      double t0 = pst__now_ms();
      if (!f || (*w)->write(p, f) != 0)
        return 1;
      fclose(f);
      ms = pst__now_ms() - t0;
      if (ms < best)
        best = ms;
    }
    printf("write %-18s %8.2f ms\n", (*w)->name, best);
    if (outdir) {
      char path[4096];
      snprintf(path, sizeof(path), "%s/profile%s", outdir, (*w)->ext);
      if (pst__writer_save(*w, p, path) != 0)
        return 1;
    }
  }
  pst__profile_free(p);
  return 0;
}
