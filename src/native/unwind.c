/* unwind.c: remote native unwinding with libunwind through our own accessors.
 *
 * Why not libunwind-ptrace's _UPT_* accessors: they make one
 * PTRACE_PEEKDATA per word and re-read /proc/PID/maps and the ELF file
 * for every table lookup (~21 ms for a 40-frame stack). Here:
 *   registers  one PTRACE_GETREGS per unwind (pst__ptrace_getregs);
 *   memory     words in a read-only file mapping come from the module's
 *              local image (code, .eh_frame, .eh_frame_hdr); anything else
 *              (the stack) from a per-unwind page cache filled by
 *              process_vm_readv, several 4 KiB granules per batch;
 *   tables     find_proc_info hands the module's cached .eh_frame_hdr table
 *              to libunwind's own search, dwarf_search_unwind_table, as a
 *              UNW_INFO_FORMAT_REMOTE_TABLE (the way Linux perf does).
 *
 * Staleness: the page cache is valid for one unwind (the thread is
 * stopped meanwhile). Mappings are reloaded when an IP is in none of them
 * (at most every PST_UNWIND_RELOAD_MS) or on pst__unwinder_refresh();
 * libunwind's per-IP cache is flushed when a known mapping changed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/user.h>
#include <time.h>

#include "elf/elf.h"
#include "native/module.h"
#include "native/symtab.h"
#include "native/unwind.h"
#include "proc/maps.h"
#include "proc/mem.h"
#include "proc/ptrace.h"
#include "pystitch.h"
#include "util/clock.h"
#include "util/log.h"

#if defined(__x86_64__)

#include <libunwind.h>

/* Exported by libunwind-x86_64 but not declared in its headers (perf
 * declares it the same way). UNW_OBJ gives the remote, arch-prefixed name
 * _Ux86_64_dwarf_search_unwind_table. */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as,
                                              unw_word_t ip, unw_dyn_info_t *di,
                                              unw_proc_info_t *pi,
                                              int need_unwind_info, void *arg);
#define dwarf_search_unwind_table UNW_OBJ(dwarf_search_unwind_table)

/* ---- Architecture: libunwind register numbers to user_regs_struct ----
 * The only arch-specific table. UNW_X86_64_* are the DWARF numbers 0-16.
 * aarch64 would map UNW_AARCH64_X0..X30, SP, PC to regs[], sp, pc; it is
 * not done yet (pst__unwinder_new returns -ENOSYS there). */
#define REG(name) offsetof(struct user_regs_struct, name)
static const size_t reg_offsets[] = {
    [UNW_X86_64_RAX] = REG(rax), [UNW_X86_64_RDX] = REG(rdx),
    [UNW_X86_64_RCX] = REG(rcx), [UNW_X86_64_RBX] = REG(rbx),
    [UNW_X86_64_RSI] = REG(rsi), [UNW_X86_64_RDI] = REG(rdi),
    [UNW_X86_64_RBP] = REG(rbp), [UNW_X86_64_RSP] = REG(rsp),
    [UNW_X86_64_R8] = REG(r8),   [UNW_X86_64_R9] = REG(r9),
    [UNW_X86_64_R10] = REG(r10), [UNW_X86_64_R11] = REG(r11),
    [UNW_X86_64_R12] = REG(r12), [UNW_X86_64_R13] = REG(r13),
    [UNW_X86_64_R14] = REG(r14), [UNW_X86_64_R15] = REG(r15),
    [UNW_X86_64_RIP] = REG(rip),
};
#undef REG
#define REGS_PC(r) ((r)->rip)
#define REGS_SP(r) ((r)->rsp)

/* ---- Stack page cache ---- */

/* Cache granule; process_vm_readv needs no alignment, 4 KiB suits every
 * page size (a chunk past a mapping's end fails alone). */
#define CPAGE 4096u
/* At most this many granules (512 KiB of stack) per unwind: deeper stacks
 * are cut, which max frames does anyway. */
