/* strtab.h: interned strings: one copy of each, stable until the table is
 * freed, so frames may point at them across cache evictions.
 *
 * pst_strtab_new()/pst_strtab_free(); pst_strtab_intern() returns a pointer
 * owned by the table (never freed before the table). Not thread-safe.
 */
#ifndef PST_STRTAB_H
#define PST_STRTAB_H

#include <stddef.h>

struct pst_strtab;

struct pst_strtab *pst_strtab_new(void);
void pst_strtab_free(struct pst_strtab *t);

/* The interned copy of s, or NULL on allocation failure. */
const char *pst_strtab_intern(struct pst_strtab *t, const char *s);

/* Number of distinct strings held. */
size_t pst_strtab_count(const struct pst_strtab *t);

#endif
