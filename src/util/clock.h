/* clock.h: the two clocks: the monotonic clock, for durations, and the
 * wall clock, for the dates written into profiles.
 *
 * CLOCK_MONOTONIC: not changed by settimeofday or NTP steps, so a
 * difference of two readings is an elapsed time. CLOCK_REALTIME: Unix
 * time, which may jump; never used for a duration. Both through the vDSO:
 * no system call.
 */
#ifndef PST_CLOCK_H
#define PST_CLOCK_H

#include <stdint.h>

/* Nanoseconds since an unspecified start (boot). */
uint64_t pst__now_ns(void);

/* The same in milliseconds, with fractions, for reports. */
double pst__now_ms(void);

/* Nanoseconds since the Unix epoch (the wall clock). */
uint64_t pst__wall_ns(void);

#endif
