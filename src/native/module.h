/* module.h: ELF files mapped by target processes, opened once and shared
 * between the native unwinder and the symbol side.
 *
 * A module is one file: a local read-only mapping of all of it (through
 * pst_elf), and the binary-search table of its .eh_frame_hdr, parsed once.
 * Modules live in a struct pst_modcache keyed by device + inode, not path:
 * the same library seen by several processes, mount namespaces or symlinks
 * is one module, and a file replaced on disk (new inode) is a new one.
 *
 * Ownership: pst_modcache_new() returns a cache with one reference;
 * pst_modcache_get()/pst_modcache_put() add and drop references.
 * pst_module_get() returns a new reference to a module (opening the file on
 * first use); pst_module_put() drops it, and the last reference unmaps the
 * file and removes it from its cache. A module holds a reference to its
 * cache, so either may be dropped first. Pointers returned by the accessors
 * (image, elf) are borrowed and valid while the caller holds its reference.
 *
 * Not thread-safe: one thread (the sampler's loop thread) uses a cache.
 */
#ifndef PST_NATIVE_MODULE_H
#define PST_NATIVE_MODULE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/maps.h"

struct pst_elf;
struct pst_modcache;
struct pst_module;

/* The .eh_frame_hdr search table of a module, as file-relative virtual
 * addresses (add the mapping's load bias for target addresses). Entries
 * are pairs of int32 (initial location, FDE address), both relative to
 * hdr_vaddr (DW_EH_PE_datarel | DW_EH_PE_sdata4, the only encoding
 * libunwind's table search takes). */
struct pst_eh_table {
  uint64_t hdr_vaddr;   /* start of .eh_frame_hdr */
  uint64_t table_vaddr; /* first table entry */
  uint64_t fde_count;   /* entries */
};

/* A new empty cache with one reference. 0 or -ENOMEM. */
int pst_modcache_new(struct pst_modcache **out);
/* Returns c with one more reference. */
struct pst_modcache *pst_modcache_get(struct pst_modcache *c);
/* Drops one reference; the last one frees the cache (modules still
 * referenced keep it alive through their own reference). NULL is ignored. */
void pst_modcache_put(struct pst_modcache *c);

/* The module of the file behind mapping mp of process pid: found in c by
 * device and inode, else opened with pst_maps_open() (across mount
 * namespaces) and parsed. Returns 0 and a new reference in *out, or -errno
 * (the file is gone, not readable, not ELF). A failure is remembered for
 * that device and inode, so a file that cannot be opened costs one attempt
 * per cache, not one per maps reload. */
int pst_module_get(struct pst_modcache *c, pid_t pid, const struct pst_map *mp,
                   struct pst_module **out);

/* A module made from a copy of an in-memory ELF image (the [vdso] read from
 * the target). Not in any cache. name is for messages. Returns 0 and a new
 * reference in *out, or -errno. buf is copied; the caller keeps it. */
int pst_module_new_image(const char *name, const void *buf, size_t len,
                         struct pst_module **out);

/* Returns m with one more reference. */
struct pst_module *pst_module_ref(struct pst_module *m);
/* Drops one reference. NULL is ignored. */
void pst_module_put(struct pst_module *m);
/* pst_module_put(*mp) and *mp = NULL. */
void pst_module_zput(struct pst_module **mp);

/* 1 when m's file was truncated while mapped (elf.h): its image, table and
 * symbols are not used from then on. */
int pst_module_faulted(const struct pst_module *m);
/* The whole file, read-only (borrowed); *len gets its size. NULL (and 0)
 * once the module faulted. */
const void *pst_module_image(const struct pst_module *m, size_t *len);
/* The opened ELF for symbol lookups (borrowed). */
struct pst_elf *pst_module_elf(const struct pst_module *m);
/* The module's .eh_frame_hdr table. 0, or PST_ENOSYM when the file has none
 * (or one in an encoding libunwind cannot search), PST_EBADDATA once the
 * module faulted. */
int pst_module_eh_table(const struct pst_module *m, struct pst_eh_table *t);
/* Load bias of mapping mp of this module: target address = file vaddr +
 * bias. 0 or -EINVAL. */
int pst_module_bias(const struct pst_module *m, const struct pst_map *mp,
                    uint64_t *bias);

struct pst_symtab;
/* The module's function table (symtab.h), built at the first call and
 * owned by the module; NULL when the image has none or cannot be read.
 * When the image has no .symtab (stripped), its separate debug file is
 * looked for then (debuginfo.h: build-id, .gnu_debuglink; debug
 * directories from PST_DEBUG_DIRS, else /usr/lib/debug; the root of the
 * process that first mapped the file first) and its symbols are merged
 * in; the file is closed again once the table is built. */
const struct pst_symtab *pst_module_symtab(struct pst_module *m);

/* The separate debug file whose symbols pst_module_symtab() merged in
 * (borrowed; NULL when none was, or before the table is built). */
const char *pst_module_debug_file(const struct pst_module *m);

/* The file's path as the first process that mapped it sees it (borrowed);
 * NULL for image modules. */
const char *pst_module_path(const struct pst_module *m);

#endif
