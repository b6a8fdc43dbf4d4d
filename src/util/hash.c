/* hash.c: growth and insertion of the open-addressing id table (hash.h). */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "util/hash.h"

#define MIN_CAP 16

#ifndef NDEBUG
/* n ids in as many occupied slots, each reachable from its hash's home
 * slot without crossing an empty one, and at least half the slots empty. */
static void check_invariants(const struct pst__hash *t) {
  size_t used = 0, mask = t->cap - 1;

  assert(2 * t->n <= t->cap && (t->cap & mask) == 0);
  for (size_t i = 0; i < t->cap; i++) {
    if (!t->slot[i].id1)
      continue;
    used++;
    for (size_t j = t->slot[i].hash & mask; j != i; j = (j + 1) & mask)
      assert(t->slot[j].id1);
  }
  assert(used == t->n);
}
#else
static void check_invariants(const struct pst__hash *t) { (void)t; }
#endif

/* Puts (id1, hash) in the first empty slot from hash's home slot. */
static void place(struct pst__hash_slot *slot, size_t mask, uint32_t id1,
                  uint32_t hash) {
  size_t i = hash & mask;

  while (slot[i].id1)
    i = (i + 1) & mask;
  slot[i] = (struct pst__hash_slot){id1, hash};
}

/* Moves every id into a new array of cap slots. 0 or -ENOMEM. */
static int resize(struct pst__hash *t, size_t cap) {
  struct pst__hash_slot *slot = calloc(cap, sizeof(*slot));

  if (!slot)
    return -ENOMEM;
  /* The stored low 32 bits of the hash place every id again, as long as
   * the mask has no more bits than that. */
  for (size_t i = 0; i < t->cap; i++)
    if (t->slot[i].id1)
      place(slot, cap - 1, t->slot[i].id1, t->slot[i].hash);
  free(t->slot);
  t->slot = slot;
  t->cap = cap;
  check_invariants(t);
  return 0;
}

int pst__hash_init(struct pst__hash *t, size_t cap) {
  size_t c = MIN_CAP;

  t->slot = NULL;
  t->cap = t->n = 0;
  while (c < cap && c <= SIZE_MAX / 4)
    c *= 2;
  return resize(t, c);
}

void pst__hash_exit(struct pst__hash *t) {
  free(t->slot);
  t->slot = NULL;
  t->cap = t->n = 0;
}

int pst__hash_insert(struct pst__hash *t, uint64_t h, uint32_t id) {
  if (id == UINT32_MAX)
    return -EINVAL;
  if (2 * (t->n + 1) > t->cap) {
    /* 2^32 slots at most: the stored hash bits must cover the mask. */
    size_t cap = t->cap ? t->cap * 2 : MIN_CAP;
    int err = cap - 1 > UINT32_MAX ? -ENOMEM : resize(t, cap);

    if (err)
      return err;
  }
  place(t->slot, t->cap - 1, id + 1, (uint32_t)h);
  t->n++;
  return 0;
}
