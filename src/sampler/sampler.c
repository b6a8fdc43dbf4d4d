/* sampler.c: the sampling engine on libuv (sampler.h): a timerfd-driven
 * tick that samples every target and hands the thread-samples to the
 * consumers, a refresh of threads and child processes, signals, and
 * `-- command`.
 *
 * Threading: everything runs on the loop thread, so every ptrace call comes
 * from the thread that attached (ptrace's rule).
 * Timing: the tick is a timerfd armed at absolute times (nanosecond
 * precision; libuv timers have milliseconds), each period plus a small
 * random jitter so that sampling does not alias with periodic work. A tick
 * that fires more than two periods late re-bases the schedule instead of
 * bursting to catch up.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "proc/proc.h"
#include "pystitch.h"
#include "sampler/sampler.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/strtab.h"

#define REFRESH_MS 100      /* threads and children: new ones within this */
#define ATTACH_RETRY_MS 10  /* a spawned command, until its Python is up */
#define ATTACH_TRIES 1000   /* 10 s of retries for an uninitialised target */
#define GIVEN_READY_MS 1000 /* a given pid that is starting up */
#define GRACE_MS                                                               \
  3000 /* the command's time to exit on SIGINT, then
                               on SIGTERM, when sampling ends first */
#define EXEC_TRIES                                                             \
  200 /* 2 s for a program exec'd by a target to be
                               an initialised Python */
#define PROGRESS_MS 250
#define TARGETS_MAX 1024
#define SCAN_MS 1000 /* --all: one /proc scan per second */

/* --all: a process looked at, by (pid, start time, start of code: an
 * exec changes it), so that each is checked once; gen marks the scan
 * that last saw it (the others have ended). */
#define TASK_STACK_MAX 1024 /* --async: frames of one task's stack */

struct seen {
  pid_t pid;
  uint64_t starttime, startcode;
  unsigned gen;
};

#define SCAN_TAKE_MAX 256 /* candidates per scan (the rest: next scan) */

/* --all: one scan on libuv's thread pool, so that sampling never waits
 * for /proc: its candidates and figures, read by scan_done(). */
struct scan_job {
  uv_work_t req;
  pid_t pids[SCAN_TAKE_MAX];
  size_t n;
  uint64_t ns, checked;
};

struct entry {
  pid_t pid;
  struct pst_target *t; /* NULL until attached, and after it ended */
  int tries;            /* attach attempts */
  int done;             /* ended, or not Python: never tried again */
  int execd;            /* the process exec'd: attaching its new program */
  int given;            /* named by -p: not Python is an error at once */
  struct pst_proc_image image; /* as attached: tells pid reuse and exec */
  char cmdline[256];
  struct pst_sample_proc proc; /* what consumers see, while attached */
  char role[64];
  char container[128];
  void *cdata[PST_SAMPLER_CONSUMERS_MAX]; /* each consumer's, or NULL */
  unsigned char cbegun[PST_SAMPLER_CONSUMERS_MAX]; /* proc_begin said 0 */
  /* --async: "task NAME" root frames, living as long as the samples'
   * strings (until the consumers' proc_end); whether the reason for
   * having no tasks was said (2: and there will be none). */
  struct pst_strtab *task_names;
  int async_said;
  int loop_said; /* --async: said that a loop's thread is not known */
  int cut_said;  /* --async: said that it has more tasks than are read */
};

struct rec {
  uv_loop_t loop;
  const struct pst_consumer *c;
  int nc;
  int flags; /* pst_target_sample() flags: sampling_flags() */
  uv_poll_t tick;
  uv_timer_t refresh, attach, stop, progress, scan;
  uv_signal_t sig[3];
  uv_process_t child;
  int tfd;
  int child_running, stopping, have_tick, have_child;
  uv_timer_t grace; /* stopping the command: SIGINT, then SIGTERM */
  int grace_step;   /* 0 not started, 1 SIGINT sent, 2 SIGTERM sent */
  int stop_signal;  /* the signal that stopped sampling, 0: none */
  uint64_t stop_ns; /* when sampling stopped */
  const struct pst_sampler_opts *o;
  struct pst_sampler_stats *st;
  struct entry **e; /* each allocated once: consumers keep &e->proc */
  size_t n;
  uint64_t period_ns, start_ns, sched_ns, last_ns;
  int first_err;
  unsigned seed;
  struct seen *seen; /* --all: the scan's, while scan_busy */
  size_t nseen, seen_cap;
  unsigned gen;
  struct pst_frame task_stack[TASK_STACK_MAX]; /* --async: one task's */
  struct scan_job job;
  int scan_busy;
  uint64_t pidns; /* our pid namespace's inode */
};

/* ---- targets ---- */

static int read_env_int(pid_t pid, const char *key, int *out) {
  char path[64], buf[65536];
  ssize_t n;

  snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
  n = pst_proc_read(path, buf, sizeof(buf));
  if (n < 0)
    return (int)n;
  return pst_proc_env_int(buf, (size_t)n, key, out);
}

static void read_cmdline(pid_t pid, char *buf, size_t len) {
  char path[64];
  ssize_t n;

  snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
  n = pst_proc_read(path, buf, len);
  if (n <= 0)
    buf[0] = '\0';
  else
    pst_proc_args_join(buf, (size_t)n);
}

