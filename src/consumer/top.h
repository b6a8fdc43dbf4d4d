/* top.h: the consumer of `pystitch top`: thread-samples counted by
 * function (or line), own and total, for the current interval and since
 * the start, and the threads seen, for the live table.
 *
 * Memory stays bounded by what the targets run: one entry per distinct
 * function (or line) and per thread, each with fixed counters; intervals
 * are rolled by pst__top_roll(), not kept.
 * Ownership: pst__top_new() returns a consumer freed by pst__top_free(); it
 * copies every string it keeps (frame strings die at proc_end). Hand it
 * to the engine as {&pst__top_consumer_ops, top}. Not thread-safe: the
 * engine's thread only.
 */
#ifndef PST_CONSUMER_TOP_H
#define PST_CONSUMER_TOP_H

#include <stddef.h>
#include <stdint.h>

#include "sampler/sampler.h"

struct pst__top;

extern const struct pst__consumer_ops pst__top_consumer_ops;

/* One row of the function table. */
struct pst__top_row {
  const char *name, *file;
  int line;            /* 0 when aggregated by function */
  uint64_t own, total; /* samples: on top of the stack, anywhere in it */
  uint64_t own_ns, total_ns;
};

#define PST_TOP_STACK_MAX 128 /* frames kept of a thread's last stack */

/* One thread as last seen. */
struct pst__top_thread {
  pid_t pid, tid;
  char name[64];
  char state;                    /* kernel state letter at its last sample */
  int holds_gil;                 /* 1, 0, -1 unknown */
  uint64_t active, idle, errors; /* samples in the interval: with a stack,
                                    without (idle), failed */
  uint64_t running;              /* of its stacks, those taken while it ran
                                    (mode wall samples sleepers too) */
  uint64_t active_p, idle_p;     /* in the last whole one */
  const char *top;               /* its innermost function at the last stack */
  /* Its last stack, read through pst__top_stack(): */
  uint64_t stack_ns; /* when it was sampled; 0: never */
  uint32_t nstack;
  int stack_truncated;
  struct {
    uint32_t ent;
    int line;
  } stack[PST_TOP_STACK_MAX];
};

/* A frame of a thread's last stack. */
struct pst__top_frame {
  const char *name, *file;
  int line;
};

/* A process sampled (or that was, until it ended). */
struct pst__top_proc {
  pid_t pid;
  char cmdline[96];
  char version[32];                 /* CPython's */
  int rank, local_rank, world_size; /* -1: not set */
  int ended;
  int free_threaded; /* no GIL */
};

enum pst__top_sort {
  PST_TOP_OWN = 0,
  PST_TOP_TOTAL,
  PST_TOP_OWN_TIME,
  PST_TOP_TOTAL_TIME
};

/* by_line: aggregate by (function, line) instead of function. 0 or
 * -ENOMEM. */
int pst__top_new(int by_line, struct pst__top **out);
void pst__top_free(struct pst__top *t);

/* Ends the interval: its counts move into the since-start ones. */
void pst__top_roll(struct pst__top *t);

/* Which counts a table shows. */
enum pst__top_window {
  PST_TOP_INTERVAL = 0, /* the interval in progress */
  PST_TOP_ALL,          /* since the start */
  PST_TOP_LAST,         /* the last whole interval */
};

/* The table of window w, sorted by by. Writes at most max rows and
 * returns how many there are in all; *samples gets the thread-samples the
 * percentages are of. Row strings live as long as t. */
size_t pst__top_table(struct pst__top *t, enum pst__top_window w,
                      enum pst__top_sort by, struct pst__top_row *rows,
                      size_t max, uint64_t *samples);

/* The processes seen, in order of appearance: *n of them. */
const struct pst__top_proc *pst__top_procs(const struct pst__top *t, size_t *n);

/* Thread-samples of the interval in progress that found the GIL held by
 * the thread sampled (at most one a tick and process). */
uint64_t pst__top_gil_samples(const struct pst__top *t);

/* Counts only the samples of thread tid of process pid (tid 0: of any
 * thread of pid; pid 0: of every thread, the default) from now on. The
 * counts so far are dropped when the filter changes: they mixed threads.
 * The thread pane, the GIL and the stacks keep seeing every thread. */
void pst__top_set_filter(struct pst__top *t, pid_t pid, pid_t tid);

/* The last stack sampled of thread x (one of pst__top_threads()),
 * innermost frame first: writes at most max frames and returns how many
 * it has. Strings live as long as t. */
size_t pst__top_stack(const struct pst__top *t, const struct pst__top_thread *x,
                      struct pst__top_frame *out, size_t max);

/* The threads seen (live ones, in order of appearance): *n of them. */
const struct pst__top_thread *pst__top_threads(const struct pst__top *t,
                                               size_t *n);

#endif
