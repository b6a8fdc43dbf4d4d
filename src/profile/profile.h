/* profile.h: the samples of a recording, deduplicated and run-length
 * encoded, as the output writers read them.
 *
 * Frames are (name, file, line) with strings interned by the profile;
 * a stack is a list of frame ids, ROOT FIRST (outermost frame at index 0).
 * Each thread's samples are kept in time order as runs: consecutive samples
 * of the same stack merge into one run (start, end, count, weight).
 * Synthetic root frames ("process 123 ...", "thread 456 ...") are ordinary
 * frames added by the caller; writers need not know about them.
 *
 * Ownership: pst__profile_new()/pst__profile_free(); every pointer returned
 * by an accessor is borrowed and valid until the next add or the free.
 * Not thread-safe.
 */
#ifndef PST_PROFILE_H
#define PST_PROFILE_H

#include <stddef.h>
#include <stdint.h>

struct pst__profile;

struct pst__prof_frame {
  const char *name; /* function (qualified name), or a synthetic label */
  const char *file; /* "" for synthetic frames */
  int line;         /* 0 when unknown or aggregated by function */
};

struct pst__prof_process {
  int pid;
  const char *cmdline; /* "" when unknown */
  /* torch.distributed / vLLM labels from the environment, -1 when absent */
  int rank, local_rank, world_size;
  const char *role; /* multiprocessing's name of it, "" when unknown */
  int ppid;         /* its parent when it was followed as a child, 0 */
};

struct pst__prof_thread {
  uint32_t process; /* index into the processes */
  int tid;
  const char *name;
};

/* Consecutive samples of one thread with the same stack. */
struct pst__prof_run {
  uint32_t stack;
  uint32_t count;     /* samples merged */
  uint64_t start_ns;  /* time of the first sample (since the recording began) */
  uint64_t end_ns;    /* time of the last sample */
  uint64_t weight_ns; /* sum of the samples' weights (time they stand for) */
};

struct pst__profile *pst__profile_new(uint64_t period_ns);
void pst__profile_free(struct pst__profile *p);

/* Registers a process (or returns the index of pid if known). -ENOMEM. */
int pst__profile_process(struct pst__profile *p, int pid, const char *cmdline,
                         int rank, int local_rank, int world_size);
/* Sets process index proc's role and parent (see pst__prof_process).
 * 0, -EINVAL, -ENOMEM. */
int pst__profile_process_role(struct pst__profile *p, uint32_t proc,
                              const char *role, int ppid);

/* Registers a thread of process index proc (or returns the index of the
 * same (proc, tid)); a new name replaces the old one. -ENOMEM. */
int pst__profile_thread(struct pst__profile *p, uint32_t proc, int tid,
                        const char *name);

/* Adds one sample of thread index thread: frames ROOT FIRST, n of them,
 * taken at t_ns, standing for weight_ns of time. Returns 0 or -ENOMEM. */
int pst__profile_add(struct pst__profile *p, uint32_t thread,
                     const struct pst__prof_frame *frames, size_t n,
                     uint64_t t_ns, uint64_t weight_ns);

/* The profile's own copy of s (interned: equal strings, equal pointers),
 * valid as long as the profile; NULL on -ENOMEM. */
const char *pst__profile_intern(struct pst__profile *p, const char *s);

/* pst__profile_add() for frames whose name and file are already
 * pst__profile_intern() pointers (the sampler's fast path: no hashing of
 * strings per sample). */
int pst__profile_add_interned(struct pst__profile *p, uint32_t thread,
                              const struct pst__prof_frame *frames, size_t n,
                              uint64_t t_ns, uint64_t weight_ns);

/* pst__profile_add_interned() that returns the stack's id (>= 0), or
 * -errno. */
int64_t pst__profile_add_interned_id(struct pst__profile *p, uint32_t thread,
                                     const struct pst__prof_frame *frames,
                                     size_t n, uint64_t t_ns,
                                     uint64_t weight_ns);

/* One more sample of the stack with id stack (as an _id call returned:
 * its frames, roots included) for thread. 0, -EINVAL (no such stack or
 * thread) or -ENOMEM. */
int pst__profile_add_stack(struct pst__profile *p, uint32_t thread,
                           uint32_t stack, uint64_t t_ns, uint64_t weight_ns);

/* Read access for the writers. */
/* What the weights are: 1, CPU time (sampling mode cpu, the default), 0,
 * wall time. Writers name their values after it. Once set to 1, a sample
 * counts the whole periods of CPU time it stands for (the kernel counts
 * a running thread's time in steps of its scheduler tick, 4 ms at 250
 * Hz: at 1 kHz one sample may stand for four periods). */
void pst__profile_set_cpu(struct pst__profile *p, int cpu);
int pst__profile_cpu(const struct pst__profile *p);

uint64_t pst__profile_period_ns(const struct pst__profile *p);
uint64_t pst__profile_start_unix_ns(const struct pst__profile *p);
size_t pst__profile_nframes(const struct pst__profile *p);
const struct pst__prof_frame *pst__profile_frame(const struct pst__profile *p,
                                                 uint32_t id);
size_t pst__profile_nstacks(const struct pst__profile *p);
/* Frame ids of stack id, root first; *n gets their count. */
const uint32_t *pst__profile_stack(const struct pst__profile *p, uint32_t id,
                                   size_t *n);
size_t pst__profile_nprocesses(const struct pst__profile *p);
const struct pst__prof_process *pst__profile_proc(const struct pst__profile *p,
                                                  uint32_t i);
size_t pst__profile_nthreads(const struct pst__profile *p);
const struct pst__prof_thread *
pst__profile_thread_at(const struct pst__profile *p, uint32_t i);
/* Runs of thread i in time order. */
const struct pst__prof_run *pst__profile_runs(const struct pst__profile *p,
                                              uint32_t thread, size_t *n);
/* Total samples and total weight over all threads. */
uint64_t pst__profile_samples(const struct pst__profile *p);
/* Samples of each stack over all threads (for folded/flamegraph/pprof):
 * fills counts[nstacks] and weights[nstacks] (either may be NULL). */
void pst__profile_stack_totals(const struct pst__profile *p, uint64_t *counts,
                               uint64_t *weights_ns);

#endif
