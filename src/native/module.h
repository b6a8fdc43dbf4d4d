/* module.h: ELF files mapped by target processes, opened once and shared
 * between the native unwinder and the symbol side.
 *
 * A module is one file: a local read-only mapping of all of it (through
 * pst__elf), and the binary-search table of its .eh_frame_hdr, parsed once.
 * Modules live in a struct pst__modcache keyed by device + inode, not path:
 * the same library seen by several processes, mount namespaces or symlinks
 * is one module, and a file replaced on disk (new inode) is a new one.
 *
 * Ownership: pst__modcache_new() returns a cache with one reference;
 * pst__modcache_get()/pst__modcache_put() add and drop references.
 * pst__module_get() returns a new reference to a module (opening the file on
 * first use); pst__module_put() drops it, and the last reference unmaps the
 * file and removes it from its cache. A module holds a reference to its
 * cache, so either may be dropped first. Pointers returned by the accessors
 * (image, elf) are borrowed and valid while the caller holds its reference.
 *
 * Not thread-safe: one thread (the sampler's loop thread) uses a cache.
 * The one exception is internal: in the background mode the cache's
 * worker thread fills symbol tables (module.c says how).
 */
#ifndef PST_NATIVE_MODULE_H
#define PST_NATIVE_MODULE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/maps.h"

struct pst__elf;
struct pst__modcache;
struct pst__module;

/* The .eh_frame_hdr search table of a module, as file-relative virtual
 * addresses (add the mapping's load bias for target addresses). Entries
 * are pairs of int32 (initial location, FDE address), both relative to
 * hdr_vaddr (DW_EH_PE_datarel | DW_EH_PE_sdata4, the only encoding
 * libunwind's table search takes). */
struct pst__eh_table {
  uint64_t hdr_vaddr;   /* start of .eh_frame_hdr */
  uint64_t table_vaddr; /* first table entry */
  uint64_t fde_count;   /* entries */
};

/* A new empty cache with one reference. 0 or -ENOMEM. */
int pst__modcache_new(struct pst__modcache **out);
/* Returns c with one more reference. */
struct pst__modcache *pst__modcache_get(struct pst__modcache *c);
/* Drops one reference; the last one frees the cache (modules still
 * referenced keep it alive through their own reference). NULL is ignored. */
void pst__modcache_put(struct pst__modcache *c);

/* Background mode (off at first): symbol tables are built by the cache's
 * worker thread (util/worker.h), and pst__module_symtab() returns NULL while a module's is
 * being built (pst__module_symtab_pending()). For a sampling loop that
 * must not wait tens of ms for a large library's table (libtorch_cpu's:
 * 70 ms). */
void pst__modcache_set_background(struct pst__modcache *c, int on);

/* The module of the file behind mapping mp of process pid: found in c by
 * device and inode, else opened with pst__maps_open() (across mount
 * namespaces) and parsed. Returns 0 and a new reference in *out, or -errno
 * (the file is gone, not readable, not ELF). A failure is remembered for
 * that device and inode, so a file that cannot be opened costs one attempt
 * per cache, not one per maps reload. */
int pst__module_get(struct pst__modcache *c, pid_t pid,
                    const struct pst__map *mp, struct pst__module **out);

/* A module made from a copy of an in-memory ELF image (the [vdso] read from
 * the target). Not in any cache. name is for messages. Returns 0 and a new
 * reference in *out, or -errno. buf is copied; the caller keeps it. */
int pst__module_new_image(const char *name, const void *buf, size_t len,
                          struct pst__module **out);

/* Returns m with one more reference. */
struct pst__module *pst__module_ref(struct pst__module *m);
/* Drops one reference. NULL is ignored. */
void pst__module_put(struct pst__module *m);
/* pst__module_put(*mp) and *mp = NULL. */
void pst__module_zput(struct pst__module **mp);

/* 1 when m's file was truncated while mapped (elf.h): its image, table and
 * symbols are not used from then on. */
int pst__module_faulted(const struct pst__module *m);
/* The whole file, read-only (borrowed); *len gets its size. NULL (and 0)
 * once the module faulted. */
const void *pst__module_image(const struct pst__module *m, size_t *len);
/* The opened ELF for symbol lookups (borrowed). */
struct pst__elf *pst__module_elf(const struct pst__module *m);
/* The module's .eh_frame_hdr table. 0, or PST_ENOSYM when the file has none
 * (or one in an encoding libunwind cannot search), PST_EBADDATA once the
 * module faulted. */
int pst__module_eh_table(const struct pst__module *m, struct pst__eh_table *t);
/* Load bias of mapping mp of this module: target address = file vaddr +
 * bias. 0 or -EINVAL. */
int pst__module_bias(const struct pst__module *m, const struct pst__map *mp,
                     uint64_t *bias);

struct pst__symtab;
/* The module's function table (symtab.h), built at the first call and
 * owned by the module; NULL when the image has none or cannot be read.
 * When the image has no .symtab (stripped), its separate debug file is
 * looked for then (debuginfo.h: build-id, .gnu_debuglink; debug
 * directories from PST_DEBUG_DIRS, else /usr/lib/debug; the root of the
 * process that first mapped the file first) and its symbols are merged
 * in; the file is closed again once the table is built. */
const struct pst__symtab *pst__module_symtab(struct pst__module *m);
/* 1 while m's table is queued or being built in the background mode (then
 * pst__module_symtab() returns NULL and asks nothing more). */
int pst__module_symtab_pending(const struct pst__module *m);
/* pst__module_symtab() for the table a caller cannot do without (the
 * interpreter's own): one still queued is taken off the queue and built
 * here (not after the tables queued before it), one under way is waited
 * for. */
const struct pst__symtab *pst__module_symtab_wait(struct pst__module *m);

/* The separate debug file whose symbols pst__module_symtab() merged in
 * (borrowed; NULL when none was, or before the table is built). */
const char *pst__module_debug_file(const struct pst__module *m);

/* The file's path as the first process that mapped it sees it (borrowed);
 * NULL for image modules. */
const char *pst__module_path(const struct pst__module *m);

#endif
