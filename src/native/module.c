/* module.c: per-file (dev+inode) cache of ELF images and eh_frame_hdr tables.
 *
 * Staleness: a module is keyed by device and inode, so a library rewritten
 * in place (same inode, new bytes) would be served stale; installers
 * replace files (rename), which gives a new inode. Lookups are linear: a
 * cache holds one entry per distinct file (hundreds at most) and is only
 * searched when a process's maps are (re)loaded, never per sample.
 *
 * Background tables (pst__modcache_set_background()): a module's symbol
 * table is built by the cache's worker (util/worker.h) while the caller
 * goes on. The job touches only the module's table fields, which the
 * owner thread reads once symtab_state says READY (release/acquire); it
 * takes no reference: a module freed while queued is taken off the queue,
 * one freed while built waits for the build.
 */
#include <elf.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "elf/debuginfo.h"
#include "elf/elf.h"
#include "native/module.h"
#include "native/symtab.h"
#include "pystitch.h"
#include "util/array.h"
#include "util/log.h"
#include "util/worker.h"

#ifndef PT_GNU_EH_FRAME
#define PT_GNU_EH_FRAME 0x6474e550
#endif

/* DWARF pointer encodings (DWARF 4 / LSB 5.0 "DWARF Extensions"), the
 * subset that .eh_frame_hdr headers use. */
#define DW_EH_PE_omit 0xff
#define DW_EH_PE_absptr 0x00
#define DW_EH_PE_udata2 0x02
#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_udata8 0x04
#define DW_EH_PE_sdata2 0x0a
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_sdata8 0x0c
#define DW_EH_PE_pcrel 0x10
#define DW_EH_PE_datarel 0x30
/* The table encoding libunwind's dwarf_search_unwind_table assumes. */
#define EH_TABLE_ENC (DW_EH_PE_datarel | DW_EH_PE_sdata4)

struct pst__module {
  struct pst__modcache *cache; /* reference; NULL for image modules */
  unsigned refs;
  dev_t dev;
  uint64_t inode;
  int err;              /* open/parse error remembered, or 0 */
  struct pst__elf *elf; /* NULL when err */
  const void *image;
  size_t len;
  int has_table;
  struct pst__eh_table table;
  struct pst__symtab *symtab; /* built at the first symbol lookup */
  int symtab_err;             /* why it could not be, or 0 */
  atomic_int symtab_state;    /* SYMTAB_*: the three fields around are
                                 read once it is SYMTAB_READY */
  struct pst__job job;        /* its table's build, in the background */
  char *path;                 /* as the first process that mapped it sees
                                 it (owned), for the debug file search;
                                 NULL for image modules */
  pid_t pid;                  /* that process, for its root */
  char *debug_path;           /* the separate debug file merged into
                                 symtab (owned), or NULL */
};

enum { SYMTAB_NONE, SYMTAB_QUEUED, SYMTAB_READY };

struct pst__modcache {
  unsigned refs;
  int background; /* symbol tables built by the worker */
  int worker_ok;  /* w initialised */
  struct pst__worker w;
  struct pst__module **v; /* live modules (borrowed: they remove
                                 themselves when freed) and failed
                                 entries (owned) */
  size_t n, cap;
};

int pst__modcache_new(struct pst__modcache **out) {
  struct pst__modcache *c = calloc(1, sizeof(*c));

  if (!c)
    return -ENOMEM;
  c->refs = 1;
  *out = c;
  return 0;
}

void pst__modcache_set_background(struct pst__modcache *c, int on) {
  if (on && !c->worker_ok)
    c->worker_ok = pst__worker_init(&c->w) == 0;
  c->background = on && c->worker_ok;
}

struct pst__modcache *pst__modcache_get(struct pst__modcache *c) {
  c->refs++;
  return c;
}

void pst__modcache_put(struct pst__modcache *c) {
  if (!c || --c->refs)
    return;
  /* Every module is gone, so the queue is empty; a thread may still be on
   * its way out. */
  if (c->worker_ok)
    pst__worker_exit(&c->w);
  /* Live modules hold a reference, so only failed entries are left. */
  for (size_t i = 0; i < c->n; i++)
    free(c->v[i]);
  free(c->v);
  free(c);
}

/* Reads one encoded value of the header at *p (bounded by end). pcrel is
 * applied with the value's own file vaddr; datarel with the header's. Only
 * fixed-size encodings are used in headers; others give -EINVAL. */
