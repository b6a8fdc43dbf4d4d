/* array.c: geometric growth of heap arrays (see array.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/array.h"

int pst__array_reserve(void **v, size_t *cap, size_t need, size_t elt) {
  size_t c = *cap ? *cap : 16;
  void *nv;

  if (need <= *cap)
    return 0;
  while (c < need) {
    if (c > SIZE_MAX / 2 / elt)
      return -ENOMEM;
    c *= 2;
  }
  nv = realloc(*v, c * elt);
  if (!nv)
    return -ENOMEM;
  *v = nv;
  *cap = c;
  return 0;
}
