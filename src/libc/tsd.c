/* tsd.c: libc TSD layout detection (disassembly, _thread_db, default) and lookup. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

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

/* glibc >= 2.34 exports libthread_db's descriptors: uint32_t[3] =
 * {size in bits, count, offset}. The level-2 array `specific` (whose entry 0
 * points at specific_1stblock, so the double lookup works for every key),
 * and the data member of struct pthread_key_data and its size. */
static int thread_db_layout(const struct pst_elf *e,
                            struct pst_tsd_layout *out) {
  uint64_t a_spec, a_data, a_size;
  uint32_t spec[3], data[3], size;

  if (pst_elf_symbol(e, "_thread_db_pthread_specific", &a_spec, NULL) ||
      pst_elf_symbol(e, "_thread_db_pthread_key_data_data", &a_data, NULL) ||
      pst_elf_symbol(e, "_thread_db_sizeof_pthread_key_data", &a_size, NULL))
    return PST_ENOSYM;
  if (pst_elf_read(e, a_spec, spec, sizeof(spec)) ||
      pst_elf_read(e, a_data, data, sizeof(data)) ||
      pst_elf_read(e, a_size, &size, sizeof(size)))
    return -EFAULT;
  memset(out, 0, sizeof(*out));
  out->has_l2 = 1;
  out->l2_offset = spec[2];
  out->l2_data = data[2];
  out->multiplier = size;
  return 0;
}

static int decode_getspecific(const struct pst_elf *e, enum pst_arch arch,
                              struct pst_tsd_layout *out, char *why,
                              size_t why_len) {
  static const char *const names[] = {"__pthread_getspecific",
                                      "pthread_getspecific"};
  uint8_t code[GETSPECIFIC_BYTES];
  uint64_t addr = 0, size = 0;
  size_t i;

  for (i = 0; i < 2; i++)
    if (pst_elf_symbol(e, names[i], &addr, &size) == 0)
      break;
  if (i == 2) {
    snprintf(why, why_len, "no pthread_getspecific symbol");
    return PST_ENOSYM;
  }
  if (size == 0 || size > sizeof(code))
    size = sizeof(code);
  memset(code, 0, sizeof(code));
  if (pst_elf_read(e, addr, code, size)) {
    snprintf(why, why_len, "cannot read pthread_getspecific bytes");
    return -EFAULT;
  }
  return pst_disasm_tsd_layout(arch, code, size, addr, out, why, why_len);
}

static void set_default(struct pst_tsd *tsd, enum pst_arch arch) {
  struct pst_tsd_layout *l = &tsd->layout;
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

int pst_tsd_loading(const struct pst_maps *maps) {
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

int pst_tsd_analyse(pid_t pid, const struct pst_maps *maps,
                    enum pst_arch arch, struct pst_tsd *tsd) {
  const struct pst_map *mp;
  struct pst_elf *e = NULL;
  struct pst_tsd_layout db;
  char why[128] = "";
  int fd, err, have_db = 0;

  memset(tsd, 0, sizeof(*tsd));
  mp = pst_maps_find_file(maps, is_libc);
  if (!mp)
    mp = pst_maps_find_file(maps, is_glibc);
  for (size_t i = 0; i < maps->n && !mp; i++)
    if (is_musl_path(maps->v[i].path))
      mp = &maps->v[i];
  if (!mp && pst_tsd_loading(maps))
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

  fd = pst_maps_open(pid, mp);
  if (fd >= 0 && pst_elf_open(fd, &e) == 0 && !tsd->is_musl) {
    /* glibc < 2.34 keeps pthread_getspecific and the _thread_db
     * descriptors in libpthread.so.0. */
    const struct pst_map *pt = pst_maps_find_file(maps, is_libpthread);
    uint64_t v;
    if (pt && pst_elf_symbol(e, "pthread_getspecific", &v, NULL) != 0) {
      struct pst_elf *e2;
      int fd2 = pst_maps_open(pid, pt);
      if (fd2 >= 0 && pst_elf_open(fd2, &e2) == 0) {
        pst_elf_close(e);
        e = e2;
        mp = pt;
        snprintf(tsd->libc_path, sizeof(tsd->libc_path), "%s", mp->path);
      }
    }
  }
  if (!e) {
    set_default(tsd, arch);
    snprintf(tsd->method, sizeof(tsd->method),
             "default for %s (cannot open %s)",
             tsd->is_musl ? "musl" : "glibc", mp->path);
    pst_warn("%s", tsd->method);
    return 0;
  }
  have_db = thread_db_layout(e, &db) == 0;
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
      pst_warn("TSD layout: %s", tsd->method);
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
    pst_info("TSD layout: %s", tsd->method);
  } else {
    set_default(tsd, arch);
    snprintf(tsd->method, sizeof(tsd->method),
             "default for %s (disassembly failed: %s)",
             tsd->is_musl ? "musl" : "glibc", why);
    pst_warn("TSD layout: %s", tsd->method);
  }
  pst_elf_close(e);
  return 0;
}

int pst_tsd_get(const struct pst_tsd *tsd, struct pst_mem *mem, uint64_t tp,
                unsigned key, uint64_t *value) {
  const struct pst_tsd_layout *l = &tsd->layout;
  uint64_t base;
  int err;

  if (l->has_l2 && (key >= 32 || tsd->l2_only)) {
    uint64_t l2;
    if (key >= 1024)
      return -EINVAL;
    err = pst_mem_read_u64(mem, tp + (uint64_t)l->l2_offset + 8 * (key >> 5),
                           &l2);
    if (err)
      return err;
    if (l2 == 0) {
      *value = 0;
      return 0;
    }
    return pst_mem_read_u64(
        mem, l2 + (uint64_t)(key & 31) * (uint64_t)l->multiplier +
                 (uint64_t)l->l2_data, value);
  }
  base = tp + (uint64_t)l->offset;
  if (l->indirect) {
    err = pst_mem_read_u64(mem, base, &base);
    if (err)
      return err;
  }
  return pst_mem_read_u64(mem, base + (uint64_t)key * (uint64_t)l->multiplier,
                          value);
}
