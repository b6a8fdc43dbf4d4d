/* test-worker.c: util/worker.c: jobs in order off the caller's thread,
 * cancel and wait, the hook, no thread left once idle. */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "task.h"
#include "util/worker.h"

struct tjob {
  struct pst__job job;
  pid_t tid; /* the thread it ran on */
  int order; /* when it ran */
  int *gate; /* waits while *gate is 0, when set */
};

static atomic_int ran, hooked;

static void hook(void) { atomic_fetch_add(&hooked, 1); }

static void tjob_fn(struct pst__job *j) {
  struct tjob *t = (struct tjob *)j; /* job is the first member */

  while (t->gate && !__atomic_load_n(t->gate, __ATOMIC_ACQUIRE))
    usleep(1000);
  t->tid = gettid();
  t->order = atomic_fetch_add(&ran, 1) + 1;
}

static int threads_now(void) {
  DIR *d = opendir("/proc/self/task");
  struct dirent *de;
  int n = 0;

  if (!d)
    return -1;
  while ((de = readdir(d)))
    n += de->d_name[0] != '.';
  closedir(d);
  return n;
}

TEST_IMPL(worker_jobs) {
  struct pst__worker w;
  struct tjob a = {{tjob_fn, NULL, 0}, 0, 0, NULL}, b = a, c = a, d = a;
  int gate = 0, before = threads_now();

  atomic_store(&ran, 0);
  atomic_store(&hooked, 0);
  pst__worker_hook = hook;
  a.gate = &gate; /* a holds the thread while b and c wait in the queue */
  ASSERT_EQ(pst__worker_init(&w), 0);
  ASSERT_EQ(pst__worker_queue(&w, &a.job), 0);
  ASSERT_EQ(pst__worker_queue(&w, &b.job), 0);
  ASSERT_EQ(pst__worker_queue(&w, &c.job), 0);
  pst__worker_cancel(&w, &b.job); /* queued: taken off, never runs */
  __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
  pst__worker_wait(&w, &c.job);
  ASSERT_EQ(a.order, 1);
  ASSERT_EQ(c.order, 2);
  ASSERT_EQ(b.order, 0);
  ASSERT(a.tid != 0 && a.tid != gettid());
  ASSERT_EQ(atomic_load(&hooked), 2);
  pst__worker_cancel(&w, &c.job); /* done: nothing */
  /* Idle: the thread ends by itself. */
  for (int i = 0; i < 1000 && threads_now() > before; i++)
    usleep(1000);
  ASSERT_EQ(threads_now(), before);
  /* A job after that starts a thread again. */
  ASSERT_EQ(pst__worker_queue(&w, &d.job), 0);
  pst__worker_wait(&w, &d.job);
  ASSERT_EQ(d.order, 3);
  /* Re-queued after a cancel: runs. */
  ASSERT_EQ(pst__worker_queue(&w, &b.job), 0);
  pst__worker_exit(&w); /* waits for it, or drops it: never half-run */
  ASSERT(b.order == 0 || b.order == 4);
  pst__worker_hook = NULL;
  ASSERT_EQ(threads_now(), before);
  return 0;
}
