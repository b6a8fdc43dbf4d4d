/* unwind-spin-lib.c: a library that unwind-target dlopen()s after the
 * unwinder has loaded the maps: a thread spins in it, two calls deep. */
#include <stdint.h>

static volatile int stop;

__attribute__((noinline, noclone, visibility("default"))) int
unwind_lib_spin(int n) {
  volatile int x = n;
  if (n > 0)
    return unwind_lib_spin(n - 1) + x;
  while (!stop) /* never set: spins until killed */
    x++;
  return x;
}
