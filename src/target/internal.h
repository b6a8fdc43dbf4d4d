/* internal.h: what the files of src/target share: the target struct, the
 * tracked thread, and the functions one file provides to the others.
 *
 * Files: target.c (open, close, info), threads.c (refresh, thread
 * identity, mapping to thread states, names), policy.c (the options'
 * policy made flags, and fitted to this target), sample.c (one tick:
 * which threads are read, the Python walk with its pipelined torn-read
 * check, the marker frames), native.c (--native: one thread stopped,
 * both stacks, merged; native.h), tasks.c (asyncio tasks, a task's chain
 * as a stack).
 *
 * Ownership: struct pst_target owns everything here: the tracked threads
 * (with their stat fds), the view and frame pool of the last sample, and
 * the native sampler. Nothing here is thread-safe; the loop thread owns
 * the target (ptrace's rule: only the thread that attached may trace).
 */
#ifndef PST_TARGET_INTERNAL_H
#define PST_TARGET_INTERNAL_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "libc/tsd.h"
#include "proc/maps.h"
#include "proc/mem.h"
#include "pystitch.h"
#include "python/python.h"

#define PST_TARGET_FRAMES_MAX 1024 /* per thread; deeper is truncated */

struct pst__native_sampler;
struct pst__modcache;
struct pst__resolver;
struct pst__strtab;

/* One OS thread as the target tracks it between refreshes. */
struct pst__tthread {
  struct pst_thread th; /* fsbase, tstate, method, name: kept; the rest is
                            per sample */
  uint64_t starttime;   /* with the tid, identifies the thread */
  int tp_err;           /* why fsbase could not be read (retried) */
  int statfd;           /* /proc/PID/task/TID/stat, read per sample */
  int schedfd;          /* its schedstat: has it run since the last read */
  int sysfd;            /* its syscall file (--native, opened at first use,
                           -1 until then): a blocked thread unwound
                           without a stop */
  uint64_t ran_ns;      /* schedstat's run + wait time as last read */
  uint64_t run_ns;      /* schedstat's run time as last read */
  uint64_t credit_ns;   /* PST_SAMPLE_ON_CPU: CPU time not sampled yet */
  char held;            /* the state letter read before we stopped it, to
                           be this tick's (0: not stopped since) */
  char last_state;      /* the state letter stat last gave, 0: none */
  int quiet;            /* stat reads in a row that found it asleep */
  int cold;             /* PST_SAMPLE_ON_CPU: run-time reads in a row that
                           found it had not run (the gate, sample.c) */
  char pyname[64];      /* threading's name once read, "" until then */
  char comm[64];        /* its /proc comm as first seen */
  int origin_done;      /* its start routine was looked at */
  int name_pending;     /* ... and needs a table being built: not sampled
                           until named (sample.c) */
  uint64_t thread_obj;  /* the Thread object it was read from, 0: none */
  struct pst__py_name_ref name_ref; /* where that name lives (renames) */
  struct pst__py_hint hint;         /* what the last walk read, and whose thread
                              state it must still be (frame.c) */
  struct pst__py_exc exc; /* PST_SAMPLE_EXCEPTION: this tick's exception */
  /* Its last Python stack (at pool + i * PST_TARGET_FRAMES_MAX): as of
   * the GIL words in pst_target.still (sample.c), while kept = 1. */
  int kept;
  uint64_t kept_epoch;
  /* Sub-interpreters (threads.c, refresh): the interpreter of th.tstate
   * (0: the main one), and this thread's state in another interpreter
   * that it may be running in (0: none), whose frames go on top of
   * th.tstate's (sample.c); inner_hint: its walks' (malloc'ed, owned). */
  int recheck; /* a sample found it gone: the next refresh reads its
                  liveness, whatever its slice */
  uint64_t interp;
  uint64_t inner_tstate;
  struct pst__py_hint *inner_hint;
  size_t kept_n;
  int kept_truncated;
  uint64_t kept_tstate;
};

