/* sample.c: one tick of a target: which threads are read, and reading
 * them: the Python walk with its pipelined torn-read check, or (--native)
 * the native path of target/native.h.
 *
 * Torn reads: the stack is walked while the thread runs. The thread's
 * current frame (and its code) as the walk began and as read after it
 * must agree, else the walk is retried; after TORN_RETRIES the sample is
 * PST_ETORN. The check after thread i's walk is read in the same syscall
 * as thread i+1's first read (pst__py_check), so a stable stack costs one
 * syscall; the check of the last thread is read on its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "native/module.h"
#include "proc/proc.h"
#include "proc/ptrace.h"
#include "target/internal.h"
#include "target/native.h"
#include "util/array.h"
#include "util/clock.h"
#include "util/log.h"

#define TORN_RETRIES 2

#define QUIET 4 /* stat reads asleep in a row before schedstat is asked */

/* The kernel state letter of a tracked thread from its open stat file
 * (one pread), or '?' once it is gone. A thread that slept at its last
 * QUIET reads is asked first whether it has run since (schedstat: a fifth of
 * stat's cost); if not, it sleeps still and keeps its letter (one woken
 * since but not yet on a CPU is seen at the next tick, having run no
 * Python code meanwhile). Threads that run or wake often go to stat at
 * once: for them the question would only add a read.
 *
 * With cpu_ns (PST_SAMPLE_ON_CPU) schedstat is read every time: *cpu_ns
 * is the CPU time the thread used since the last read, and a thread whose
 * figures did not move keeps its letter without stat.
 *
 * A thread we stopped since the last read (for its thread pointer) gives
 * the letter read before that stop: the stop interrupted what it waited
 * in, and the kernel restarts it, so the letter now would be R for a
 * thread that sleeps; the CPU time of that restart is not counted. */
char pst__tthread_state(struct pst__tthread *x, uint64_t *cpu_ns) {
  uint64_t run = 0, wait = 0;
  char state = '?', held = x->held;
  int have;

  x->held = 0;
  if (cpu_ns)
    *cpu_ns = 0;
  have = (cpu_ns || x->quiet >= QUIET || held) &&
         pst__proc_schedstat_fd(x->schedfd, &run, &wait) == 0;
  if (have) {
    if (cpu_ns && run > x->run_ns && (!held || held == 'R'))
      *cpu_ns = run - x->run_ns;
    if (cpu_ns) /* else the time is left for the next such read */
      x->run_ns = run;
    if (held || (run + wait == x->ran_ns && x->last_state)) {
      x->ran_ns = run + wait;
      x->last_state = held ? held : x->last_state;
      return x->last_state;
    }
    x->ran_ns = run + wait;
    if (x->quiet >= QUIET)
      x->quiet = 0; /* it woke: stat for a while before asking again */
  } else if (held) {
    x->last_state = held;
    return held;
  }
  if (pst__proc_stat_fd(x->statfd, &state, NULL))
    return '?';
  x->last_state = state;
  if (state == 'R') {
    x->quiet = 0;
  } else if (++x->quiet == QUIET && !have &&
             pst__proc_schedstat_fd(x->schedfd, &run, &wait) != 0) {
    x->quiet = -1000000; /* no schedstat here: stat every time */
  } else if (x->quiet == QUIET && !have) {
    x->ran_ns = run + wait;
  }
  return state;
}

/* Is a tracked thread still there? (Its schedstat, else its stat, still
 * reads.) For versions without native_thread_id, whose thread states
 * cannot tell that their thread ended. */
static int alive(const struct pst__tthread *x) {
  uint64_t run, wait;

  if (x->schedfd >= 0)
    return pst__proc_schedstat_fd(x->schedfd, &run, &wait) == 0;
  return pst__proc_stat_fd(x->statfd, NULL, NULL) == 0;
}

/* Errors a stack that moves while it is read can give: a frame that
 * changed (the check), a link followed into freed or reused memory
 * (-EFAULT), a code object read as garbage (PST_EBADDATA). */
static int moving(int n) {
  return n == PST_ETORN || n == -EFAULT || n == PST_EBADDATA;
}

/* Walks thread x up to attempts times, checking each walk on its own (the
 * retry path), or once with the thread stopped (PST_SAMPLE_BLOCKING). */
static int walk_thread(struct pst_target *t, struct pst__tthread *x, int flags,
                       int attempts, uint64_t *thread_obj) {
  struct pst_thread *th = &x->th;
  int n = PST_ETORN, stopped = 0;

  /* A thread in a group-stop (T: the process got SIGSTOP) or in
   * uninterruptible sleep (D) runs no Python code: its stack holds still
   * without our stop. Stopping it anyway would make it leave its group-stop
   * for a moment (seen as R) and, for D, wait as long as the sleep lasts. */
  if ((flags & PST_SAMPLE_BLOCKING) && pst__tthread_may_stop(th->state)) {
    n = pst__ptrace_stop(th->tid);
    if (n)
      return n;
    stopped = 1;
  }
  for (int attempt = 0; attempt < attempts; attempt++) {
    struct pst__py_check c;
    uint64_t before[2];
    n = pst__py_walk(&t->py, &t->mem, th->tstate, &x->hint, NULL, th->frames,
                     PST_TARGET_FRAMES_MAX, &th->truncated,
                     x->pyname[0] ? NULL : thread_obj, before);
    if (stopped || (n < 0 && !moving(n)))
      break;     /* nothing moves, or nothing to check */
    if (n < 0) { /* read while it moved: again */
      t->torn_retries++;
      continue;
    }
    pst__py_check_prepare(&t->py, th->tstate, &x->hint, before, &c);
    if (pst__py_check_done(&t->py, &t->mem, &c) == 1)
      break;
    t->torn_retries++;
    n = PST_ETORN;
  }
  if (stopped)
    pst__ptrace_resume(th->tid);
  return n;
}

