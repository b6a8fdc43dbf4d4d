/* dmcache.h: a direct-mapped cache: 2^bits slots of a caller-defined
 * struct, one slot per key chosen by Fibonacci hashing of the key.
 *
 * The cache only places keys; each slot is the caller's struct, which
 * holds its own key (and anything that tells a hit from a stale entry),
 * so a lookup is one multiply, one shift and the caller's compare:
 *
 *   struct sym { uint64_t ip; const char *name; };
 *   struct pst__dmcache c;
 *   if (pst__dmcache_init(&c, 12, sizeof(struct sym)))
 *     return -ENOMEM;
 *   ...
 *   struct sym *e = pst__dmcache_slot(&c, ip);
 *   if (e->ip != ip || !e->name) {   // a miss: fill (evicting the old)
 *     e->ip = ip;
 *     e->name = lookup(ip);
 *   }
 *
 * Slots start zeroed, so a key that cannot be 0 (or a NULL field) marks an
 * empty slot. Keys whose low bits are always 0 (aligned addresses) are
 * best shifted right first: the slot is the top bits of key * PHI, which
 * depend on every bit of the key, but a constant low bit is a wasted one.
 *
 * Ownership: caller-allocated struct, pst__dmcache_init()/pst__dmcache_exit();
 * the slots are the cache's, what they point to is the caller's (free it
 * before pst__dmcache_exit() or pst__dmcache_clear(), walking the slots with
 * pst__dmcache_at()). A zeroed struct is a cache without slots: test it
 * with pst__dmcache_nslots() before a lookup. Not thread-safe.
 */
#ifndef PST_DMCACHE_H
#define PST_DMCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "util/hash.h"

struct pst__dmcache {
  unsigned char *slots; /* nslots * slot_size bytes, NULL when none */
  size_t slot_size;
  unsigned bits; /* 2^bits slots */
};

/* Allocates 2^bits (1 to 30) zeroed slots of slot_size bytes. 0, or
 * -EINVAL, -ENOMEM with *c a cache without slots. */
int pst__dmcache_init(struct pst__dmcache *c, unsigned bits, size_t slot_size);

/* Frees the slots (not what they point to); *c is left without slots, so
 * calling it twice is harmless. */
void pst__dmcache_exit(struct pst__dmcache *c);

/* Zeroes every slot: the cache is empty again, its slots kept. */
void pst__dmcache_clear(struct pst__dmcache *c);

/* The slot index of key among 2^bits slots (bits 1 to 63): Fibonacci
 * hashing, the top bits of key * PST_HASH_PHI. */
static inline size_t pst__dmcache_index(uint64_t key, unsigned bits) {
  return (size_t)((key * PST_HASH_PHI) >> (64 - bits));
}

/* The slot key maps to (borrowed, valid until pst__dmcache_exit()). The
 * cache must have slots. */
static inline void *pst__dmcache_slot(const struct pst__dmcache *c,
                                      uint64_t key) {
  return c->slots + pst__dmcache_index(key, c->bits) * c->slot_size;
}

/* Number of slots: 2^bits, or 0 for a cache without slots. */
static inline size_t pst__dmcache_nslots(const struct pst__dmcache *c) {
  return c->slots ? (size_t)1 << c->bits : 0;
}

/* Slot i (< pst__dmcache_nslots()), for walking every slot. */
static inline void *pst__dmcache_at(const struct pst__dmcache *c, size_t i) {
  return c->slots + i * c->slot_size;
}

#endif
