/* strtab.c: string interning with an open-addressing hash table (FNV-1a). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/strtab.h"

struct pst_strtab {
  char **slot; /* NULL = empty; power-of-two sized, at most half full */
  size_t cap, n;
};

static uint64_t hash(const char *s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
  return h;
}

struct pst_strtab *pst_strtab_new(void) {
  struct pst_strtab *t = calloc(1, sizeof(*t));
  if (!t)
    return NULL;
  t->cap = 256;
  t->slot = calloc(t->cap, sizeof(*t->slot));
  if (!t->slot) {
    free(t);
    return NULL;
  }
  return t;
}

void pst_strtab_free(struct pst_strtab *t) {
  if (!t)
    return;
  for (size_t i = 0; i < t->cap; i++)
    free(t->slot[i]);
  free(t->slot);
  free(t);
}

size_t pst_strtab_count(const struct pst_strtab *t) { return t->n; }

static int grow(struct pst_strtab *t) {
  size_t cap = t->cap * 2;
  char **slot = calloc(cap, sizeof(*slot));

  if (!slot)
    return -1;
  for (size_t i = 0; i < t->cap; i++) {
    size_t j;
    if (!t->slot[i])
      continue;
    for (j = hash(t->slot[i]) & (cap - 1); slot[j]; j = (j + 1) & (cap - 1))
      ;
    slot[j] = t->slot[i];
  }
  free(t->slot);
  t->slot = slot;
  t->cap = cap;
  return 0;
}

const char *pst_strtab_intern(struct pst_strtab *t, const char *s) {
  size_t i;

  if (2 * (t->n + 1) > t->cap && grow(t))
    return NULL;
  for (i = hash(s) & (t->cap - 1); t->slot[i]; i = (i + 1) & (t->cap - 1))
    if (!strcmp(t->slot[i], s))
      return t->slot[i];
  t->slot[i] = strdup(s);
  if (!t->slot[i])
    return NULL;
  t->n++;
  return t->slot[i];
}