#define CPAGES_MAX 128
/* Granules read per miss in one process_vm_readv: the first miss of an
 * unwind reads READAHEAD_FIRST (a 40-frame C stack takes 2 KiB), later ones
 * READAHEAD (a deep stack goes on). Measured with bench/unwind: a uniform
 * read-ahead of 1, 2 or 4 granules costs the same within noise, 8 more
 * (copying); see docs/performance.md. */
#define READAHEAD_FIRST 2
#define READAHEAD 8

struct cpage {
  uint64_t addr;
  unsigned char data[CPAGE];
};

/* [lo, hi) of target addresses readable at base + (addr - lo). */
struct region {
  uint64_t lo, hi;
  const unsigned char *base;
};

/* Per mapping: its module, opened on first use. */
struct umap {
  struct pst__module *mod; /* reference, or NULL */
  uint64_t bias;
  int tried; /* module lookup done (mod may still be NULL) */
};

struct pst__unwinder {
  pid_t pid;
  struct pst__mem *mem;        /* borrowed */
  struct pst__modcache *cache; /* reference */
  struct pst__maps maps;
  struct umap *umaps;       /* parallel to maps.v */
  struct pst__module *vdso; /* reference, or NULL */
  uint64_t vdso_start, vdso_end;
  unw_addr_space_t as;
  uint64_t last_reload_ns;
  /* Per unwind. */
  struct user_regs_struct regs;
  int only_sp_pc;      /* the regs are a blocked thread's sp and pc alone */
  int reg_missing;     /* and libunwind asked for another one */
  struct cpage *pages; /* CPAGES_MAX */
  int npages;
  struct region hot_stack; /* last page cache hit */
  struct region hot_img;   /* last image hit */
  struct pst__unwind_stats stats;
};

/* ---- Per-thread cache builds ----
 * A libunwind configured with --enable-per-thread-cache serves
 * UNW_CACHE_PER_THREAD from one thread-local cache shared by every address
 * space of the thread and keyed by IP alone: two processes' IPs would mix.
 * Such a build has a large PT_TLS segment (the cache itself), Debian's has
 * 16 bytes. When detected, switching unwinders on a thread flushes. */
static int tls_cache_build = -1;
static _Thread_local const struct pst__unwinder *tls_cache_user;

static int find_tls_cb(struct dl_phdr_info *info, size_t size, void *data) {
  const Dl_info *dli = data;
  (void)size;
  if ((void *)info->dlpi_addr != dli->dli_fbase &&
      !(info->dlpi_name && dli->dli_fname &&
        !strcmp(info->dlpi_name, dli->dli_fname)))
    return 0;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_TLS)
      return info->dlpi_phdr[i].p_memsz > 1024 ? 2 : 1;
  return 1;
}

static int per_thread_cache_build(void) {
  Dl_info dli;

  if (tls_cache_build < 0) {
    tls_cache_build = 0;
    if (dladdr((void *)&unw_init_remote, &dli) && dli.dli_fbase)
      tls_cache_build = dl_iterate_phdr(find_tls_cb, &dli) == 2;
    if (tls_cache_build)
      pst__info("libunwind has a per-thread cache: flushed when switching "
                "between processes");
  }
  return tls_cache_build;
}

/* ---- Mappings and modules ---- */

static void umaps_release(struct umap *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    pst__module_put(v[i].mod);
  free(v);
}

static int same_mapping(const struct pst__map *a, const struct pst__map *b) {
  return a->start == b->start && a->end == b->end && a->offset == b->offset &&
         a->inode == b->inode && a->dev_major == b->dev_major &&
         a->dev_minor == b->dev_minor && a->perms == b->perms &&
         !strcmp(a->path, b->path);
}

/* Loads /proc/PID/maps, carrying modules over for unchanged mappings.
 * Flushes libunwind's cache if an executable mapping went away or changed
 * (its cached IPs could now mean other code). On failure the old maps
 * stay. */