static struct entry *add_entry(struct rec *r, pid_t pid) {
  struct entry **ne, *e;

  for (size_t i = 0; i < r->n; i++)
    if (r->e[i]->pid == pid)
      return r->e[i];
  if (r->n == TARGETS_MAX)
    return NULL;
  ne = realloc(r->e, (r->n + 1) * sizeof(*ne));
  if (!ne)
    return NULL;
  r->e = ne;
  e = calloc(1, sizeof(*e));
  if (!e)
    return NULL;
  e->pid = pid;
  r->e[r->n++] = e;
  return e;
}

static uint64_t pidns_of(const char *pid) {
  char path[96];
  struct stat st;

  snprintf(path, sizeof(path), "/proc/%.32s/ns/pid", pid);
  return stat(path, &st) ? 0 : (uint64_t)st.st_ino;
}

/* A process in another pid namespace than ours: the last part of its
 * cgroup (v2: "0::/system.slice/docker-ID.scope"), else "". */
static void container_of(struct rec *r, pid_t pid, char *out, size_t len) {
  char path[64], buf[4096];
  uint64_t ns;

  out[0] = '\0';
  snprintf(path, sizeof(path), "%d", (int)pid);
  ns = pidns_of(path);
  if (!ns || !r->pidns || ns == r->pidns)
    return;
  snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
  if (pst_proc_read(path, buf, sizeof(buf)) <= 0)
    return;
  pst_proc_cgroup_name(buf, out, len);
}

/* Tries to attach e. Returns 0 when attached, 1 to retry later, or a
 * negative error when it never will be (e->done set). */
static int attach(struct rec *r, struct entry *e) {
  int err;

  err = pst_target_open(e->pid, &e->t);
  /* Starting up (libc not mapped, no interpreter or thread-state key yet):
   * a spawned command, an exec, a new child; give up after ATTACH_TRIES.
   * Not (yet) Python, or not yet readable as one: a child about to exec,
   * a program exec'd a moment ago (for EXEC_TRIES), but a given pid is
   * what it is. */
  if ((err == PST_ENOTREADY ||
       ((!e->given || e->execd) &&
        (err == PST_EBADDATA || err == PST_ENOTPY || err == -EFAULT))) &&
      ++e->tries < ATTACH_TRIES)
    return 1;
  if (err) {
    e->done = 1;
    e->t = NULL;
    return err;
  }
  /* Read after the open: a pid reused before this point was attached as
   * the new process, which is then the one we record. */
  if (pst_proc_image(e->pid, &e->image) < 0)
    memset(&e->image, 0, sizeof(e->image));
  /* Threads mapped before the first tick (else the first 100 ms would
   * see only the main thread, not yet mapped to its Python state). */
  err = pst_target_refresh(e->t);
  if (err < 0) {
    pst_target_close(e->t);
    e->t = NULL;
    e->done = 1;
    return err;
  }
  read_cmdline(e->pid, e->cmdline, sizeof(e->cmdline));
  e->role[0] = '\0';
  container_of(r, e->pid, e->container, sizeof(e->container));
  e->proc = (struct pst_sample_proc){.pid = e->pid,
                                     .cmdline = e->cmdline,
                                     .rank = -1,
                                     .local_rank = -1,
                                     .world_size = -1,
                                     .ppid = 0,
                                     .role = e->role,
                                     .container = e->container,
                                     .role_gen = 0,
                                     .info = pst_target_info(e->t)};
  if (!e->given && !r->o->all) { /* a followed child */
    struct pst_proc_status ps;
    if (pst_proc_status(e->pid, &ps) == 0)
      e->proc.ppid = ps.ppid;
  }
  read_env_int(e->pid, "RANK", &e->proc.rank);
  read_env_int(e->pid, "LOCAL_RANK", &e->proc.local_rank);
  read_env_int(e->pid, "WORLD_SIZE", &e->proc.world_size);
  for (int k = 0; k < r->nc; k++) {
    const struct pst_consumer *c = &r->c[k];
    e->cdata[k] = NULL;
    e->cbegun[k] = !c->ops->proc_begin ||
                   c->ops->proc_begin(c->ctx, &e->proc, &e->cdata[k]) == 0;
  }
  if (!e->execd) /* a program exec'd by a recorded one is the same process */
    r->st->processes++;
  e->execd = 0;
  pst_info("recording process %d (%s)", (int)e->pid,
           pst_target_info(e->t)->version);
  if (r->o->gil_only && pst_target_info(e->t)->free_threaded)
    pst_warn("process %d is a free-threaded CPython: there is no GIL; "
             "--gil keeps the threads running on a CPU",
             (int)e->pid);
  return 0;
}

/* Adds e's per-target counters to the recording's. */
static void harvest(struct rec *r, struct entry *e) {
  struct pst_native_stats ns;

  if (!e->t)
    return;
  r->st->torn_retries += pst_target_torn_retries(e->t);
  r->st->line_tables_cut += pst_target_line_tables_cut(e->t);
  if (pst_target_native_stats(e->t, &ns) == 0) {
    r->st->native_samples += ns.samples;
    r->st->native_mismatches += ns.mismatches;
    r->st->native_errors += ns.native_errors;
  }
}

