/* tsd-target.c: a test target whose threads store known values under
 * several pthread keys (some >= 32, the second level of glibc's table).
 * Prints "thread TID KEY VALUE" for each value stored, then
 * "ready", and sleeps until killed. Built against glibc and against musl. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NKEYS 40
#define NTHREADS 4

static pthread_key_t keys[NKEYS];
static pthread_barrier_t barrier;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg) {
  long idx = (long)arg;
  pid_t tid = (pid_t)syscall(SYS_gettid);

  /* Every 3rd key, so both levels and gaps are exercised. */
  for (int k = 0; k < NKEYS; k += 3) {
    uintptr_t v = ((uintptr_t)tid << 16) | ((uintptr_t)k << 4) | (uintptr_t)idx;
    pthread_setspecific(keys[k], (void *)v);
    pthread_mutex_lock(&out_lock);
    printf("thread %d %u %lu\n", (int)tid, (unsigned)keys[k], (unsigned long)v);
    pthread_mutex_unlock(&out_lock);
  }
  pthread_barrier_wait(&barrier);
  for (;;)
    pause();
  return NULL;
}

int main(void) {
  pthread_t th[NTHREADS];

  setvbuf(stdout, NULL, _IOLBF, 0);
  for (int k = 0; k < NKEYS; k++)
    if (pthread_key_create(&keys[k], NULL) != 0)
      return 1;
  pthread_barrier_init(&barrier, NULL, NTHREADS + 1);
  for (long i = 0; i < NTHREADS; i++)
    pthread_create(&th[i], NULL, worker, (void *)(i + 1));
  pthread_barrier_wait(&barrier);
  printf("ready\n");
  for (;;)
    pause();
}
