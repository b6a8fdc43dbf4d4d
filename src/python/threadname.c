/* threadname.c: threading.Thread.name of a thread, read from the Thread
 * object's instance attributes (the `self` of its _bootstrap_inner frame).
 *
 * Instance attributes live, by version:
 *   <= 3.10  a dict at obj + tp_dictoffset (2.7: old-style table dict);
 *   3.11     managed: dict at obj-24, else values at obj-32 with the keys
 *            shared in the type's ht_cached_keys;
 *   3.12     obj-24 holds a dict, or values - 1 (PyDictOrValues: odd);
 *   3.13+    values inline at obj + tp_basicsize (Py_TPFLAGS_INLINE_VALUES)
 *            while valid, else the dict at obj-24.
 * Dict keys: 3.6-3.10 {refcnt, size, lookup, usable, nentries, indices},
 * 3.11+ {refcnt, log2_size, log2_index_bytes, kind, version, usable,
 * nentries, indices}; entries follow the indices. Sources: CPython's
 * Objects/dictobject.c and Include/internal/pycore_dict.h of each version.
 * Everything read is bounded (entries, string lengths).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "python/python.h"

#define ENTRIES_MAX 256           /* an instance with more is not a Thread */
#define TPFLAGS_INLINE_VALUES (1UL << 2) /* 3.13+ */
#define TPFLAGS_MANAGED_DICT (1UL << 4)  /* 3.11+ */

struct keys {
  uint64_t entries;  /* address of the first entry */
  int64_t n;         /* entries in use (nentries) */
  int esize;         /* bytes per entry */
  int key_off;       /* offset of the key in an entry */
};

static int read_keys(struct pst_py *py, struct pst_mem *mem, uint64_t k,
                     struct keys *out) {
  uint8_t h[48];
  int err = pst_mem_read(mem, k, h, sizeof(h));

  if (err)
    return err;
  if (py->version_hex >= 0x030b) {
    uint8_t log2_index_bytes = h[9], kind = h[10];
    if (log2_index_bytes > 20)
      return PST_EBADDATA;
    memcpy(&out->n, h + 24, 8);
    out->entries = k + 32 + (1ULL << log2_index_bytes);
    out->esize = kind == 0 ? 24 : 16; /* general: {hash, key, value} */
    out->key_off = kind == 0 ? 8 : 0;
  } else {
    int64_t size;
    int ix;
    memcpy(&size, h + 8, 8);
    memcpy(&out->n, h + 32, 8);
    if (size <= 0 || size > (1 << 20))
      return PST_EBADDATA;
    /* CPython's index width for size; 8 bytes (size > 2^32) cannot
     * occur under the bound above. */
    ix = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
    out->entries = k + 40 + (uint64_t)(size * ix);
    out->esize = 24;
    out->key_off = 8;
  }
  if (out->n < 0 || out->n > ENTRIES_MAX)
    return PST_EBADDATA;
  return 0;
}

/* Index of the entry whose key is the str attr, or -1. Attribute names are
 * interned: once the key object is known (py->name_key), a pointer
 * comparison finds it without reading any string. */
static int find_key(struct pst_py *py, struct pst_mem *mem,
                    const struct keys *k, const char *attr, uint8_t *ents) {
  int err = pst_mem_read(mem, k->entries, ents, (size_t)(k->n * k->esize));

  if (err)
    return -1;
  for (int64_t i = 0; py->name_key && i < k->n; i++) {
    uint64_t key;
    memcpy(&key, ents + i * k->esize + k->key_off, 8);
    if (key == py->name_key)
      return (int)i;
  }
  for (int64_t i = 0; i < k->n; i++) {
    uint64_t key;
    char *s = NULL;
    int match;
    memcpy(&key, ents + i * k->esize + k->key_off, 8);
    if (!key || pst_py_read_str(py, mem, key, &s))
      continue;
    match = !strcmp(s, attr);
    free(s);
    if (match) {
      py->name_key = key;
      return (int)i;
    }
  }
  return -1;
}

/* Looks attr up in a keys object; values (when non-zero) is the split
 * values array, else the value is in the entry. */
static int lookup_keys(struct pst_py *py, struct pst_mem *mem, uint64_t kaddr,
                       uint64_t values, const char *attr, uint64_t *out) {
  uint8_t ents[ENTRIES_MAX * 24];
  struct keys k;
  int i, err = read_keys(py, mem, kaddr, &k);

  if (err)
    return err;
  i = find_key(py, mem, &k, attr, ents);
  if (i < 0)
    return PST_ENOSYM;
  if (values)
    return pst_mem_read_u64(mem, values + 8 * (uint64_t)i, out);
  memcpy(out, ents + i * k.esize + k.key_off + 8, 8);
  return 0;
}

