/* sampler.h: the sampling engine: one libuv loop that samples every thread
 * of every target process at a steady rate and hands each thread-sample to
 * its consumers (struct pst__consumer_ops): the profile builder of `record`
 * (consumer/record.h), the windows of --rotate and --push
 * (consumer/window.h) and `top`'s counts (consumer/top.h).
 *
 * What is read is the options' policy (struct pst_policy, made flags by
 * pst_policy_flags() and applied per thread by the target's decide());
 * consumers get every thread's outcome, tagged, and only count or
 * aggregate. The engine owns the targets, the tick, the refresh of
 * threads and children, signals, the host scan of --all and the
 * `-- command`; it counts the sampling figures (struct
 * pst__sampler_stats).
 *
 * Threading: everything, consumers included, runs on the calling thread,
 * which does every ptrace call (ptrace's rule).
 * Ownership: pst__sampler_run() borrows the options and the consumers; what
 * an event points to is valid during the callback only, except the
 * frame strings, which live as long as the engine's targets (see
 * pst__consumer_ops.proc_end).
 */
#ifndef PST_SAMPLER_H
#define PST_SAMPLER_H

#include <regex.h>
#include <stdint.h>
#include <sys/types.h>

#include "pystitch.h"

#define PST_SAMPLER_PIDS_MAX 64
#define PST_SAMPLER_CONSUMERS_MAX 4

struct pst__sampler_opts {
  pid_t pids[PST_SAMPLER_PIDS_MAX];
  int npids;
  char **argv;              /* `-- command` to spawn and sample, or NULL */
  double rate_hz;           /* samples per second per thread */
  double duration_s;        /* wall-clock limit, 0: none */
  struct pst_policy policy; /* what is read (idle, GIL, blocking, native,
                               asyncio tasks): pystitch.h */
  int subprocesses;         /* follow descendants */
  int progress;             /* progress line on stderr */
  int keep_running;         /* `-- command`: leave it running when sampling
                           ends first (default: SIGINT, then SIGTERM) */
  int all;                  /* every Python process of the host, found by a
                           /proc scan each second, until stopped */
  const regex_t *match;     /* all: command lines to take (NULL: any) */
  const regex_t *exclude;   /* all: command lines to leave (NULL: none) */
  int no_sandbox;           /* --no-sandbox: the CLI's ready() leaves the
                             system-call filter out */
  int realtime;             /* --realtime: the loop thread runs under
                             SCHED_FIFO (priority 1) while it samples;
                             else a short EEVDF slice (sampler.c) */
  /* Called once on the loop thread when the given pids are attached and
   * the command started, before the first tick (the CLI enters its
   * sandbox there: src/sandbox/sandbox.h). NULL: none. */
  void (*ready)(const struct pst__sampler_opts *o, void *arg);
  void *ready_arg;
};

/* Error kinds counted apart (the rest by code, see errors[]). */
#define PST_SAMPLER_ERRKINDS 12

struct pst__sampler_stats {
  uint64_t ticks;        /* timer firings */
  uint64_t samples;      /* thread stacks delivered to the consumers */
  uint64_t idle_skipped; /* idle (or non-GIL) thread samples left out */
  uint64_t task_samples; /* --async: task stacks delivered */
  uint64_t task_errors;  /* --async: ticks whose task read failed */
  uint64_t task_torn;    /* --async: task stacks left out: a task of the
                            chain ran while it was read */
  uint64_t errors;       /* thread samples lost to errors, all kinds */
  uint64_t torn;         /* of which: stack moved during the read */
  uint64_t gone;         /* of which: thread or process gone mid-sample */
  uint64_t other;        /* of which: anything else */
  struct {
    int code; /* -errno or PST_E*, 0: unused slot */
    uint64_t count;
  } errkinds[PST_SAMPLER_ERRKINDS]; /* every error by its code (the last
                                       slot takes what does not fit) */
  uint64_t native_only_samples;     /* of samples: threads with no Python
                                   state, without --native (one
                                   "[native thread]" frame) */
  uint64_t consumer_errors;   /* samples a consumer could not take (ENOMEM) */
  uint64_t torn_retries;      /* walks redone (then succeeded or counted) */
  uint64_t line_tables_cut;   /* functions whose line table was too big to
                                 read: their frames show the first line */
  uint64_t native_samples;    /* --native: thread-samples with both */
  uint64_t native_mismatches; /* of which not merged (marker frame) */
  uint64_t native_errors;     /* of which the native stack was lost (a
                                 module truncated under the unwind) */
  uint64_t late_ticks;        /* ticks more than one period behind schedule */
  const char *sched;          /* how the loop thread is scheduled while it
                                 samples ("SCHED_FIFO 1", "0.1 ms slice",
                                 "default"; static text) */
  int sched_err;              /* -errno: --realtime was refused (EPERM) */
  double max_lag_ms;          /* worst lag behind the schedule */
  double tick_ms_total;       /* time the ticks' reads took, all of them */
  double tick_ms_max;         /* the longest */
  double refresh_ms_total;    /* time the refreshes took (threads and
                                 children listed, attaches), all of them */
  double elapsed_s;
  int processes;          /* processes sampled */
  int watched;            /* processes watched for Python ones under them
                             (not Python: a shell, a launcher) */
  int child_exited;       /* the spawned command ended */
  int child_status;       /* its exit status (or 128 + signal) */
  int child_stopped;      /* sampling ended first: it was sent SIGINT */
  int child_left_running; /* --keep-running, or it outlived SIGTERM */
  int interrupted;        /* ended by a signal */
  /* all: the host scans */
  uint64_t scans;        /* /proc scans */
  uint64_t scan_ns;      /* their total time */
  uint64_t scan_ns_max;  /* the longest */
  uint64_t scan_checked; /* processes looked at for the first time */
  uint64_t scan_found;   /* of which Python candidates taken */
};

