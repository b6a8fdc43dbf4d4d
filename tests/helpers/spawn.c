/* spawn.c: a test's target process started with its stdout, and its stdin
 * when asked, on pipes (spawn.h). */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "spawn.h"

static void close_pair(int fd[2]) {
  if (fd[0] >= 0)
    close(fd[0]);
  if (fd[1] >= 0)
    close(fd[1]);
}

/* In the child: end `keep` of the pipe becomes fd `to`, both ends closed. */
static void plug(int fd[2], int keep, int to) {
  if (fd[keep] < 0)
    return;
  dup2(fd[keep], to);
  close_pair(fd);
}

pid_t test_spawn(char *const argv[], FILE **out, FILE **in) {
  int o[2] = {-1, -1}, i[2] = {-1, -1}, err;
  pid_t pid;

  if ((out && pipe(o) != 0) || (in && pipe(i) != 0)) {
    err = -errno;
    close_pair(o);
    return err;
  }
  pid = fork();
  if (pid < 0) {
    err = -errno;
    close_pair(o);
    close_pair(i);
    return err;
  }
  if (pid == 0) {
    plug(o, 1, 1);
    plug(i, 0, 0);
    execvp(argv[0], argv);
    _exit(127);
  }
  if (out) {
    close(o[1]);
    *out = fdopen(o[0], "r");
  }
  if (in) {
    close(i[0]);
    *in = fdopen(i[1], "w");
  }
  return pid;
}