/* PST_SAMPLE_EXACT: a thread whose running read failed is read again
 * stopped (the --blocking path for this one thread). Not for a thread that
 * ended (-ESRCH) or may not be stopped (D, T: its stack holds still, so
 * its error is not a moving stack), and not after an -ENOMEM. */
static int read_stopped_again(struct pst_target *t, struct pst__tthread *x,
                              int flags, int n, uint64_t *thread_obj) {
  if (!(flags & PST_SAMPLE_EXACT) || n >= 0 || n == -ESRCH || n == -ENOMEM)
    return n;
  if (x->th.state == '?') /* not read this tick (--idle) */
    x->th.state = pst__tthread_state(x, NULL);
  if (!pst__tthread_may_stop(x->th.state))
    return n;
  pst__debug("thread %d: %s while running: read again stopped", (int)x->th.tid,
             pst_strerror(n));
  t->exact_rereads++;
  *thread_obj = 0;
  return walk_thread(t, x, PST_SAMPLE_BLOCKING, 1, thread_obj);
}

/* A walk whose check is still to be read. */
struct pst__tpending {
  struct pst__tthread *x;
  size_t i;
  int n, flags;
  uint64_t thread_obj;
  struct pst__py_check c;
};

/* A truncated stack's outermost frame: the marker saying so, so that the
 * innermost frame kept is not taken for the root in a flame graph. The walk
 * stops at PST_TARGET_FRAMES_MAX frames with more to go, so the stack is
 * deeper than that; how much deeper is not read (it would cost a read a
 * frame). Its last frame gives way to the marker when the array is full. */
#define STR_(x) #x
#define STR(x) STR_(x)
static const char truncated_name[] =
    "[truncated: more than " STR(PST_TARGET_FRAMES_MAX) " frames deep]";

static int truncated_marker(struct pst_thread *th, int n) {
  if (n >= PST_TARGET_FRAMES_MAX)
    n = PST_TARGET_FRAMES_MAX - 1;
  th->frames[n] =
      (struct pst_frame){truncated_name, "", 0, PST_FRAME_MARKER, 0, 0};
  return n + 1;
}

/* What to do with one thread this tick. */
enum action {
  READ_PYTHON,   /* walk its Python stack */
  READ_NATIVE,   /* --native: stop it, both stacks */
  READ_HELD,     /* --native, a thread that may not be stopped (D, T): its
                   stack holds still, so its Python stack is read as it
                   runs, under a marker saying why no native frames */
  READ_BLOCKING, /* --blocking: stop it, Python stack */
  SKIP,          /* left out, not read: skipped 1, no frames */
  GONE,          /* its stat file reads nothing: it ended */
  NO_STATE,      /* no Python state and nothing else to read */
  KEPT,          /* READ_PYTHON given its kept stack (still_words()) */
};

/* A thread that entered a sub-interpreter (inner_tstate, threads.c): the
 * frames of its state there go on top of the n of its own, which end in
 * the call that entered it (interp.exec(), run_string()). Walked and
 * checked like a retried walk. A state that is gone (the run ended, -ESRCH:
 * forgotten until the next refresh), empty or unreadable adds nothing.
 * Returns the frames now in x->th.frames. */
static int stitch_inner(struct pst_target *t, struct pst__tthread *x, int n) {
  int m = PST_ETORN, truncated = 0;

  if (!t->inner_frames && !(t->inner_frames = malloc(PST_TARGET_FRAMES_MAX *
                                                     sizeof(*t->inner_frames))))
    return n;
  for (int attempt = 0; attempt < TORN_RETRIES; attempt++) {
    struct pst__py_check c;
    uint64_t before[2];
    m = pst__py_walk(&t->py, &t->mem, x->inner_tstate, x->inner_hint, NULL,
                     t->inner_frames, PST_TARGET_FRAMES_MAX, &truncated, NULL,
                     before);
    if (m < 0 && !moving(m))
      break;
    if (m < 0) {
      t->torn_retries++;
      continue;
    }
    pst__py_check_prepare(&t->py, x->inner_tstate, x->inner_hint, before, &c);
    if (pst__py_check_done(&t->py, &t->mem, &c) == 1)
      break;
    t->torn_retries++;
    m = PST_ETORN;
  }
  if (m == -ESRCH)
    x->inner_tstate = 0;
  if (m <= 0)
    return n;
  if ((size_t)m + (size_t)n > PST_TARGET_FRAMES_MAX) {
    n = PST_TARGET_FRAMES_MAX - m;
    x->th.truncated = 1;
  }
  memmove(x->th.frames + m, x->th.frames, (size_t)n * sizeof(*x->th.frames));
  memcpy(x->th.frames, t->inner_frames, (size_t)m * sizeof(*x->th.frames));
  return m + n;
}

/* Ends thread i's sample with walk result n (frames or error). */
static void settle(struct pst_target *t, size_t i, int n, uint64_t thread_obj) {
  struct pst__tthread *x = &t->threads[i];

  if (n >= 0 && x->inner_tstate && !x->th.skipped &&
      t->acts[i] != READ_NATIVE && t->acts[i] != READ_HELD)
    n = stitch_inner(t, x, n);
  if (n >= 0 && x->th.truncated)
    n = truncated_marker(&x->th, n);
  if (n < 0) {
    x->th.error = n;
    x->th.error_addr = t->py.err_addr;
  } else {
    x->th.nframes = (size_t)n;
    pst__tthread_set_name(t, x, thread_obj);
  }
  x->th.stack_gen = ++t->stack_gens;
  t->view[i] = x->th;
}

/* The pending walk's check (read already, or now): a moved stack is
 * walked again on the retry path. */
