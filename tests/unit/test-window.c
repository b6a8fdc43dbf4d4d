/* test-window.c: the window consumer: a profile per window (per process,
 * or one for all), emitted with the window's samples and bounds at the
 * tick after its end and at the process's end, none when empty, and the
 * counts of all windows adding up to what was fed. */
#include <string.h>

#include "consumer/window.h"
#include "task.h"

struct emitted {
  int n;
  pid_t pid[16];
  uint64_t samples[16], from[16], until[16];
};

static int record_emit(void *arg, const struct pst__profile *prof,
                       const struct pst__window_span *span) {
  struct emitted *e = arg;

  ASSERT_LT(e->n, 16);
  ASSERT_EQ(span->samples, pst__profile_samples(prof));
  e->pid[e->n] = span->proc ? span->proc->pid : 0;
  e->samples[e->n] = span->samples;
  e->from[e->n] = span->from_unix_ns;
  e->until[e->n] = span->until_unix_ns;
  e->n++;
  return 0;
}

static void feed(struct pst__window_consumer *c,
                 const struct pst__sample_proc *p, void *data, uint64_t t_ns) {
  struct pst_frame f[] = {{"work", "app.py", 20, 0, 0, 0},
                          {"main", "app.py", 10, 0, 0, 0}};
  struct pst_thread th;
  struct pst__sample s = {.proc = p,
                          .proc_data = data,
                          .thread = &th,
                          .kind = PST_SK_STACK,
                          .t_ns = t_ns,
                          .weight_ns = 10000000};

  memset(&th, 0, sizeof(th));
  th.tid = p->pid + 1;
  snprintf(th.name, sizeof(th.name), "worker");
  th.frames = f;
  th.nframes = 2;
  ASSERT_EQ(pst__window_consumer_ops.sample(c, &s), 0);
}

static void run(int per_process) {
  struct pst__sample_proc a = {.pid = 100,
                               .cmdline = "python a.py",
                               .rank = -1,
                               .local_rank = -1,
                               .world_size = -1,
                               .role = ""};
  struct pst__sample_proc b = a;
  struct pst__window_opts o = {.window_ns = 1000000000,
                               .period_ns = 10000000,
                               .per_process = per_process,
                               .emit = record_emit};
  struct pst__window_consumer *c;
  struct pst__window_stats st;
  struct emitted e;
  void *da = NULL, *db = NULL;
  uint64_t sum = 0;
  const uint64_t ms = 1000000;

  memset(&e, 0, sizeof(e));
  o.arg = &e;
  b.pid = 200;
  ASSERT_EQ(pst__window_consumer_new(&o, &c), 0);
  ASSERT_EQ(pst__window_consumer_ops.proc_begin(c, &a, &da), 0);
  ASSERT_EQ(pst__window_consumer_ops.proc_begin(c, &b, &db), 0);
  /* Window 1: a 3 samples, b 2. */
  for (int i = 0; i < 3; i++)
    feed(c, &a, da, (uint64_t)(100 + i) * ms);
  for (int i = 0; i < 2; i++)
    feed(c, &b, db, (uint64_t)(200 + i) * ms);
  pst__window_consumer_ops.tick(c, 500 * ms, NULL);
  ASSERT_EQ(e.n, 0); /* not over yet */
  pst__window_consumer_ops.tick(c, 1000 * ms, NULL);
  ASSERT_EQ(e.n, per_process ? 2 : 1);
  /* Window 2: a 4 samples, b none (b's empty window is not emitted). */
  for (int i = 0; i < 4; i++)
    feed(c, &a, da, (uint64_t)(1100 + i) * ms);
  pst__window_consumer_ops.tick(c, 2000 * ms, NULL);
  ASSERT_EQ(e.n, per_process ? 3 : 2);
  /* Window 3: a ends with 1 sample (emitted at its end when it has its
   * own window, or, in the shared one, with b's at b's end). */
  feed(c, &a, da, 2100 * ms);
  feed(c, &b, db, 2200 * ms);
  pst__window_consumer_ops.proc_end(c, &a, da);
  ASSERT_EQ(e.n, per_process ? 4 : 2);
  pst__window_consumer_ops.proc_end(c, &b, db);
  ASSERT_EQ(e.n, per_process ? 5 : 3);
  for (int i = 0; i < e.n; i++) {
    sum += e.samples[i];
    ASSERT_LE(e.from[i], e.until[i]);
    if (i && (!per_process || e.pid[i] == e.pid[i - 1]))
      ASSERT_LE(e.until[i - 1], e.until[i]);
  }
  ASSERT_EQ(sum, 11);
  if (per_process) {
    /* a: 3, 4, 1; b: 2, 1, in the order the windows ended. */
    ASSERT_EQ(e.pid[0], 100);
    ASSERT_EQ(e.samples[0], 3);
    ASSERT_EQ(e.pid[1], 200);
    ASSERT_EQ(e.samples[1], 2);
    ASSERT_EQ(e.samples[2], 4);
    ASSERT_EQ(e.pid[3], 100);
    ASSERT_EQ(e.samples[3], 1);
    ASSERT_EQ(e.pid[4], 200);
    ASSERT_EQ(e.samples[4], 1);
  } else {
    ASSERT_EQ(e.samples[0], 5);
    ASSERT_EQ(e.samples[1], 4);
    ASSERT_EQ(e.samples[2], 2);
    ASSERT_EQ(e.pid[0], 0);
  }
  pst__window_consumer_stats(c, &st);
  ASSERT_EQ(st.windows, (uint64_t)e.n);
  ASSERT_EQ(st.samples, 11);
  ASSERT_EQ(st.emit_errors, 0);
  pst__window_consumer_free(c);
}

TEST_IMPL(window_per_process) {
  run(1);
  return 0;
}

TEST_IMPL(window_shared) {
  run(0);
  return 0;
}
