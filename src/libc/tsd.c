/* tsd.c: libc TSD layout detection (disassembly, _thread_db, default) and lookup. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "elf/debuginfo.h"
#include "elf/elf.h"
#include "libc/tsd.h"
#include "pystitch/errno.h"
#include "util/log.h"

/* pthread_getspecific is a few dozen instructions; glibc's slow path for keys
 * >= 32 follows within ~130 bytes. */
#define GETSPECIFIC_BYTES 256

static int is_glibc(const char *base) {
  return !strcmp(base, "libc.so.6") || !strncmp(base, "libc-2.", 7) ||
         !strcmp(base, "libpthread.so.0");
}

/* musl's one library: ld-musl-ARCH.so.1 (Alpine), libc.musl-ARCH.so.1, or
 * Debian's /usr/lib/ARCH-linux-musl/libc.so. */
static int is_musl_path(const char *path) {
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  return !strncmp(base, "ld-musl-", 8) || !strncmp(base, "libc.musl-", 10) ||
         (!strcmp(base, "libc.so") && strstr(path, "musl") != NULL);
}

static int is_musl(const char *base) { return is_musl_path(base); }

static int is_libpthread(const char *base) {
  return !strncmp(base, "libpthread", 10);
}

static int is_libc(const char *base) {
  return (!strcmp(base, "libc.so.6") || !strncmp(base, "libc-2.", 7) ||
          is_musl(base));
}

/* Where libthread_db's descriptors are read: their symbols from syms (the
 * libc, or its separate debug file when the libc is stripped of them),
 * their bytes (in .rodata) from the libc itself: a debug file has the
 * same link-time addresses but no contents. */
struct thread_db {
  const struct pst__elf *bytes;
  const struct pst__elf *syms;
};

static int db_read(const struct thread_db *db, const char *name, void *buf,
                   size_t len) {
  uint64_t a;

  if (pst__elf_symbol(db->syms, name, &a, NULL))
    return PST_ENOSYM;
  return pst__elf_read(db->bytes, a, buf, len) ? -EFAULT : 0;
}

/* The descriptors' offsets are from the thread descriptor (struct pthread
 * *). That is the thread pointer on x86_64 (TLS_TCB_AT_TP); on aarch64
 * (TLS_DTV_AT_TP) struct pthread ends at the thread pointer (glibc's
 * THREAD_SELF is tp - sizeof(struct pthread), and gdb's aarch64
 * ps_get_thread_area subtracts libthread_db's const_thread_area, that same
 * size). Sets *base to the descriptor's offset from the thread pointer. */
static int db_base(const struct thread_db *db, enum pst__arch arch,
                   int64_t *base) {
  uint32_t size;
  int err;

  *base = 0;
  if (arch != PST_ARCH_AARCH64)
    return 0;
  err = db_read(db, "_thread_db_sizeof_pthread", &size, sizeof(size));
  if (err)
    return err;
  *base = -(int64_t)size;
  return 0;
}

/* glibc >= 2.34 exports libthread_db's descriptors: uint32_t[3] =
 * {size in bits, count, offset}. The level-2 array `specific` (whose entry 0
 * points at specific_1stblock, so the double lookup works for every key),
 * and the data member of struct pthread_key_data and its size. */
static int thread_db_layout(const struct thread_db *db, enum pst__arch arch,
                            struct pst__tsd_layout *out) {
  uint32_t spec[3], data[3], size;
  int64_t base;
  int err;

  if ((err = db_read(db, "_thread_db_pthread_specific", spec, sizeof(spec))) ||
      (err = db_read(db, "_thread_db_pthread_key_data_data", data,
                     sizeof(data))) ||
      (err = db_read(db, "_thread_db_sizeof_pthread_key_data", &size,
                     sizeof(size))) ||
      (err = db_base(db, arch, &base)))
    return err;
  memset(out, 0, sizeof(*out));
  out->has_l2 = 1;
  out->l2_offset = base + spec[2];
  out->l2_data = data[2];
  out->multiplier = size;
  return 0;
}