struct pst_target {
  pid_t pid;
  enum pst__arch arch;
  struct pst__mem mem;
  struct pst__maps maps;
  struct pst__tsd tsd;
  struct pst__py py;
  struct pst_target_info info;
  struct pst__tthread *threads;
  size_t nthreads;
  struct pst_thread *view; /* what the last sample returned */
  struct pst_frame *pool;  /* frames of all threads of the last sample */
  size_t pool_cap;
  uint64_t torn_retries;   /* walks redone because the stack moved */
  uint64_t missed_listing; /* live threads /proc/PID/task left out, kept */
  uint64_t exact_rereads;  /* PST_SAMPLE_EXACT: threads read again stopped */
  uint64_t task_rereads;   /* tasks read again with their loops stopped */
  struct pst__native_sampler *native; /* --native, made at the first use */
  int bg_symbols;                     /* pst_target_background_symbols() */
  struct pst__modcache *modcache;     /* modules, for both of them: */
  struct pst__resolver *resolver;     /* native-only threads' start routines */
  /* One tick's running reads: batched into one syscall (sample.c). */
  struct pst__py_batch batch;
  struct pst__py_prefetch *pf; /* per thread: its part of the batch */
  struct pst__py_exc **excp;   /* the threads' exc, read together */
  size_t excp_cap;
  size_t pf_cap;
  unsigned char *acts; /* per thread: what the tick does with it */
  size_t acts_cap;
  uint64_t batch_checks; /* walks checked from the batch alone */
  uint64_t gil_checks;   /* walks needing no check: the GIL did not move */
  /* PYSTITCH_VERIFY_GIL_SKIP set: every thread checked as well, and the
   * GIL rule's verdicts counted against the checks' (tests). */
  int gil_verify;
  uint64_t gil_agreed, gil_disagreed;
  uint64_t gil_predict; /* the GIL's last holder, as last read: its thread
                           gets a check planned (pst__py_batch_gil) */
  /* The GIL rule across ticks (sample.c, still_words()): the GIL's
   * {last_holder, switch_number} at which every kept stack held, valid
   * while still_ok; the flags of that tick; stacks given again. */
  int still_ok, still_flags;
  uint64_t still_holder, still_switch, still_epoch;
  size_t holder_at; /* where the holder was last found (holder_known()) */
  uint64_t stacks_kept;
  uint64_t stack_gens; /* the last pst_thread.stack_gen given */
  /* PYSTITCH_VERIFY_GIL_SKIP: a stack that would be kept is read all the
   * same and compared with the kept one (its copy: vpool, vn per thread,
   * SIZE_MAX for none); the verdicts. */
  struct pst_frame *vpool;
  struct pst_frame *inner_frames; /* a sub-interpreter's frames, stitched
                                     on top (PST_TARGET_FRAMES_MAX) */
  size_t refreshes;               /* pst_target_refresh() calls */
  int warming;                    /* in pst_target_warm()'s refresh */
  size_t *vn, vpool_cap, vn_cap;
  uint64_t still_agreed, still_disagreed;
  char role[64];                  /* multiprocessing's name of the process */
  struct pst_frame *probe;        /* frames of the role's probe walk */
  uint64_t role_obj;              /* the Process object it was read from */
  struct pst__py_thread_ent *reg; /* the thread registry, as last read */
  struct pst__py_name_ref *refs;  /* per thread, for the rename check */
  uint8_t *changed;
  size_t reg_cap, refs_cap, changed_cap;
  /* pst_target_tasks() (tasks.c): its last answer, allocated at first
   * use. */
  struct pst_task *tasks;
  struct pst__py_task *py_tasks;
  struct pst_frame *task_frames;
  uint64_t *task_tstates;
  struct pst_frame *task_stack; /* pst_target_task_stack()'s frames */
  /* pst_target_locals()'s: the thread read, its frames, the locals of
   * each frame and their texts (target/locals.c). */
  struct pst_thread loc_thread;
  struct pst_frame *loc_frames;
  struct pst_frame_locals *loc_per_frame;
  struct pst_local *loc_vars;
  struct pst__py_local *loc_text;
  struct pst__strtab *task_names; /* its "task NAME" markers */
  /* The threads of running tasks whose sample missed them (tasks.c): read
   * again, stopped. */
  pid_t task_stale[16];
  int ntask_stale;
  /* When it was opened, in /proc's start-time ticks: a thread started
   * since has all its CPU time seen. */
  uint64_t open_ticks;
  /* PST_SAMPLE_ON_CPU: the CPU time a sample stands for
   * (pst_target_set_period()), 0: any. */
  uint64_t period_ns;
  /* pst_target_set_stop_deadline(): no stop of a new thread after it (0:
   * none); the stops put off by it. */
  uint64_t stop_deadline_ns, stops_deferred;
  /* PST_SAMPLE_ON_CPU with many threads, the gate (sample.c): the
   * process's CPU clock, read once a tick, tells whether threads that
   * have not run lately ran since every thread was last read. */
  clockid_t cpu_clock;
  int cpu_clock_ok;      /* clock_getcpuclockid() gave it */
  int gate_based;        /* gate_base holds: every thread read once */
  uint64_t gate_base;    /* the clock minus the threads' run times then */
  uint64_t gate_full_ns; /* when every thread was last read */
  uint64_t gate_ticks, gate_full; /* ticks gated, of them read in full */
  uint64_t aio_looked_ns;         /* when the maps were last searched for it */
  uint64_t aio_wait_ns;           /* and how long until the next search */
  int aio_err;                    /* and what that search said */
};

