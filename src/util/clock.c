/* clock.c: the monotonic and wall clocks of clock.h. */
#include <time.h>

#include "util/clock.h"

/* Cannot fail for these clocks with a valid pointer. */
static uint64_t read_ns(clockid_t id) {
  struct timespec ts;

  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t pst__now_ns(void) { return read_ns(CLOCK_MONOTONIC); }

double pst__now_ms(void) { return (double)pst__now_ns() / 1e6; }

uint64_t pst__wall_ns(void) { return read_ns(CLOCK_REALTIME); }