static void settle_pending(struct pst_target *t, struct pst__tpending *p) {
  int n = p->n;

  if (pst__py_check_done(&t->py, &t->mem, &p->c) != 1) {
    t->torn_retries++;
    p->thread_obj = 0;
    n = walk_thread(t, p->x, 0, TORN_RETRIES, &p->thread_obj);
    n = read_stopped_again(t, p->x, p->flags, n, &p->thread_obj);
  }
  settle(t, p->i, n, p->thread_obj);
  p->x = NULL;
}

static int native_init(struct pst_target *t) {
  if (t->native)
    return 0;
  if (pst__target_modcache(t))
    return -ENOMEM;
  return pst__native_sampler_new(
      t->pid, &t->mem, t->info.libpython[0] ? t->info.libpython : t->info.exe,
      t->modcache, &t->native);
}

int pst_target_native_stats(const struct pst_target *t,
                            struct pst_native_stats *out) {
  if (!t->native)
    return -ENOENT;
  pst__native_sampler_stats(t->native, out);
  return 0;
}

/* The one place that decides which threads are read, from the flags and
 * what the thread's stat file and the GIL said. */
static enum action decide(const struct pst__tthread *x, int flags,
                          int state_read) {
  const struct pst_thread *th = &x->th;

  if ((flags & PST_SAMPLE_GIL_ONLY) && th->holds_gil != 1)
    return SKIP;
  if ((flags & PST_SAMPLE_EXC_ONLY) && th->exception != 1)
    return SKIP;
  /* On a CPU for a period's worth since it was last read (its credit):
   * a thread at half a CPU is read every other tick, so that samples
   * times the period are its CPU time. */
  if ((flags & PST_SAMPLE_ON_CPU) && !th->cpu_ns)
    return SKIP;
  if ((flags & PST_SAMPLE_ACTIVE_ONLY) && state_read && th->idle &&
      th->holds_gil != 1)
    return SKIP;
  /* A stat file that reads nothing (or a dead task): the thread has
   * ended, and its thread state may be another thread's by now. */
  if (th->tstate && ((state_read && (th->state == '?' || th->state == 'Z')) ||
                     th->state == 'X'))
    return GONE;
  if (flags & PST_SAMPLE_NATIVE)
    return pst__tthread_may_stop(th->state) ? READ_NATIVE : READ_HELD;
  if (!th->tstate)
    return NO_STATE;
  return flags & PST_SAMPLE_BLOCKING ? READ_BLOCKING : READ_PYTHON;
}

/* PST_SAMPLE_MARK_NATIVE: a thread with no Python state, running: its CPU
 * time shows under one frame (without --native there is nothing more to
 * read). */
static const struct pst_frame native_marker = {"[native thread]", "", 0,
                                               PST_FRAME_MARKER,  0,  0};

/* --native, a thread in D or T: its Python frames (n of them, at the
 * start of its frame array) under a first frame saying why there are no
 * native ones. Returns the new count. */
static int held_marker(struct pst_thread *th, int n) {
  static char d[] = "[in uninterruptible sleep (D): native stack not read]";
  static char stopped[] = "[stopped (T): native stack not read]";

  if (n >= PST_TARGET_FRAMES_MAX)
    n = PST_TARGET_FRAMES_MAX - 1;
  memmove(th->frames + 1, th->frames, (size_t)n * sizeof(*th->frames));
  th->frames[0] = (struct pst_frame){
      th->state == 'D' ? d : stopped, "", 0, PST_FRAME_MARKER, 0, 0};
  return n + 1;
}

/* settle() of a second-pass walk: a held thread's gets its marker. */
static void settle_walk(struct pst_target *t, size_t i, int n,
                        uint64_t thread_obj) {
  if (n >= 0 && t->acts[i] == READ_HELD)
    n = held_marker(&t->threads[i].th, n);
  settle(t, i, n, thread_obj);
}

/* The gate of mode cpu (PST_SAMPLE_ON_CPU) for a process of many
 * threads: reading every thread's run time each tick is a pread per
 * thread (5000 threads: 10 ms a tick). Most of them sleep; the process's
 * CPU clock (one clock_gettime for all its threads) says whether any
 * thread ran that was not read: its growth since every thread was last
 * read, less what the read threads' run times grew, is what the others
 * used. A tick reads the threads that ran in the last GATE_COLD ticks
 * (hot), and every thread when the others used half a period or more,
 * or GATE_FULL_NS passed since every thread was read. No CPU time is lost:
 * run times are cumulative, so a cold thread's time is counted whole when
 * it is next read (at most GATE_FULL_NS later, with less than half a
 * period to count). A thread that exits takes its run time out of the
 * sum: the next tick reads every thread and takes a new base. */
#define GATE_MIN_THREADS 64
#define GATE_COLD 8
#define GATE_FULL_NS 100000000ull

/* Does this tick read every thread's run time (1), or the hot ones only
 * (0)? *clock_ns: the process's CPU clock, 0 when it cannot be read (no
 * gate: every thread is read). */
/* The threads' run times as last read, summed. */
static uint64_t run_sum(const struct pst_target *t) {
  uint64_t sum = 0;

  for (size_t i = 0; i < t->nthreads; i++)
    sum += t->threads[i].run_ns;
  return sum;
}

static int gate_all(struct pst_target *t, uint64_t now, uint64_t *clock_ns) {
  struct timespec ts;
  int64_t others;

  *clock_ns = 0;
  if (!t->cpu_clock_ok || t->nthreads < GATE_MIN_THREADS ||
      clock_gettime(t->cpu_clock, &ts) != 0)
    return 1;
  *clock_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  t->gate_ticks++;
  if (!t->gate_based || now - t->gate_full_ns >= GATE_FULL_NS)
    return 1;
  others = (int64_t)(*clock_ns - t->gate_base - run_sum(t));
  return others >= (int64_t)(t->period_ns / 2);
}

