/* native-spin.c: a library for the --native tests, loaded with ctypes: it
 * starts a thread with no Python state that spins in a named function. */
#include <pthread.h>

volatile unsigned long pst_native_counter;

__attribute__((noinline)) void pst_native_spin_here(void) {
  for (;;)
    pst_native_counter++;
}

static void *run(void *arg) {
  (void)arg;
  pst_native_spin_here();
  return 0;
}

int pst_native_start(void) {
  pthread_t t;
  return pthread_create(&t, 0, run, 0);
}
