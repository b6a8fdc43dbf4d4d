/* worker.c: jobs run in order by an on-demand thread (worker.h). */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "util/worker.h"

enum { JOB_IDLE, JOB_QUEUED, JOB_RUNNING, JOB_DONE };

void (*_Atomic pst__worker_hook)(void);

int pst__worker_init(struct pst__worker *w) {
  int err;

  memset(w, 0, sizeof(*w));
  if ((err = pthread_mutex_init(&w->lock, NULL)) != 0)
    return -err;
  if ((err = pthread_cond_init(&w->done, NULL)) != 0) {
    pthread_mutex_destroy(&w->lock);
    return -err;
  }
  return 0;
}

void pst__worker_exit(struct pst__worker *w) {
  pthread_mutex_lock(&w->lock);
  for (struct pst__job *j = w->head; j; j = j->next)
    j->state = JOB_IDLE;
  w->head = w->tail = NULL;
  pthread_mutex_unlock(&w->lock);
  if (w->joinable) /* it ends with the queue empty */
    pthread_join(w->thread, NULL);
  w->joinable = 0;
  pthread_cond_destroy(&w->done);
  pthread_mutex_destroy(&w->lock);
}

static void *worker_main(void *arg) {
  struct pst__worker *w = arg;

  pthread_mutex_lock(&w->lock);
  while (w->head) {
    struct pst__job *j = w->head;
    void (*hook)(void) = atomic_load(&pst__worker_hook);
    w->head = j->next;
    if (!w->head)
      w->tail = NULL;
    j->next = NULL;
    j->state = JOB_RUNNING;
    w->current = j;
    pthread_mutex_unlock(&w->lock);
    if (hook)
      hook();
    j->fn(j);
    pthread_mutex_lock(&w->lock);
    j->state = JOB_DONE;
    w->current = NULL;
    pthread_cond_broadcast(&w->done);
  }
  w->running = 0;
  pthread_cond_broadcast(&w->done);
  pthread_mutex_unlock(&w->lock);
  return NULL;
}

int pst__worker_queue(struct pst__worker *w, struct pst__job *j) {
  sigset_t all, old;
  int err = 0;

  pthread_mutex_lock(&w->lock);
  if (!w->running) {
    if (w->joinable) /* it ended: the join returns at once */
      pthread_join(w->thread, NULL);
    w->joinable = 0;
    sigfillset(&all);
    sigdelset(&all, SIGBUS); /* the ELF truncation guard's */
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGSYS); /* the sandbox filter's */
    sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    err = pthread_create(&w->thread, NULL, worker_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    w->running = w->joinable = err == 0;
  }
  if (!err) {
    j->next = NULL;
    j->state = JOB_QUEUED;
    if (w->tail)
      w->tail->next = j;
    else
      w->head = j;
    w->tail = j;
  }
  pthread_mutex_unlock(&w->lock);
  return -err;
}

void pst__worker_cancel(struct pst__worker *w, struct pst__job *j) {
  pthread_mutex_lock(&w->lock);
  if (j->state == JOB_QUEUED) {
    for (struct pst__job **p = &w->head, *prev = NULL; *p;
         prev = *p, p = &(*p)->next)
      if (*p == j) {
        *p = j->next;
        if (w->tail == j)
          w->tail = prev;
        break;
      }
    j->state = JOB_IDLE;
  }
  while (j->state == JOB_RUNNING)
    pthread_cond_wait(&w->done, &w->lock);
  pthread_mutex_unlock(&w->lock);
}

void pst__worker_wait(struct pst__worker *w, struct pst__job *j) {
  pthread_mutex_lock(&w->lock);
  while (j->state == JOB_QUEUED || j->state == JOB_RUNNING)
    pthread_cond_wait(&w->done, &w->lock);
  pthread_mutex_unlock(&w->lock);
}