static int load_maps(struct pst__unwinder *u) {
  struct pst__maps nm;
  struct umap *nu;
  size_t j = 0;
  int err, changed = 0;

  err = pst__maps_load(u->pid, &nm);
  if (err)
    return err;
  nu = calloc(nm.n ? nm.n : 1, sizeof(*nu));
  if (!nu) {
    pst__maps_exit(&nm);
    return -ENOMEM;
  }
  /* Both lists are sorted by start: one merge walk. */
  for (size_t i = 0; i < u->maps.n; i++) {
    const struct pst__map *o = &u->maps.v[i];
    while (j < nm.n && nm.v[j].start < o->start)
      j++;
    if (j < nm.n && same_mapping(o, &nm.v[j])) {
      nu[j] = u->umaps[i];
      u->umaps[i].mod = NULL;
    } else if (o->perms & PST_MAP_X) {
      changed = 1;
    }
  }
  if (u->umaps)
    umaps_release(u->umaps, u->maps.n);
  pst__maps_exit(&u->maps);
  u->maps = nm;
  u->umaps = nu;
  memset(&u->hot_img, 0, sizeof(u->hot_img));
  if (changed && u->as)
    unw_flush_cache(u->as, 0, 0);
  u->last_reload_ns = pst__now_ns();
  return 0;
}

/* The vdso's module: its image copied once from the target. */
static struct pst__module *vdso_module(struct pst__unwinder *u,
                                       const struct pst__map *mp) {
  void *buf;
  int err;

  if (u->vdso && u->vdso_start == mp->start && u->vdso_end == mp->end)
    return u->vdso;
  pst__module_zput(&u->vdso);
  buf = malloc(mp->end - mp->start);
  if (!buf)
    return NULL;
  err = pst__mem_read(u->mem, mp->start, buf, mp->end - mp->start);
  if (!err)
    err = pst__module_new_image("[vdso]", buf, mp->end - mp->start, &u->vdso);
  free(buf);
  if (err) {
    pst__debug("pid %d: [vdso] not read: %s", (int)u->pid, pst_strerror(err));
    return NULL;
  }
  u->vdso_start = mp->start;
  u->vdso_end = mp->end;
  return u->vdso;
}

/* The module of mapping i (opened on first use), or NULL. Writable
 * mappings get none: their bytes may differ from the file. */
static struct pst__module *map_module(struct pst__unwinder *u, size_t i) {
  const struct pst__map *mp = &u->maps.v[i];
  struct umap *um = &u->umaps[i];
  struct pst__module *m = NULL;

  if (um->tried)
    return um->mod;
  um->tried = 1;
  if (mp->perms & PST_MAP_W)
    return NULL;
  if (!strcmp(mp->path, "[vdso]")) {
    m = vdso_module(u, mp);
    if (m)
      m = pst__module_ref(m);
  } else if (mp->path[0] == '/' && mp->inode != 0) {
    if (pst__module_get(u->cache, u->pid, mp, &m) != 0)
      m = NULL;
  }
  if (m && pst__module_bias(m, mp, &um->bias) != 0)
    pst__module_zput(&m);
  um->mod = m;
  return m;
}

static ptrdiff_t map_index(const struct pst__unwinder *u, uint64_t addr) {
  const struct pst__map *mp = pst__maps_find(&u->maps, addr);
  return mp ? mp - u->maps.v : -1;
}

/* map_index, reloading the maps once (rate-limited) when addr is in none:
 * a library dlopen'ed since the last load. */
static ptrdiff_t map_index_reload(struct pst__unwinder *u, uint64_t addr) {
  ptrdiff_t i = map_index(u, addr);

  if (i >= 0 ||
      pst__now_ns() - u->last_reload_ns < PST_UNWIND_RELOAD_MS * 1000000ull)
    return i;
  if (load_maps(u) == 0)
    u->stats.maps_reloads++;
  return map_index(u, addr);
}

/* ---- Memory ---- */

static int region_has(const struct region *r, uint64_t addr, size_t len) {
  return addr >= r->lo && addr < r->hi && r->hi - addr >= len;
}

static struct cpage *page_find(struct pst__unwinder *u, uint64_t page) {
  /* Newest first: an unwind walks the stack upwards. */
  for (int i = u->npages - 1; i >= 0; i--)
    if (u->pages[i].addr == page)
      return &u->pages[i];
  return NULL;
}

/* Reads the granule at page and the next ones (READAHEAD_FIRST or
 * READAHEAD in all, stopping at one already cached) in one batch. Returns
 * the page's entry or NULL (unreadable, or the cache is full). */
