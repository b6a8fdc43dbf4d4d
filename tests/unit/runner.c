/* runner.c: runs every unit test in its own forked process with a timeout
 * and prints TAP, then a summary line "N passed, M failed, K skipped".
 * usage: run-unit [substring]  (run only tests whose name contains it) */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "task.h"
#include "test-list.h"

#define TEST_TIMEOUT_S 120

struct test {
  const char *name;
  int (*fn)(void);
};

static const struct test tests[] = {PST_TEST_LIST(TEST_ENTRY){NULL, NULL}};

static int run_one(const struct test *t) {
  int status;
  pid_t pid;

  fflush(stdout);
  pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    setpgid(0, 0);
    alarm(TEST_TIMEOUT_S);
    exit(t->fn());
  }
  while (waitpid(pid, &status, 0) < 0)
    ;
  kill(-pid, SIGKILL); /* helpers the test left behind */
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  fprintf(stderr, "# %s: killed by signal %d%s\n", t->name, WTERMSIG(status),
          WTERMSIG(status) == SIGALRM ? " (timeout)" : "");
  return 1;
}

int main(int argc, char **argv) {
  int n = 0, pass = 0, fail = 0, skip = 0;

  setvbuf(stdout, NULL, _IOLBF, 0);
  for (const struct test *t = tests; t->name; t++) {
    int rc;
    if (argc > 1 && !strstr(t->name, argv[1]))
      continue;
    rc = run_one(t);
    n++;
    if (rc == 0) {
      pass++;
      printf("ok %d %s\n", n, t->name);
    } else if (rc == TEST_SKIP_CODE) {
      skip++;
      printf("ok %d %s # SKIP\n", n, t->name);
    } else {
      fail++;
      printf("not ok %d %s\n", n, t->name);
    }
  }
  printf("1..%d\n", n);
  printf("%d passed, %d failed, %d skipped\n", pass, fail, skip);
  return fail ? 1 : 0;
}
