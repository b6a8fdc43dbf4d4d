/* clock.c: the monotonic clock of clock.h. */
#include <time.h>

#include "util/clock.h"

uint64_t pst_now_ns(void) {
  struct timespec ts;

  /* Cannot fail for CLOCK_MONOTONIC with a valid pointer. */
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

double pst_now_ms(void) { return (double)pst_now_ns() / 1e6; }