/* After a tick that read every thread: the new base. */
static void gate_rebase(struct pst_target *t, uint64_t now, uint64_t clock_ns) {
  t->gate_base = clock_ns - run_sum(t);
  t->gate_based = 1;
  t->gate_full_ns = now;
  t->gate_full++;
}

/* Resets thread i's per-sample fields and reads its kernel state (not
 * for a cold thread when the gate says so: cold_skip). */
static void begin_thread(struct pst_target *t, size_t i, int flags,
                         int state_read, int cold_skip, int gil_err,
                         uint64_t gil) {
  struct pst__tthread *x = &t->threads[i];
  struct pst_thread *th = &x->th;
  uint64_t cpu = 0, ran = x->run_ns;

  if (cold_skip && x->cold >= GATE_COLD && !x->held && x->last_state) {
    th->state = x->last_state; /* it has not run: as last read */
  } else {
    th->state =
        state_read
            ? pst__tthread_state(x, flags & PST_SAMPLE_ON_CPU ? &cpu : NULL)
            : '?';
    if ((flags & PST_SAMPLE_ON_CPU) && x->schedfd >= 0)
      x->cold = x->run_ns != ran ? 0 : x->cold + (x->cold < GATE_COLD);
  }
  th->idle = state_read && th->state != 'R';
  th->cpu_ns = 0;
  if (flags & PST_SAMPLE_ON_CPU) {
    /* Its credit: what it used since its last sample, taken in whole
     * periods (at least one; a late tick's CPU time is taken whole). */
    x->credit_ns += cpu;
    if (x->credit_ns && x->credit_ns >= t->period_ns) {
      th->cpu_ns = t->period_ns ? x->credit_ns / t->period_ns * t->period_ns
                                : x->credit_ns;
      x->credit_ns -= th->cpu_ns;
    }
    th->idle = !th->cpu_ns;
  }
  th->holds_gil =
      gil_err ? -1
              : th->tstate && (gil == th->tstate ||
                               (x->inner_tstate && gil == x->inner_tstate));
  th->gc = 0;
  if (!(flags & PST_SAMPLE_EXCEPTION)) { /* else read_exceptions() did */
    th->exception = -1;
    th->exception_type[0] = 0;
  }
  th->error = 0;
  th->error_addr = 0;
  th->nframes = 0;
  th->truncated = 0;
  th->skipped = 0;
  th->frames = t->pool + i * PST_TARGET_FRAMES_MAX;
}

/* PST_SAMPLE_EXCEPTION: every thread's exception state, read together
 * before the threads are read (EXC_ONLY decides from it which are); the
 * type's name too, but not for EXC_ONLY (record: not shown, 2-3 reads a
 * thread). */
static void read_exceptions(struct pst_target *t, int flags) {
  size_t n = 0;
  int err = -ENOMEM;

  for (size_t i = 0; i < t->nthreads; i++) {
    t->threads[i].th.exception = -1;
    t->threads[i].th.exception_type[0] = 0;
  }
  if (pst__array_reserve((void **)&t->excp, &t->excp_cap, t->nthreads,
                         sizeof(*t->excp)) == 0) {
    for (size_t i = 0; i < t->nthreads; i++)
      if (t->threads[i].th.tstate) {
        t->threads[i].exc.tstate = t->threads[i].th.tstate;
        t->excp[n++] = &t->threads[i].exc;
      }
    err = pst__py_exceptions(&t->py, &t->mem, t->excp, n);
  }
  for (size_t i = 0; i < t->nthreads && !err; i++) {
    struct pst__tthread *x = &t->threads[i];
    if (!x->th.tstate || x->exc.err)
      continue;
    x->th.exception = x->exc.obj != 0;
    if (x->exc.obj && !(flags & PST_SAMPLE_EXC_ONLY))
      pst__py_exception_name(&t->py, &t->mem, x->exc.obj, x->exc.inst,
                             x->th.exception_type,
                             sizeof(x->th.exception_type));
  }
}

/* PST_SAMPLE_GC: the thread that runs the collector gets "<GC>" above
 * its innermost Python frame (native frames, the collector's own, stay
 * above it). With the GIL, the collector runs on the thread holding it;
 * free-threaded, it stops every other thread for the collection, so the
 * thread seen on a CPU is the one. */
static const struct pst_frame gc_frame = {"<GC>",           "", 0,
                                          PST_FRAME_MARKER, 0,  0};

static void gc_marker(struct pst_thread *th) {
  size_t at = 0, n = th->nframes;

  if (n >= PST_TARGET_FRAMES_MAX)
    n = PST_TARGET_FRAMES_MAX - 1;
  while (at < n && th->frames[at].kind != PST_FRAME_PYTHON)
    at++;
  if (at == n) /* no Python frame: not running Python code */
    return;
  memmove(th->frames + at + 1, th->frames + at, (n - at) * sizeof(*th->frames));
  th->frames[at] = gc_frame;
  th->nframes = n + 1;
  th->gc = 1;
}

/* Free-threaded: may thread i be the collector? While the collection
 * has stopped the world, the collector is the one thread whose state is
 * attached (running Python: the _status word's active bit, 3.13+) and on
 * a CPU; a thread running C code (detached) may be on a CPU too, and
 * before and after the stop (callbacks, finalizers) other threads run
 * Python while the flag is set: both tests together, each where it can
 * be read. */
static int attached(struct pst_target *t, size_t i) {
  struct pst_thread *th = &t->view[i];
  uint32_t status = 0;

  if (!th->tstate || !th->nframes)
    return 0;
  if (t->py.lay.ts_status != PST_NOFF &&
      (pst__mem_read(&t->mem, th->tstate + (uint64_t)t->py.lay.ts_status,
                     &status, sizeof(status)) ||
       !(status & 0x10))) /* initialized, bound, unbound, bound_gilstate,
                             active: bit 4 */
    return 0;
  if (th->state == '?')
    th->state = pst__tthread_state(&t->threads[i], NULL); /* not read */
  return th->state == 'R';
}

