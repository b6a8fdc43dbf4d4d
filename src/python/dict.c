/* dict.c: the one reader of the target's dict objects (see dict.h), with
 * the str-key lookup and the int decoder its users need.
 *
 * Layouts, by version (sources: CPython's Include/dictobject.h and
 * Objects/dictobject.c of 2.7; Objects/dict-common.h of 3.6-3.10, which no
 * installed header has; Include/internal/pycore_dict.h of 3.11-3.14):
 *   2.7       PyDictObject {head, ma_fill, ma_used, ma_mask, ma_table, ...}:
 *             open addressing over ma_mask + 1 slots {hash, key, value};
 *             a deleted slot keeps a dummy key and a NULL value.
 *   3.6-3.10  ma_keys -> {dk_refcnt, dk_size, dk_lookup, dk_usable,
 *             dk_nentries, dk_indices[dk_size * index width]}, then the
 *             entries {hash, key, value}, in insertion order; a deleted
 *             entry has a NULL key and value. Index width: 1 byte for
 *             dk_size <= 0xff, 2 for <= 0xffff, 4, else 8.
 *   3.11+     ma_keys -> {dk_refcnt, dk_log2_size, dk_log2_index_bytes,
 *             dk_kind, dk_version, dk_usable, dk_nentries, dk_indices},
 *             entries at dk_indices + (1 << dk_log2_index_bytes):
 *             {hash, key, value} for DICT_KEYS_GENERAL (0), {key, value}
 *             for DICT_KEYS_UNICODE (1) and DICT_KEYS_SPLIT (2).
 *   split     ma_values non-NULL (3.x): the values live in an array beside
 *             the (shared) keys, value i for entry i. 3.13 put a header
 *             {capacity, size, embedded, valid} (8 bytes with padding)
 *             before the values (PyDictValues).
 * Entries are never reused within one keys object from 3.6 on (insertion
 * appends; deletion clears), so a copy read while the target runs holds
 * each entry either whole, cleared, or half-written (one of key or value
 * NULL, skipped).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "python/dict.h"

#define KEYS_LOG2_MAX 30      /* 2^30 slots: no dict this reader opens */
#define FIND_BATCH 256        /* key strings read per syscall */
#define NAME_MAX_LEN 63       /* names looked up are short identifiers */
#define MODULES_MAX (1 << 17) /* sys.modules entries: torch has ~3000 */

static int64_t i64_at(const uint8_t *p, int32_t off) {
  int64_t v;
  memcpy(&v, p + off, 8);
  return v;
}

/* CPython's USABLE_FRACTION: entries a table of n slots holds. */
static int64_t usable(int64_t n) { return (n << 1) / 3; }

int pst__py_dict_head_parse(const struct pst__py *py, const uint8_t *buf,
                            int64_t max, struct pst__py_dict_head *h) {
  const struct pst__py_layout *l = &py->lay;

  if (py->dict_type && pst__py_u64_at(buf, l->ob_type) != py->dict_type)
    return PST_EBADDATA;
  memset(h, 0, sizeof(*h));
  h->used = i64_at(buf, l->dict_ma_used);
  if (h->used < 0 || h->used > max)
    return PST_EBADDATA;
  if (l->dict_ma_table != PST_NOFF) { /* 2.7 */
    h->keys = pst__py_u64_at(buf, l->dict_ma_table);
    h->mask = i64_at(buf, l->dict_ma_mask);
  } else {
    h->keys = pst__py_u64_at(buf, l->dict_ma_keys);
    h->values = pst__py_u64_at(buf, l->dict_ma_values);
  }
  return h->keys ? 0 : PST_EBADDATA;
}