static struct cpage *page_fill(struct pst__unwinder *u, uint64_t page) {
  struct pst__mem_iov iov[READAHEAD];
  int k = 0, got, want = u->npages ? READAHEAD : READAHEAD_FIRST;

  while (k < want && u->npages + k < CPAGES_MAX &&
         page + (uint64_t)k * CPAGE >= page &&
         (k == 0 || !page_find(u, page + (uint64_t)k * CPAGE))) {
    struct cpage *p = &u->pages[u->npages + k];
    p->addr = page + (uint64_t)k * CPAGE;
    iov[k].addr = p->addr;
    iov[k].buf = p->data;
    iov[k].len = CPAGE;
    k++;
  }
  if (k == 0)
    return NULL;
  u->stats.stack_reads++;
  got = pst__mem_readv(u->mem, iov, (size_t)k);
  if (got <= 0)
    return NULL;
  u->npages += got;
  return &u->pages[u->npages - got];
}

/* Copies len (<= 8) bytes of target memory at addr through the page cache;
 * may straddle two granules. */
static int read_cached(struct pst__unwinder *u, uint64_t addr, void *buf,
                       size_t len) {
  while (len > 0) {
    uint64_t page = addr & ~(uint64_t)(CPAGE - 1);
    size_t off = (size_t)(addr - page),
           n = CPAGE - off < len ? CPAGE - off : len;
    struct cpage *p = page_find(u, page);
    if (!p && !(p = page_fill(u, page)))
      return -EFAULT;
    memcpy(buf, p->data + off, n);
    u->hot_stack.lo = page;
    u->hot_stack.hi = page + CPAGE;
    u->hot_stack.base = p->data;
    buf = (char *)buf + n;
    addr += n;
    len -= n;
  }
  return 0;
}

/* A word outside the hot regions: the local image if addr is in a
 * read-only file mapping whose bytes the file holds, else the target. */
static int read_slow(struct pst__unwinder *u, uint64_t addr, unw_word_t *val) {
  ptrdiff_t i = map_index(u, addr);

  if (i >= 0) {
    const struct pst__map *mp = &u->maps.v[i];
    struct pst__module *m = map_module(u, (size_t)i);
    size_t len;
    const unsigned char *img = m ? pst__module_image(m, &len) : NULL;
    if (img && mp->offset < len) {
      uint64_t avail = len - mp->offset;
      struct region r = {
          mp->start, mp->end - mp->start < avail ? mp->end : mp->start + avail,
          img + mp->offset};
      if (region_has(&r, addr, sizeof(*val))) {
        u->hot_img = r;
        memcpy(val, r.base + (addr - r.lo), sizeof(*val));
        return 0;
      }
    }
  }
  return read_cached(u, addr, val, sizeof(*val));
}

/* ---- libunwind accessors (arg is the unwinder) ---- */

static int acc_find_proc_info(unw_addr_space_t as, unw_word_t ip,
                              unw_proc_info_t *pi, int need_unwind_info,
                              void *arg) {
  struct pst__unwinder *u = arg;
  ptrdiff_t i = map_index_reload(u, ip);
  struct pst__module *m;
  struct pst__eh_table t;
  unw_dyn_info_t di;

  if (i < 0 || !(u->maps.v[i].perms & PST_MAP_X) ||
      !(m = map_module(u, (size_t)i)) || pst__module_eh_table(m, &t) != 0) {
    /* libunwind then tries frame pointers (x86_64). */
    u->stats.table_misses++;
    return -UNW_ENOINFO;
  }
  memset(&di, 0, sizeof(di));
  di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
  di.start_ip = u->maps.v[i].start;
  di.end_ip = u->maps.v[i].end;
  /* Target addresses: libunwind reads the table and the FDEs through
   * acc_access_mem, which serves them from the local image. */
  di.u.rti.segbase = t.hdr_vaddr + u->umaps[i].bias;
  di.u.rti.table_data = t.table_vaddr + u->umaps[i].bias;
  /* In words; an entry is two int32. */
  di.u.rti.table_len = t.fde_count * 8 / sizeof(unw_word_t);
  return dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
}