/* struct pthread's start_routine from its descriptor (nptl_db's
 * structs.def: DB_STRUCT_FIELD (pthread, start_routine)): a 64-bit scalar.
 * glibc's struct pthread has declared `void *arg` right after it since
 * NPTL began (nptl/descr.h), which pst__tsd_start_routine relies on. */
static int start_layout(const struct thread_db *db, enum pst__arch arch,
                        int64_t *offset) {
  uint32_t d[3];
  int64_t base;
  int err;

  if ((err = db_read(db, "_thread_db_pthread_start_routine", d, sizeof(d))) ||
      (err = db_base(db, arch, &base)))
    return err;
  if (d[0] != 64 || d[1] != 1 || d[2] < 16 || d[2] > 1 << 16)
    return PST_EBADDATA;
  *offset = base + d[2];
  return 0;
}

/* The start routine's layout, from the libc's own descriptors, else its
 * separate debug file's symbols (a libc whose .symtab was stripped and
 * whose descriptors are not dynamic: glibc < 2.34's libpthread). Fills the
 * start_* fields of tsd, logging a layout that stays unknown. */
static void find_start_layout(const struct pst__elf *e,
                              const struct pst__debuginfo_where *w,
                              enum pst__arch arch, struct pst__tsd *tsd) {
  struct thread_db db = {.bytes = e, .syms = e};
  const char *path = tsd->libc_path;
  struct pst__elf *d = NULL;
  char found[512];
  int err;

  err = start_layout(&db, arch, &tsd->start_offset);
  if (err == PST_ENOSYM &&
      pst__debuginfo_open(e, w, &d, found, sizeof(found), NULL) == 0) {
    db.syms = d;
    err = start_layout(&db, arch, &tsd->start_offset);
    if (err == 0)
      snprintf(tsd->start_method, sizeof(tsd->start_method),
               "_thread_db_pthread_start_routine in %.110s", found);
    pst__elf_close(d);
  } else if (err == 0) {
    snprintf(tsd->start_method, sizeof(tsd->start_method),
             "_thread_db_pthread_start_routine");
  }
  if (err == 0) {
    tsd->has_start = 1;
    return;
  }
  snprintf(tsd->start_method, sizeof(tsd->start_method),
           "unknown: %s in %.60s (no debug file)",
           err == PST_ENOSYM ? "no _thread_db_pthread_start_routine"
                             : "unexpected _thread_db_pthread_start_routine",
           path);
  pst__info("thread start routines: %s", tsd->start_method);
}

static int decode_getspecific(const struct pst__elf *e, enum pst__arch arch,
                              struct pst__tsd_layout *out, char *why,
                              size_t why_len) {
  static const char *const names[] = {"__pthread_getspecific",
                                      "pthread_getspecific"};
  uint8_t code[GETSPECIFIC_BYTES];
  uint64_t addr = 0, size = 0;
  size_t i;

  for (i = 0; i < 2; i++)
    if (pst__elf_symbol(e, names[i], &addr, &size) == 0)
      break;
  if (i == 2) {
    snprintf(why, why_len, "no pthread_getspecific symbol");
    return PST_ENOSYM;
  }
  if (size == 0 || size > sizeof(code))
    size = sizeof(code);
  memset(code, 0, sizeof(code));
  if (pst__elf_read(e, addr, code, size)) {
    snprintf(why, why_len, "cannot read pthread_getspecific bytes");
    return -EFAULT;
  }
  return pst__disasm_tsd_layout(arch, code, size, addr, out, why, why_len);
}