int pst__py_dict_table_parse(const struct pst__py *py, uint64_t keys,
                             const uint8_t *khdr, uint64_t values, int64_t mask,
                             int64_t max, struct pst__py_dict_table *t) {
  memset(t, 0, sizeof(*t));
  t->keys = keys;
  t->values = values;
  if (py->version_hex < 0x0300) {
    /* A power of two from PyDict_MINSIZE (8) on; a table holds at most
     * 2/3 of it, so more slots than 3 * max + 8 is not a dict of max. */
    if (mask < 7 || mask > 3 * max + 8 || ((mask + 1) & mask))
      return PST_EBADDATA;
    t->entries = keys;
    t->n = mask + 1;
    t->esize = 24;
    t->key_off = 8;
    return 0;
  }
  if (i64_at(khdr, 0) <= 0) /* dk_refcnt */
    return PST_EBADDATA;
  if (py->version_hex >= 0x030b) {
    unsigned log2 = khdr[8], log2_ix = khdr[9], kind = khdr[10];
    /* Index width: 1 byte below 2^8 slots, 2 below 2^16, 4 below 2^32. */
    unsigned want_ix = log2 < 8 ? log2 : log2 < 16 ? log2 + 1 : log2 + 2;
    if (log2 < 3 || log2 > KEYS_LOG2_MAX || log2_ix != want_ix || kind > 2)
      return PST_EBADDATA;
    t->n = i64_at(khdr, 24);
    if (t->n < 0 || t->n > usable(1LL << log2))
      return PST_EBADDATA;
    t->entries = keys + 32 + (1ULL << log2_ix);
    t->esize = kind == 0 ? 24 : 16;
    t->key_off = kind == 0 ? 8 : 0;
  } else {
    int64_t size = i64_at(khdr, 8);
    int ix;
    if (size < 8 || size > (1LL << KEYS_LOG2_MAX) || (size & (size - 1)))
      return PST_EBADDATA;
    t->n = i64_at(khdr, 32);
    if (t->n < 0 || t->n > usable(size))
      return PST_EBADDATA;
    ix = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
    t->entries = keys + 40 + (uint64_t)size * (uint64_t)ix;
    t->esize = 24;
    t->key_off = 8;
  }
  if (t->n > max)
    return PST_EBADDATA;
  t->nvalues = values ? t->n : 0;
  return 0;
}

size_t pst__py_dict_table_span(const struct pst__py_dict_table *t) {
  return (size_t)(t->entries - t->keys) + (size_t)t->n * (size_t)t->esize;
}

int pst__py_dict_items_parse(const struct pst__py_dict_table *t,
                             const uint8_t *ents, const uint64_t *vals,
                             struct pst__py_dict_item *out, int max) {
  int k = 0;

  for (int64_t i = 0; i < t->n && k < max; i++) {
    const uint8_t *e = ents + i * t->esize + t->key_off;
    struct pst__py_dict_item it;
    it.key = pst__py_u64_at(e, 0);
    if (t->values) {
      if (i >= t->nvalues)
        break;
      it.value = vals[i];
      it.slot = t->values + 8 * (uint64_t)i;
    } else {
      it.value = pst__py_u64_at(e, 8);
      it.slot = t->entries + (uint64_t)(i * t->esize + t->key_off + 8);
    }
    if (it.key && it.value)
      out[k++] = it;
  }
  return k;
}

int pst__py_keys_open(struct pst__py *py, struct pst__mem *mem, uint64_t keys,
                      uint64_t values, int64_t nvalues, int64_t max,
                      struct pst__py_dict_table *t) {
  uint8_t khdr[PST_PY_KEYS_HEAD];
  int err;

  if (py->version_hex < 0x0300)
    return -EINVAL; /* 2.7 has no keys objects */
  err = pst__mem_read(mem, keys, khdr, sizeof(khdr));
  if (err == 0)
    err = pst__py_dict_table_parse(py, keys, khdr, values, 0, max, t);
  if (err == 0 && values && nvalues >= 0 && nvalues < t->nvalues)
    t->nvalues = nvalues;
  return err;
}

int pst__py_dict_open(struct pst__py *py, struct pst__mem *mem, uint64_t dict,
                      int64_t max, struct pst__py_dict_table *t,
                      struct pst__py_dict_head *hout) {
  uint8_t buf[PST_PY_DICT_HEAD];
  struct pst__py_dict_head h;
  uint8_t vh[8];
  int64_t nvalues = -1;
  int err;

  err = pst__mem_read(mem, dict, buf, PST_PY_DICT_LEN(py));
  if (err == 0)
    err = pst__py_dict_head_parse(py, buf, max, &h);
  if (err)
    return err;
  if (hout)
    *hout = h;
  if (py->version_hex < 0x0300)
    return pst__py_dict_table_parse(py, h.keys, NULL, 0, h.mask, max, t);
  if (h.values && py->version_hex >= 0x030d) {
    /* PyDictValues {capacity, size, embedded, valid; values[]}. */
    err = pst__mem_read(mem, h.values, vh, sizeof(vh));
    if (err)
      return err;
    nvalues = vh[0];
    h.values += 8;
  }
  return pst__py_keys_open(py, mem, h.keys, h.values, nvalues, max, t);
}

