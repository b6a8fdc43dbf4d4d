/* resolve.c: lazy per-process address-to-name lookups over the module cache
 * (resolve.h), for names needed without the unwinder.
 *
 * Staleness: the maps are read at the first lookup and again only when an
 * address lies in no mapping (a library loaded since); a library unmapped
 * and another mapped at its place is seen at the next such reload, which
 * is harmless for what this serves (start routines of live threads, whose
 * code stays mapped while they run). Module references are kept by device
 * and inode, so a reload does not reopen anything. Lookups are a bsearch
 * of the maps plus a linear search of the modules used (a handful).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "native/module.h"
#include "native/resolve.h"
#include "native/symtab.h"
#include "proc/maps.h"
#include "util/array.h"
#include "util/strtab.h"

/* A module this resolver used: a reference, or a failure remembered. */
struct used {
  dev_t dev;
  uint64_t inode;
  struct pst__module *mod; /* reference, or NULL when it cannot be opened */
};

struct pst__resolver {
  pid_t pid;
  struct pst__modcache *cache; /* reference */
  struct pst__maps maps;
  int loaded; /* maps read at least once */
  struct used *used;
  size_t nused, capused;
  struct pst__strtab *strings; /* paths and names handed out */
  unsigned pending;            /* lookups whose table was being built */
};

int pst__resolver_new(pid_t pid, struct pst__modcache *cache,
                      struct pst__resolver **out) {
  struct pst__resolver *r = calloc(1, sizeof(*r));
  int err = -ENOMEM;

  if (!r)
    return -ENOMEM;
  r->pid = pid;
  if (!(r->strings = pst__strtab_new()))
    goto err;
  if (cache)
    r->cache = pst__modcache_get(cache);
  else if ((err = pst__modcache_new(&r->cache)) != 0)
    goto err;
  *out = r;
  return 0;
err:
  pst__resolver_free(r);
  return err;
}

void pst__resolver_free(struct pst__resolver *r) {
  if (!r)
    return;
  for (size_t i = 0; i < r->nused; i++)
    pst__module_put(r->used[i].mod);
  free(r->used);
  if (r->loaded)
    pst__maps_exit(&r->maps);
  pst__modcache_put(r->cache);
  pst__strtab_free(r->strings);
  free(r);
}

static int reload(struct pst__resolver *r) {
  struct pst__maps m;
  int err = pst__maps_load(r->pid, &m);

  if (err)
    return err;
  if (r->loaded)
    pst__maps_exit(&r->maps);
  r->maps = m;
  r->loaded = 1;
  return 0;
}

/* The module of file mapping mp (borrowed from r->used), or NULL when it
 * cannot be opened; -ENOMEM as an error. */
static int module_of(struct pst__resolver *r, const struct pst__map *mp,
                     struct pst__module **out) {
  dev_t dev = makedev(mp->dev_major, mp->dev_minor);
  struct pst__module *m = NULL;
  int err;

  for (size_t i = 0; i < r->nused; i++)
    if (r->used[i].inode == mp->inode && r->used[i].dev == dev) {
      *out = r->used[i].mod;
      return 0;
    }
  if (pst__array_reserve((void **)&r->used, &r->capused, r->nused + 1,
                         sizeof(*r->used)))
    return -ENOMEM;
  err = pst__module_get(r->cache, r->pid, mp, &m);
  if (err == -ENOMEM)
    return err;
  r->used[r->nused++] = (struct used){dev, mp->inode, err ? NULL : m};
  *out = err ? NULL : m;
  return 0;
}

int pst__resolver_lookup(struct pst__resolver *r, uint64_t addr,
                         struct pst__resolved *out) {
  const struct pst__map *mp = NULL;
  const struct pst__symtab *t;
  struct pst__module *m;
  uint64_t bias;
  int err;

  memset(out, 0, sizeof(*out));
  if (r->loaded)
    mp = pst__maps_find(&r->maps, addr);
  if (!mp || !mp->path[0]) {
    /* Unknown, or anonymous: read the maps again once. */
    if ((err = reload(r)) != 0)
      return err;
    mp = pst__maps_find(&r->maps, addr);
  }
  if (!mp || !mp->path[0])
    return -ENOENT;
  if (!(out->path = pst__strtab_intern(r->strings, mp->path)))
    return -ENOMEM;
  if (mp->path[0] != '/' || mp->inode == 0)
    return 0; /* [vdso], [heap] and the like: no file to name it in */
  if ((err = module_of(r, mp, &m)) != 0)
    return err;
  if (!m || pst__module_bias(m, mp, &bias) != 0)
    return 0;
  out->vaddr = out->offset = addr - bias;
  t = pst__module_symtab(m);
  if (!t && pst__module_symtab_pending(m))
    r->pending++;
  if (t) {
    const char *f = pst__symtab_lookup(t, out->vaddr, &out->offset);
    if (f && !(out->func = pst__strtab_intern(r->strings, f)))
      return -ENOMEM;
    if (!f)
      out->offset = out->vaddr;
  }
  return 0;
}

unsigned pst__resolver_pending(const struct pst__resolver *r) {
  return r->pending;
}
