/* child.c: `-- command`: the command spawned (as the sudo user under sudo)
 * and sampled; when sampling ends first, stopped with SIGINT, then SIGTERM
 * after a grace period, unless --keep-running (internal.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/proc.h"
#include "sampler/internal.h"
#include "util/log.h"

#define GRACE_MS                                                               \
  3000 /* the command's time to exit on SIGINT, then on SIGTERM, when
          sampling ends first */

#define TREE_MAX 1024 /* processes of the command's tree signalled */

/* Sends sig to the command and to every process under it still in its
 * process group, as a Ctrl-C would reach them: a shell script's Python,
 * what unshare or a launcher started. Not to what left the group (a
 * daemon), nor beyond TREE_MAX processes. */
static void signal_command(struct pst__rec *r, int sig) {
  pid_t tree[TREE_MAX], pgid = getpgid(r->child.pid);
  size_t n = 1;

  tree[0] = r->child.pid;
  for (size_t k = 0; k < n; k++) {
    pid_t *tids;
    int nt = pst__proc_tasks(tree[k], &tids);
    for (int i = 0; i < nt && n < TREE_MAX; i++) {
      char path[80], buf[4096];
      const char *p = buf;
      pid_t c;
      snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)tree[k],
               (int)tids[i]);
      if (pst__proc_read(path, buf, sizeof(buf)) <= 0)
        continue;
      while (n < TREE_MAX && pst__proc_next_pid(&p, &c))
        tree[n++] = c;
    }
    if (nt > 0)
      free(tids);
  }
  uv_process_kill(&r->child, sig);
  for (size_t k = 1; k < n; k++)
    if (pgid > 0 && getpgid(tree[k]) == pgid)
      kill(tree[k], sig);
}

static void on_grace(uv_timer_t *h) {
  struct pst__rec *r = h->data;

  if (!r->child_running)
    return;
  if (r->grace_step == 1) {
    pst__info("the command (pid %d) did not exit on SIGINT within %d ms: "
              "SIGTERM",
              (int)r->child.pid, GRACE_MS);
    signal_command(r, SIGTERM);
    r->grace_step = 2;
    uv_timer_start(&r->grace, on_grace, GRACE_MS, 0);
    return;
  }
  pst__warn("the command (pid %d) is still running after SIGINT and "
            "SIGTERM: left running",
            (int)r->child.pid);
  r->st->child_left_running = 1;
  uv_close((uv_handle_t *)&r->child, pst__on_close);
  uv_close((uv_handle_t *)&r->grace, pst__on_close);
}

/* Sampling ends while the command we started runs: stop it (SIGINT, as
 * Ctrl-C would; SIGTERM after GRACE_MS), unless --keep-running. The loop
 * runs on until it exits, so its exit status is reported. A Ctrl-C from
 * the terminal already reached it (same process group): not sent twice. */
void pst__stop_child(struct pst__rec *r) {
  int from_tty =
      r->stop_signal == SIGINT && isatty(0) && tcgetpgrp(0) == getpgrp();

  if (!r->have_child || !r->child_running ||
      uv_is_closing((uv_handle_t *)&r->child))
    return;
  if (r->o->keep_running) {
    pst__info("the command (pid %d) keeps running (--keep-running)",
              (int)r->child.pid);
    r->st->child_left_running = 1;
    uv_close((uv_handle_t *)&r->child, pst__on_close);
    return;
  }
  if (!from_tty)
    signal_command(r, SIGINT);
  r->st->child_stopped = 1;
  r->grace_step = 1;
  uv_timer_start(&r->grace, on_grace, GRACE_MS, 0);
}

static void on_child_exit(uv_process_t *p, int64_t status, int signum) {
  struct pst__rec *r = p->data;

  r->child_running = 0;
  r->st->child_exited = 1;
  r->st->child_status = signum ? 128 + signum : (int)status;
  uv_close((uv_handle_t *)p, pst__on_close);
  if (r->grace_step && !uv_is_closing((uv_handle_t *)&r->grace))
    uv_close((uv_handle_t *)&r->grace, pst__on_close);
  /* Its threads are gone: the next refresh ends its entry, then the
   * recording when nothing else is left. */
}

int pst__spawn(struct pst__rec *r) {
  uv_process_options_t po;
  uv_stdio_container_t stdio[3];
  const char *sudo_uid = getenv("SUDO_UID"), *sudo_gid = getenv("SUDO_GID");
  struct pst__entry *e;
  int err;

  memset(&po, 0, sizeof(po));
  for (int i = 0; i < 3; i++) {
    stdio[i].flags = UV_INHERIT_FD;
    stdio[i].data.fd = i;
  }
  po.file = r->o->argv[0];
  po.args = r->o->argv;
  po.exit_cb = on_child_exit;
  po.stdio = stdio;
  po.stdio_count = 3;
  /* Under sudo the command runs as the user who ran sudo. */
  if (getuid() == 0 && sudo_uid && sudo_gid) {
    po.uid = (uv_uid_t)atoi(sudo_uid);
    po.gid = (uv_gid_t)atoi(sudo_gid);
    po.flags |= UV_PROCESS_SETUID | UV_PROCESS_SETGID;
  }
  r->child.data = r;
  err = uv_spawn(&r->loop, &r->child, &po);
  if (err) {
    /* libuv: a handle whose spawn failed must still be closed, or
     * uv_loop_close() fails and the loop's memory leaks (LeakSanitizer). */
    uv_close((uv_handle_t *)&r->child, NULL);
    return err;
  }
  r->have_child = r->child_running = 1;
  e = pst__add_entry(r, r->child.pid);
  if (e)
    e->launched = 1;
  return 0;
}
