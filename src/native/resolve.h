/* resolve.h: target addresses to module and function names without the
 * native unwinder, for code that needs a few names (what started a thread)
 * whether or not --native is on.
 *
 * A struct pst__resolver serves one process: its mappings (read at the first
 * lookup, read again when an address lies in none of them: a library
 * dlopen()ed since) and a reference to each module it had to name an
 * address in. Nothing is opened before a lookup asks for it: a lookup
 * opens the one file mapped there (pst__module_get, shared through the
 * module cache with the unwinder when they are given the same cache) and
 * builds that module's symbol table (pst__module_symtab: .symtab, .dynsym,
 * MiniDebugInfo, separate debug file).
 *
 * Ownership: pst__resolver_new() returns a resolver the caller frees with
 * pst__resolver_free(); it holds a reference to the cache and to every
 * module it used until then. Strings in struct pst__resolved are interned
 * in the resolver and valid until pst__resolver_free().
 *
 * Not thread-safe: one thread (the sampler's loop thread) uses a resolver.
 */
#ifndef PST_NATIVE_RESOLVE_H
#define PST_NATIVE_RESOLVE_H

#include <stdint.h>
#include <sys/types.h>

struct pst__modcache;
struct pst__resolver;

/* One resolved address. */
struct pst__resolved {
  const char *path; /* the file mapped at the address, as the target sees
                        it; NULL when the address is in no file mapping */
  const char *func; /* the function containing it (demangled), or NULL */
  uint64_t vaddr;   /* the address in the file's link-time address space
                        (address minus load bias); 0 when path is NULL */
  uint64_t offset;  /* from the function's start when func is set, else
                        vaddr */
};

/* A resolver for process pid. cache: the module cache to use (a reference
 * is taken), or NULL for a private one. 0 or -ENOMEM. */
int pst__resolver_new(pid_t pid, struct pst__modcache *cache,
                      struct pst__resolver **out);

/* Frees r: drops its module and cache references. NULL is a no-op. */
void pst__resolver_free(struct pst__resolver *r);

/* Names target address addr. Returns 0 with *out filled (func may be
 * NULL: the module has no symbol there), -ENOENT when addr is in no file
 * mapping even after the maps were read again (out->path NULL), -ESRCH
 * when the process is gone, -ENOMEM. A file that cannot be opened gives 0
 * with path set and func NULL. */
int pst__resolver_lookup(struct pst__resolver *r, uint64_t addr,
                         struct pst__resolved *out);

/* How many lookups so far found their module's symbol table being built
 * in the background (module.h): func was NULL for want of it, not of a
 * symbol. A caller compares the count before and after to ask again
 * later. */
unsigned pst__resolver_pending(const struct pst__resolver *r);

#endif