static int read_enc(const unsigned char **p, const unsigned char *end,
                    unsigned enc, uint64_t p_vaddr, uint64_t hdr_vaddr,
                    uint64_t *out) {
  size_t size;
  uint64_t v = 0;

  switch (enc & 0x0f) {
  case DW_EH_PE_absptr:
  case DW_EH_PE_udata8:
  case DW_EH_PE_sdata8:
    size = 8;
    break;
  case DW_EH_PE_udata4:
  case DW_EH_PE_sdata4:
    size = 4;
    break;
  case DW_EH_PE_udata2:
  case DW_EH_PE_sdata2:
    size = 2;
    break;
  default:
    return -EINVAL;
  }
  if ((size_t)(end - *p) < size)
    return -EINVAL;
  memcpy(&v, *p, size); /* little-endian hosts and targets only */
  if ((enc & 0x0f) == DW_EH_PE_sdata4)
    v = (uint64_t)(int64_t)(int32_t)v;
  else if ((enc & 0x0f) == DW_EH_PE_sdata2)
    v = (uint64_t)(int64_t)(int16_t)v;
  switch (enc & 0x70) {
  case 0:
    break;
  case DW_EH_PE_pcrel:
    v += p_vaddr;
    break;
  case DW_EH_PE_datarel:
    v += hdr_vaddr;
    break;
  default:
    return -EINVAL;
  }
  *p += size;
  *out = v;
  return 0;
}

/* Finds PT_GNU_EH_FRAME and checks its header (version 1, a search table
 * libunwind can use). Sets m->has_table. A module without a table is still
 * usable (reads of its segments, symbols): libunwind then falls back to
 * frame pointers for its frames. */
static void parse_eh_frame_hdr(struct pst__module *m, const char *name) {
  uint64_t vaddr, off, size, ptr, count, pos;
  const unsigned char *hdr, *p, *end;

  if (pst__elf_segment(m->elf, PT_GNU_EH_FRAME, &vaddr, &off, &size) != 0) {
    /* .debug_frame would do, but Debian's libunwind does not export
     * dwarf_find_debug_frame (built without --enable-debug-frame on
     * x86_64), and files without .eh_frame_hdr are rare on Linux. */
    pst__info("%s: no .eh_frame_hdr; its frames are unwound by frame "
              "pointer only",
              name);
    return;
  }
  if (off > m->len || size > m->len - off || size < 4 ||
      vaddr > UINT64_MAX - size)
    goto bad; /* outside the file, or an address range that wraps */
  hdr = (const unsigned char *)m->image + off;
  end = hdr + size;
  /* version, eh_frame_ptr encoding, fde_count encoding, table encoding */
  if (hdr[0] != 1 || hdr[2] == DW_EH_PE_omit || hdr[3] != EH_TABLE_ENC)
    goto bad;
  p = hdr + 4;
  if (read_enc(&p, end, hdr[1], vaddr + (uint64_t)(p - hdr), vaddr, &ptr) ||
      read_enc(&p, end, hdr[2], vaddr + (uint64_t)(p - hdr), vaddr, &count))
    goto bad;
  pos = (uint64_t)(p - hdr);
  /* Each entry is two int32: the table must fit in the segment. */
  if (count == 0 || count > (size - pos) / 8)
    goto bad;
  m->table.hdr_vaddr = vaddr;
  m->table.table_vaddr = vaddr + pos;
  m->table.fde_count = count;
  m->has_table = 1;
  return;
bad:
  pst__info("%s: .eh_frame_hdr in an unsupported form; its frames are "
            "unwound by frame pointer only",
            name);
}

/* Builds a module around an opened ELF (ownership of e passes to m). */
static int module_from_elf(struct pst__elf *e, const char *name,
                           struct pst__module **out) {
  struct pst__module *m = calloc(1, sizeof(*m));

  if (!m) {
    pst__elf_close(e);
    return -ENOMEM;
  }
  m->refs = 1;
  m->elf = e;
  m->image = pst__elf_image(e, &m->len);
  parse_eh_frame_hdr(m, name);
  if (pst__elf_faulted(e)) { /* truncated under us: nothing read is sure */
    pst__module_put(m);
    return PST_EBADDATA;
  }
  *out = m;
  return 0;
}

