/* origin-target.c: a test target whose threads have known start routines
 * (tests/unit/test-origin.c): a static function of this program, one that
 * names itself with pthread_setname_np, and, given a shared library's path
 * as argv[1], that library's pst_dbg_start() (tests/helpers/debuginfo-lib.c:
 * a static start routine, named only by the library's separate debug file
 * once stripped). Prints "thread TID ROLE" for each, then "ready", and
 * sleeps until killed. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_barrier_t barrier;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static void say(const char *role) {
  pthread_mutex_lock(&out_lock);
  printf("thread %d %s\n", (int)syscall(SYS_gettid), role);
  pthread_mutex_unlock(&out_lock);
}

static __attribute__((noinline)) void *origin_plain_worker(void *arg) {
  (void)arg;
  say("plain");
  pthread_barrier_wait(&barrier);
  for (;;)
    pause();
  return NULL;
}

static __attribute__((noinline)) void *origin_named_worker(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "pst-named");
  say("named");
  pthread_barrier_wait(&barrier);
  for (;;)
    pause();
  return NULL;
}

int main(int argc, char **argv) {
  pthread_t a, b;

  setvbuf(stdout, NULL, _IOLBF, 0);
  pthread_barrier_init(&barrier, NULL, 3);
  if (pthread_create(&a, NULL, origin_plain_worker, NULL) ||
      pthread_create(&b, NULL, origin_named_worker, NULL))
    return 1;
  pthread_barrier_wait(&barrier);
  if (argc > 1) {
    void *h = dlopen(argv[1], RTLD_NOW);
    int (*start)(void) = h ? (int (*)(void))dlsym(h, "pst_dbg_start") : NULL;
    int tid = start ? start() : -1;
    if (tid < 0)
      return 2;
    printf("thread %d lib\n", tid);
  }
  printf("ready\n");
  for (;;)
    pause();
}
