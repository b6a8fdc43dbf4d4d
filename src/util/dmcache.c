/* dmcache.c: allocation of a direct-mapped cache's slots (dmcache.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/dmcache.h"

int pst__dmcache_init(struct pst__dmcache *c, unsigned bits, size_t slot_size) {
  c->slots = NULL;
  c->slot_size = slot_size;
  c->bits = bits;
  if (bits < 1 || bits > 30 || !slot_size)
    return -EINVAL;
  c->slots = calloc((size_t)1 << bits, slot_size);
  return c->slots ? 0 : -ENOMEM;
}

void pst__dmcache_exit(struct pst__dmcache *c) {
  free(c->slots);
  c->slots = NULL;
}

void pst__dmcache_clear(struct pst__dmcache *c) {
  if (c->slots)
    memset(c->slots, 0, pst__dmcache_nslots(c) * c->slot_size);
}