int pst__py_dict_items(struct pst__py *py, struct pst__mem *mem,
                       const struct pst__py_dict_table *t,
                       struct pst__py_dict_item *out, int max) {
  size_t elen = (size_t)t->n * (size_t)t->esize;
  size_t vlen = (size_t)t->nvalues * 8;
  struct pst__mem_iov iov[2];
  uint8_t *buf;
  int n = 0, got;

  (void)py;
  if (t->n == 0)
    return 0;
  buf = malloc(elen + vlen);
  if (!buf)
    return -ENOMEM;
  iov[n++] = (struct pst__mem_iov){t->entries, buf, elen};
  if (vlen)
    iov[n++] = (struct pst__mem_iov){t->values, buf + elen, vlen};
  got = pst__mem_readv(mem, iov, (size_t)n);
  if (got == n) {
    uint64_t *vals = NULL;
    if (vlen) {
      vals = malloc(vlen); /* aligned copy of the values */
      if (!vals) {
        free(buf);
        return -ENOMEM;
      }
      memcpy(vals, buf + elen, vlen);
    }
    got = pst__py_dict_items_parse(t, buf, vals, out, max);
    free(vals);
  } else if (got >= 0) {
    got = -EFAULT;
  }
  free(buf);
  return got;
}

/* 1 when the str object whose first bytes are s (len bytes read) is the
 * ASCII string name of nlen bytes, 0 when it is not, -1 when s does not
 * hold enough of it to tell. */
static int str_is(const struct pst__py *py, const uint8_t *s, size_t len,
                  const char *name, size_t nlen) {
  const struct pst__py_layout *l = &py->lay;
  size_t data = (size_t)l->str_ascii_data;

  if (len < data)
    return -1;
  if (py->str_type && pst__py_u64_at(s, l->ob_type) != py->str_type)
    return 0;
  if (i64_at(s, l->str_length) != (int64_t)nlen)
    return 0;
  if (l->str_state != PST_NOFF) {
    uint32_t state;
    memcpy(&state, s + l->str_state, 4);
    /* PyASCIIObject.state: interned:2, kind:3, compact:1, ascii:1. A
     * compact ASCII string's bytes follow the PyASCIIObject. */
    if (!((state >> 5) & 1) || !((state >> 6) & 1))
      return 0;
  }
  if (len < data + nlen)
    return -1;
  return memcmp(s + data, name, nlen) == 0;
}

int pst__py_dict_find_str(struct pst__py *py, struct pst__mem *mem,
                          const struct pst__py_dict_item *items, int n,
                          const char *name, uint64_t *memo) {
  size_t nlen = strlen(name), each = (size_t)py->lay.str_ascii_data + nlen;
  struct pst__mem_iov *iov = NULL;
  uint8_t *buf = NULL, ok[FIND_BATCH];
  int err = PST_ENOSYM;

  if (memo && *memo)
    for (int i = 0; i < n; i++)
      if (items[i].key == *memo)
        return i;
  if (nlen == 0 || nlen > NAME_MAX_LEN || n <= 0)
    return PST_ENOSYM;
  iov = malloc(FIND_BATCH * sizeof(*iov));
  buf = malloc(FIND_BATCH * each);
  if (!iov || !buf) {
    err = -ENOMEM;
    goto out;
  }
  for (int base = 0; base < n; base += FIND_BATCH) {
    int k = n - base < FIND_BATCH ? n - base : FIND_BATCH, got;
    for (int i = 0; i < k; i++)
      iov[i] = (struct pst__mem_iov){items[base + i].key, buf + i * each, each};
    got = pst__mem_readv_each(mem, iov, (size_t)k, ok);
    if (got < 0) {
      err = got;
      goto out;
    }
    for (int i = 0; i < k; i++) {
      int is = ok[i] ? str_is(py, buf + i * each, each, name, nlen) : -1;
      if (is < 0) {
        /* A short str near the end of a mapping: read it exactly. */
        char *s = NULL;
        is = pst__py_read_str(py, mem, items[base + i].key, &s) == 0 &&
             strcmp(s, name) == 0;
        free(s);
      }
      if (is == 1) {
        if (memo)
          *memo = items[base + i].key;
        err = base + i;
        goto out;
      }
    }
  }
out:
  free(iov);
  free(buf);
  return err;
}