/* ---- policy.c ---- */

/* flags as this target can take them: the kernel state read where the
 * flags need it, --gil on a free-threaded build made "active threads". */
int pst__target_flags(const struct pst_target *t, int flags);

/* ---- threads.c ---- */

/* May a thread in this kernel state be ptrace-stopped for a moment? Not
 * in uninterruptible sleep (D: ptrace would wait for it to wake), nor in
 * a group-stop or another tracer's stop (T, t: our stop would take it out
 * of it for a moment, visible as R). */
int pst__tthread_may_stop(char state);

/* sample.c: the thread's kernel state letter now (R, S, D, T, ...), '?'
 * once it is gone; cheap for a thread that keeps sleeping. With cpu_ns:
 * the CPU time it used since the last such read, too. */
char pst__tthread_state(struct pst__tthread *x, uint64_t *cpu_ns);

/* Starts tracking thread tid: start time, /proc name, stat fd, and its
 * thread pointer (one ptrace stop; not for a thread that may not be
 * stopped: then tp_err is -EAGAIN and the next refresh retries). */
void pst__tthread_init(struct pst_target *t, struct pst__tthread *x, pid_t tid,
                       char state, uint64_t starttime);
/* Closes x's stat fd. */
void pst__tthread_exit(struct pst__tthread *x);

/* sample.c: walks the Python stack of thread tid again, once, into the
 * last sample's view; for a thread the caller holds stopped (its stack
 * holds still). Its frames or an error; -ENOENT for a thread the last
 * sample did not read. */
int pst__target_rewalk(struct pst_target *t, pid_t tid);

/* The role from the Process object a walk found (sample.c). */
void pst__target_update_role(struct pst_target *t);

/* threading's name of x once known from its Thread object thread_obj
 * (read once; 0: not known yet), else "MainThread" for the main thread,
 * else the /proc comm stays. */
void pst__tthread_set_name(struct pst_target *t, struct pst__tthread *x,
                           uint64_t thread_obj);

/* t's module cache, made at the first call (in the background mode when
 * t->bg_symbols). 0 or -ENOMEM. */
int pst__target_modcache(struct pst_target *t);

#endif