/* The flag was read with the walks' first reads (and the holder, when
 * the states are read, before them); the collection may have ended since,
 * and the GIL gone to another thread: both are read again after the
 * walks, and the holder marked only if the collection still runs and the
 * holder did not change meanwhile. */
static void mark_gc(struct pst_target *t, int gil_err, uint64_t gil) {
  uint64_t now = 0;

  if (pst__py_gc_collecting(&t->py, &t->mem) != 1)
    return;
  if (!t->py.lay.free_threaded) {
    if (pst__py_gil_holder(&t->py, &t->mem, &now) || !now ||
        (!gil_err && now != gil))
      return;
    gil = now;
    gil_err = 0;
  }
  for (size_t i = 0; i < t->nthreads; i++) {
    struct pst_thread *th = &t->view[i];
    int runs;
    if (t->py.lay.free_threaded)
      runs = attached(t, i);
    else
      runs = !gil_err && gil && th->tstate == gil;
    if (runs && !th->error && !th->skipped && th->nframes) {
      gc_marker(th);
      th->stack_gen = t->threads[i].th.stack_gen = ++t->stack_gens;
      t->threads[i].kept = 0; /* its slot now holds the marker too */
    }
  }
}

/* Per-tick arrays sized to the threads: what each thread gets and its
 * part of the read batch. */
static int tick_arrays(struct pst_target *t) {
  struct pst_thread *view;

  view = realloc(t->view, (t->nthreads + 1) * sizeof(*view));
  if (!view)
    return -ENOMEM;
  t->view = view;
  if (pst__array_reserve((void **)&t->pool, &t->pool_cap,
                         t->nthreads * PST_TARGET_FRAMES_MAX,
                         sizeof(*t->pool)) ||
      pst__array_reserve((void **)&t->pf, &t->pf_cap, t->nthreads + 1,
                         sizeof(*t->pf)) ||
      pst__array_reserve((void **)&t->acts, &t->acts_cap, t->nthreads + 1,
                         sizeof(*t->acts)))
    return -ENOMEM;
  if (t->gil_verify) {
    if (pst__array_reserve((void **)&t->vn, &t->vn_cap, t->nthreads + 1,
                           sizeof(*t->vn)))
      return -ENOMEM;
    for (size_t i = 0; i < t->nthreads; i++)
      t->vn[i] = SIZE_MAX;
  }
  return 0;
}

/* The role, from the Process object a walk found (read once per object).
 * Declared in internal.h. */
void pst__target_update_role(struct pst_target *t) {
  char *name = NULL;

  if (!t->py.process_obj || t->py.process_obj == t->role_obj)
    return;
  t->role_obj = t->py.process_obj;
  if (pst__py_thread_name(&t->py, &t->mem, t->role_obj, &name) == 0) {
    snprintf(t->role, sizeof(t->role), "%s%s%s",
             t->py.dataloader ? "DataLoader worker (" : "", name,
             t->py.dataloader ? ")" : "");
    free(name);
  } else {
    t->py.process_obj = 0; /* a torn read: look again */
    t->role_obj = 0;
  }
}

int pst__target_rewalk(struct pst_target *t, pid_t tid) {
  uint64_t thread_obj = 0;
  int n;

  for (size_t i = 0; i < t->nthreads; i++) {
    struct pst__tthread *x = &t->threads[i];
    if (x->th.tid != tid)
      continue;
    if (!x->th.tstate || ((enum action)t->acts[i] != READ_PYTHON &&
                          (enum action)t->acts[i] != KEPT))
      return -ENOENT;
    t->py.err_addr = 0;
    x->th.error = 0;
    x->kept = 0;
    n = walk_thread(t, x, 0, 1, &thread_obj);
    settle(t, i, n, thread_obj);
    return n;
  }
  return -ENOENT;
}

/* The GIL rule across ticks. Under a GIL a thread's Python stack changes
 * only while it holds the GIL, and a thread that takes the GIL from
 * another increments switch_number (take_gil): when the GIL's
 * {last_holder, switch_number} read now are those a quiet batch read
 * before and after its pieces (pst__py_batch_gil_quiet), no thread but
 * last_holder has run Python code since that batch, and every other
 * thread's stack is the one it read then: kept, given again without a
 * read. A chain of such ticks is an epoch; a tick that cannot prove it
 * (the GIL moved, nothing read, a refresh since, other flags) begins a
 * new one, and only stacks read in the current epoch are kept. Not with
 * --native or --blocking (the native stack moves without the GIL), never
 * for the holder. Under PYSTITCH_VERIFY_GIL_SKIP a stack that would be
 * kept is read and checked all the same, and compared with the kept one
 * (verify_kept()). Its limit: a thread that writes another thread's
 * frame memory itself (ctypes) while no other thread takes the GIL is
 * seen only once the GIL changes hands or the threads are refreshed.
 * Returns 1, with *holder, when the kept stacks hold. */
#define GIL_SWITCH 2 /* {last_holder, locked, switch_number}: the third */

/* Before 3.12 PyThreadState_Swap() changes the state a thread runs under
 * without the GIL, and drop_gil() then sets last_holder to the state it
 * dropped with while switch_number stays (a sub-interpreter's state
 * swapped in and out on one thread): the thread may run Python code under
 * its own state while last_holder names the other. So the holder stands
 * for its thread only when it is the state of a thread of ours; else
 * neither rule (within a batch, across ticks) holds. 3.12+ swaps through
 * the GIL (take_gil). */
static int holder_known(struct pst_target *t, uint64_t holder) {
  if (t->py.lay.version >= 0x030c)
    return 1;
  if (t->holder_at < t->nthreads &&
      t->threads[t->holder_at].th.tstate == holder)
    return 1;
  for (size_t i = 0; holder && i < t->nthreads; i++)
    if (t->threads[i].th.tstate == holder) {
      t->holder_at = i;
      return 1;
    }
  return 0;
}