int pst__py_dict_get_str(struct pst__py *py, struct pst__mem *mem,
                         uint64_t dict, int64_t max, const char *name,
                         uint64_t *memo, uint64_t *value, uint64_t *slot) {
  struct pst__py_dict_item *items = NULL;
  struct pst__py_dict_table t;
  int n, i, err;

  err = pst__py_dict_open(py, mem, dict, max, &t, NULL);
  if (err)
    return err;
  if (t.n == 0)
    return PST_ENOSYM;
  items = malloc((size_t)t.n * sizeof(*items));
  if (!items)
    return -ENOMEM;
  n = pst__py_dict_items(py, mem, &t, items, (int)t.n);
  if (n < 0) {
    err = n;
    goto out;
  }
  i = pst__py_dict_find_str(py, mem, items, n, name, memo);
  if (i < 0) {
    err = i;
    goto out;
  }
  *value = items[i].value;
  if (slot)
    *slot = items[i].slot;
out:
  free(items);
  return err;
}

int pst__py_module_dict(struct pst__py *py, struct pst__mem *mem,
                        const char *name, uint64_t *memo, uint64_t *dict) {
  size_t ty = (size_t)py->lay.ob_type / 8; /* word of ob_type: 1 or 3 */
  uint64_t modules, mod, w[5];
  int err;

  if (py->lay.is_modules == PST_NOFF || !py->interp)
    return PST_ENOSYM;
  err = pst__mem_read_u64(mem, py->interp + (uint64_t)py->lay.is_modules,
                          &modules);
  if (err)
    return err;
  if (!modules)
    return PST_ENOSYM;
  err = pst__py_dict_get_str(py, mem, modules, MODULES_MAX, name, memo, &mod,
                             NULL);
  if (err == 0)
    err = pst__mem_read(mem, mod, w, (ty + 2) * 8); /* ob_type, md_dict */
  if (err)
    return err;
  if ((py->module_type && w[ty] != py->module_type) || !w[ty + 1])
    return PST_EBADDATA;
  *dict = w[ty + 1];
  return 0;
}

int pst__py_int_parse(const struct pst__py *py, const uint8_t *buf, size_t len,
                      uint64_t *out) {
  const struct pst__py_layout *l = &py->lay;
  unsigned shift = py->long_shift ? (unsigned)py->long_shift : 30;
  unsigned dsize = shift > 16 ? 4 : 2;
  uint64_t type, v = 0;
  int64_t nd;

  if (len < (size_t)l->ob_type + 16)
    return -ENOBUFS;
  type = pst__py_u64_at(buf, l->ob_type);
  if (py->version_hex < 0x0300 &&
      (py->int_type ? type == py->int_type
                    : !py->long_type || type != py->long_type)) {
    int64_t ival = i64_at(buf, l->int_ival); /* PyIntObject */
    if (ival < 0)
      return PST_EBADDATA;
    *out = (uint64_t)ival;
    return 0;
  }
  if (py->long_type && type != py->long_type)
    return PST_EBADDATA;
  if (l->long_tag != PST_NOFF) {
    /* 3.12+ lv_tag: digit count << 3 | sign (0 positive, 1 zero, 2
     * negative); bit 2 is not the sign (3.14 marks small ints there). */
    uint64_t tag = pst__py_u64_at(buf, l->long_tag);
    if ((tag & 3) == 3 || (tag & 3) == 2)
      return PST_EBADDATA;
    nd = (tag & 3) == 1 ? 0 : (int64_t)(tag >> 3);
  } else {
    nd = i64_at(buf, l->long_size); /* negative for negative values */
    if (nd < 0)
      return PST_EBADDATA;
  }
  if ((uint64_t)nd * shift > 64 + shift - 1)
    return PST_EBADDATA;
  if ((size_t)l->long_digit + (size_t)nd * dsize > len)
    return -ENOBUFS;
  for (int64_t i = nd - 1; i >= 0; i--) {
    uint32_t d = 0;
    memcpy(&d, buf + l->long_digit + i * dsize, dsize);
    if (d >> shift || (v >> (64 - shift)) != 0)
      return PST_EBADDATA;
    v = v << shift | d;
  }
  *out = v;
  return 0;
}
