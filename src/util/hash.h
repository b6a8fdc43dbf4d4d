/* hash.h: the hash functions (FNV-1a for bytes and strings, a Fibonacci
 * multiply for integers and pointers) and one open-addressing table of
 * uint32 ids keyed by a hash the caller computes.
 *
 * The table does not hold keys: it maps a 64-bit hash to ids (indices into
 * the caller's own array of entries), and a lookup asks the caller's
 * callback whether entry id is the key. So one table serves strings,
 * frames, stacks and (parent, child) pairs alike, and the entries stay in
 * the caller's array, in insertion order. A typical find-or-add:
 *
 *   uint64_t h = pst__hash_str(s);
 *   int64_t id = pst__hash_find(&t->ids, h, str_eq, t, s);
 *   if (id >= 0)
 *     return id;
 *   if (pst__array_reserve((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v)))
 *     return -ENOMEM;
 *   t->v[t->n] = strdup(s);                // (check it)
 *   if (pst__hash_insert(&t->ids, h, (uint32_t)t->n))
 *     return -ENOMEM;                      // (free t->v[t->n])
 *   return (int64_t)t->n++;
 *
 * pst__hash_find() is inline: with a static callback the compiler inlines
 * the comparison too, so there is no indirect call per probe. Each slot
 * keeps the low 32 bits of its entry's hash beside the id, so most probes
 * that miss are told apart without calling the callback (and without
 * touching the entry), and growing never calls back.
 *
 * Table: linear probing, power-of-two capacity, at most half full (it
 * doubles on insert). Slots are indexed by the hash's low bits, so a hash
 * must be good in its low bits: pst__hash_str() and pst__hash_mix() are.
 * Ownership: caller-allocated struct, pst__hash_init()/pst__hash_exit(); a
 * zeroed struct is an empty table too. Not thread-safe.
 */
#ifndef PST_HASH_H
#define PST_HASH_H

#include <stddef.h>
#include <stdint.h>

/* ---- hash functions ---- */

/* 2^64 / golden ratio, odd: Fibonacci hashing's multiplier (Knuth, TAOCP
 * vol. 3, 6.4). Also the direct-mapped caches' (util/dmcache.h). */
#define PST_HASH_PHI 0x9e3779b97f4a7c15ULL

/* FNV-1a (Fowler, Noll, Vo): offset basis and prime of the 64-bit and
 * 32-bit variants. */
#define PST_FNV64_BASIS 0xcbf29ce484222325ULL
#define PST_FNV64_PRIME 0x100000001b3ULL
#define PST_FNV32_BASIS 2166136261u
#define PST_FNV32_PRIME 16777619u

/* 64-bit FNV-1a of n bytes at p. */
static inline uint64_t pst__hash_bytes(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = PST_FNV64_BASIS;

  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * PST_FNV64_PRIME;
  return h;
}

/* 64-bit FNV-1a of the bytes of the string s (without its NUL): the same
 * as pst__hash_bytes(s, strlen(s)), in one pass. */
static inline uint64_t pst__hash_str(const char *s) {
  uint64_t h = PST_FNV64_BASIS;

  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * PST_FNV64_PRIME;
  return h;
}

/* 32-bit FNV-1a of the string s. For values that must stay the same
 * across versions (the flame graph's colours are derived from it); tables
 * use pst__hash_str(). */
static inline uint32_t pst__hash_str32(const char *s) {
  uint32_t h = PST_FNV32_BASIS;

  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * PST_FNV32_PRIME;
  return h;
}

/* Mixes the integer (or pointer) v into the hash h: a Fibonacci multiply,
 * whose high bits depend on every bit of h ^ v, folded down so that the
 * low bits do too. Chain it over several words:
 *
 *   h = pst__hash_mix(pst__hash_mix(0, (uintptr_t)name), (uint64_t)line);
 */
static inline uint64_t pst__hash_mix(uint64_t h, uint64_t v) {
  h = (h ^ v) * PST_HASH_PHI;
  return h ^ (h >> 32);
}

/* The hash of one integer or pointer. */
static inline uint64_t pst__hash_u64(uint64_t v) { return pst__hash_mix(0, v); }

/* ---- the table ---- */

struct pst__hash_slot {
  uint32_t id1;  /* entry id + 1; 0 = empty */
  uint32_t hash; /* low 32 bits of the entry's hash */
};

struct pst__hash {
  struct pst__hash_slot *slot; /* cap slots; NULL while cap is 0 */
  size_t cap;                  /* 0 or a power of two */
  size_t n;                    /* ids held, at most cap / 2 */
};

/* Whether entry id of the caller's (ctx) is key: nonzero if so. */
typedef int (*pst__hash_eq_cb)(const void *ctx, uint32_t id, const void *key);

/* Makes *t an empty table with room for cap / 2 ids before it first grows
 * (cap is rounded up to a power of two, at least 16). 0, or -ENOMEM with
 * *t empty (still usable: it allocates on the first insert). */
int pst__hash_init(struct pst__hash *t, size_t cap);

/* Frees the slots; *t is left an empty table. */
void pst__hash_exit(struct pst__hash *t);

/* The id whose entry eq(ctx, id, key) says is key, among the ids inserted
 * with hash h; -1 when there is none. Does not change the table. */
static inline int64_t pst__hash_find(const struct pst__hash *t, uint64_t h,
                                     pst__hash_eq_cb eq, const void *ctx,
                                     const void *key) {
  size_t mask = t->cap - 1;

  if (!t->cap)
    return -1;
  /* At most half full: the probe ends at an empty slot. */
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const struct pst__hash_slot *s = &t->slot[i];

    if (!s->id1)
      return -1;
    if (s->hash == (uint32_t)h && eq(ctx, s->id1 - 1, key))
      return s->id1 - 1;
  }
}

/* Adds id (< UINT32_MAX) under hash h, doubling the table first when it
 * would be more than half full. The caller has made sure, with
 * pst__hash_find(), that its key is not there yet. 0, or -ENOMEM (-EINVAL
 * for UINT32_MAX) with the table unchanged. */
int pst__hash_insert(struct pst__hash *t, uint64_t h, uint32_t id);

/* Number of ids held. */
static inline size_t pst__hash_count(const struct pst__hash *t) { return t->n; }

#endif