static int still_words(struct pst_target *t, int flags, uint64_t gil_at,
                       uint64_t *holder) {
  uint64_t w[3];

  if (!t->still_ok || flags != t->still_flags ||
      (flags & (PST_SAMPLE_NATIVE | PST_SAMPLE_BLOCKING)) ||
      pst__mem_read(&t->mem, gil_at, w, sizeof(w)) || w[0] != t->still_holder ||
      w[GIL_SWITCH] != t->still_switch || !holder_known(t, w[0]))
    return 0;
  *holder = w[0];
  return 1;
}

/* Thread i given its kept stack (its frames are still at its slot of
 * the pool): settle() of a walk of kept_n frames. */
static void settle_kept(struct pst_target *t, size_t i) {
  struct pst__tthread *x = &t->threads[i];

  x->th.nframes = x->kept_n;
  x->th.truncated = x->kept_truncated;
  pst__tthread_set_name(t, x, 0);
  t->view[i] = x->th;
  t->stacks_kept++;
}

/* PYSTITCH_VERIFY_GIL_SKIP: thread i's kept stack copied before it is
 * read again (vn[i] = its length), or -ENOMEM. */
static int verify_save(struct pst_target *t, size_t i) {
  const struct pst__tthread *x = &t->threads[i];

  if (pst__array_reserve((void **)&t->vpool, &t->vpool_cap,
                         t->nthreads * PST_TARGET_FRAMES_MAX,
                         sizeof(*t->vpool)))
    return -ENOMEM;
  memcpy(t->vpool + i * PST_TARGET_FRAMES_MAX, x->th.frames,
         x->kept_n * sizeof(*t->vpool));
  t->vn[i] = x->kept_n;
  return 0;
}

static int same_frame(const struct pst_frame *a, const struct pst_frame *b) {
  return a->kind == b->kind && a->line == b->line &&
         !strcmp(a->name, b->name) && !strcmp(a->filename, b->filename);
}

/* The verdict on thread i's kept stack: read again, it is the same
 * (moved = 0 and the walk as kept) or it moved. Kept stacks hold at the
 * instant the GIL's words were read before the batch (still_words());
 * only when the batch saw the same words is the read again of the same
 * instant (held): else the GIL moved in between, and nothing is told. */
static void verify_kept(struct pst_target *t, size_t i, int moved, int held) {
  const struct pst_thread *v = &t->view[i];
  const struct pst_frame *k = t->vpool + i * PST_TARGET_FRAMES_MAX;
  size_t n = t->vn[i];
  int same = !moved && !v->error && v->nframes == n;

  if (!held) {
    t->vn[i] = SIZE_MAX;
    return;
  }

  for (size_t f = 0; same && f < n; f++)
    same = same_frame(&v->frames[f], &k[f]);
  if (same) {
    t->still_agreed++;
  } else {
    t->still_disagreed++;
    pst__debug("thread %d: its kept stack (%zu frames, top %s:%d) is not "
               "the one read again (%s%zu frames, top %s:%d)",
               (int)v->tid, n, n ? k[0].name : "-", n ? k[0].line : 0,
               moved ? "it moved while read; before that: " : "", v->nframes,
               v->nframes ? v->frames[0].name : "-",
               v->nframes ? v->frames[0].line : 0);
  }
  t->vn[i] = SIZE_MAX;
}

/* After a walk settled from the batch alone: its stack is kept. */
static void keep(struct pst_target *t, size_t i) {
  struct pst__tthread *x = &t->threads[i];

  /* Not a thread in or of a sub-interpreter: one with a GIL of its own
   * (3.12+) runs while the main one stands still. */
  if (t->view[i].error || x->inner_tstate || x->interp)
    return;
  x->kept = 1;
  x->kept_epoch = t->still_epoch;
  x->kept_n = t->view[i].nframes;
  x->kept_truncated = t->view[i].truncated;
  x->kept_tstate = x->th.tstate;
}