/* Tells the consumers that e's samples end (its strings die next). */
static void end_consumers(struct rec *r, struct entry *e) {
  for (int k = 0; k < r->nc; k++) {
    const struct pst_consumer *c = &r->c[k];
    if (e->cbegun[k] && c->ops->proc_end)
      c->ops->proc_end(c->ctx, &e->proc, e->cdata[k]);
    e->cbegun[k] = 0;
    e->cdata[k] = NULL;
  }
  pst_strtab_free(e->task_names);
  e->task_names = NULL;
  e->async_said = 0; /* an exec'd program may have tasks */
  e->loop_said = 0;
  e->cut_said = 0;
}

static void end_entry(struct rec *r, struct entry *e) {
  harvest(r, e);
  if (e->t)
    end_consumers(r, e);
  pst_target_close(e->t);
  e->t = NULL;
  e->done = 1;
}

static int live_targets(const struct rec *r) {
  int n = 0;
  for (size_t i = 0; i < r->n; i++)
    n += r->e[i]->t != NULL || !r->e[i]->done;
  return n;
}

/* ---- samples ---- */

/* The one place that turns the options into what is read: the target's
 * decide() applies these flags to each thread. */
static int sampling_flags(const struct pst_sampler_opts *o) {
  return (o->blocking ? PST_SAMPLE_BLOCKING : 0) |
         (o->nonblocking ? 0 : PST_SAMPLE_EXACT) |
         (o->idle && !o->gil_only ? PST_SAMPLE_NO_ACTIVITY : 0) |
         (o->native ? PST_SAMPLE_NATIVE : 0) |
         (!o->idle ? PST_SAMPLE_ACTIVE_ONLY : 0) |
         (o->gil_only ? PST_SAMPLE_GIL_ONLY : 0) |
         (o->native > 1 ? PST_SAMPLE_NATIVE_ALL : 0);
}

uint64_t pst_sampler_count_error(struct pst_sampler_stats *st, int err) {
  int k;

  st->errors++;
  if (err == PST_ETORN)
    st->torn++;
  else if (err == -ESRCH)
    st->gone++;
  else
    st->other++;
  for (k = 0; k < PST_SAMPLER_ERRKINDS - 1; k++)
    if (st->errkinds[k].code == err || st->errkinds[k].code == 0)
      break;
  st->errkinds[k].code = st->errkinds[k].code ? st->errkinds[k].code : err;
  return ++st->errkinds[k].count;
}

#define ERRORS_LOGGED 3 /* per kind, with -v */

/* -v: the first few errors of each kind, with the thread, the address
 * and the reason (the summary only counts them). nth: this error's
 * number within its kind. */
static void log_error(const struct rec *r, const struct entry *e,
                      const struct pst_thread *x, uint64_t nth) {
  (void)r;
  if (nth > ERRORS_LOGGED)
    return;
  char at[48] = "";

  if (x->error_addr)
    snprintf(at, sizeof(at), " at 0x%llx", (unsigned long long)x->error_addr);
  pst_info("process %d thread %d \"%s\" (state %c%s, thread state 0x%llx): "
           "%s%s: %s%s",
           (int)e->pid, (int)x->tid, x->name, x->state,
           x->holds_gil == 1 ? ", holds the GIL" : "",
           (unsigned long long)x->tstate, pst_errname(x->error), at,
           pst_strerror(x->error),
           nth == ERRORS_LOGGED ? " (the last one logged of this kind)" : "");
}

/* A thread with no Python state, running: its CPU time shows under one
 * frame (without --native there is nothing more to read). */
static struct pst_frame native_marker = {"[native thread]", "", 0,
                                         PST_FRAME_MARKER,  0,  0};

/* What a thread's outcome is for the consumers; *shown is the thread as
 * they get it (a native-only thread gets the marker frame). */
static enum pst_sample_kind kind_of(const struct rec *r,
                                    const struct pst_thread *x,
                                    struct pst_thread *copy,
                                    const struct pst_thread **shown) {
  *shown = x;
  if (!x->tstate && !r->o->native && !x->skipped) {
    *copy = *x;
    copy->error = 0;
    copy->frames = &native_marker;
    copy->nframes = 1;
    *shown = copy;
    return PST_SK_STACK;
  }
  if (x->error)
    return PST_SK_ERROR;
  if (x->skipped || x->nframes == 0)
    return PST_SK_IDLE;
  return PST_SK_STACK;
}

/* Hands one sample of e to every consumer that took e. */
static void deliver(struct rec *r, struct entry *e, struct pst_sample *s) {
  for (int k = 0; k < r->nc; k++) {
    const struct pst_consumer *c = &r->c[k];
    if (!e->cbegun[k] || !c->ops->sample)
      continue;
    s->proc_data = e->cdata[k];
    if (c->ops->sample(c->ctx, s) < 0)
      r->st->consumer_errors++;
  }
}

/* Says once per process why --async has no tasks for it. */
static void tasks_unavailable(struct entry *e, int err) {
  if (e->async_said)
    return;
  e->async_said = 1;
  if (err == PST_EPYVERSION)
    pst_warn("process %d runs CPython %s: asyncio tasks are read on 3.8+ "
             "only; its threads are recorded",
             (int)e->pid, pst_target_info(e->t)->version);
  else if (err == PST_ENOSYM)
    pst_info("process %d has not imported asyncio (yet)", (int)e->pid);
  else
    pst_warn("process %d: asyncio tasks: %s", (int)e->pid, pst_strerror(err));
}