static void set_default(struct pst__tsd *tsd, enum pst__arch arch) {
  struct pst__tsd_layout *l = &tsd->layout;
  memset(l, 0, sizeof(*l));
  if (tsd->is_musl) {
    /* musl 1.2 struct pthread: tsd pointer at +0x80 (x86_64), -88 from
     * tpidr_el0 on aarch64 (facts.md section 1). */
    l->offset = arch == PST_ARCH_X86_64 ? 0x80 : -88;
    l->multiplier = 8;
    l->indirect = 1;
  } else {
    /* glibc 2.36 x86_64: specific_1stblock at 0x310, data at +8. */
    l->offset = 0x318;
    l->multiplier = 16;
    l->has_l2 = 1;
    l->l2_offset = 0x510;
    l->l2_data = 8;
  }
}

int pst__tsd_loading(const struct pst__maps *maps) {
  int loader = 0;

  for (size_t i = 0; i < maps->n; i++) {
    const char *b = strrchr(maps->v[i].path, '/');
    b = b ? b + 1 : maps->v[i].path;
    if (is_libc(b) || is_glibc(b) || is_musl_path(maps->v[i].path))
      return 0;
    loader |= !strncmp(b, "ld-linux", 8) || !strncmp(b, "ld-2.", 5);
  }
  return loader;
}

int pst__tsd_analyse_elf(const struct pst__elf *e,
                         const struct pst__debuginfo_where *w,
                         enum pst__arch arch, struct pst__tsd *tsd) {
  struct pst__tsd_layout db;
  char why[128] = "";
  int err, have_db;

  have_db = thread_db_layout(&(struct thread_db){e, e}, arch, &db) == 0;
  if (tsd->is_musl)
    snprintf(tsd->start_method, sizeof(tsd->start_method),
             "unknown for musl: its struct pthread keeps no start routine "
             "(musl 1.2 passes it in struct start_args on the new thread's "
             "stack)");
  else
    find_start_layout(e, w, arch, tsd);
  err = decode_getspecific(e, arch, &tsd->layout, why, sizeof(why));
  if (err == 0) {
    if (have_db && !tsd->layout.has_l2) {
      /* The decoder saw only the fast path: take the second level from the
       * descriptors. */
      tsd->layout.has_l2 = 1;
      tsd->layout.l2_offset = db.l2_offset;
      tsd->layout.l2_data = db.l2_data;
    }
    if (have_db && (db.multiplier != tsd->layout.multiplier ||
                    db.l2_offset != tsd->layout.l2_offset)) {
      snprintf(tsd->method, sizeof(tsd->method),
               "disassembly (disagrees with _thread_db: l2 0x%llx x%lld)",
               (unsigned long long)db.l2_offset, (long long)db.multiplier);
      pst__warn("TSD layout: %s", tsd->method);
    } else {
      snprintf(tsd->method, sizeof(tsd->method), "disassembly%s",
               have_db ? ", matches _thread_db descriptors" : "");
    }
  } else if (have_db) {
    tsd->layout = db;
    /* With only the descriptors, use the double lookup for every key:
     * specific[0] points at specific_1stblock. */
    tsd->l2_only = 1;
    snprintf(tsd->method, sizeof(tsd->method),
             "_thread_db descriptors (disassembly failed: %s)", why);
    pst__info("TSD layout: %s", tsd->method);
  } else {
    set_default(tsd, arch);
    snprintf(tsd->method, sizeof(tsd->method),
             "default for %s (disassembly failed: %s)",
             tsd->is_musl ? "musl" : "glibc", why);
    pst__warn("TSD layout: %s", tsd->method);
  }
  if (pst__elf_faulted(e)) /* truncated while read: zeros decoded */
    return PST_EBADDATA;
  return 0;
}