static struct pst__module *cache_find(const struct pst__modcache *c, dev_t dev,
                                      uint64_t inode) {
  for (size_t i = 0; i < c->n; i++)
    if (c->v[i]->inode == inode && c->v[i]->dev == dev)
      return c->v[i];
  return NULL;
}

int pst__module_get(struct pst__modcache *c, pid_t pid,
                    const struct pst__map *mp, struct pst__module **out) {
  dev_t dev = makedev(mp->dev_major, mp->dev_minor);
  struct pst__module *m = cache_find(c, dev, mp->inode);
  struct pst__elf *e = NULL;
  int fd, err;

  if (m) {
    if (m->err)
      return m->err;
    *out = pst__module_ref(m);
    return 0;
  }
  if (pst__array_reserve((void **)&c->v, &c->cap, c->n + 1, sizeof(*c->v)))
    return -ENOMEM;
  fd = pst__maps_open(pid, mp);
  err = fd < 0 ? fd : pst__elf_open(fd, &e);
  if (err == 0)
    err = module_from_elf(e, mp->path, &m);
  if (err == 0) {
    m->pid = pid;
    if (!(m->path = strdup(mp->path))) {
      pst__module_put(m);
      return -ENOMEM;
    }
  }
  if (err == -ENOMEM)
    return err;
  if (err) {
    pst__debug("module %s: %s", mp->path, pst_strerror(err));
    /* A failed entry: owned by the cache, freed with it, never handed out
     * (so it holds no reference to the cache). */
    m = calloc(1, sizeof(*m));
    if (!m)
      return -ENOMEM;
    m->err = err;
  } else {
    m->cache = pst__modcache_get(c);
  }
  m->dev = dev;
  m->inode = mp->inode;
  c->v[c->n++] = m;
  if (err)
    return err;
  *out = m;
  return 0;
}

int pst__module_new_image(const char *name, const void *buf, size_t len,
                          struct pst__module **out) {
  struct pst__elf *e;
  int fd, err;
  size_t done = 0;

  /* pst__elf maps a file: give it an anonymous one holding the copy. */
  fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0)
    return -errno;
  while (done < len) {
    ssize_t w = write(fd, (const char *)buf + done, len - done);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      err = w < 0 ? -errno : -EIO;
      close(fd);
      return err;
    }
    done += (size_t)w;
  }
  err = pst__elf_open(fd, &e);
  if (err)
    return err;
  return module_from_elf(e, name, out);
}

struct pst__module *pst__module_ref(struct pst__module *m) {
  m->refs++;
  return m;
}

static void cache_remove(struct pst__modcache *c, const struct pst__module *m) {
  for (size_t i = 0; i < c->n; i++)
    if (c->v[i] == m) {
      c->v[i] = c->v[--c->n];
      return;
    }
}

void pst__module_put(struct pst__module *m) {
  if (!m || --m->refs)
    return;
  /* Queued: taken off. Built by the worker, even one that says READY:
   * the worker may still be marking the job done (cancel waits). */
  if (m->cache && m->cache->worker_ok &&
      atomic_load_explicit(&m->symtab_state, memory_order_acquire) !=
          SYMTAB_NONE)
    pst__worker_cancel(&m->cache->w, &m->job);
  if (m->cache) {
    cache_remove(m->cache, m);
    pst__modcache_put(m->cache);
  }
  pst__symtab_free(m->symtab);
  pst__elf_close(m->elf);
  free(m->path);
  free(m->debug_path);
  free(m);
}

void pst__module_zput(struct pst__module **mp) {
  pst__module_put(*mp);
  *mp = NULL;
}

const void *pst__module_image(const struct pst__module *m, size_t *len) {
  if (pst__module_faulted(m)) {
    *len = 0;
    return NULL; /* its pages past the file's end read as zeros */
  }
  *len = m->len;
  return m->image;
}

int pst__module_faulted(const struct pst__module *m) {
  return m->elf && pst__elf_faulted(m->elf);
}

struct pst__elf *pst__module_elf(const struct pst__module *m) {
  return m->elf;
}

int pst__module_eh_table(const struct pst__module *m, struct pst__eh_table *t) {
  if (pst__module_faulted(m))
    return PST_EBADDATA;
  if (!m->has_table)
    return PST_ENOSYM;
  *t = m->table;
  return 0;
}