/* --async: one sample per task of e, as the stack of a thread "asyncio
 * tasks" of the task's thread: its coroutines, a "task NAME" frame, then
 * the task awaiting it (coroutines, name), outwards. */
static void sample_tasks(struct rec *r, struct entry *e, uint64_t t_ns,
                         uint64_t weight) {
  struct pst_frame *stack = r->task_stack;
  const struct pst_task *tk;
  int chain[PST_TASK_CHAIN_MAX], n;

  if (e->async_said == 2) /* a version without them: asked once */
    return;
  n = pst_target_tasks(e->t, r->flags & PST_SAMPLE_BLOCKING, &tk);
  if (n <= 0) {
    if (n < 0 && n != PST_ENOSYM && n != PST_EPYVERSION)
      r->st->task_errors++;
    if (n < 0)
      tasks_unavailable(e, n);
    if (n == PST_EPYVERSION)
      e->async_said = 2;
    return;
  }
  if (pst_target_tasks_cut(e->t) && !e->cut_said) {
    e->cut_said = 1;
    pst_warn("process %d has more asyncio tasks than are read (%d at most): "
             "only %d of them are recorded",
             (int)e->pid, PST_TASKS_MAX, n);
  }
  for (int i = 0; i < n && !e->loop_said; i++)
    if (tk[i].no_thread == PST_TASK_LOOP_UNKNOWN) {
      e->loop_said = 1;
      pst_warn(
          "process %d runs asyncio tasks on an event loop of type %s, "
          "which does not say which thread runs it (uvloop's does "
          "not): they are recorded as thread \"asyncio tasks (loop's thread "
          "not known)\" (CPython 3.14+ knows it)",
          (int)e->pid, tk[i].loop_type);
    }
  if (!e->task_names && !(e->task_names = pst_strtab_new()))
    return;
  for (int i = 0; i < n; i++) {
    /* A thread of its own (the consumers key threads by tid): minus the
     * loop thread's tid, or, with none, below every -TID (tids are below
     * 2^22): one per reason. */
    struct pst_thread th = {.tid = tk[i].tid ? -tk[i].tid
                                             : -(1 << 22) - tk[i].no_thread,
                            .frames = stack};
    struct pst_sample s = {&e->proc, NULL, &th, PST_SK_STACK, t_ns, weight};
    int len = pst_task_chain(tk, i, chain, PST_TASK_CHAIN_MAX), torn = 0;
    size_t nf = 0;

    /* A chain read while one of its tasks ran could mix two moments:
     * left out, counted. */
    for (int c = 0; c < len; c++)
      torn |= tk[chain[c]].torn;
    if (torn) {
      r->st->task_torn++;
      continue;
    }
    if (tk[i].tid)
      snprintf(th.name, sizeof(th.name), "asyncio tasks of %d", (int)tk[i].tid);
    else
      snprintf(th.name, sizeof(th.name), "asyncio tasks (%s)",
               pst_task_no_thread_str(tk[i].no_thread));
    th.state = 'S';
    th.holds_gil = -1;
    th.idle = !tk[i].running;
    for (int c = 0; c < len && nf < TASK_STACK_MAX; c++) {
      const struct pst_task *k = &tk[chain[c]];
      char root[160];
      for (int f = 0; f < k->nframes && nf < TASK_STACK_MAX; f++)
        stack[nf++] = k->frames[f];
      if (nf == TASK_STACK_MAX)
        break;
      snprintf(root, sizeof(root), "task %s", k->name[0] ? k->name : "?");
      stack[nf] = (struct pst_frame){.kind = PST_FRAME_MARKER};
      stack[nf].name = pst_strtab_intern(e->task_names, root);
      stack[nf].filename = "";
      if (!stack[nf].name)
        return;
      nf++;
    }
    th.nframes = nf;
    th.truncated = nf == TASK_STACK_MAX;
    r->st->task_samples++;
    deliver(r, e, &s);
  }
}

static void sample_entry(struct rec *r, struct entry *e, uint64_t t_ns,
                         uint64_t weight) {
  const struct pst_thread *th;
  int n = pst_target_sample(e->t, r->flags, &th);

  if (n < 0)
    return;
  if (strcmp(e->role, pst_target_role(e->t))) {
    snprintf(e->role, sizeof(e->role), "%s", pst_target_role(e->t));
    e->proc.role_gen++;
  }
  for (int i = 0; i < n; i++) {
    struct pst_thread copy;
    struct pst_sample s = {&e->proc, NULL, NULL, PST_SK_STACK, t_ns, weight};

    s.kind = kind_of(r, &th[i], &copy, &s.thread);
    if (s.kind == PST_SK_ERROR)
      log_error(r, e, s.thread,
                pst_sampler_count_error(r->st, s.thread->error));
    else if (s.kind == PST_SK_IDLE)
      r->st->idle_skipped++;
    else
      r->st->samples++;
    if (s.thread == &copy)
      r->st->native_only_samples++;
    deliver(r, e, &s);
  }
  if (r->o->async)
    sample_tasks(r, e, t_ns, weight);
}

