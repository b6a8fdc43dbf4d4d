/* sampler.h: the recording loop: samples every thread of every target
 * process at a steady rate on one libuv loop, into a struct pst_profile.
 *
 * Runs on the calling thread (which does every ptrace call) until Ctrl-C
 * (SIGINT), SIGTERM or SIGHUP, the duration, or the end of all targets.
 * The profile is owned by the caller.
 */
#ifndef PST_SAMPLER_H
#define PST_SAMPLER_H

#include <stdint.h>
#include <sys/types.h>

#include "profile/profile.h"

#define PST_RECORD_PIDS_MAX 64

struct pst_record_opts {
  pid_t pids[PST_RECORD_PIDS_MAX];
  int npids;
  char **argv;          /* `-- command` to spawn and record, or NULL */
  double rate_hz;       /* samples per second per thread */
  double duration_s;    /* wall-clock limit, 0: none */
  int idle;             /* keep samples of idle threads */
  int gil_only;         /* only the thread holding the GIL */
  int threads_root;     /* a root frame per thread */
  int by_function;      /* aggregate by function, not line */
  int subprocesses;     /* follow descendants */
  int blocking;         /* stop each thread while reading it */
  int native;           /* 1: native frames merged, 2: and plumbing */
  int progress;         /* progress line on stderr */
};

struct pst_record_stats {
  uint64_t ticks;        /* timer firings */
  uint64_t samples;      /* thread stacks added to the profile */
  uint64_t idle_skipped; /* idle (or non-GIL) thread samples left out */
  uint64_t errors;       /* thread samples lost to errors, all kinds */
  uint64_t torn;         /* of which: stack moved during the read */
  uint64_t gone;         /* of which: thread or process gone mid-sample */
  uint64_t other;        /* of which: anything else */
  uint64_t torn_retries; /* walks redone (then succeeded or counted) */
  uint64_t native_samples;    /* --native: thread-samples with both */
  uint64_t native_mismatches; /* of which not merged (marker frame) */
  uint64_t late_ticks;   /* ticks more than one period behind schedule */
  double max_lag_ms;     /* worst lag behind the schedule */
  double elapsed_s;
  int processes;         /* processes sampled */
  int child_exited;      /* the spawned command ended */
  int child_status;      /* its exit status (or 128 + signal) */
  int interrupted;       /* ended by a signal */
};

/* Records until done (see top). Returns 0, or a negative error for a
 * failure that prevented recording at all (e.g. the first target could not
 * be opened: the error of pst_target_open, or -ENOENT for a command that
 * does not exist). Per-sample failures are only counted. */
int pst_record_run(const struct pst_record_opts *o, struct pst_profile *prof,
                   struct pst_record_stats *st);

#endif