int pst__tsd_analyse(pid_t pid, const struct pst__maps *maps,
                     enum pst__arch arch, struct pst__tsd *tsd) {
  const struct pst__map *mp;
  struct pst__debuginfo_where w = {0};
  struct pst__elf *e = NULL;
  int fd, err;

  memset(tsd, 0, sizeof(*tsd));
  mp = pst__maps_find_file(maps, is_libc);
  if (!mp)
    mp = pst__maps_find_file(maps, is_glibc);
  for (size_t i = 0; i < maps->n && !mp; i++)
    if (is_musl_path(maps->v[i].path))
      mp = &maps->v[i];
  if (!mp && pst__tsd_loading(maps))
    return PST_ENOTREADY; /* a default would be a guess */
  if (!mp) {
    /* libc linked statically into the executable: its first mapping. */
    for (size_t i = 0; i < maps->n && !mp; i++)
      if (maps->v[i].path[0] == '/')
        mp = &maps->v[i];
  }
  if (!mp)
    return PST_ENOTSD;
  snprintf(tsd->libc_path, sizeof(tsd->libc_path), "%s", mp->path);
  tsd->is_musl = is_musl_path(mp->path);

  fd = pst__maps_open(pid, mp);
  if (fd >= 0 && pst__elf_open(fd, &e) == 0 && !tsd->is_musl) {
    /* glibc < 2.34 keeps pthread_getspecific and the _thread_db
     * descriptors in libpthread.so.0. */
    const struct pst__map *pt = pst__maps_find_file(maps, is_libpthread);
    uint64_t v;
    if (pt && pst__elf_symbol(e, "pthread_getspecific", &v, NULL) != 0) {
      struct pst__elf *e2;
      int fd2 = pst__maps_open(pid, pt);
      if (fd2 >= 0 && pst__elf_open(fd2, &e2) == 0) {
        pst__elf_close(e);
        e = e2;
        mp = pt;
        snprintf(tsd->libc_path, sizeof(tsd->libc_path), "%s", mp->path);
      }
    }
  }
  if (!e) {
    set_default(tsd, arch);
    snprintf(tsd->method, sizeof(tsd->method),
             "default for %s (cannot open %s)", tsd->is_musl ? "musl" : "glibc",
             mp->path);
    snprintf(tsd->start_method, sizeof(tsd->start_method),
             "unknown: cannot open %s", mp->path);
    pst__warn("%s", tsd->method);
    return 0;
  }
  w.path = mp->path;
  w.pid = pid;
  err = pst__tsd_analyse_elf(e, &w, arch, tsd);
  pst__elf_close(e);
  return err;
}

int pst__tsd_start_routine(const struct pst__tsd *tsd, struct pst__mem *mem,
                           uint64_t tp, uint64_t *fn, uint64_t *arg) {
  uint64_t v[2];
  int err;

  if (!tsd->has_start)
    return -ENOSYS;
  /* One read: start_routine and arg are adjacent. */
  err = pst__mem_read(mem, tp + (uint64_t)tsd->start_offset, v, sizeof(v));
  if (err)
    return err;
  *fn = v[0];
  if (arg)
    *arg = v[1];
  return 0;
}

int pst__tsd_get(const struct pst__tsd *tsd, struct pst__mem *mem, uint64_t tp,
                 unsigned key, uint64_t *value) {
  const struct pst__tsd_layout *l = &tsd->layout;
  uint64_t base;
  int err;

  if (l->has_l2 && (key >= 32 || tsd->l2_only)) {
    uint64_t l2;
    if (key >= 1024)
      return -EINVAL;
    err = pst__mem_read_u64(mem, tp + (uint64_t)l->l2_offset + 8 * (key >> 5),
                            &l2);
    if (err)
      return err;
    if (l2 == 0) {
      *value = 0;
      return 0;
    }
    return pst__mem_read_u64(
        mem,
        l2 + (uint64_t)(key & 31) * (uint64_t)l->multiplier +
            (uint64_t)l->l2_data,
        value);
  }
  base = tp + (uint64_t)l->offset;
  if (l->indirect) {
    err = pst__mem_read_u64(mem, base, &base);
    if (err)
      return err;
  }
  return pst__mem_read_u64(mem, base + (uint64_t)key * (uint64_t)l->multiplier,
                           value);
}
