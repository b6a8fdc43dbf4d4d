/* sampler.c: the sampling engine on libuv (sampler.h): a timerfd-driven
 * tick that samples every target and hands the thread-samples to the
 * consumers, and the lifecycle of targets (attach, refresh, exec, pid
 * reuse, end), signals and the progress line. The host scan is scan.c's,
 * the `-- command` child.c's (internal.h).
 *
 * Threading: everything runs on the loop thread but the opens of processes
 * found while sampling, which the worker runs (open_off_loop(): analysis
 * and a first stop take 5-40 ms, a tick's period at 100 Hz); each ptrace
 * stop is seized, read and detached by one thread (ptrace's rule).
 * Timing: the tick is a timerfd armed at absolute times (nanosecond
 * precision; libuv timers have milliseconds), each period plus a small
 * random jitter so that sampling does not alias with periodic work. A tick
 * that fires more than two periods late re-bases the schedule instead of
 * bursting to catch up (its samples weigh the time since the tick before).
 * While it samples, the loop thread asks for a short scheduler slice, or
 * with --realtime for SCHED_FIFO (tick_sched()).
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "proc/probe.h"
#include "proc/proc.h"
#include "pystitch.h"
#include "sampler/internal.h"
#include "sampler/sampler.h"
#include "util/clock.h"
#include "util/log.h"

#define REFRESH_MS 100      /* threads and children: new ones within this */
#define REFRESH_MAX_MS 1000 /* or this, when a refresh costs a lot */
#define ATTACH_TRIES 1000   /* 10 s of retries for an uninitialised target */
#define GIVEN_READY_MS 1000 /* a given pid that is starting up */
#define EXEC_TRIES                                                             \
  200 /* 2 s for a program exec'd by a target to be
                               an initialised Python */
#define PROGRESS_MS 250
#define SCAN_MS 1000 /* --all: one /proc scan per second */

/* ---- targets ---- */

struct pst__entry *pst__add_entry(struct pst__rec *r, pid_t pid) {
  struct pst__entry **ne, *e;

