/* test-top.c: the top consumer: own/total counts per interval and since
 * the start, a thread filter that drops the mixed counts, each thread's
 * last stack. */
#include <string.h>

#include "consumer/top.h"
#include "task.h"

static int feed(struct pst__top *t, const struct pst__sample_proc *p, pid_t tid,
                const char *name, struct pst_frame *f, size_t n,
                uint64_t t_ns) {
  struct pst_thread th;
  struct pst__sample s = {.proc = p,
                          .thread = &th,
                          .kind = PST_SK_STACK,
                          .t_ns = t_ns,
                          .weight_ns = 10000000};

  memset(&th, 0, sizeof(th));
  th.tid = tid;
  snprintf(th.name, sizeof(th.name), "%s", name);
  th.state = 'R';
  th.holds_gil = -1;
  th.frames = f;
  th.nframes = n;
  return pst__top_consumer_ops.sample(t, &s);
}

TEST_IMPL(top_filter_and_stack) {
  struct pst__sample_proc p = {.pid = 100, .cmdline = "python app.py"};
  struct pst_frame a[] = {{"work", "app.py", 20, 0, 0, 0},
                          {"main", "app.py", 10, 0, 0, 0}};
  struct pst_frame b[] = {{"wait", "app.py", 30, 0, 0, 0},
                          {"main", "app.py", 11, 0, 0, 0}};
  struct pst__top_row rows[8];
  struct pst__top_frame st[4];
  const struct pst__top_thread *th;
  struct pst__top *t;
  uint64_t samples;
  size_t n;

  ASSERT_EQ(pst__top_new(0, &t), 0);
  ASSERT_EQ(pst__top_consumer_ops.proc_begin(t, &p, &(void *){NULL}), 0);
  for (int i = 0; i < 3; i++)
    ASSERT_EQ(feed(t, &p, 101, "worker", a, 2, 1000), 0);
  ASSERT_EQ(feed(t, &p, 102, "waiter", b, 2, 2000), 0);
  n = pst__top_table(t, PST_TOP_INTERVAL, PST_TOP_OWN, rows, 8, &samples);
  ASSERT_EQ(n, 3);
  ASSERT_EQ(samples, 4);
  ASSERT_STR_EQ(rows[0].name, "work");
  ASSERT_EQ(rows[0].own, 3);
  ASSERT_STR_EQ(rows[1].name, "wait");
  ASSERT_STR_EQ(rows[2].name, "main"); /* own 0, in every stack */
  ASSERT_EQ(rows[2].total, 4);
  pst__top_roll(t);

  /* The waiter alone: the mixed counts go, the new ones are its own. */
  pst__top_set_filter(t, 100, 102);
  n = pst__top_table(t, PST_TOP_ALL, PST_TOP_OWN, rows, 8, &samples);
  ASSERT_EQ(n, 0);
  ASSERT_EQ(samples, 0);
  ASSERT_EQ(feed(t, &p, 101, "worker", a, 2, 3000), 0);
  ASSERT_EQ(feed(t, &p, 102, "waiter", b, 2, 4000), 0);
  n = pst__top_table(t, PST_TOP_INTERVAL, PST_TOP_OWN, rows, 8, &samples);
  ASSERT_EQ(n, 2);
  ASSERT_EQ(samples, 1);
  ASSERT_STR_EQ(rows[0].name, "wait");
  ASSERT_EQ(rows[0].own, 1);

  /* Both threads still in the pane, each with its last stack. */
  th = pst__top_threads(t, &n);
  ASSERT_EQ(n, 2);
  ASSERT_EQ(th[0].tid, 101);
  ASSERT_STR_EQ(th[0].top, "work");
  ASSERT_EQ(pst__top_stack(t, &th[0], st, 4), 2);
  ASSERT_STR_EQ(st[0].name, "work");
  ASSERT_EQ(st[0].line, 20);
  ASSERT_STR_EQ(st[1].name, "main");
  ASSERT_EQ(st[1].line, 10);
  ASSERT_EQ(th[0].stack_ns, 3000);
  ASSERT_EQ(pst__top_stack(t, &th[1], st, 1), 2); /* cut to 1, has 2 */
  ASSERT_STR_EQ(st[0].name, "wait");

  /* The whole process again. */
  pst__top_set_filter(t, 100, 0);
  ASSERT_EQ(feed(t, &p, 101, "worker", a, 2, 5000), 0);
  ASSERT_EQ(feed(t, &p, 102, "waiter", b, 2, 6000), 0);
  n = pst__top_table(t, PST_TOP_INTERVAL, PST_TOP_TOTAL, rows, 8, &samples);
  ASSERT_EQ(samples, 2);
  ASSERT_STR_EQ(rows[0].name, "main");
  ASSERT_EQ(rows[0].total, 2);
  pst__top_free(t);
  return 0;
}