/* A process as consumers see it; valid from proc_begin to proc_end. */
struct pst__sample_proc {
  pid_t pid;
  const char *cmdline; /* arguments joined by spaces, "" if unknown */
  int rank, local_rank, world_size; /* from its environment, -1: absent */
  pid_t ppid;            /* its parent, when it is a followed child, else 0 */
  const char *origin;    /* a child found under a recorded process: the
                            command line of the process its tree was found
                            from (its job: app and command labels); else
                            "" */
  const char *role;      /* multiprocessing's name of it, "" until known */
  const char *container; /* in another pid namespace: the last part of
                            its cgroup path (a container's id or name),
                            else "" */
  unsigned role_gen;     /* changes when role does */
  const struct pst_target_info *info;
};

/* What became of one thread at one tick. */
enum pst__sample_kind {
  PST_SK_STACK = 0, /* read: thread->frames, innermost first */
  PST_SK_IDLE,      /* left out by the policy (idle, not the GIL
                           holder) or no frame to show */
  PST_SK_ERROR,     /* could not be read: thread->error */
};

struct pst__sample {
  const struct pst__sample_proc *proc;
  void *proc_data;                 /* the consumer's, from proc_begin */
  const struct pst_thread *thread; /* tid, name, state, GIL, frames */
  enum pst__sample_kind kind;
  uint64_t t_ns;      /* since sampling started */
  uint64_t weight_ns; /* the time this sample stands for */
};

/* A consumer of samples. Every callback may be NULL. */
struct pst__consumer_ops {
  const char *name;
  /* Process p starts being sampled (again after an exec). *proc_data
   * (NULL to start with) is handed back with each of its samples. 0, or
   * -errno: the consumer then gets nothing of this process. */
  int (*proc_begin)(void *ctx, const struct pst__sample_proc *p,
                    void **proc_data);
  /* Process p is no longer sampled (it ended, exec'd, or sampling stops):
   * the frame strings of its samples die after this returns. */
  void (*proc_end)(void *ctx, const struct pst__sample_proc *p,
                   void *proc_data);
  /* One thread-sample. 0, or -errno (counted in consumer_errors). */
  int (*sample)(void *ctx, const struct pst__sample *s);
  /* After each tick, with the figures so far. 0, or 1 to end sampling
   * (as a signal would, without counting as one: `top`'s q). */
  int (*tick)(void *ctx, uint64_t t_ns, const struct pst__sampler_stats *st);
};

struct pst__consumer {
  const struct pst__consumer_ops *ops;
  void *ctx;
};

/* Samples until Ctrl-C (SIGINT), SIGTERM or SIGHUP, the duration, or the
 * end of all targets, feeding the n consumers (at most
 * PST_SAMPLER_CONSUMERS_MAX). Returns 0, or a negative error for a failure
 * that prevented sampling at all (the first target could not be opened:
 * pst_target_open's error; -ENOENT for a command that does not exist).
 * Per-sample failures are only counted into *st. */
int pst__sampler_run(const struct pst__sampler_opts *o,
                     const struct pst__consumer *consumers, int n,
                     struct pst__sampler_stats *st);

/* Adds one error of code err to the counters; returns how many of its
 * kind there are now. */
uint64_t pst__sampler_count_error(struct pst__sampler_stats *st, int err);

#endif
