/* worker.h: a queue of jobs run in order by a thread of their own, off the
 * thread that queues them (the sampler's loop: process analysis, symbol
 * tables), started when a job comes and none runs, ended when the queue
 * is empty: no thread lingers idle.
 *
 * The thread blocks every signal but the synchronous ones (faults, the
 * seccomp filter's SIGSYS), so that SIGINT and SIGTERM reach the loop.
 * Before each job it calls pst__worker_hook when set (the sandbox sets it:
 * a thread made before the sandbox was entered takes its privileges).
 *
 * Ownership: the caller owns the worker and every job; a job must stay
 * alive until it ran or was cancelled (pst__worker_cancel()). One thread
 * queues, cancels and frees; the jobs' own results are the caller's to
 * hand back (a job's function may signal the loop, e.g. uv_async_send).
 */
#ifndef PST_UTIL_WORKER_H
#define PST_UTIL_WORKER_H

#include <pthread.h>

struct pst__job {
  void (*fn)(struct pst__job *j); /* run on the worker's thread */
  struct pst__job *next;          /* in the queue (the worker's lock) */
  int state;                      /* the worker's: queued, running, done */
};

struct pst__worker {
  pthread_mutex_t lock;
  pthread_cond_t done;          /* a job ended, or the thread did */
  struct pst__job *head, *tail; /* queued, oldest first */
  struct pst__job *current;     /* the one running, or NULL */
  pthread_t thread;
  int running;  /* a thread drains the queue */
  int joinable; /* a thread was started and not joined */
};

/* Called by a worker's thread before each job (NULL: nothing). */
extern void (*_Atomic pst__worker_hook)(void);

/* 0 or -errno. */
int pst__worker_init(struct pst__worker *w);
/* Cancels what is queued, waits for the job under way and the thread. */
void pst__worker_exit(struct pst__worker *w);

/* Queues j (j->fn set), starting the thread when none runs. 0, or -errno
 * when no thread could be started (j is not queued: run it yourself). */
int pst__worker_queue(struct pst__worker *w, struct pst__job *j);
/* Takes j off the queue, or waits for it to end when it runs. After it,
 * j is the caller's again. A job never queued or already done: nothing. */
void pst__worker_cancel(struct pst__worker *w, struct pst__job *j);
/* Waits until j ran (queued or running), or returns at once. */
void pst__worker_wait(struct pst__worker *w, struct pst__job *j);

#endif