static void acc_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi,
                                void *arg) {
  /* Nothing: libunwind frees the FDE info dwarf_search_unwind_table
   * allocated itself; we hand out no dynamic info. */
  (void)as;
  (void)pi;
  (void)arg;
}

static int acc_get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dilap,
                                      void *arg) {
  /* No _U_dyn_info_list: JIT-registered unwind info is not read. */
  (void)as;
  (void)dilap;
  (void)arg;
  return -UNW_ENOINFO;
}

static int acc_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val,
                          int write, void *arg) {
  struct pst__unwinder *u = arg;

  (void)as;
  if (write)
    return -UNW_EINVAL; /* never write to the target */
  /* libunwind reads byte by byte through whole words (dwarf_readu8), so
   * this is the hot path: two range checks and a copy. */
  if (region_has(&u->hot_img, addr, sizeof(*val))) {
    memcpy(val, u->hot_img.base + (addr - u->hot_img.lo), sizeof(*val));
    return 0;
  }
  if (region_has(&u->hot_stack, addr, sizeof(*val))) {
    memcpy(val, u->hot_stack.base + (addr - u->hot_stack.lo), sizeof(*val));
    return 0;
  }
  return read_slow(u, addr, val) ? -UNW_EINVAL : 0;
}

static int acc_access_reg(unw_addr_space_t as, unw_regnum_t reg,
                          unw_word_t *val, int write, void *arg) {
  struct pst__unwinder *u = arg;
  uint64_t v;

  (void)as;
  if (write)
    return -UNW_EREADONLYREG;
  if (reg < 0 || (size_t)reg >= sizeof(reg_offsets) / sizeof(*reg_offsets))
    return -UNW_EBADREG;
  if (u->only_sp_pc && reg != UNW_X86_64_RSP && reg != UNW_X86_64_RIP) {
    u->reg_missing = 1;
    return -UNW_EBADREG;
  }
  memcpy(&v, (const char *)&u->regs + reg_offsets[reg], sizeof(v));
  *val = v;
  return 0;
}

static int acc_access_fpreg(unw_addr_space_t as, unw_regnum_t reg,
                            unw_fpreg_t *val, int write, void *arg) {
  (void)as;
  (void)reg;
  (void)val;
  (void)write;
  (void)arg;
  return -UNW_EBADREG;
}

static int acc_resume(unw_addr_space_t as, unw_cursor_t *c, void *arg) {
  (void)as;
  (void)c;
  (void)arg;
  return -UNW_EINVAL;
}

static int acc_get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf,
                             size_t len, unw_word_t *off, void *arg) {
  /* Symbol names are the symbol side's job (pst__unwinder_module). */
  (void)as;
  (void)addr;
  (void)buf;
  (void)len;
  (void)off;
  (void)arg;
  return -UNW_ENOINFO;
}

static unw_accessors_t accessors = {
    .find_proc_info = acc_find_proc_info,
    .put_unwind_info = acc_put_unwind_info,
    .get_dyn_info_list_addr = acc_get_dyn_info_list_addr,
    .access_mem = acc_access_mem,
    .access_reg = acc_access_reg,
    .access_fpreg = acc_access_fpreg,
    .resume = acc_resume,
    .get_proc_name = acc_get_proc_name,
};

/* ---- API ---- */

/* ---- Caching policy without the lock ----
 * libunwind's UNW_CACHE_GLOBAL takes a mutex around every use of its
 * per-IP register-state cache, with all signals blocked: two
 * rt_sigprocmask syscalls per frame (libunwind_i.h lock_acquire). Its
 * parser (dwarf/Gparser.c get_rs_cache, put_rs_cache) skips the lock for
 * UNW_CACHE_PER_THREAD; without --enable-per-thread-cache that policy uses
 * the address space's own cache, unlocked. But unw_set_caching_policy()
 * turns PER_THREAD into GLOBAL unless libunwind was configured with
 * HAVE___THREAD, which 1.6.2's configure never defines (Debian's build).
 * So we store the policy ourselves: the field sits right after the public
 * unw_accessors_t that starts struct unw_addr_space (1.6.2), or one
 * pointer further (1.7+ adds iterate_phdr_function). The candidate is
 * proven by toggling the policy through the API and watching it change
 * (a generation counter or a pointer cannot follow NONE, GLOBAL, NONE,
 * GLOBAL); without proof the locked cache stays. Safe because one thread
 * uses an unwinder's address space. */
