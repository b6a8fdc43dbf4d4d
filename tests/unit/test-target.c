/* test-target.c: while pystitch still has the target open (so the kernel
 * has not cleaned up after us), no thread is left traced or stopped, after
 * repeated snapshots, and a stopped target stays stopped (and is not
 * resumed by us); threads exiting never hide a live thread from a
 * snapshot (the kernel's /proc/PID/task listing can). */
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "proc/proc.h"
#include "pystitch.h"
#include "pythons.h"
#include "spawn.h"
#include "task.h"

static pid_t start_target(FILE **out) {
  char py[512], script[1024];
  char *argv[] = {py, "-u", script, NULL};
  pid_t pid;

  if (find_python(3, 12, py, sizeof(py)) && find_python(3, 11, py, sizeof(py)))
    SKIP("no python3.12 or python3.11");
  snprintf(script, sizeof(script), "%s/tests/targets/threads.py",
           test_srcdir());
  pid = test_spawn(argv, out, NULL);
  ASSERT_GT(pid, 0);
  return pid;
}

static void wait_ready(FILE *f) {
  char line[256];
  while (fgets(line, sizeof(line), f))
    if (!strncmp(line, "ready", 5))
      return;
  TEST_FAIL("target ended before printing ready");
}

/* Fails unless every thread of pid is untraced and, with want_stopped, in
 * group-stop (T), else not stopped (neither t nor T). */
static void check_threads(pid_t pid, int want_stopped) {
  pid_t *tids;
  int n = pst__proc_tasks(pid, &tids);

  ASSERT_GT(n, 8);
  for (int i = 0; i < n; i++) {
    struct pst__proc_status st;
    char state;
    ASSERT_EQ(pst__proc_task_stat(pid, tids[i], &state, NULL), 0);
    /* /proc/TID/status is the thread's own (TracerPid per thread). */
    ASSERT_EQ(pst__proc_status(tids[i], &st), 0);
    if (st.tracer != 0)
      TEST_FAIL("thread %d still traced by %d", (int)tids[i], (int)st.tracer);
    if (state == 't' || (!want_stopped && state == 'T') ||
        (want_stopped && state != 'T'))
      TEST_FAIL("thread %d in state %c (%s)", (int)tids[i], state,
                want_stopped ? "want T" : "want running");
  }
  free(tids);
}

TEST_IMPL(target_never_left_traced) {
  const struct pst_thread *th;
  struct pst_target *t;
  FILE *f;
  pid_t pid = start_target(&f);
  int n;

  wait_ready(f);
  ASSERT_EQ(pst_target_open(pid, &t), 0);
  for (int round = 0; round < 5; round++) {
    n = pst_target_snapshot(t, &th);
    ASSERT_GT(n, 8);
    usleep(20000);
    check_threads(pid, 0);
  }
  /* A stopped process: snapshots work, and it stays stopped. */
  kill(pid, SIGSTOP);
  usleep(100000);
  n = pst_target_snapshot(t, &th);
  ASSERT_GT(n, 8);
  usleep(50000);
  check_threads(pid, 1);
  kill(pid, SIGCONT);
  usleep(100000);
  check_threads(pid, 0);
  pst_target_close(t);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return 0;
}

/* Is every tid of want[] in the n of have[]? */
static int all_listed(const pid_t *want, int nwant, const pid_t *have, int n) {
  for (int i = 0; i < nwant; i++) {
    int j;
    for (j = 0; j < n && have[j] != want[i]; j++)
      ;
    if (j == n)
      return 0;
  }
  return 1;
}

/* tests/targets/exits.py, ROUNDS times: 8 threads exit, each in front of
 * one that lives on, while we list the tasks (the kernel's listing,
 * counted) and take snapshots, each of which must hold the 8. */
#define ROUNDS 200
#define PAIRS 8
TEST_IMPL(target_exits_hide_no_thread) {
  char py[512], script[1024], line[256];
  char *argv[] = {py, "-u", script, NULL};
  int snaps = 0, lists = 0, raw_missed = 0;
  struct pst_target *t = NULL;
  FILE *f, *cmd;
  pid_t pid;

  if (find_python(3, 12, py, sizeof(py)) && find_python(3, 11, py, sizeof(py)))
    SKIP("no python3.12 or python3.11");
  snprintf(script, sizeof(script), "%s/tests/targets/exits.py", test_srcdir());
  pid = test_spawn(argv, &f, &cmd);
  ASSERT_GT(pid, 0);
  ASSERT(f && cmd);
  for (int round = 0; round < ROUNDS; round++) {
    const struct pst_thread *th;
    struct pollfd pfd = {.fd = fileno(f), .events = POLLIN};
    pid_t longs[PAIRS], tids[64];
    char *p = line + 6;
    int m;

    fputs("round\n", cmd);
    fflush(cmd);
    if (!fgets(line, sizeof(line), f) || strncmp(line, "round ", 6))
      TEST_FAIL("target: %s", line);
    for (int i = 0; i < PAIRS; i++)
      longs[i] = (pid_t)strtol(p, &p, 10);
    ASSERT_GT(longs[PAIRS - 1], 0);
    if (!t)
      ASSERT_EQ(pst_target_open(pid, &t), 0);
    ASSERT_GT(pst_target_snapshot(t, &th), PAIRS); /* all known */
    fputs("go\n", cmd);
    fflush(cmd);
    while (poll(&pfd, 1, 0) == 0) {
      pid_t *raw;
      int n = pst__proc_tasks(pid, &raw);

      ASSERT_GT(n, 0);
      lists++;
      raw_missed += !all_listed(longs, PAIRS, raw, n);
      free(raw);
      m = pst_target_snapshot(t, &th);
      ASSERT_GT(m, PAIRS);
      ASSERT_LT(m, 64);
      for (int i = 0; i < m; i++)
        tids[i] = th[i].tid;
      snaps++;
      if (!all_listed(longs, PAIRS, tids, m))
        TEST_FAIL("round %d: a snapshot left out a live thread (%d listed)",
                  round, m);
    }
    if (!fgets(line, sizeof(line), f) || strncmp(line, "done", 4))
      TEST_FAIL("target: %s", line);
    fputs("next\n", cmd);
    fflush(cmd);
  }
  printf("# %d rounds, %d snapshots while a thread exited: none left a live "
         "thread out; the kernel's listing left one out %d times in %d\n",
         ROUNDS, snaps, raw_missed, lists);
  pst_target_close(t);
  fclose(cmd);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  fclose(f);
  return 0;
}