int pst_target_sample(struct pst_target *t, int flags,
                      const struct pst_thread **threads) {
  uint64_t gil = 0;
  size_t nbatch = 0;
  int err, gil_err, state_read, check_alive, got = 0;
  int32_t gc = 0; /* the collector's flag (an int in the target) */
  uint64_t gc_at, gil_at, holder = 0;
  size_t gc_piece = PST_PY_NOPIECE;
  int gil_batch, quiet = 0, still = 0, held = 0, read = 0;
  uint64_t still_holder = 0;       /* with still: the GIL's holder, not kept */
  int cold_skip = 0;               /* the gate of mode cpu: hot threads only */
  uint64_t now = 0, cpu_clock = 0; /* and the process's CPU clock */

  err = tick_arrays(t);
  if (err)
    return err;
  if (flags & PST_SAMPLE_NATIVE) {
    err = native_init(t);
    if (err)
      return err;
  }
  flags = pst__target_flags(t, flags);
  state_read = !(flags & PST_SAMPLE_NO_ACTIVITY);
  /* Without native_thread_id (before 3.11) only the thread's own /proc
   * files tell that it ended (its state may then be a new thread's). */
  check_alive = !state_read && t->py.lay.ts_native_thread_id == PST_NOFF;
  gil_err = state_read || (flags & PST_SAMPLE_GIL_ONLY)
                ? pst__py_gil_holder(&t->py, &t->mem, &gil)
                : -ENOSYS;
  /* First pass: what each thread gets; threads read stopped (--native,
   * --blocking) are read now, the running reads are planned into one
   * batch. */
  if (flags & PST_SAMPLE_EXCEPTION)
    read_exceptions(t, flags);
  pst__py_batch_reset(&t->batch);
  /* The collector's flag rides in the batch: no syscall of its own. */
  if ((flags & PST_SAMPLE_GC) && pst__py_gc_flag_addr(&t->py, &gc_at) == 0)
    gc_piece = pst__py_batch_word(&t->batch, gc_at, 4);
  /* The GIL read before and after every thread's pieces: a thread that
   * is not its holder then needs no torn-read check (python.h). */
  gil_batch = pst__py_gil_words(&t->py, &t->mem, &gil_at) == 0;
  if (gil_batch)
    pst__py_batch_gil(&t->batch, gil_at);
  still = gil_batch && still_words(t, flags, gil_at, &still_holder);
  if (!still)
    t->still_epoch++; /* what was kept before proves nothing now */
  t->still_ok = 0;    /* until this tick's batch proves it */
  if (state_read && (flags & PST_SAMPLE_ON_CPU)) {
    now = pst__now_ns();
    cold_skip = !gate_all(t, now, &cpu_clock);
  }
  for (size_t i = 0; i < t->nthreads; i++) {
    struct pst__tthread *x = &t->threads[i];
    struct pst_thread *th = &x->th;
    uint64_t thread_obj = 0;
    struct pst__native_req req;
    int n;

    int kept = x->kept && x->kept_epoch == t->still_epoch;

    x->kept = 0; /* again below, where its slot of the pool is left as is */
    begin_thread(t, i, flags, state_read, cold_skip, gil_err, gil);
    if (check_alive && th->tstate && !alive(x))
      th->state = 'X';
    t->py.err_addr = 0;
    t->acts[i] = (unsigned char)decide(x, flags, state_read);
    /* A native thread whose name waits for a symbol table (background
     * mode, threads.c): not shown under a name it would lose at the next
     * refresh; its CPU time waits in its credit. */
    if (!th->tstate && x->name_pending) {
      x->credit_ns += th->cpu_ns;
      th->cpu_ns = 0;
      t->acts[i] = SKIP;
    }
    switch ((enum action)t->acts[i]) {
    case KEPT:   /* not from decide() */
    case SKIP: { /* left out by the flags: not read at all */
      uint64_t gen = th->stack_gen;
      th->skipped = 1;
      settle(t, i, 0, 0);
      x->kept = kept; /* its frames are untouched: so is their generation
                         (the view's is new: it shows none) */
      th->stack_gen = gen;
      continue;
    }
    case GONE:
      x->recheck = 1; /* its tid may be a new thread's: the next refresh
                         reads (threads.c) */
      settle(t, i, -ESRCH, 0);
      continue;
    case NO_STATE:
      if (flags & PST_SAMPLE_MARK_NATIVE) { /* shown, as what it is */
        th->frames[0] = native_marker;
        th->nframes = 1;
        th->stack_gen = ++t->stack_gens;
        t->view[i] = *th;
        continue;
      }
      /* A pointer not read yet (in D, or put off by the stop budget)
       * is no error of the thread's. */
      settle(t, i,
             x->tp_err && x->tp_err != -EAGAIN ? x->tp_err : PST_ENOTHREADSTATE,
             0);
      continue;
    case READ_NATIVE:
      req = (struct pst__native_req){th->tid,
                                     th->state,
                                     th->tstate,
                                     &x->hint,
                                     (flags & PST_SAMPLE_NATIVE_ALL) != 0,
                                     x->pyname[0] ? NULL : &thread_obj,
                                     (flags & PST_SAMPLE_FULL_NAMES) != 0,
                                     t->pid,
                                     x->schedfd,
                                     &x->sysfd};
      n = pst__native_sample(t->native, &t->py, &t->mem, &req, th->frames,
                             PST_TARGET_FRAMES_MAX, &th->truncated);
      settle(t, i, n, thread_obj);
      continue;
    case READ_BLOCKING:
      n = walk_thread(t, x, flags, 1, &thread_obj);
      settle(t, i, n, thread_obj);
      continue;
    case READ_HELD:
      if (!th->tstate) { /* nothing but the marker */
        held_marker(th, 0);
        settle(t, i, 1, 0);
        continue;
      }
      /* read as it holds still, like a running one */
      __attribute__((fallthrough));
    case READ_PYTHON:
      if (still && kept && x->kept_tstate == th->tstate &&
          th->tstate != still_holder && t->acts[i] == READ_PYTHON &&
          !x->inner_tstate && !x->interp) {
        if (!t->gil_verify) {
          x->kept = 1;
          t->acts[i] = KEPT;
          settle_kept(t, i);
          continue;
        }
        if (verify_save(t, i)) { /* read as if it were not kept */
          t->acts[i] = SKIP;
          settle(t, i, -ENOMEM, 0);
          continue;
        }
      }
      /* (a sub-interpreter's thread may run under a GIL of its own) */
      if ((!gil_batch || t->gil_verify || th->tstate == t->gil_predict ||
                   x->interp
               ? pst__py_prefetch_add
               : pst__py_prefetch_add_unchecked)(&t->py, &t->batch, th->tstate,
                                                 &x->hint, &t->pf[i])) {
        t->acts[i] = SKIP;
        settle(t, i, -ENOMEM, 0);
        continue;
      }
      nbatch++;
      continue;
    }
  }
  if (cpu_clock && !cold_skip) /* every thread's run time was read */
    gate_rebase(t, now, cpu_clock);
  /* One syscall for the first read and the check of every running
   * thread. */
  if (nbatch || gc_piece != PST_PY_NOPIECE || still) {
    got = pst__py_batch_read(&t->mem, &t->batch);
    read = 1;
  }
  if (got < 0 || pst__py_batch_copy(&t->batch, gc_piece, &gc, sizeof(gc)))
    gc = 0;
  if (gil_batch && read && got >= 0) { /* words of this tick's batch */
    uint64_t post[3];
    quiet =
        pst__py_batch_gil_quiet(&t->batch, &holder) && holder_known(t, holder);
    if (pst__py_batch_copy(&t->batch, t->batch.gil_post, &t->gil_predict, 8))
      t->gil_predict = 0;
    /* The kept stacks hold at these words when the batch saw the GIL
     * still and, on a tick that kept stacks, at the words it kept them
     * by. */
    if (quiet &&
        !pst__py_batch_copy(&t->batch, t->batch.gil_post, post, sizeof(post)) &&
        (!still ||
         (post[0] == t->still_holder && post[GIL_SWITCH] == t->still_switch))) {
      held = still;
      t->still_ok = 1;
      t->still_flags = flags;
      t->still_holder = post[0];
      t->still_switch = post[GIL_SWITCH];
    }
  }
  /* Second pass: walk each from its copies; its check was in the batch,
   * or is read for all such threads in one more syscall. */
  for (size_t i = 0; nbatch && i < t->nthreads; i++) {
    struct pst__tthread *x = &t->threads[i];
    uint64_t thread_obj = 0, top[2];
    int n, c;

    if (t->acts[i] != READ_PYTHON && t->acts[i] != READ_HELD)
      continue;
    if (got < 0) { /* the process is gone */
      settle(t, i, got, 0);
      continue;
    }
    t->py.err_addr = 0;
    n = pst__py_walk_prefetched(&t->py, &t->mem, &t->batch, &t->pf[i],
                                x->th.frames, PST_TARGET_FRAMES_MAX,
                                &x->th.truncated,
                                x->pyname[0] ? NULL : &thread_obj, top);
    if (moving(n)) { /* the retry path checks its own walks */
      if (t->gil_verify && t->vn[i] != SIZE_MAX)
        verify_kept(t, i, 1, held);
      t->torn_retries++;
      n = walk_thread(t, x, 0, TORN_RETRIES, &thread_obj);
      n = read_stopped_again(t, x, flags, n, &thread_obj);
      settle_walk(t, i, n, thread_obj);
      continue;
    }
    if (n < 0) {
      n = read_stopped_again(t, x, flags, n, &thread_obj);
      settle_walk(t, i, n, thread_obj);
      continue;
    }
    c = t->pf[i].unchecked
            ? pst__py_check_quiet(&t->mem, &t->pf[i], quiet, holder)
            : pst__py_check_batched(&t->py, &t->mem, &t->batch, &t->pf[i], top);
    if (t->gil_verify && gil_batch && c >= 0 &&
        pst__py_check_quiet(&t->mem, &t->pf[i], quiet, holder) == 1) {
      if (c == 1)
        t->gil_agreed++; /* the rule said still, the check too */
      else
        t->gil_disagreed++; /* it moved: the rule would have been wrong */
    }
    if (c == 1) {
      if (t->pf[i].unchecked)
        t->gil_checks++;
      else
        t->batch_checks++;
      settle_walk(t, i, n, thread_obj);
      if (t->gil_verify && t->vn[i] != SIZE_MAX)
        verify_kept(t, i, 0, held);
      if (t->acts[i] == READ_PYTHON)
        keep(t, i);
      continue;
    }
    /* The batch cannot tell (the walk read more after it, or the top
     * frame moved out of what it read again): check right after the
     * walk, as its own read. A check read later would let the thread
     * return and call down to the same top frame in between, and pass a
     * stack torn below it. */
    if (c < 0) {
      struct pst__tpending p;
      memset(&p, 0, sizeof(p));
      p = (struct pst__tpending){
          .x = x, .i = i, .n = n, .flags = flags, .thread_obj = thread_obj};
      pst__py_check_prepare(&t->py, x->th.tstate, &x->hint, top, &p.c);
      settle_pending(t, &p);
      continue;
    }
    if (t->gil_verify && t->vn[i] != SIZE_MAX)
      verify_kept(t, i, 1, held);
    t->torn_retries++; /* moved */
    n = walk_thread(t, x, 0, TORN_RETRIES, &thread_obj);
    n = read_stopped_again(t, x, flags, n, &thread_obj);
    settle_walk(t, i, n, thread_obj);
  }
  if (gc)
    mark_gc(t, gil_err, gil);
  pst__target_update_role(t);
  *threads = t->view;
  return (int)t->nthreads;
}