static int policy_offset(unw_addr_space_t as, size_t *off) {
  static const unw_caching_policy_t seq[] = {UNW_CACHE_NONE, UNW_CACHE_GLOBAL,
                                             UNW_CACHE_NONE, UNW_CACHE_GLOBAL};
  const size_t cand[] = {sizeof(unw_accessors_t),
                         sizeof(unw_accessors_t) + sizeof(void *)};
  unsigned char *base = (unsigned char *)unw_get_accessors(as);

  if (base != (unsigned char *)as)
    return -ENOTSUP; /* the accessors are not the first member */
  for (size_t k = 0; k < sizeof(cand) / sizeof(*cand); k++) {
    size_t i;
    for (i = 0; i < sizeof(seq) / sizeof(*seq); i++) {
      int v;
      unw_set_caching_policy(as, seq[i]);
      memcpy(&v, base + cand[k], sizeof(v));
      if (v != (int)seq[i])
        break;
    }
    if (i == sizeof(seq) / sizeof(*seq)) {
      *off = cand[k];
      return 0;
    }
  }
  return -ENOTSUP;
}

static int set_unlocked(unw_addr_space_t as) {
  size_t off;
  int v = UNW_CACHE_PER_THREAD;

  if (policy_offset(as, &off) != 0) {
    unw_set_caching_policy(as, UNW_CACHE_GLOBAL);
    pst__warn_once("libunwind: caching policy field not found; using its "
                   "locked cache (two rt_sigprocmask per frame)");
    return -ENOTSUP;
  }
  memcpy((unsigned char *)as + off, &v, sizeof(v));
  unw_flush_cache(as, 0, 0);
  return 0;
}

int pst__unwinder_set_cache(struct pst__unwinder *u, enum pst__unwind_cache c) {
  switch (c) {
  case PST_UNWIND_CACHE_NONE:
    unw_set_caching_policy(u->as, UNW_CACHE_NONE);
    break;
  case PST_UNWIND_CACHE_LOCKED:
    unw_set_caching_policy(u->as, UNW_CACHE_GLOBAL);
    break;
  case PST_UNWIND_CACHE_UNLOCKED:
    /* On failure the locked cache is in use: still correct, slower. */
    if (set_unlocked(u->as) != 0)
      return -ENOTSUP;
    break;
  default:
    return -EINVAL;
  }
  unw_flush_cache(u->as, 0, 0);
  return 0;
}

int pst__unwinder_new(pid_t pid, struct pst__mem *mem,
                      struct pst__modcache *cache, struct pst__unwinder **out) {
  struct pst__unwinder *u = calloc(1, sizeof(*u));
  int err;

  if (!u)
    return -ENOMEM;
  u->pid = pid;
  u->mem = mem;
  u->pages = malloc(CPAGES_MAX * sizeof(*u->pages));
  if (!u->pages) {
    err = -ENOMEM;
    goto err;
  }
  if (cache) {
    u->cache = pst__modcache_get(cache);
  } else if ((err = pst__modcache_new(&u->cache)) != 0) {
    goto err;
  }
  err = load_maps(u);
  if (err)
    goto err;
  u->as = unw_create_addr_space(&accessors, 0);
  if (!u->as) {
    err = -ENOMEM;
    goto err;
  }
  /* -ENOTSUP leaves the locked cache (warned once): usable. */
  err = pst__unwinder_set_cache(u, PST_UNWIND_CACHE_UNLOCKED);
  if (err && err != -ENOTSUP)
    goto err;
  per_thread_cache_build();
  *out = u;
  return 0;
err:
  pst__unwinder_free(u);
  return err;
}

