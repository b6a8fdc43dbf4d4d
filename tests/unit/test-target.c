/* test-target.c: while pystitch still has the target open (so the kernel
 * has not cleaned up after us), no thread is left traced or stopped, after
 * repeated snapshots, and a stopped target stays stopped (and is not
 * resumed by us). */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/proc.h"
#include "pystitch.h"
#include "pythons.h"
#include "task.h"

static pid_t start_target(FILE **out) {
  char py[512], script[1024];
  int pipefd[2];
  pid_t pid;

  if (find_python(3, 12, py, sizeof(py)) && find_python(3, 11, py, sizeof(py)))
    SKIP("no python3.12 or python3.11");
  snprintf(script, sizeof(script), "%s/tests/targets/threads.py",
           getenv("PST_SRCDIR") ? getenv("PST_SRCDIR") : ".");
  ASSERT(pipe(pipefd) == 0);
  pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    dup2(pipefd[1], 1);
    execl(py, py, "-u", script, (char *)NULL);
    _exit(127);
  }
  close(pipefd[1]);
  *out = fdopen(pipefd[0], "r");
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
  int n = pst_proc_tasks(pid, &tids);

  ASSERT_GT(n, 8);
  for (int i = 0; i < n; i++) {
    struct pst_proc_status st;
    char state;
    ASSERT_EQ(pst_proc_task_stat(pid, tids[i], &state, NULL), 0);
    /* /proc/TID/status is the thread's own (TracerPid per thread). */
    ASSERT_EQ(pst_proc_status(tids[i], &st), 0);
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
