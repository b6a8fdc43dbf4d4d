/* regions.h: the memory-image part of several harnesses' inputs (fuzz_tsd,
 * fuzz_origin, fuzz_pyimage): a run of regions, each an 8-byte address, a
 * 4-byte length and that many bytes, made into pst__mem_region entries that
 * point into the input (pst__mem_init_image then serves reads from them),
 * sorted by address so that the reader can bisect them (ties keep the
 * input's order: their bytes lie in it in that order). */
#ifndef PST_FUZZ_REGIONS_H
#define PST_FUZZ_REGIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proc/mem.h"

static inline int fuzz_region_cmp(const void *a, const void *b) {
  const struct pst__mem_region *x = a, *y = b;
  if (x->addr != y->addr)
    return x->addr < y->addr ? -1 : 1;
  return x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
}

/* Fills out[] (at most max) from p[0, n); returns how many. A region that
 * runs past the input ends the run. */
static inline size_t fuzz_regions(const uint8_t *p, size_t n,
                                  struct pst__mem_region *out, size_t max) {
  size_t k = 0;

  while (k < max && n >= 12) {
    uint64_t addr;
    uint32_t len;
    memcpy(&addr, p, 8);
    memcpy(&len, p + 8, 4);
    p += 12;
    n -= 12;
    if (len > n)
      break;
    out[k++] = (struct pst__mem_region){addr, p, len};
    p += len;
    n -= len;
  }
  qsort(out, k, sizeof(*out), fuzz_region_cmp);
  return k;
}

#endif