void pst__unwinder_free(struct pst__unwinder *u) {
  if (!u)
    return;
  if (tls_cache_user == u)
    tls_cache_user = NULL;
  if (u->as)
    unw_destroy_addr_space(u->as);
  if (u->umaps)
    umaps_release(u->umaps, u->maps.n);
  pst__maps_exit(&u->maps);
  pst__module_put(u->vdso);
  pst__modcache_put(u->cache);
  free(u->pages);
  free(u);
}

int pst__unwinder_refresh(struct pst__unwinder *u) {
  int err = load_maps(u);

  if (err == 0)
    u->stats.maps_reloads++;
  return err;
}

/* The unwind from u->regs (both entry points). */
static int unwind(struct pst__unwinder *u, pid_t tid, uint64_t *ips,
                  uint64_t *sps, int max) {
  unw_cursor_t c;
  unw_word_t ip, sp;
  uint64_t prev_ip, prev_sp;
  unsigned long faults = pst__elf_faults();
  int n, r;

  /* A new unwind: the stack pages of the last one are stale. */
  u->npages = 0;
  memset(&u->hot_stack, 0, sizeof(u->hot_stack));
  if (tls_cache_build > 0 && tls_cache_user != u) {
    unw_flush_cache(u->as, 0, 0);
    tls_cache_user = u;
  }
  prev_ip = ips[0] = REGS_PC(&u->regs);
  prev_sp = REGS_SP(&u->regs);
  if (sps)
    sps[0] = prev_sp;
  n = 1;
  r = unw_init_remote(&c, u->as, u);
  if (r < 0)
    goto out;
  while (n < max) {
    r = unw_step(&c);
    if (r <= 0)
      break;
    if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 ||
        unw_get_reg(&c, UNW_REG_SP, &sp) < 0) {
      r = -UNW_EUNSPEC;
      break;
    }
    if (ip == 0) /* a zero return address ends some outermost frames */
      break;
    /* Callers' frames sit higher on a downward-growing stack; a lower or
     * repeated (sp, ip) is garbage or a loop (a frame-pointer guess gone
     * wrong). This also stops at a switch from a sigaltstack below the
     * thread's stack. */
    if (sp < prev_sp || (sp == prev_sp && ip == prev_ip)) {
      u->stats.cycles++;
      r = 0;
      break;
    }
    ips[n] = ip;
    if (sps)
      sps[n] = sp;
    n++;
    prev_ip = ip;
    prev_sp = sp;
  }
  if (n == max)
    u->stats.truncated++;
out:
  if (pst__elf_faults() != faults) {
    /* A module's file was truncated under this unwind: what was read from
     * it is zeros. Nothing of this stack is sure, nor libunwind's cache. */
    memset(&u->hot_img, 0, sizeof(u->hot_img));
    unw_flush_cache(u->as, 0, 0);
    u->stats.image_faults++;
    pst__debug("tid %d: a module was truncated while unwinding", (int)tid);
    return PST_EBADDATA;
  }
  if (r < 0) {
    u->stats.errors++;
    pst__debug("tid %d: unwind stopped after %d frames: %s", (int)tid, n,
               unw_strerror(r));
  }
  u->stats.unwinds++;
  u->stats.frames += (uint64_t)n;
  return n;
}

int pst__unwind_thread(struct pst__unwinder *u, pid_t tid, uint64_t *ips,
                       uint64_t *sps, int max) {
  int r;

  if (max < 1)
    return -EINVAL;
  r = pst__ptrace_getregs(tid, &u->regs);
  if (r)
    return r;
  u->only_sp_pc = 0;
  return unwind(u, tid, ips, sps, max);
}

int pst__unwind_blocked(struct pst__unwinder *u, pid_t tid, uint64_t sp,
                        uint64_t pc, uint64_t *ips, uint64_t *sps, int max) {
  int n;

  if (max < 1)
    return -EINVAL;
  memset(&u->regs, 0, sizeof(u->regs));
  REGS_SP(&u->regs) = sp;
  REGS_PC(&u->regs) = pc;
  u->only_sp_pc = 1;
  u->reg_missing = 0;
  n = unwind(u, tid, ips, sps, max);
  u->only_sp_pc = 0;
  return n >= 1 && u->reg_missing ? -EAGAIN : n;
}