/* Offset of the values array in a PyDictValues: 3.13 put a 4-byte header
 * (capacity, size, embedded, valid) before it. */
static uint64_t values_array(const struct pst_py *py, uint64_t v) {
  return py->version_hex >= 0x030d ? v + 8 : v;
}

static int lookup_dict(struct pst_py *py, struct pst_mem *mem, uint64_t dict,
                       const char *attr, uint64_t *out) {
  uint64_t kv[2];
  int err;

  if (py->version_hex < 0x0300) {
    /* 2.7 PyDictObject: ma_mask at 32, ma_table at 40; {hash, key, value}
     * slots, mask + 1 of them. */
    uint8_t ents[ENTRIES_MAX * 24];
    struct keys k = {.esize = 24, .key_off = 8};
    int64_t mask;
    int i;
    err = pst_mem_read(mem, dict + 32, &mask, 8);
    if (err == 0)
      err = pst_mem_read_u64(mem, dict + 40, &k.entries);
    if (err)
      return err;
    if (mask < 0 || mask + 1 > ENTRIES_MAX)
      return PST_EBADDATA;
    k.n = mask + 1;
    i = find_key(py, mem, &k, attr, ents);
    if (i < 0)
      return PST_ENOSYM;
    memcpy(out, ents + i * 24 + 16, 8);
    return 0;
  }
  /* PyDictObject: ma_keys at 32, ma_values at 40 (3.6-3.14). */
  err = pst_mem_read(mem, dict + 32, kv, sizeof(kv));
  if (err)
    return err;
  return lookup_keys(py, mem, kv[0], kv[1] ? values_array(py, kv[1]) : 0,
                     attr, out);
}

static int instance_attr(struct pst_py *py, struct pst_mem *mem, uint64_t obj,
                         const char *attr, uint64_t *out) {
  const struct pst_py_layout *l = &py->lay;
  uint64_t type, flags = 0, p, keys;
  int64_t basicsize = 0, dictoffset = 0;
  int err;

  err = pst_mem_read_u64(mem, obj + 8, &type);
  if (err == 0)
    err = pst_mem_read_u64(mem, type + (uint64_t)l->type_flags, &flags);
  if (err == 0)
    err = pst_mem_read(mem, type + (uint64_t)l->type_basicsize, &basicsize, 8);
  if (err == 0)
    err = pst_mem_read(mem, type + (uint64_t)l->type_dictoffset, &dictoffset,
                       8);
  if (err)
    return err;
  if (py->version_hex >= 0x030d && (flags & TPFLAGS_INLINE_VALUES)) {
    uint8_t valid;
    uint64_t values = obj + (uint64_t)basicsize;
    if (pst_mem_read(mem, values + 3, &valid, 1) == 0 && valid &&
        pst_mem_read_u64(mem, type + (uint64_t)l->ht_cached_keys, &keys) == 0)
      return lookup_keys(py, mem, keys, values + 8, attr, out);
  }
  if (py->version_hex >= 0x030b && (flags & TPFLAGS_MANAGED_DICT)) {
    err = pst_mem_read_u64(mem, obj - 24, &p);
    if (err)
      return err;
    if (py->version_hex == 0x030c && (p & 1)) { /* stored as values - 1 */
      err = pst_mem_read_u64(mem, type + (uint64_t)l->ht_cached_keys, &keys);
      return err ? err : lookup_keys(py, mem, keys, p + 1, attr, out);
    }
    if (p)
      return lookup_dict(py, mem, p, attr, out);
    if (py->version_hex == 0x030b) { /* values at obj-32 */
      err = pst_mem_read_u64(mem, obj - 32, &p);
      if (err == 0 && p)
        err = pst_mem_read_u64(mem, type + (uint64_t)l->ht_cached_keys,
                               &keys);
      return err ? err : p ? lookup_keys(py, mem, keys, p, attr, out)
                           : PST_ENOSYM;
    }
    return PST_ENOSYM;
  }
  if (dictoffset <= 0)
    return PST_ENOSYM;
  err = pst_mem_read_u64(mem, obj + (uint64_t)dictoffset, &p);
  if (err)
    return err;
  return p ? lookup_dict(py, mem, p, attr, out) : PST_ENOSYM;
}

int pst_py_thread_name(struct pst_py *py, struct pst_mem *mem,
                       uint64_t thread_obj, char **name) {
  /* 2.7 keeps the name in a private, mangled attribute. */
  const char *attr = py->version_hex < 0x0300 ? "_Thread__name" : "_name";
  uint64_t v;
  int err = instance_attr(py, mem, thread_obj, attr, &v);

  if (err)
    return err;
  return pst_py_read_str(py, mem, v, name);
}