int pst__module_bias(const struct pst__module *m, const struct pst__map *mp,
                     uint64_t *bias) {
  return pst__elf_bias(m->elf, mp->start, mp->offset, bias);
}

/* The separate debug file of a file module whose image has no .symtab
 * (stripped): a new pst__elf, or NULL. Its path is kept in m->debug_path. */
static struct pst__elf *find_debug_file(struct pst__module *m) {
  struct pst__debuginfo_where w = {
      .path = m->path, .pid = m->pid, .dev = m->dev, .inode = m->inode};
  enum pst__debuginfo_how how;
  struct pst__elf *d = NULL;
  uint64_t addr, size;
  char found[4096];

  if (!m->path || pst__elf_section(m->elf, ".symtab", &addr, &size) == 0)
    return NULL; /* an image module, or not stripped */
  if (pst__debuginfo_open(m->elf, &w, &d, found, sizeof(found), &how))
    return NULL;
  pst__info("%s: symbols from %s (%s)", m->path, found,
            how == PST_DEBUGINFO_BUILD_ID ? "build-id" : ".gnu_debuglink");
  m->debug_path = strdup(found); /* for messages only: NULL is fine */
  return d;
}

/* Builds m's table into its table fields (any thread). */
static void build_symtab(struct pst__module *m) {
  struct pst__elf *d = find_debug_file(m);
  const void *dimg = NULL;
  size_t dlen = 0;

  if (d)
    dimg = pst__elf_image(d, &dlen);
  m->symtab_err =
      pst__symtab_build_debug(m->image, m->len, dimg, dlen, &m->symtab);
  if (!m->symtab_err &&
      (pst__module_faulted(m) || (d && pst__elf_faulted(d)))) {
    pst__symtab_free(m->symtab); /* built from a truncated file */
    m->symtab = NULL;
    m->symtab_err = PST_EBADDATA;
  }
  pst__elf_close(d); /* the table copied what it keeps */
  if (m->symtab_err)
    pst__debug("no symbols: %s", pst_strerror(m->symtab_err));
}

static void build_job(struct pst__job *j) {
  struct pst__module *m =
      (struct pst__module *)((char *)j - offsetof(struct pst__module, job));

  build_symtab(m);
  atomic_store_explicit(&m->symtab_state, SYMTAB_READY, memory_order_release);
}

const struct pst__symtab *pst__module_symtab(struct pst__module *m) {
  int state = atomic_load_explicit(&m->symtab_state, memory_order_acquire);

  if (state == SYMTAB_READY || !m->image)
    return m->symtab;
  if (state == SYMTAB_NONE && m->cache && m->cache->background) {
    atomic_store_explicit(&m->symtab_state, SYMTAB_QUEUED,
                          memory_order_relaxed);
    m->job.fn = build_job;
    if (pst__worker_queue(&m->cache->w, &m->job) == 0)
      return NULL;
    pst__debug("symbol tables: no worker thread: built here");
  }
  if (state == SYMTAB_QUEUED)
    return NULL;
  build_symtab(m);
  atomic_store_explicit(&m->symtab_state, SYMTAB_READY, memory_order_release);
  return m->symtab;
}

const struct pst__symtab *pst__module_symtab_wait(struct pst__module *m) {
  int state = atomic_load_explicit(&m->symtab_state, memory_order_acquire);

  if (state == SYMTAB_QUEUED) {
    /* Not behind the tables queued before it (libtorch_cpu's, 70 ms):
     * taken off the queue and built here, or, under way, waited for. */
    pst__worker_cancel(&m->cache->w, &m->job);
    state = atomic_load_explicit(&m->symtab_state, memory_order_acquire);
  }
  if (state == SYMTAB_READY || !m->image)
    return m->symtab;
  build_symtab(m);
  atomic_store_explicit(&m->symtab_state, SYMTAB_READY, memory_order_release);
  return m->symtab;
}

int pst__module_symtab_pending(const struct pst__module *m) {
  return atomic_load_explicit(&m->symtab_state, memory_order_acquire) ==
         SYMTAB_QUEUED;
}

const char *pst__module_debug_file(const struct pst__module *m) {
  if (atomic_load_explicit(&m->symtab_state, memory_order_acquire) !=
      SYMTAB_READY)
    return NULL;
  return m->debug_path;
}

const char *pst__module_path(const struct pst__module *m) { return m->path; }