int pst__unwinder_module(struct pst__unwinder *u, uint64_t ip,
                         const char **path, uint64_t *bias, const void **image,
                         size_t *image_len) {
  ptrdiff_t i = map_index(u, ip);
  struct pst__module *m;
  size_t len;
  const void *img;

  if (i < 0 || !u->maps.v[i].path[0] ||
      (u->maps.v[i].path[0] != '/' && strcmp(u->maps.v[i].path, "[vdso]")))
    return -ENOENT;
  m = map_module(u, (size_t)i);
  if (!m)
    return -ENOENT;
  img = pst__module_image(m, &len);
  if (path)
    *path = u->maps.v[i].path;
  if (bias)
    *bias = u->umaps[i].bias;
  if (image)
    *image = img;
  if (image_len)
    *image_len = len;
  return 0;
}

int pst__unwinder_symbol(struct pst__unwinder *u, uint64_t ip, int wait,
                         const char **func, uint64_t *offset,
                         const char **path) {
  ptrdiff_t i = map_index(u, ip);
  const struct pst__symtab *st;
  struct pst__module *m;

  *func = NULL;
  *offset = 0;
  *path = NULL;
  if (i < 0)
    return -ENOENT;
  *path = u->maps.v[i].path;
  m = map_module(u, (size_t)i);
  if (!m) {
    *offset = ip - u->maps.v[i].start + u->maps.v[i].offset;
    return -ENOENT;
  }
  *offset = ip - u->umaps[i].bias;
  st = wait ? pst__module_symtab_wait(m) : pst__module_symtab(m);
  if (st)
    *func = pst__symtab_lookup(st, ip - u->umaps[i].bias, offset);
  else if (pst__module_symtab_pending(m))
    return -EINPROGRESS;
  return *func ? 0 : -ENOENT;
}

void pst__unwinder_stats(const struct pst__unwinder *u,
                         struct pst__unwind_stats *out) {
  *out = u->stats;
}

#else /* !__x86_64__ */

/* aarch64 (and others): libunwind's remote API is the same, but the
 * register table above and the tests are x86_64 only for now. */
int pst__unwinder_new(pid_t pid, struct pst__mem *mem,
                      struct pst__modcache *cache, struct pst__unwinder **out) {
  (void)pid;
  (void)mem;
  (void)cache;
  (void)out;
  return -ENOSYS;
}
void pst__unwinder_free(struct pst__unwinder *u) { (void)u; }
int pst__unwinder_set_cache(struct pst__unwinder *u, enum pst__unwind_cache c) {
  (void)u;
  (void)c;
  return -ENOSYS;
}
int pst__unwind_thread(struct pst__unwinder *u, pid_t tid, uint64_t *ips,
                       uint64_t *sps, int max) {
  (void)u;
  (void)tid;
  (void)ips;
  (void)sps;
  (void)max;
  return -ENOSYS;
}
int pst__unwind_blocked(struct pst__unwinder *u, pid_t tid, uint64_t sp,
                        uint64_t pc, uint64_t *ips, uint64_t *sps, int max) {
  (void)u;
  (void)tid;
  (void)sp;
  (void)pc;
  (void)ips;
  (void)sps;
  (void)max;
  return -ENOSYS;
}
int pst__unwinder_module(struct pst__unwinder *u, uint64_t ip,
                         const char **path, uint64_t *bias, const void **image,
                         size_t *image_len) {
  (void)u;
  (void)ip;
  (void)path;
  (void)bias;
  (void)image;
  (void)image_len;
  return -ENOSYS;
}
int pst__unwinder_symbol(struct pst__unwinder *u, uint64_t ip, int wait,
                         const char **func, uint64_t *offset,
                         const char **path) {
  (void)u;
  (void)ip;
  (void)wait;
  *func = *path = NULL;
  *offset = 0;
  return -ENOSYS;
}
int pst__unwinder_refresh(struct pst__unwinder *u) {
  (void)u;
  return -ENOSYS;
}
void pst__unwinder_stats(const struct pst__unwinder *u,
                         struct pst__unwind_stats *out) {
  (void)u;
  memset(out, 0, sizeof(*out));
}

#endif
