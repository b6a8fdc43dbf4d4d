/* test-profile.c: frames and stacks deduplicate, consecutive samples of a
 * stack merge into runs per thread, totals add up. */
#include "profile/profile.h"
#include "task.h"

TEST_IMPL(profile_runs_and_dedup) {
  struct pst__profile *p = pst__profile_new(10000000);
  struct pst__prof_frame a[] = {{"main", "app.py", 10}, {"work", "app.py", 20}};
  struct pst__prof_frame b[] = {{"main", "app.py", 10}, {"idle", "app.py", 30}};
  char name[] = "work";
  struct pst__prof_frame a2[] = {{"main", "app.py", 10}, {name, "app.py", 20}};
  const struct pst__prof_run *runs;
  uint64_t counts[8], weights[8];
  const uint32_t *ids;
  size_t n;
  int proc, t1, t2;

  ASSERT(p != NULL);
  proc = pst__profile_process(p, 100, "python app.py", 0, 0, 2);
  ASSERT_EQ(proc, 0);
  ASSERT_EQ(pst__profile_process(p, 100, "x", -1, -1, -1), 0);
  t1 = pst__profile_thread(p, (uint32_t)proc, 101, "MainThread");
  t2 = pst__profile_thread(p, (uint32_t)proc, 102, "worker");
  ASSERT_EQ(t1, 0);
  ASSERT_EQ(t2, 1);
  ASSERT_EQ(pst__profile_add(p, 0, a, 2, 0, 10), 0);
  ASSERT_EQ(pst__profile_add(p, 0, a2, 2, 10, 10), 0); /* same stack */
  ASSERT_EQ(pst__profile_add(p, 0, b, 2, 20, 10), 0);
  ASSERT_EQ(pst__profile_add(p, 0, a, 2, 30, 10), 0);
  ASSERT_EQ(pst__profile_add(p, 1, a, 2, 0, 7), 0);
  ASSERT_EQ(pst__profile_nframes(p), 3);
  ASSERT_EQ(pst__profile_nstacks(p), 2);
  ASSERT_EQ(pst__profile_samples(p), 5);
  runs = pst__profile_runs(p, 0, &n);
  ASSERT_EQ(n, 3);
  ASSERT_EQ(runs[0].count, 2);
  ASSERT_EQ(runs[0].start_ns, 0);
  ASSERT_EQ(runs[0].end_ns, 10);
  ASSERT_EQ(runs[0].weight_ns, 20);
  ASSERT_EQ(runs[1].stack, 1);
  ASSERT_EQ(runs[2].stack, runs[0].stack);
  ids = pst__profile_stack(p, runs[0].stack, &n);
  ASSERT_EQ(n, 2);
  ASSERT_STR_EQ(pst__profile_frame(p, ids[0])->name, "main");
  ASSERT_STR_EQ(pst__profile_frame(p, ids[1])->name, "work");
  pst__profile_stack_totals(p, counts, weights);
  ASSERT_EQ(counts[runs[0].stack], 4);
  ASSERT_EQ(weights[runs[0].stack], 37);
  ASSERT_EQ(counts[1], 1);
  ASSERT_EQ(pst__profile_proc(p, 0)->world_size, 2);
  pst__profile_free(p);
  return 0;
}