static void arm_tick(struct rec *r) {
  struct itimerspec its = {{0, 0}, {0, 0}};
  int64_t jitter = 0;
  uint64_t at;

  /* +-5% of the period, uniformly. */
  if (r->period_ns >= 40)
    jitter = (int64_t)(rand_r(&r->seed) % (r->period_ns / 10)) -
             (int64_t)(r->period_ns / 20);
  at = (uint64_t)((int64_t)r->sched_ns + jitter);
  its.it_value.tv_sec = (time_t)(at / 1000000000ULL);
  its.it_value.tv_nsec = (long)(at % 1000000000ULL);
  timerfd_settime(r->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void on_tick(uv_poll_t *h, int status, int events) {
  struct rec *r = h->data;
  uint64_t expirations, now, weight;
  double lag_ms;

  (void)status;
  (void)events;
  if (read(r->tfd, &expirations, sizeof(expirations)) < 0)
    return;
  now = pst_now_ns();
  lag_ms = now > r->sched_ns ? (double)(now - r->sched_ns) / 1e6 : 0;
  if (lag_ms > r->st->max_lag_ms)
    r->st->max_lag_ms = lag_ms;
  if (now > r->sched_ns + r->period_ns) {
    r->st->late_ticks++;
    if (now > r->sched_ns + 2 * r->period_ns)
      r->sched_ns = now; /* re-base: do not burst to catch up */
  }
  weight = r->last_ns ? now - r->last_ns : r->period_ns;
  r->last_ns = now;
  r->st->ticks++;
  for (size_t i = 0; i < r->n; i++)
    if (r->e[i]->t)
      sample_entry(r, r->e[i], now - r->start_ns, weight);
  for (int k = 0; k < r->nc; k++)
    if (r->c[k].ops->tick)
      r->c[k].ops->tick(r->c[k].ctx, now - r->start_ns, r->st);
  r->sched_ns += r->period_ns;
  arm_tick(r);
}

/* ---- lifecycle ---- */

static void on_close(uv_handle_t *h) { (void)h; }

static void on_grace(uv_timer_t *h) {
  struct rec *r = h->data;

  if (!r->child_running)
    return;
  if (r->grace_step == 1) {
    pst_info("the command (pid %d) did not exit on SIGINT within %d ms: "
             "SIGTERM",
             (int)r->child.pid, GRACE_MS);
    uv_process_kill(&r->child, SIGTERM);
    r->grace_step = 2;
    uv_timer_start(&r->grace, on_grace, GRACE_MS, 0);
    return;
  }
  pst_warn("the command (pid %d) is still running after SIGINT and "
           "SIGTERM: left running",
           (int)r->child.pid);
  r->st->child_left_running = 1;
  uv_close((uv_handle_t *)&r->child, on_close);
  uv_close((uv_handle_t *)&r->grace, on_close);
}

/* Sampling ends while the command we started runs: stop it (SIGINT, as
 * Ctrl-C would; SIGTERM after GRACE_MS), unless --keep-running. The loop
 * runs on until it exits, so its exit status is reported. A Ctrl-C from
 * the terminal already reached it (same process group): not sent twice. */
static void stop_child(struct rec *r) {
  int from_tty =
      r->stop_signal == SIGINT && isatty(0) && tcgetpgrp(0) == getpgrp();

  if (!r->have_child || !r->child_running ||
      uv_is_closing((uv_handle_t *)&r->child))
    return;
  if (r->o->keep_running) {
    pst_info("the command (pid %d) keeps running (--keep-running)",
             (int)r->child.pid);
    r->st->child_left_running = 1;
    uv_close((uv_handle_t *)&r->child, on_close);
    return;
  }
  if (!from_tty)
    uv_process_kill(&r->child, SIGINT);
  r->st->child_stopped = 1;
  r->grace_step = 1;
  uv_timer_start(&r->grace, on_grace, GRACE_MS, 0);
}

static void stop_all(struct rec *r) {
  if (r->stopping)
    return;
  r->stopping = 1;
  r->stop_ns = pst_now_ns();
  if (r->have_tick)
    uv_close((uv_handle_t *)&r->tick, on_close);
  uv_close((uv_handle_t *)&r->refresh, on_close);
  uv_close((uv_handle_t *)&r->attach, on_close);
  uv_close((uv_handle_t *)&r->stop, on_close);
  uv_close((uv_handle_t *)&r->progress, on_close);
  uv_close((uv_handle_t *)&r->scan, on_close);
  for (int i = 0; i < 3; i++)
    uv_close((uv_handle_t *)&r->sig[i], on_close);
  stop_child(r);
  if (!r->grace_step)
    uv_close((uv_handle_t *)&r->grace, on_close);
}

static void find_children(struct rec *r, pid_t pid) {
  pid_t *tids;
  int n = pst_proc_tasks(pid, &tids);

  for (int i = 0; i < n; i++) {
    char path[80], buf[4096];
    const char *p = buf;
    pid_t c;
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid,
             (int)tids[i]);
    if (pst_proc_read(path, buf, sizeof(buf)) <= 0)
      continue;
    while (pst_proc_next_pid(&p, &c))
      add_entry(r, c);
  }
  if (n > 0)
    free(tids);
}

static void try_attach_pending(struct rec *r) {
  for (size_t i = 0; i < r->n; i++) {
    struct entry *e = r->e[i];
    int err;
    if (e->t || e->done)
      continue;
    err = attach(r, e);
    if (err < 0) {
      if (!r->first_err)
        r->first_err = err;
      /* Children that are not Python are skipped quietly. */
      if (e->execd)
        pst_info("process %d exec'd a program pystitch cannot record "
                 "(%s): its recording ends",
                 (int)e->pid, pst_strerror(err));
      else if (err == PST_ENOTPY && i >= (size_t)r->o->npids && !r->have_child)
        pst_debug("process %d is not Python: skipped", (int)e->pid);
      else
        pst_warn("cannot record process %d: %s", (int)e->pid,
                 pst_strerror(err));
    }
  }
}

static void on_attach(uv_timer_t *h);

/* Is e still the program we attached? A target that exited and whose pid
 * was given to a new process (another start time) has ended: it must not
 * be read as if it were the old one (wrong stacks, a recording that never
 * ends). One that exec'd (same start time, a new address space) is
 * attached again when its new program is an initialised Python, else it
 * ends. Returns 0 when unchanged, 1 when e was closed. */
static int check_image(struct rec *r, struct entry *e) {
  struct pst_proc_image im;

  if (pst_proc_image(e->pid, &im) < 0 || im.state == 'Z' || im.state == 'X' ||
      im.starttime != e->image.starttime) {
    pst_info("process %d ended", (int)e->pid);
    end_entry(r, e);
    return 1;
  }
  if (!memcmp(im.addr, e->image.addr, sizeof(im.addr)))
    return 0;
  if (!im.vsize) {
    /* No address space: exiting (the kernel drops it before the process
     * becomes a zombie). Not the addresses being 0: they are, too, in
     * the middle of an execve() (a new address space not yet filled),
     * which is an exec. */
    pst_info("process %d ended", (int)e->pid);
    end_entry(r, e);
    return 1;
  }
  pst_info("process %d exec'd a new program", (int)e->pid);
  harvest(r, e);
  end_consumers(r, e); /* the old program's strings die with it */
  pst_target_close(e->t);
  e->t = NULL;
  e->execd = 1;
  e->tries = ATTACH_TRIES - EXEC_TRIES;
  uv_timer_start(&r->attach, on_attach, 0, ATTACH_RETRY_MS);
  return 1;
}

static void on_refresh(uv_timer_t *h) {
  struct rec *r = h->data;

  for (size_t i = 0; i < r->n; i++) {
    struct entry *e = r->e[i];
    if (!e->t || check_image(r, e))
      continue;
    if (pst_target_refresh(e->t) < 0) {
      pst_info("process %d ended", (int)e->pid);
      end_entry(r, e);
      continue;
    }
    if (r->o->subprocesses)
      find_children(r, e->pid);
  }
  try_attach_pending(r);
  if (!live_targets(r) && !r->child_running && !r->o->all)
    stop_all(r);
}

/* ---- --all: the host's Python processes ---- */

/* Does the file at path (a /proc maps file) mention needle? Read in
 * chunks, a needle across two of them included. */
static int file_mentions(const char *path, const char *needle) {
  char buf[65536];
  size_t keep = 0, nl = strlen(needle);
  int fd = open(path, O_RDONLY | O_CLOEXEC), found = 0;
  ssize_t n;

  if (fd < 0)
    return 0;
  while (!found && (n = read(fd, buf + keep, sizeof(buf) - keep)) > 0) {
    size_t have = keep + (size_t)n;
    found = memmem(buf, have, needle, nl) != NULL;
    keep = have < nl - 1 ? have : nl - 1;
    memmove(buf, buf + have - keep, keep);
  }
  close(fd);
  return found;
}

/* Cheap first look: its executable is a python, or it maps a libpython
 * (an embedding program: uwsgi, a C++ host). The attach decides. */
static int looks_python(pid_t pid) {
  char path[64], exe[4096];
  const char *base;
  ssize_t n;

  snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
  n = readlink(path, exe, sizeof(exe) - 1);
  if (n <= 0)
    return 0; /* a kernel thread, or not ours to read */
  exe[n] = '\0';
  base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
  if (!strncmp(base, "python", 6))
    return 1;
  snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
  return file_mentions(path, "/libpython");
}

static struct seen *seen_slot(struct rec *r, pid_t pid) {
  struct seen *ns;

  for (size_t i = 0; i < r->nseen; i++)
    if (r->seen[i].pid == pid)
      return &r->seen[i];
  if (r->nseen == r->seen_cap) {
    size_t cap = r->seen_cap ? 2 * r->seen_cap : 256;
    ns = realloc(r->seen, cap * sizeof(*ns));
    if (!ns)
      return NULL;
    r->seen = ns;
    r->seen_cap = cap;
  }
  r->seen[r->nseen] = (struct seen){.pid = pid};
  return &r->seen[r->nseen++];
}

static void compact_entries(struct rec *r);

/* Off the loop thread (libuv's pool): the scan's reads of /proc. It alone
 * touches r->seen while it runs (scan_busy); the options are read-only. A
 * process new since the last scan (or with a new program) that looks like
 * Python and passes --match/--exclude goes into the job's candidates. */
static void scan_work(uv_work_t *req) {
  struct rec *r = req->data;
  struct scan_job *j = &r->job;
  uint64_t t0 = pst_now_ns();
  pid_t self = getpid();
  struct dirent *de;
  DIR *d = opendir("/proc");
  size_t k = 0;

  j->n = 0;
  j->checked = 0;
  if (!d)
    return;
  r->gen++;
  while ((de = readdir(d))) {
    struct pst_proc_image im;
    struct seen *s;
    char *end, cmd[4096];
    long pid = strtol(de->d_name, &end, 10);
    if (*end || pid <= 0 || pid == self)
      continue;
    if (pst_proc_image((pid_t)pid, &im) || im.state == 'Z' || im.state == 'X')
      continue;
    s = seen_slot(r, (pid_t)pid);
    if (!s)
      break;
    if (s->gen && s->starttime == im.starttime && s->startcode == im.addr[0]) {
      s->gen = r->gen;
      continue;
    }
    *s = (struct seen){(pid_t)pid, im.starttime, im.addr[0], r->gen};
    /* Mid-exec, or not ours to read: looked at again next time (a
     * kernel thread, with no address space at all, is not). */
    if (!im.addr[0] && im.vsize)
      s->gen = 0;
    j->checked++;
    if (!looks_python((pid_t)pid))
      continue;
    read_cmdline((pid_t)pid, cmd, sizeof(cmd));
    if ((r->o->match && regexec(r->o->match, cmd, 0, NULL, 0)) ||
        (r->o->exclude && !regexec(r->o->exclude, cmd, 0, NULL, 0)))
      continue;
    if (j->n == SCAN_TAKE_MAX)
      break;
    j->pids[j->n++] = (pid_t)pid;
  }
  closedir(d);
  for (size_t i = 0; i < r->nseen; i++)
    if (r->seen[i].gen == r->gen)
      r->seen[k++] = r->seen[i];
  r->nseen = k;
  j->ns = pst_now_ns() - t0;
}

/* Back on the loop thread: the candidates become entries, attached now. */
static void scan_done(uv_work_t *req, int status) {
  struct rec *r = req->data;
  struct scan_job *j = &r->job;

  r->scan_busy = 0;
  if (status || r->stopping)
    return;
  r->st->scans++;
  r->st->scan_ns += j->ns;
  if (j->ns > r->st->scan_ns_max)
    r->st->scan_ns_max = j->ns;
  r->st->scan_checked += j->checked;
  compact_entries(r);
  for (size_t i = 0; i < j->n; i++) {
    struct entry *e = add_entry(r, j->pids[i]);
    if (!e) {
      pst_warn_once("--all: more than %d processes; the others are not "
                    "recorded",
                    TARGETS_MAX);
      break;
    }
    if (e->t)
      continue;    /* recorded already (check_image tells a new program) */
    if (e->done) { /* a pid used again: a new process */
      memset(e, 0, sizeof(*e));
      e->pid = j->pids[i];
    }
    r->st->scan_found++;
    pst_debug("process %d: a Python candidate", (int)e->pid);
  }
  try_attach_pending(r);
  if (!uv_is_active((uv_handle_t *)&r->attach))
    uv_timer_start(&r->attach, on_attach, ATTACH_RETRY_MS, ATTACH_RETRY_MS);
}

/* Drops the entries of ended processes (their consumers were told). */
static void compact_entries(struct rec *r) {
  size_t k = 0;

  for (size_t i = 0; i < r->n; i++) {
    if (!r->e[i]->t && r->e[i]->done)
      free(r->e[i]); /* its task names went with its consumers */
    else
      r->e[k++] = r->e[i];
  }
  r->n = k;
}

static void on_scan(uv_timer_t *h) {
  struct rec *r = h->data;

  if (r->scan_busy || r->stopping)
    return;
  r->job.req.data = r;
  if (uv_queue_work(&r->loop, &r->job.req, scan_work, scan_done) == 0)
    r->scan_busy = 1;
}

static void on_attach(uv_timer_t *h) {
  struct rec *r = h->data;
  int pending = 0;

  try_attach_pending(r);
  for (size_t i = 0; i < r->n; i++)
    pending += !r->e[i]->t && !r->e[i]->done;
  if (!pending)
    uv_timer_stop(h);
}

static void on_stop(uv_timer_t *h) { stop_all(h->data); }

static void on_signal(uv_signal_t *h, int signum) {
  struct rec *r = h->data;
  pst_info("signal %d: writing the profile", signum);
  r->st->interrupted = 1;
  r->stop_signal = signum;
  stop_all(r);
}

static void on_progress(uv_timer_t *h) {
  struct rec *r = h->data;
  const struct pst_sampler_stats *st = r->st;
  uint64_t all = st->samples + st->errors;

  fprintf(stderr,
          "\r\033[Kpystitch: %.1f s, %" PRIu64 " samples, %d process%s, "
          "%.2f%% errors, lag %.1f ms",
          (double)(pst_now_ns() - r->start_ns) / 1e9, st->samples,
          st->processes, st->processes == 1 ? "" : "es",
          all ? 100.0 * (double)st->errors / (double)all : 0.0,
          r->last_ns > r->sched_ns ? (double)(r->last_ns - r->sched_ns) / 1e6
                                   : 0.0);
}

static void on_child_exit(uv_process_t *p, int64_t status, int signum) {
  struct rec *r = p->data;

  r->child_running = 0;
  r->st->child_exited = 1;
  r->st->child_status = signum ? 128 + signum : (int)status;
  uv_close((uv_handle_t *)p, on_close);
  if (r->grace_step && !uv_is_closing((uv_handle_t *)&r->grace))
    uv_close((uv_handle_t *)&r->grace, on_close);
  /* Its threads are gone: the next refresh ends its entry, then the
   * recording when nothing else is left. */
}

static int spawn(struct rec *r) {
  uv_process_options_t po;
  uv_stdio_container_t stdio[3];
  const char *sudo_uid = getenv("SUDO_UID"), *sudo_gid = getenv("SUDO_GID");
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
  add_entry(r, r->child.pid);
  return 0;
}

int pst_sampler_run(const struct pst_sampler_opts *o,
                    const struct pst_consumer *consumers, int nc,
                    struct pst_sampler_stats *st) {
  static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
  struct rec r;
  int err = 0;

  memset(&r, 0, sizeof(r));
  memset(st, 0, sizeof(*st));
  if (nc < 0 || nc > PST_SAMPLER_CONSUMERS_MAX)
    return -EINVAL;
  r.o = o;
  r.c = consumers;
  r.nc = nc;
  r.flags = sampling_flags(o);
  r.st = st;
  r.tfd = -1;
  r.seed = (unsigned)pst_now_ns();
  r.period_ns = (uint64_t)(1e9 / o->rate_hz);
  r.pidns = pidns_of("self");
  if (uv_loop_init(&r.loop))
    return -ENOMEM;
  /* Attach the given pids first: an error there is the user's to see. */
  for (int i = 0; i < o->npids; i++) {
    struct entry *e = add_entry(&r, o->pids[i]);
    /* A given pid that is not Python must say so (exit code 5) at once;
     * one that is starting up gets GIVEN_READY_MS to be ready. */
    if (e) {
      e->given = 1;
      e->tries = ATTACH_TRIES - GIVEN_READY_MS / ATTACH_RETRY_MS;
    }
    err = e ? attach(&r, e) : -ENOMEM;
    while (err == 1) {
      usleep(ATTACH_RETRY_MS * 1000);
      err = attach(&r, e);
    }
    if (err)
      goto out_loop;
  }
  if (o->argv) {
    err = spawn(&r);
    if (err)
      goto out_loop;
  }
  r.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (r.tfd < 0) {
    err = -errno;
    goto out_loop;
  }
  uv_poll_init(&r.loop, &r.tick, r.tfd);
  r.have_tick = 1;
  uv_timer_init(&r.loop, &r.refresh);
  uv_timer_init(&r.loop, &r.attach);
  uv_timer_init(&r.loop, &r.stop);
  uv_timer_init(&r.loop, &r.progress);
  uv_timer_init(&r.loop, &r.grace);
  uv_timer_init(&r.loop, &r.scan);
  r.tick.data = r.refresh.data = r.attach.data = r.stop.data = r.progress.data =
      r.grace.data = r.scan.data = &r;
  for (int i = 0; i < 3; i++) {
    uv_signal_init(&r.loop, &r.sig[i]);
    r.sig[i].data = &r;
    uv_signal_start(&r.sig[i], on_signal, sigs[i]);
  }
  r.start_ns = r.sched_ns = pst_now_ns();
  r.sched_ns += r.period_ns;
  arm_tick(&r);
  uv_poll_start(&r.tick, UV_READABLE, on_tick);
  uv_timer_start(&r.refresh, on_refresh, REFRESH_MS, REFRESH_MS);
  if (o->argv)
    uv_timer_start(&r.attach, on_attach, 0, ATTACH_RETRY_MS);
  if (o->duration_s > 0)
    uv_timer_start(&r.stop, on_stop, (uint64_t)(o->duration_s * 1000), 0);
  if (o->progress)
    uv_timer_start(&r.progress, on_progress, PROGRESS_MS, PROGRESS_MS);
  if (o->all)
    uv_timer_start(&r.scan, on_scan, 0, SCAN_MS);
  if (o->ready)
    o->ready(o, o->ready_arg);
  uv_run(&r.loop, UV_RUN_DEFAULT);
  if (o->progress)
    fputs("\r\033[K", stderr);
  st->elapsed_s =
      (double)((r.stop_ns ? r.stop_ns : pst_now_ns()) - r.start_ns) / 1e9;
  for (size_t i = 0; i < r.n; i++)
    harvest(&r, r.e[i]);
  err = 0;
out_loop:
  /* A spawned command still running when we stop keeps running. */
  if (r.have_child && !uv_is_closing((uv_handle_t *)&r.child))
    uv_close((uv_handle_t *)&r.child, on_close);
  if (r.have_tick && !r.stopping)
    stop_all(&r);
  uv_run(&r.loop, UV_RUN_DEFAULT);
  if (uv_loop_close(&r.loop))
    pst_debug("uv_loop_close: handles left open");
  if (r.tfd >= 0)
    close(r.tfd);
  for (size_t i = 0; i < r.n; i++) {
    if (r.e[i]->t)
      end_consumers(&r, r.e[i]);
    pst_target_close(r.e[i]->t);
    free(r.e[i]);
  }
  free(r.e);
  free(r.seen);
  return err;
}