  for (size_t i = 0; i < r->n; i++)
    if (r->e[i]->pid == pid)
      return r->e[i];
  if (r->n == PST__TARGETS_MAX)
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

/* May e, when it is not Python, be watched for Python descendants? With
 * -s, the `-- command` (a shell, unshare, a launcher that runs Python
 * further down) and what was found under a watched process; never with
 * --all, which finds every Python process itself. */
static int may_watch(const struct pst__rec *r, const struct pst__entry *e) {
  return !r->o->all && (r->o->subprocesses || e->launched || e->from_watch);
}

/* e is not Python (yet): watched from now on (its children followed, its
 * exec seen), if it may be. Returns 1 when it is. */
static int watch(struct pst__rec *r, struct pst__entry *e) {
  char cmd[128];

  if (!may_watch(r, e))
    return 0;
  if (!e->watch) {
    if (pst__proc_image(e->pid, &e->image) < 0)
      return 0;
    pst__probe_cmdline(e->pid, cmd, sizeof(cmd));
    pst__info("process %d (%s) is not Python: watching it for Python "
              "processes under it",
              (int)e->pid, cmd);
    r->st->watched++;
  }
  e->watch = 1;
  return 1;
}

/* A child found under a recorded Python process (multiprocessing's spawn
 * and forkserver workers, a DataLoader's) belongs to its job: it takes
 * the origin (the command line of the process its tree was found from)
 * and the rank labels it does not have of its own from its parent. */
static void inherit(struct pst__rec *r, struct pst__entry *e) {
  const struct pst__entry *parent = NULL;

  e->origin[0] = '\0';
  e->proc.origin = e->origin;
  for (size_t i = 0; e->proc.ppid > 0 && i < r->n; i++)
    if (r->e[i]->pid == e->proc.ppid && r->e[i]->t)
      parent = r->e[i];
  if (!parent)
    return;
  snprintf(e->origin, sizeof(e->origin), "%s",
           parent->origin[0] ? parent->origin : parent->cmdline);
  if (e->proc.rank < 0)
    e->proc.rank = parent->proc.rank;
  if (e->proc.local_rank < 0)
    e->proc.local_rank = parent->proc.local_rank;
  if (e->proc.world_size < 0)
    e->proc.world_size = parent->proc.world_size;
}

/* What a refresh (of all targets) may spend stopping new threads: half a
 * period, within [1, 20] ms (pst_target_set_stop_deadline()). */
static uint64_t stop_budget(const struct pst__rec *r) {
  uint64_t b = r->period_ns / 2;

  return b < 1000000 ? 1000000 : b > 20000000 ? 20000000 : b;
}

static int others_sampled(const struct pst__rec *r,
                          const struct pst__entry *e) {
  for (size_t i = 0; i < r->n; i++)
    if (r->e[i] != e && r->e[i]->t)
      return 1;
  return 0;
}

/* Goes on with e once pst_target_open() gave err (and, when 0, e->t).
 * Returns 0 when attached, 1 to retry later, 2 when it is not Python and
 * watched instead, or a negative error when it never will be (e->done
 * set). */
static int attached(struct pst__rec *r, struct pst__entry *e, int err) {
  int not_python;

  not_python = err == PST_EBADDATA || err == PST_ENOTPY || err == -EFAULT;
  /* Starting up (libc not mapped, no interpreter or thread-state key yet):
   * a spawned command, an exec, a new child; give up after ATTACH_TRIES.
   * Not (yet) Python, or not yet readable as one: a child about to exec,
   * a program exec'd a moment ago (for EXEC_TRIES), but a given pid is
   * what it is. */
  /* -EINVAL from a process we started or that exec'd: a value read
   * before the interpreter set it (2.7's TSS key is -1 until
   * PyThread_create_key: one ASan run in CI); starting up too. */
  if ((err == PST_ENOTREADY || ((!e->given || e->execd || e->watch) &&
                                (not_python || err == -EINVAL))) &&
      ++e->tries < ATTACH_TRIES) {
    if (not_python) /* its children are followed meanwhile */
      watch(r, e);
    return 1;
  }
  if (not_python && watch(r, e)) {
    e->t = NULL;
    e->tries = ATTACH_TRIES; /* tried again when it execs */
    e->execd = 0;
    return 2;
  }
  if (err) {
    e->done = 1;
    e->t = NULL;
    return err;
  }
  pst_target_set_period(e->t, r->period_ns);
  /* Once sampling runs, the loop never waits for a library's symbols
   * (libtorch_cpu's: 70 ms, seven ticks at 100 Hz): they are read on a
   * thread of their own. The given pids, attached before, have their
   * threads named at once (pst__sampler_run()). */
  if (r->worker_ok)
    pst_target_background_symbols(e->t, 1);
  /* Nor for the stops of new threads (each 1-3 ms when it waits for a busy
   * CPU: a torch process starts dozens): once other targets are sampled,
   * a refresh stops threads for at most stop_budget(), the rest left to
   * the next one (on_refresh()). */
  pst_target_set_stop_deadline(
      e->t, others_sampled(r, e) ? pst__now_ns() + stop_budget(r) : 0);
  /* One module cache for every target: a library many of them map
   * (libtorch in each worker) is opened and its symbols read once. */
  for (size_t i = 0; i < r->n; i++)
    if (r->e[i] != e && r->e[i]->t) {
      pst_target_share_modules(e->t, r->e[i]->t);
      break;
    }
  /* Read after the open: a pid reused before this point was attached as
   * the new process, which is then the one we record. */
  if (pst__proc_image(e->pid, &e->image) < 0)
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
  pst__probe_cmdline(e->pid, e->cmdline, sizeof(e->cmdline));
  e->role[0] = '\0';
  pst__probe_container(e->pid, r->pidns, e->container, sizeof(e->container));
  e->proc = (struct pst__sample_proc){.pid = e->pid,
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
    struct pst__proc_status ps;
    if (pst__proc_status(e->pid, &ps) == 0)
      e->proc.ppid = ps.ppid;
  }
  pst__probe_env_int(e->pid, "RANK", &e->proc.rank);
  pst__probe_env_int(e->pid, "LOCAL_RANK", &e->proc.local_rank);
  pst__probe_env_int(e->pid, "WORLD_SIZE", &e->proc.world_size);
  inherit(r, e);
  for (int k = 0; k < r->nc; k++) {
    const struct pst__consumer *c = &r->c[k];
    e->cdata[k] = NULL;
    e->cbegun[k] = !c->ops->proc_begin ||
                   c->ops->proc_begin(c->ctx, &e->proc, &e->cdata[k]) == 0;
  }
  if (!e->execd) /* a program exec'd by a recorded one is the same process */
    r->st->processes++;
  e->execd = 0;
  e->watch = 0;
  pst__info("recording process %d (%s)", (int)e->pid,
            pst_target_info(e->t)->version);
  if (r->o->policy.mode == PST_MODE_EXCEPTION &&
      !pst_target_info(e->t)->exc_state)
    pst__warn("process %d (CPython %s): where a thread's exception is is not "
              "known for this build: mode exception records nothing of it",
              (int)e->pid, pst_target_info(e->t)->version);
  if (r->o->policy.mode == PST_MODE_GIL && pst_target_info(e->t)->free_threaded)
    pst__warn("process %d is a free-threaded CPython: there is no GIL; "
              "--gil keeps the threads running on a CPU",
              (int)e->pid);
  return 0;
}

/* Tries to attach e here and now. */
static int attach(struct pst__rec *r, struct pst__entry *e) {
  struct pst_target *t = NULL;
  int err = pst_target_open(e->pid, &t);

  e->t = err ? NULL : t;
  return attached(r, e, err);
}

/* Adds e's per-target counters to the recording's. */
static void harvest(struct pst__rec *r, struct pst__entry *e) {
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
static void end_consumers(struct pst__rec *r, struct pst__entry *e) {
  for (int k = 0; k < r->nc; k++) {
    const struct pst__consumer *c = &r->c[k];
    if (e->cbegun[k] && c->ops->proc_end)
      c->ops->proc_end(c->ctx, &e->proc, e->cdata[k]);
    e->cbegun[k] = 0;
    e->cdata[k] = NULL;
  }
  e->async_said = 0; /* an exec'd program may have tasks */
  e->loop_said = 0;
  e->cut_said = 0;
}

static void end_entry(struct pst__rec *r, struct pst__entry *e) {
  harvest(r, e);
  if (e->t)
    end_consumers(r, e);
  pst_target_close(e->t);
  e->t = NULL;
  e->done = 1;
}

static int live_targets(const struct pst__rec *r) {
  int n = 0;
  for (size_t i = 0; i < r->n; i++)
    n += r->e[i]->t != NULL || !r->e[i]->done;
  return n;
}

/* ---- samples ---- */

uint64_t pst__sampler_count_error(struct pst__sampler_stats *st, int err) {
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
static void log_error(const struct pst__entry *e, const struct pst_thread *x,
                      uint64_t nth) {
  if (nth > ERRORS_LOGGED)
    return;
  char at[48] = "";

  if (x->error_addr)
    snprintf(at, sizeof(at), " at 0x%llx", (unsigned long long)x->error_addr);
  pst__info("process %d thread %d \"%s\" (state %c%s, thread state 0x%llx): "
            "%s%s: %s%s",
            (int)e->pid, (int)x->tid, x->name, x->state,
            x->holds_gil == 1 ? ", holds the GIL" : "",
            (unsigned long long)x->tstate, pst_errname(x->error), at,
            pst_strerror(x->error),
            nth == ERRORS_LOGGED ? " (the last one logged of this kind)" : "");
}

/* What a thread's outcome is for the consumers (the target decided what
 * was read and put the marker frames). */
static enum pst__sample_kind kind_of(const struct pst_thread *x) {
  if (x->error)
    return PST_SK_ERROR;
  if (x->skipped || x->nframes == 0)
    return PST_SK_IDLE;
  return PST_SK_STACK;
}

/* Hands one sample of e to every consumer that took e. */
static void deliver(struct pst__rec *r, struct pst__entry *e,
                    struct pst__sample *s) {
  for (int k = 0; k < r->nc; k++) {
    const struct pst__consumer *c = &r->c[k];
    if (!e->cbegun[k] || !c->ops->sample)
      continue;
    s->proc_data = e->cdata[k];
    if (c->ops->sample(c->ctx, s) < 0)
      r->st->consumer_errors++;
  }
}

/* Says once per process why --async has no tasks for it. */
static void tasks_unavailable(struct pst__entry *e, int err) {
  char why[160];

  if (e->async_said)
    return;
  e->async_said = 1;
  if (pst_target_tasks_why(e->t, err, why, sizeof(why)))
    pst__warn("process %d: no asyncio tasks: %s", (int)e->pid, why);
  else if (err == PST_ENOSYM) /* it may import it later */
    pst__info("process %d: no asyncio tasks: %s (yet)", (int)e->pid, why);
  else
    pst__warn("process %d: no asyncio tasks: %s; its threads are recorded",
              (int)e->pid, why);
}

/* The CPU time thread tid of this tick's samples th (n) stands for. */
static uint64_t cpu_of(const struct pst_thread *th, int n, pid_t tid) {
  for (int i = 0; i < n; i++)
    if (th[i].tid == tid)
      return th[i].cpu_ns;
  return 0;
}

/* --async: one sample per task of e, as the stack of a thread "asyncio
 * tasks" of the task's thread (pst_target_task_stack()). Sampling CPU
 * time: only the task running on a thread that was on a CPU, worth that
 * thread's CPU time (th, nth: this tick's thread samples); else every
 * task, worth the tick's time. */
static void sample_tasks(struct pst__rec *r, struct pst__entry *e,
                         uint64_t t_ns, uint64_t weight,
                         const struct pst_thread *th_all, int nth) {
  const struct pst_task *tk;
  int n;

  if (e->async_said == 2) /* a version without them: asked once */
    return;
  n = pst_target_tasks(e->t, r->flags & PST_SAMPLE_BLOCKING, &tk);
  if (n <= 0) {
    if (n < 0 && n != PST_ENOSYM && n != PST_EPYVERSION)
      r->st->task_errors++;
    /* Tasks that moved while they were read: this tick's only (counted
     * with the ticks whose tasks could not be read), not a reason. */
    if (n == PST_ETORN || n == -EFAULT)
      pst__debug("process %d: asyncio tasks: %s", (int)e->pid, pst_strerror(n));
    else if (n < 0)
      tasks_unavailable(e, n);
    if (n == PST_EPYVERSION)
      e->async_said = 2;
    return;
  }
  if (pst_target_tasks_cut(e->t) && !e->cut_said) {
    e->cut_said = 1;
    pst__warn("process %d has more asyncio tasks than are read (%d at most): "
              "only %d of them are recorded",
              (int)e->pid, PST_TASKS_MAX, n);
  }
  for (int i = 0; i < n && !e->loop_said; i++)
    if (tk[i].no_thread == PST_TASK_LOOP_UNKNOWN) {
      e->loop_said = 1;
      pst__warn(
          "process %d runs asyncio tasks on an event loop of type %s, "
          "which does not say which thread runs it (uvloop's does "
          "not): they are recorded as thread \"asyncio tasks (loop's thread "
          "not known)\" (CPython 3.14+ knows it)",
          (int)e->pid, tk[i].loop_type);
    }
  for (int i = 0; i < n; i++) {
    struct pst_thread th;
    struct pst__sample s = {&e->proc, NULL, &th, PST_SK_STACK, t_ns, weight};
    int err;

    if (r->flags & PST_SAMPLE_ON_CPU) {
      s.weight_ns = tk[i].running ? cpu_of(th_all, nth, tk[i].tid) : 0;
      if (!s.weight_ns)
        continue;
    }
    err = pst_target_task_stack(e->t, i, &th);

    /* A chain read while one of its tasks ran could mix two moments:
     * left out, counted. */
    if (err == PST_ETORN)
      r->st->task_torn++;
    if (err == -ENOMEM)
      return;
    if (err)
      continue;
    r->st->task_samples++;
    deliver(r, e, &s);
  }
}

static void sample_entry(struct pst__rec *r, struct pst__entry *e,
                         uint64_t t_ns, uint64_t weight) {
  const struct pst_thread *th;
  int n = pst_target_sample(e->t, r->flags, &th);

  if (n < 0)
    return;
  if (strcmp(e->role, pst_target_role(e->t))) {
    snprintf(e->role, sizeof(e->role), "%s", pst_target_role(e->t));
    e->proc.role_gen++;
  }
  for (int i = 0; i < n; i++) {
    uint64_t k;
    struct pst__sample s = {&e->proc, NULL, &th[i], PST_SK_STACK, t_ns, weight};

    s.kind = kind_of(&th[i]);
    if (r->flags & PST_SAMPLE_ON_CPU) /* worth the CPU time it used */
      s.weight_ns = th[i].cpu_ns;
    /* Mode cpu: a sample counts the whole periods of CPU time it stands
     * for, as the profile does (profile.h). */
    k = (r->flags & PST_SAMPLE_ON_CPU) && r->period_ns &&
                s.weight_ns > r->period_ns
            ? s.weight_ns / r->period_ns
            : 1;
    if (s.kind == PST_SK_ERROR)
      log_error(e, s.thread, pst__sampler_count_error(r->st, s.thread->error));
    else if (s.kind == PST_SK_IDLE)
      r->st->idle_skipped++;
    else
      r->st->samples += k;
    if (s.kind == PST_SK_STACK && !th[i].tstate &&
        (r->flags & PST_SAMPLE_MARK_NATIVE))
      r->st->native_only_samples += k;
    deliver(r, e, &s);
  }
  if (r->o->policy.async)
    sample_tasks(r, e, t_ns, weight, th, n);
}

static void arm_tick(struct pst__rec *r) {
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

static void stop_all(struct pst__rec *r);

/* The loop thread's scheduling. A tick is a wakeup that has a period to
 * run in; when every CPU is busy (a target spinning on all cores), the
 * default policy lets it wait behind them: at 1 kHz, 6% of the ticks
 * came more than a period late and 12% were lost (docs/performance.md).
 * So, before the first tick, the thread asks for a 0.1 ms slice (EEVDF,
 * Linux 6.12+: an earlier deadline, so its wakeup preempts sooner; no
 * privilege needed; older kernels take and ignore it: read back) and,
 * when allowed, nice -10; or with --realtime for SCHED_FIFO priority 1
 * (CAP_SYS_NICE: it preempts every normal thread at once; the CPU it
 * uses is the same). All reset on fork: threads it starts later (libuv's pool, the push sender) get
 * the default. Never undone: the sandbox's filter refuses the call, and
 * the process ends with the loop. */
struct sched_attr_v0 { /* struct sched_attr, SCHED_ATTR_SIZE_VER0 */
  uint32_t size, policy;
  uint64_t flags;
  int32_t nice;
  uint32_t priority;
  uint64_t runtime;
  /* SCHED_DEADLINE's, unused here: the kernel's layout. */
  /* cppcheck-suppress unusedStructMember */
  uint64_t deadline;
  /* cppcheck-suppress unusedStructMember */
  uint64_t period;
};
#define TICK_SLICE_NS 100000
#define TICK_NICE (-10)               /* named in tick_sched()'s strings too */
#define SCHED_RESET_ON_FORK_FLAG 0x01 /* SCHED_FLAG_RESET_ON_FORK */

static void tick_sched(struct pst__rec *r) {
  struct sched_attr_v0 a;
  int nice = 0, slice;

  memset(&a, 0, sizeof(a));
  a.size = sizeof(a);
  a.flags = SCHED_RESET_ON_FORK_FLAG;
  r->st->sched = "default";
  if (r->o->realtime) {
    a.policy = SCHED_FIFO;
    a.priority = 1;
    if (!syscall(SYS_sched_setattr, 0, &a, 0)) {
      r->st->sched = "SCHED_FIFO 1";
      return;
    }
    r->st->sched_err = -errno;
    pst__warn("--realtime: SCHED_FIFO refused (%s): it needs CAP_SYS_NICE "
              "(root); sampling goes on with a short slice",
              strerror(errno));
    a.priority = 0;
  }
  errno = 0;
  a.nice = getpriority(PRIO_PROCESS, 0);
  if (errno)
    return;
  a.policy = SCHED_OTHER;
  a.runtime = TICK_SLICE_NS;
  /* At the default nice, TICK_NICE when allowed (CAP_SYS_NICE, taken
   * before the sandbox drops it): a heavier weight wakes ahead of the
   * threads that keep the CPUs busy (1 kHz on 2 saturated cores: 93% of
   * the ticks on time at nice 0, 99% at -10; docs/performance.md). It
   * weighs only while the thread wants a CPU: a tick's reads, then it
   * sleeps. A nice the user set is kept. */
  if (a.nice == 0) {
    a.nice = TICK_NICE;
    if (syscall(SYS_sched_setattr, 0, &a, 0) == 0)
      nice = TICK_NICE;
    else
      a.nice = 0;
  }
  if (!nice && syscall(SYS_sched_setattr, 0, &a, 0)) {
    pst__debug("sched_setattr (slice): %s", strerror(errno));
    return;
  }
  /* A kernel without custom slices takes the call and ignores the
   * runtime: read it back. */
  memset(&a, 0, sizeof(a));
  slice = !syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0) &&
          a.runtime == TICK_SLICE_NS;
  r->st->sched = slice && nice ? "0.1 ms slice, nice -10"
                 : slice       ? "0.1 ms slice"
                 : nice        ? "nice -10"
                               : "default";
}

static void on_tick(uv_poll_t *h, int status, int events) {
  struct pst__rec *r = h->data;
  uint64_t expirations, now, weight;
  double lag_ms;
  int end = 0;

  (void)status;
  (void)events;
  if (read(r->tfd, &expirations, sizeof(expirations)) < 0)
    return;
  now = pst__now_ns();
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
  /* What the tick's reads took: when the rate is not kept, is it them or
   * a busy machine? */
  lag_ms = (double)(pst__now_ns() - now) / 1e6;
  r->st->tick_ms_total += lag_ms;
  if (lag_ms > r->st->tick_ms_max)
    r->st->tick_ms_max = lag_ms;
  for (int k = 0; k < r->nc; k++)
    if (r->c[k].ops->tick &&
        r->c[k].ops->tick(r->c[k].ctx, now - r->start_ns, r->st))
      end = 1;
  if (end) {
    stop_all(r);
    return;
  }
  r->sched_ns += r->period_ns;
  arm_tick(r);
}

/* ---- lifecycle ---- */

void pst__on_close(uv_handle_t *h) { (void)h; }

static void stop_all(struct pst__rec *r) {
  if (r->stopping)
    return;
  r->stopping = 1;
  r->stop_ns = pst__now_ns();
  if (r->worker_ok) {
    /* Opens queued are dropped, the one under way waited for (its target
     * is closed at the end); nothing wakes the loop after this. */
    pst__worker_exit(&r->worker);
    r->worker_ok = 0;
    uv_close((uv_handle_t *)&r->opened, pst__on_close);
  }
  if (r->have_tick)
    uv_close((uv_handle_t *)&r->tick, pst__on_close);
  uv_close((uv_handle_t *)&r->refresh, pst__on_close);
  uv_close((uv_handle_t *)&r->attach, pst__on_close);
  uv_close((uv_handle_t *)&r->stop, pst__on_close);
  uv_close((uv_handle_t *)&r->progress, pst__on_close);
  uv_close((uv_handle_t *)&r->scan, pst__on_close);
  for (int i = 0; i < 3; i++)
    uv_close((uv_handle_t *)&r->sig[i], pst__on_close);
  pst__stop_child(r);
  if (!r->grace_step)
    uv_close((uv_handle_t *)&r->grace, pst__on_close);
}

#define PST__CHILDREN_MAX 1024 /* of one process, looked at per refresh */

/* The children of process pid become entries (attached next); from a
 * watched process they may be watched in turn. */
static void find_children(struct pst__rec *r, pid_t pid, int watched) {
  pid_t kids[PST__CHILDREN_MAX];
  int n = 0;

  pst__proc_children(pid, kids, &n, PST__CHILDREN_MAX);
  for (int i = 0; i < n; i++) {
    size_t had = r->n;
    struct pst__entry *e = pst__add_entry(r, kids[i]);
    if (e && r->n > had)
      e->from_watch = watched;
  }
}

/* What an attach's outcome err says, for an entry that will not be. */
static void attach_said(struct pst__rec *r, struct pst__entry *e, int err) {
  if (err < 0) {
    if (!r->first_err)
      r->first_err = err;
    /* Children that are not Python, or ended before they were, are
       * skipped quietly. */
    if (e->execd)
      pst__info("process %d exec'd a program pystitch cannot record "
                "(%s): its recording ends",
                (int)e->pid, pst_strerror(err));
    else if (((err == PST_ENOTPY || err == -ESRCH) && !e->given &&
              !e->launched) ||
             (err == -ESRCH && e->watch))
      pst__debug("process %d is not Python: skipped", (int)e->pid);
    else
      pst__warn("cannot record process %d: %s", (int)e->pid, pst_strerror(err));
  }
}

/* The first read of a process is cold: each thread's walk follows its
 * frames one read at a time and every code object is new (5000 threads:
 * ~220 ms, 22 periods at 100 Hz). A process opened is warmed up
 * (pst_target_warm(): read twice, nothing recorded) before its first
 * tick: on the worker for a process found while sampling, before the
 * clock starts for the given pids. With the
 * recording's own flags when they stop no thread and spend no CPU credit,
 * so that stacks kept under the GIL (sample.c) carry on into the first
 * tick. */
static int warm_flags(const struct pst__rec *r) {
  return (r->flags & (PST_SAMPLE_NATIVE | PST_SAMPLE_BLOCKING |
                      PST_SAMPLE_ON_CPU | PST_SAMPLE_EXCEPTION)) != 0
             ? PST_SAMPLE_NO_ACTIVITY
             : r->flags;
}

/* The worker's side of an open (struct pst__open_job). */
static void open_job(struct pst__job *j) {
  struct pst__open_job *o =
      (struct pst__open_job *)((char *)j - offsetof(struct pst__open_job, job));

  o->err = pst_target_open(o->pid, &o->t);
  if (!o->err)
    (void)pst_target_warm(o->t, o->warm_flags);
  atomic_store_explicit(&o->finished, 1, memory_order_release);
  uv_async_send(o->opened);
}

/* The loop's side: each finished open goes on as attach() would. */
static void on_opened(uv_async_t *h) {
  struct pst__rec *r = h->data;

  for (size_t i = 0; i < r->n; i++) {
    struct pst__entry *e = r->e[i];
    if (!e->opening ||
        !atomic_load_explicit(&e->open.finished, memory_order_acquire))
      continue;
    /* The worker may still be marking the job done: the job is reused. */
    pst__worker_wait(&r->worker, &e->open.job);
    e->opening = 0;
    if (e->done) { /* ended meanwhile (a watched process): its pid may be
                      another process's now */
      pst_target_close(e->open.t);
      e->open.t = NULL;
      continue;
    }
    e->t = e->open.err ? NULL : e->open.t;
    e->open.t = NULL;
    attach_said(r, e, attached(r, e, e->open.err));
  }
}

/* Queues e's open on the worker. 0, or -errno: attach it here. */
static int open_off_loop(struct pst__rec *r, struct pst__entry *e) {
  int err;

  /* Not the `-- command`: libuv's SIGCHLD handler waits for that child
   * by pid on the loop thread, and such a wait takes the stop of its main
   * thread that the worker's own wait needs (seen: the worker waited for
   * ever, the command stopped). The loop's own stops and libuv's wait are
   * on one thread, one after the other. */
  if (!r->worker_ok || r->stopping || e->launched)
    return -EAGAIN;
  e->open = (struct pst__open_job){.job.fn = open_job,
                                   .opened = &r->opened,
                                   .pid = e->pid,
                                   .warm_flags = warm_flags(r)};
  atomic_init(&e->open.finished, 0);
  err = pst__worker_queue(&r->worker, &e->open.job);
  e->opening = err == 0;
  return err;
}

/* Attaches the entries not attached, not done, not being opened: off the
 * loop once sampling runs, so that no tick waits for an analysis (5-40
 * ms) or a first stop. */
void pst__try_attach_pending(struct pst__rec *r) {
  for (size_t i = 0; i < r->n; i++) {
    struct pst__entry *e = r->e[i];
    if (e->t || e->done || e->opening || (e->watch && e->tries >= ATTACH_TRIES))
      continue;
    if (open_off_loop(r, e) != 0)
      attach_said(r, e, attach(r, e));
  }
}

/* Is e still the program we attached? A target that exited and whose pid
 * was given to a new process (another start time) has ended: it must not
 * be read as if it were the old one (wrong stacks, a recording that never
 * ends). One that exec'd (same start time, a new address space) is
 * attached again when its new program is an initialised Python, else it
 * ends. Returns 0 when unchanged, 1 when e was closed. */
static int check_image(struct pst__rec *r, struct pst__entry *e) {
  struct pst__proc_image im;

  if (pst__proc_image(e->pid, &im) < 0 || im.state == 'Z' || im.state == 'X' ||
      im.starttime != e->image.starttime) {
    pst__info("process %d ended", (int)e->pid);
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
    pst__info("process %d ended", (int)e->pid);
    end_entry(r, e);
    return 1;
  }
  pst__info("process %d exec'd a new program", (int)e->pid);
  harvest(r, e);
  end_consumers(r, e); /* the old program's strings die with it */
  pst_target_close(e->t);
  e->t = NULL;
  e->execd = 1;
  e->tries = ATTACH_TRIES - EXEC_TRIES;
  uv_timer_start(&r->attach, pst__on_attach, 0, PST__ATTACH_RETRY_MS);
  return 1;
}

/* A watched process: ended, or exec'd (its new program may be Python:
 * attached within EXEC_TRIES if it is). Returns 1 when it ended. */
static int check_watched(struct pst__rec *r, struct pst__entry *e) {
  struct pst__proc_image im;

  if (pst__proc_image(e->pid, &im) < 0 || im.state == 'Z' || im.state == 'X' ||
      im.starttime != e->image.starttime) {
    pst__debug("watched process %d ended", (int)e->pid);
    e->watch = 0;
    e->done = 1;
    return 1;
  }
  if (im.vsize && memcmp(im.addr, e->image.addr, sizeof(im.addr))) {
    e->image = im;
    e->tries = ATTACH_TRIES - EXEC_TRIES;
    uv_timer_start(&r->attach, pst__on_attach, 0, PST__ATTACH_RETRY_MS);
  }
  return 0;
}

static uint64_t refresh_interval_ms(uint64_t cost_ns) {
  uint64_t ms = cost_ns * 10 / 1000000;

  return ms < REFRESH_MS       ? REFRESH_MS
         : ms > REFRESH_MAX_MS ? REFRESH_MAX_MS
                               : ms;
}

static void on_refresh(uv_timer_t *h) {
  struct pst__rec *r = h->data;
  uint64_t t0 = pst__now_ns();

  for (size_t i = 0; i < r->n; i++)
    if (r->e[i]->t)
      pst_target_set_stop_deadline(r->e[i]->t, t0 + stop_budget(r));

  for (size_t i = 0; i < r->n; i++) {
    struct pst__entry *e = r->e[i];
    if (!e->t && e->watch && !e->done && !check_watched(r, e))
      find_children(r, e->pid, 1);
    if (!e->t || check_image(r, e))
      continue;
    if (pst_target_refresh(e->t) < 0) {
      pst__info("process %d ended", (int)e->pid);
      end_entry(r, e);
      continue;
    }
    if (r->o->subprocesses)
      find_children(r, e->pid, 0);
  }
  pst__try_attach_pending(r);
  t0 = pst__now_ns() - t0;
  r->st->refresh_ms_total += (double)t0 / 1e6;
  /* A refresh that costs more than a tenth of its interval (thousands of
   * threads) comes less often: at most a tenth of the loop's time, new
   * threads and children found within ten times its cost (up to
   * REFRESH_MAX_MS). */
  uv_timer_set_repeat(h, refresh_interval_ms(t0));
  if (!live_targets(r) && !r->child_running && !r->o->all)
    stop_all(r);
}

void pst__on_attach(uv_timer_t *h) {
  struct pst__rec *r = h->data;
  int pending = 0;

  pst__try_attach_pending(r);
  for (size_t i = 0; i < r->n; i++)
    pending += !r->e[i]->t && !r->e[i]->done &&
               !(r->e[i]->watch && r->e[i]->tries >= ATTACH_TRIES);
  if (!pending)
    uv_timer_stop(h);
}

static void on_stop(uv_timer_t *h) { stop_all(h->data); }

static void on_signal(uv_signal_t *h, int signum) {
  struct pst__rec *r = h->data;
  pst__info("signal %d: writing the profile", signum);
  r->st->interrupted = 1;
  r->stop_signal = signum;
  stop_all(r);
}

static void on_progress(uv_timer_t *h) {
  struct pst__rec *r = h->data;
  const struct pst__sampler_stats *st = r->st;
  uint64_t all = st->samples + st->errors;

  fprintf(stderr,
          "\r\033[Kpystitch: %.1f s, %" PRIu64 " samples, %d process%s, "
          "%.2f%% errors, lag %.1f ms",
          (double)(pst__now_ns() - r->start_ns) / 1e9, st->samples,
          st->processes, st->processes == 1 ? "" : "es",
          all ? 100.0 * (double)st->errors / (double)all : 0.0,
          r->last_ns > r->sched_ns ? (double)(r->last_ns - r->sched_ns) / 1e6
                                   : 0.0);
}

int pst__sampler_run(const struct pst__sampler_opts *o,
                     const struct pst__consumer *consumers, int nc,
                     struct pst__sampler_stats *st) {
  static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
  struct pst__rec r;
  int err = 0;

  memset(&r, 0, sizeof(r));
  memset(st, 0, sizeof(*st));
  if (nc < 0 || nc > PST_SAMPLER_CONSUMERS_MAX)
    return -EINVAL;
  r.o = o;
  r.c = consumers;
  r.nc = nc;
  r.flags = pst_policy_flags(&o->policy);
  r.st = st;
  r.tfd = -1;
  r.seed = (unsigned)pst__now_ns();
  r.period_ns = (uint64_t)(1e9 / o->rate_hz);
  r.pidns = pst__probe_pidns(0);
  if (uv_loop_init(&r.loop))
    return -ENOMEM;
  /* Attach the given pids first: an error there is the user's to see. */
  for (int i = 0; i < o->npids; i++) {
    struct pst__entry *e = pst__add_entry(&r, o->pids[i]);
    /* A given pid that is not Python must say so (exit code 5) at once;
     * one that is starting up gets GIVEN_READY_MS to be ready. */
    if (e) {
      e->given = 1;
      e->tries = ATTACH_TRIES - GIVEN_READY_MS / PST__ATTACH_RETRY_MS;
    }
    err = e ? attach(&r, e) : -ENOMEM;
    while (err == 1) {
      usleep(PST__ATTACH_RETRY_MS * 1000);
      err = attach(&r, e);
    }
    if (err < 0) /* else attached, or watched (-s under a shell) */
      goto out_loop;
  }
  if (o->argv) {
    err = pst__spawn(&r);
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
  for (size_t i = 0; i < r.n; i++)
    if (r.e[i]->t)
      (void)pst_target_warm(r.e[i]->t, warm_flags(&r));
  /* The loop's clock was read at its init, before the attach (which can
   * take seconds: a thread pointer per thread): read again, so that
   * --duration counts from the first tick, not from the init. */
  uv_update_time(&r.loop);
  r.start_ns = r.sched_ns = pst__now_ns();
  r.sched_ns += r.period_ns;
  arm_tick(&r);
  uv_poll_start(&r.tick, UV_READABLE, on_tick);
  uv_timer_start(&r.refresh, on_refresh, REFRESH_MS, REFRESH_MS);
  if (o->argv)
    uv_timer_start(&r.attach, pst__on_attach, 0, PST__ATTACH_RETRY_MS);
  if (o->duration_s > 0)
    uv_timer_start(&r.stop, on_stop, (uint64_t)(o->duration_s * 1000), 0);
  if (o->progress)
    uv_timer_start(&r.progress, on_progress, PROGRESS_MS, PROGRESS_MS);
  if (o->all)
    uv_timer_start(&r.scan, pst__on_scan, 0, SCAN_MS);
  if (pst__worker_init(&r.worker) == 0) {
    if (uv_async_init(&r.loop, &r.opened, on_opened) == 0) {
      r.opened.data = &r;
      r.worker_ok = 1;
    } else {
      pst__worker_exit(&r.worker);
    }
  }
  for (size_t i = 0; i < r.n; i++)
    if (r.e[i]->t)
      pst_target_background_symbols(r.e[i]->t, 1);
  tick_sched(&r);
  if (o->ready)
    o->ready(o, o->ready_arg);
  uv_run(&r.loop, UV_RUN_DEFAULT);
  if (o->progress)
    fputs("\r\033[K", stderr);
  st->elapsed_s =
      (double)((r.stop_ns ? r.stop_ns : pst__now_ns()) - r.start_ns) / 1e9;
  for (size_t i = 0; i < r.n; i++)
    harvest(&r, r.e[i]);
  err = 0;
out_loop:
  /* A spawned command still running when we stop keeps running. */
  if (r.have_child && !uv_is_closing((uv_handle_t *)&r.child))
    uv_close((uv_handle_t *)&r.child, pst__on_close);
  if (r.have_tick && !r.stopping)
    stop_all(&r);
  uv_run(&r.loop, UV_RUN_DEFAULT);
  if (uv_loop_close(&r.loop))
    pst__debug("uv_loop_close: handles left open");
  if (r.tfd >= 0)
    close(r.tfd);
  for (size_t i = 0; i < r.n; i++) {
    if (r.e[i]->t)
      end_consumers(&r, r.e[i]);
    pst_target_close(r.e[i]->t);
    if (r.e[i]->opening) /* opened as sampling stopped */
      pst_target_close(r.e[i]->open.t);
    free(r.e[i]);
  }
  free(r.e);
  free(r.seen);
  return err;
}
