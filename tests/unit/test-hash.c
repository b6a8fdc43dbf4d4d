/* test-hash.c: the hash functions' known values, the id table under
 * collisions and growth, and the direct-mapped cache's placement. */
#include <errno.h>
#include <string.h>

#include "task.h"
#include "util/dmcache.h"
#include "util/hash.h"

/* FNV-1a test vectors (the reference implementation's, isthe.com). */
TEST_IMPL(hash_functions) {
  ASSERT(pst__hash_str("") == 0xcbf29ce484222325ULL);
  ASSERT(pst__hash_str("a") == 0xaf63dc4c8601ec8cULL);
  ASSERT(pst__hash_str("foobar") == 0x85944171f73967e8ULL);
  ASSERT(pst__hash_bytes("foobar", 6) == pst__hash_str("foobar"));
  ASSERT(pst__hash_bytes("a\0b", 3) != pst__hash_str("a"));
  ASSERT_EQ(pst__hash_str32(""), 0x811c9dc5u);
  ASSERT_EQ(pst__hash_str32("a"), 0xe40c292cu);
  ASSERT_EQ(pst__hash_str32("foobar"), 0xbf9cf968u);
  /* Aligned pointers differ in their low bits after mixing. */
  ASSERT((pst__hash_u64(0x1000) & 0xff) != (pst__hash_u64(0x2000) & 0xff));
  ASSERT(pst__hash_mix(pst__hash_u64(1), 2) !=
         pst__hash_mix(pst__hash_u64(2), 1));
  return 0;
}

struct entries {
  uint64_t key[5000];
};

static int key_eq(const void *ctx, uint32_t id, const void *key) {
  const struct entries *e = ctx;
  return e->key[id] == *(const uint64_t *)key;
}

TEST_IMPL(hash_table) {
  static struct entries e;
  struct pst__hash t = {0}; /* a zeroed table is empty and usable */
  uint64_t k = 7;

  ASSERT_EQ(pst__hash_find(&t, 1, key_eq, &e, &k), -1);
  /* Every third key shares one hash: long probe runs, across growth. */
  for (uint32_t i = 0; i < 5000; i++) {
    uint64_t h = i % 3 ? pst__hash_u64(i) : 42;

    e.key[i] = i * 1000003ULL;
    ASSERT_EQ(pst__hash_find(&t, h, key_eq, &e, &e.key[i]), -1);
    ASSERT_EQ(pst__hash_insert(&t, h, i), 0);
  }
  ASSERT_EQ(pst__hash_count(&t), 5000);
  ASSERT(t.cap >= 10000);
  for (uint32_t i = 0; i < 5000; i++) {
    uint64_t h = i % 3 ? pst__hash_u64(i) : 42;
    ASSERT_EQ(pst__hash_find(&t, h, key_eq, &e, &e.key[i]), i);
  }
  k = 1;
  ASSERT_EQ(pst__hash_find(&t, 42, key_eq, &e, &k), -1);
  ASSERT_EQ(pst__hash_insert(&t, 1, UINT32_MAX), -EINVAL);
  pst__hash_exit(&t);
  ASSERT_EQ(pst__hash_count(&t), 0);
  ASSERT_EQ(pst__hash_find(&t, 42, key_eq, &e, &e.key[0]), -1);
  ASSERT_EQ(pst__hash_init(&t, 1000), 0);
  ASSERT_EQ(t.cap, 1024);
  pst__hash_exit(&t);
  return 0;
}

struct slot {
  uint64_t key;
  int value;
};

TEST_IMPL(dmcache_slots) {
  struct pst__dmcache c = {0};
  struct slot *s;
  size_t used = 0;

  ASSERT_EQ(pst__dmcache_nslots(&c), 0);
  ASSERT_EQ(pst__dmcache_init(&c, 0, sizeof(struct slot)), -EINVAL);
  ASSERT_EQ(pst__dmcache_init(&c, 8, sizeof(struct slot)), 0);
  ASSERT_EQ(pst__dmcache_nslots(&c), 256);
  /* The documented placement: the top bits of key * PHI. */
  ASSERT_EQ(pst__dmcache_index(0x1234, 8),
            (size_t)((0x1234 * 0x9e3779b97f4a7c15ULL) >> 56));
  s = pst__dmcache_slot(&c, 0x1234);
  ASSERT(s == pst__dmcache_at(&c, pst__dmcache_index(0x1234, 8)));
  ASSERT_EQ(s->key, 0);
  s->key = 0x1234;
  s->value = 5;
  s = pst__dmcache_slot(&c, 0x1234);
  ASSERT_EQ(s->value, 5);
  /* 256 aligned addresses, shifted, spread over most slots. */
  for (uint64_t a = 0; a < 256; a++) {
    s = pst__dmcache_slot(&c, (0x7f0000000000ULL + a * 4096) >> 4);
    used += s->key == 0;
    s->key = 1;
  }
  ASSERT_GT(used, 140);
  pst__dmcache_clear(&c);
  ASSERT_EQ(((struct slot *)pst__dmcache_slot(&c, 0x1234))->key, 0);
  pst__dmcache_exit(&c);
  pst__dmcache_exit(&c);
  ASSERT_EQ(pst__dmcache_nslots(&c), 0);
  return 0;
}
