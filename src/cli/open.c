/* open.c: attaching to the target with one-line, actionable error messages. */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/cli.h"
#include "pystitch.h"

int pst__cli_explain(pid_t pid, int err) {
  switch (err) {
  case -ESRCH:
    fprintf(stderr,
            "pystitch: error: no such process: %d (check the pid "
            "with 'ps -p %d')\n",
            (int)pid, (int)pid);
    return PST_EXIT_NO_PROCESS;
  case PST_EZOMBIE:
    fprintf(stderr,
            "pystitch: error: process %d is a zombie (it has exited "
            "and waits for its parent to reap it)\n",
            (int)pid);
    return PST_EXIT_NO_PROCESS;
  case -EPERM:
  case -EACCES:
    fprintf(stderr,
            "pystitch: error: permission denied to trace process %d: run "
            "as root or as its user with CAP_SYS_PTRACE (sudo setcap "
            "cap_sys_ptrace+ep $(which pystitch)); in a container add "
            "--cap-add SYS_PTRACE; check kernel.yama.ptrace_scope\n",
            (int)pid);
    return PST_EXIT_PERMISSION;
  case PST_ENOTPY:
    fprintf(stderr,
            "pystitch: error: process %d is not a Python process "
            "(no libpython and no Python symbols in its "
            "executable); give the pid of a python process\n",
            (int)pid);
    return PST_EXIT_NOT_PYTHON;
  case PST_EPYVERSION:
    fprintf(stderr,
            "pystitch: error: process %d runs a CPython version "
            "pystitch does not support (supported: 2.7, 3.6-3.15 "
            "and later versions with _Py_DebugOffsets)\n",
            (int)pid);
    return PST_EXIT_PY_VERSION;
  case PST_ETRACED:
    fprintf(stderr,
            "pystitch: error: process %d is already traced by "
            "another debugger (see TracerPid in /proc/%d/status); "
            "detach gdb or strace and try again\n",
            (int)pid, (int)pid);
    return PST_EXIT_TRACED;
  case PST_ENOTREADY:
    fprintf(stderr,
            "pystitch: error: process %d is still starting: its "
            "Python interpreter was not initialised within a "
            "second; try again once it runs\n",
            (int)pid);
    return PST_EXIT_NOT_PYTHON;
  case PST_ESELF:
    fprintf(stderr,
            "pystitch: error: %d is pystitch's own pid; give the "
            "pid of the Python process to profile\n",
            (int)pid);
    return PST_EXIT_SELF;
  }
  fprintf(stderr, "pystitch: error: cannot attach to process %d: %s\n",
          (int)pid, pst_strerror(err));
  return PST_EXIT_ERROR;
}

int pst__cli_open(pid_t pid, struct pst_target **t) {
  int err = pst_target_open(pid, t);

  /* A process caught starting up gets a second to be ready. */
  for (int i = 0; err == PST_ENOTREADY && i < 100; i++) {
    usleep(10000);
    err = pst_target_open(pid, t);
  }
  return err ? pst__cli_explain(pid, err) : 0;
}
