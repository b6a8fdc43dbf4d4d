/* strtab.c: string interning: the strings in an array, found through the
 * id table of hash.h by their FNV-1a hash. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"
#include "util/hash.h"
#include "util/strtab.h"

struct pst__strtab {
  char **v; /* the strings, by id; each owned */
  size_t n, cap;
  struct pst__hash ids;
};

struct pst__strtab *pst__strtab_new(void) {
  struct pst__strtab *t = calloc(1, sizeof(*t));

  if (!t)
    return NULL;
  if (pst__hash_init(&t->ids, 256)) {
    free(t);
    return NULL;
  }
  return t;
}

void pst__strtab_free(struct pst__strtab *t) {
  if (!t)
    return;
  for (size_t i = 0; i < t->n; i++)
    free(t->v[i]);
  free(t->v);
  pst__hash_exit(&t->ids);
  free(t);
}

size_t pst__strtab_count(const struct pst__strtab *t) { return t->n; }

static int str_eq(const void *ctx, uint32_t id, const void *key) {
  const struct pst__strtab *t = ctx;
  return !strcmp(t->v[id], key);
}

int64_t pst__strtab_id(struct pst__strtab *t, const char *s) {
  uint64_t h = pst__hash_str(s);
  int64_t id = pst__hash_find(&t->ids, h, str_eq, t, s);
  char *c;

  if (id >= 0)
    return id;
  if (t->n >= UINT32_MAX - 1 ||
      pst__array_reserve((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v)))
    return -ENOMEM;
  c = strdup(s);
  if (!c || pst__hash_insert(&t->ids, h, (uint32_t)t->n)) {
    free(c);
    return -ENOMEM;
  }
  t->v[t->n] = c;
  return (int64_t)t->n++;
}

const char *pst__strtab_intern(struct pst__strtab *t, const char *s) {
  int64_t id = pst__strtab_id(t, s);
  return id < 0 ? NULL : t->v[id];
}

const char *const *pst__strtab_strings(const struct pst__strtab *t) {
  return (const char *const *)t->v;
}
