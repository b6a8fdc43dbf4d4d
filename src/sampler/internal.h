/* internal.h: what the files of src/sampler share: the engine's state
 * (struct pst__rec), one target process (struct pst__entry), and the
 * functions one file provides to the others.
 *
 * Files: sampler.c (the engine: the tick, delivery to the consumers, the
 * lifecycle of targets: attach, exec, pid reuse, end; signals, progress),
 * scan.c (--all: the host's Python processes, found off the loop thread),
 * child.c (`-- command`: spawned, stopped with a grace period).
 *
 * Ownership: pst__sampler_run() owns the struct pst__rec (on its stack) and
 * everything it points to but the options, the consumers and the stats,
 * which it borrows. Each entry is allocated once (consumers keep
 * &e->proc) and freed by compact (scan.c) or at the end of the run.
 * Threading: the loop thread only, except scan.c's work function, which
 * alone touches the scan's own fields while scan_busy is set.
 */
#ifndef PST_SAMPLER_INTERNAL_H
#define PST_SAMPLER_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "proc/proc.h"
#include "pystitch.h"
#include "sampler/sampler.h"
#include "util/worker.h"

#define PST__ATTACH_RETRY_MS 10 /* a spawned command, until its Python is up */
#define PST__TARGETS_MAX 1024
#define PST__SCAN_TAKE_MAX 256 /* --all: candidates per scan (the rest: next) */

/* --all: a process looked at, by (pid, start time, start of code: an
 * exec changes it), so that each is checked once; gen marks the scan
 * that last saw it (the others have ended). */
struct pst__seen {
  pid_t pid;
  uint64_t starttime, startcode;
  unsigned gen;
};

/* --all: one scan on libuv's thread pool, so that sampling never waits
 * for /proc: its candidates and figures, read by its done callback. */
struct pst__scan_job {
  uv_work_t req;
  pid_t pids[PST__SCAN_TAKE_MAX];
  size_t n;
  uint64_t ns, checked;
};

/* One process the engine records, will record, or has recorded. */
/* The open of a process (pst_target_open(): ELF analysis, disassembly,
 * the first stop) on the engine's worker, off the loop. The job fills t
 * and err, then sets finished (release) and wakes the loop (r->opened). */
struct pst__open_job {
  struct pst__job job;
  uv_async_t *opened;
  pid_t pid;
  int warm_flags; /* its first, unrecorded read's (warm(), sampler.c) */
  struct pst_target *t;
  int err;
  atomic_int finished;
};

struct pst__entry {
  pid_t pid;
  struct pst_target *t; /* NULL until attached, and after it ended */
  int tries;            /* attach attempts */
  int done;             /* ended, or not Python: never tried again */
  int execd;            /* the process exec'd: attaching its new program */
  int given;            /* named by -p: not Python is an error at once */
  int launched;         /* the `-- command` */
  int from_watch;       /* found as a child of a watched process */
  int watch;            /* not Python (yet): not sampled, its children
                           followed (a shell, unshare, a launcher) */
  struct pst__proc_image image; /* as attached (or watched): tells pid reuse
                                  and exec */
  char cmdline[256];
  char origin[256]; /* the command line of the process its tree was found
                       from, "" when none (inherit() in sampler.c) */
  struct pst__sample_proc proc; /* what consumers see, while attached */
  char role[64];
  char container[128];
  void *cdata[PST_SAMPLER_CONSUMERS_MAX]; /* each consumer's, or NULL */
  unsigned char cbegun[PST_SAMPLER_CONSUMERS_MAX]; /* proc_begin said 0 */
  /* --async: whether the reason for having no tasks was said (2: and
   * there will be none), that a loop's thread is not known, that it has
   * more tasks than are read. */
  int async_said;
  int loop_said;
  int cut_said;
  int opening; /* open queued or under way: not tried again meanwhile */
  struct pst__open_job open;
};

/* The engine. */
struct pst__rec {
  uv_loop_t loop;
  const struct pst__consumer *c;
  int nc;
  int flags; /* pst_target_sample() flags, from the options' policy */
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
  const struct pst__sampler_opts *o;
  struct pst__sampler_stats *st;
  struct pst__entry **e; /* each allocated once: consumers keep &e->proc */
  size_t n;
  uint64_t period_ns, start_ns, sched_ns, last_ns;
  int first_err;
  unsigned seed;
  struct pst__seen *seen; /* --all: the scan's, while scan_busy */
  size_t nseen, seen_cap;
  unsigned gen;
  struct pst__scan_job job;
  int scan_busy;
  /* Opens of processes found while sampling (children, --all, exec):
   * the worker runs them, `opened` hands them back to the loop. */
  struct pst__worker worker;
  uv_async_t opened;
  int worker_ok;
  uint64_t pidns; /* our pid namespace's inode */
};

/* ---- sampler.c ---- */

/* The entry of pid, added when new (NULL: no memory, or PST__TARGETS_MAX
 * reached). */
struct pst__entry *pst__add_entry(struct pst__rec *r, pid_t pid);
/* Attaches every entry not attached nor done. */
void pst__try_attach_pending(struct pst__rec *r);
/* The attach timer's callback: retries pending entries until none is. */
void pst__on_attach(uv_timer_t *h);
/* A handle's close callback with nothing to free. */
void pst__on_close(uv_handle_t *h);

/* ---- scan.c ---- */

/* The scan timer's callback (--all): queues one scan unless one runs. */
void pst__on_scan(uv_timer_t *h);
/* Drops the entries of ended processes (their consumers were told). */
void pst__compact_entries(struct pst__rec *r);

/* ---- child.c ---- */

/* Starts the `-- command` and adds its entry. 0, or a libuv error. */
int pst__spawn(struct pst__rec *r);
/* Sampling ends while the command runs: SIGINT, then SIGTERM after a
 * grace period, unless --keep-running. */
void pst__stop_child(struct pst__rec *r);

#endif
