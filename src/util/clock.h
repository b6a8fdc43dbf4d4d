/* clock.h: the monotonic clock, for durations (never the wall clock).
 *
 * CLOCK_MONOTONIC: not changed by settimeofday or NTP steps, so a
 * difference of two readings is an elapsed time. Through the vDSO: no
 * system call.
 */
#ifndef PST_CLOCK_H
#define PST_CLOCK_H

#include <stdint.h>

/* Nanoseconds since an unspecified start (boot). */
uint64_t pst_now_ns(void);

/* The same in milliseconds, with fractions, for reports. */
double pst_now_ms(void);

#endif
