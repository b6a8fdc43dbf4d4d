/* debuginfo-lib.c: a shared library whose static functions are named only
 * by its separate debug file once stripped (tests/unit/test-debuginfo.c
 * builds it and splits it with tests/helpers/make-debuginfo.sh). One of them
 * is the start routine of a thread that pst_dbg_start() creates, so that a
 * thread's origin can be named through the debug file too. Built twice, with
 * and without -DPST_DBG_OTHER, to get two builds with different build-ids
 * and CRCs. */
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

volatile unsigned long pst_dbg_counter;
static volatile int thread_tid;

static __attribute__((noinline)) void pst_dbg_static_fn(void) {
#ifdef PST_DBG_OTHER
  pst_dbg_counter += 3;
#endif
  pst_dbg_counter++;
}

static __attribute__((noinline)) void *pst_dbg_thread_main(void *arg) {
  (void)arg;
  thread_tid = (int)syscall(SYS_gettid);
  for (;;) {
    pst_dbg_static_fn();
    pause();
  }
  return NULL;
}

/* Calls the static function once (so that it stays). */
void pst_dbg_touch(void) { pst_dbg_static_fn(); }

/* Starts a thread running pst_dbg_thread_main and returns its tid once it
 * runs, or -1. */
int pst_dbg_start(void) {
  pthread_t t;

  if (pthread_create(&t, NULL, pst_dbg_thread_main, NULL))
    return -1;
  while (!thread_tid)
    usleep(1000);
  return thread_tid;
}
