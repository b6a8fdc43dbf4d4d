/* test-profile.c: frames and stacks deduplicate, consecutive samples of a
 * stack merge into runs per thread, totals add up; a stack added again by
 * its id (a kept stack) counts as if added by its frames; threads are
 * found again by (process, tid) among thousands. */
#include <errno.h>

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

TEST_IMPL(profile_add_by_stack_id) {
  struct pst__profile *p = pst__profile_new(10000000);
  const char *main_ = pst__profile_intern(p, "main");
  const char *work = pst__profile_intern(p, "work");
  const char *file = pst__profile_intern(p, "app.py");
  struct pst__prof_frame a[] = {{main_, file, 10}, {work, file, 20}};
  const struct pst__prof_run *runs;
  int64_t sid;
  size_t n;

  ASSERT(p != NULL && main_ && work && file);
  ASSERT_EQ(pst__profile_process(p, 100, "python app.py", -1, -1, -1), 0);
  for (int tid = 1; tid <= 3000; tid++)
    ASSERT_EQ(pst__profile_thread(p, 0, tid, "t"), tid - 1);
  ASSERT_EQ(pst__profile_thread(p, 0, 2000, "renamed"), 1999);
  ASSERT_STR_EQ(pst__profile_thread_at(p, 1999)->name, "renamed");
  sid = pst__profile_add_interned_id(p, 5, a, 2, 0, 10);
  ASSERT(sid >= 0);
  ASSERT_EQ(pst__profile_add_stack(p, 5, (uint32_t)sid, 10, 10), 0);
  ASSERT_EQ(pst__profile_add_stack(p, 5, (uint32_t)sid + 1, 20, 10), -EINVAL);
  ASSERT_EQ(pst__profile_add_stack(p, 3000, (uint32_t)sid, 20, 10), -EINVAL);
  ASSERT_EQ(pst__profile_add_interned_id(p, 5, a, 2, 20, 10), sid);
  runs = pst__profile_runs(p, 5, &n);
  ASSERT_EQ(n, 1);
  ASSERT_EQ(runs[0].count, 3);
  ASSERT_EQ(runs[0].end_ns, 20);
  ASSERT_EQ(runs[0].weight_ns, 30);
  ASSERT_EQ(pst__profile_samples(p), 3);
  pst__profile_free(p);
  return 0;
}
