/* strtab.h: interned strings: one copy of each, stable until the table is
 * freed, so frames may point at them across cache evictions. Each string
 * also has an id, 0, 1, 2, ... in the order strings were first interned
 * (pprof's string table is such a list).
 *
 * pst__strtab_new()/pst__strtab_free(); pst__strtab_intern() returns a pointer
 * owned by the table (never freed before the table). Not thread-safe.
 */
#ifndef PST_STRTAB_H
#define PST_STRTAB_H

#include <stddef.h>
#include <stdint.h>

struct pst__strtab;

struct pst__strtab *pst__strtab_new(void);
void pst__strtab_free(struct pst__strtab *t);

/* The interned copy of s, or NULL on allocation failure. */
const char *pst__strtab_intern(struct pst__strtab *t, const char *s);

/* The id of s's interned copy, or -ENOMEM. */
int64_t pst__strtab_id(struct pst__strtab *t, const char *s);

/* The interned strings by id, pst__strtab_count() of them: an array owned
 * by the table, valid until the next intern (the strings themselves live
 * as long as the table). */
const char *const *pst__strtab_strings(const struct pst__strtab *t);

/* Number of distinct strings held. */
size_t pst__strtab_count(const struct pst__strtab *t);

#endif