int pst_target_warm(struct pst_target *t, int flags) {
  const struct pst_thread *th;
  /* The figures pst_target_close() and the sampler report. */
  const uint64_t saved[] = {
      t->torn_retries, t->exact_rereads, t->batch_checks,
      t->gil_checks,   t->gil_agreed,    t->gil_disagreed,
      t->stacks_kept,  t->still_agreed,  t->still_disagreed};
  int err;

  t->warming = 1; /* no native thread named (threads.c) */
  err = pst_target_refresh(t);
  t->warming = 0;
  for (int k = 0; err >= 0 && k < 2; k++)
    (void)pst_target_sample(t, flags, &th);
  t->torn_retries = saved[0];
  t->exact_rereads = saved[1];
  t->batch_checks = saved[2];
  t->gil_checks = saved[3];
  t->gil_agreed = saved[4];
  t->gil_disagreed = saved[5];
  t->stacks_kept = saved[6];
  t->still_agreed = saved[7];
  t->still_disagreed = saved[8];
  return err < 0 ? err : 0;
}

int pst_target_snapshot(struct pst_target *t,
                        const struct pst_thread **threads) {
  int err = pst_target_refresh(t);

  return err < 0 ? err : pst_target_sample(t, 0, threads);
}

const char *pst_target_role(const struct pst_target *t) { return t->role; }

uint64_t pst_target_torn_retries(const struct pst_target *t) {
  return t->torn_retries;
}

uint64_t pst_target_line_tables_cut(const struct pst_target *t) {
  return pst__py_code_tables_cut(&t->py);
}
