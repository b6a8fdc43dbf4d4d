/* array.h: growing a heap array geometrically (amortised O(1) appends). */
#ifndef PST_ARRAY_H
#define PST_ARRAY_H

#include <stddef.h>

/* Makes *v (an array of *cap elements of elt bytes) hold at least need
 * elements, doubling from 16; *v and *cap are updated. 0, or -ENOMEM with
 * *v and *cap unchanged. */
int pst__array_reserve(void **v, size_t *cap, size_t need, size_t elt);

#endif
