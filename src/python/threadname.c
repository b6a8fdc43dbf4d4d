/* threadname.c: an object's instance attributes, and threading.Thread.name
 * of a thread read from them (the Thread is the `self` of its
 * _bootstrap_inner frame, or a value of threading._active: registry.c).
 *
 * Instance attributes live, by version:
 *   <= 3.10  a dict at obj + tp_dictoffset (2.7: old-style table dict);
 *   3.11     managed: dict at obj-24, else values at obj-32 with the keys
 *            shared in the type's ht_cached_keys;
 *   3.12     obj-24 holds a dict, or values - 1 (PyDictOrValues: odd);
 *   3.13+    values inline at obj + tp_basicsize (Py_TPFLAGS_INLINE_VALUES)
 *            while valid, else the dict at obj-24;
 *   3.13t+   (free-threaded: no GC head before the object) the dict at
 *            obj-8.
 * Sources: Include/internal/pycore_object.h and Objects/dictobject.c of
 * each version. The dicts and keys are read by dict.c; everything read is
 * bounded (entries, string lengths).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "python/dict.h"

#define ENTRIES_MAX 256 /* an instance with more is not a Thread */
#define TPFLAGS_INLINE_VALUES (1UL << 2) /* 3.13+ */
#define TPFLAGS_MANAGED_DICT (1UL << 4)  /* 3.11+ */

/* Looks attr up in table t: its value and the address holding it. */
static int lookup_table(struct pst__py *py, struct pst__mem *mem,
                        const struct pst__py_dict_table *t, const char *attr,
                        uint64_t *memo, uint64_t *value, uint64_t *slot) {
  struct pst__py_dict_item items[ENTRIES_MAX];
  int n = pst__py_dict_items(py, mem, t, items, ENTRIES_MAX), i;

  if (n < 0)
    return n;
  i = pst__py_dict_find_str(py, mem, items, n, attr, memo);
  if (i < 0)
    return i;
  *value = items[i].value;
  if (slot)
    *slot = items[i].slot;
  return 0;
}

static int lookup_dict(struct pst__py *py, struct pst__mem *mem, uint64_t dict,
                       const char *attr, uint64_t *memo, uint64_t *value,
                       uint64_t *slot) {
  struct pst__py_dict_table t;
  int err = pst__py_dict_open(py, mem, dict, ENTRIES_MAX, &t, NULL);

  return err ? err : lookup_table(py, mem, &t, attr, memo, value, slot);
}

static int lookup_keys(struct pst__py *py, struct pst__mem *mem, uint64_t keys,
                       uint64_t values, int64_t nvalues, const char *attr,
                       uint64_t *memo, uint64_t *value, uint64_t *slot) {
  struct pst__py_dict_table t;
  int err = pst__py_keys_open(py, mem, keys, values, nvalues, ENTRIES_MAX, &t);

  return err ? err : lookup_table(py, mem, &t, attr, memo, value, slot);
}

/* The fields of the type object the lookup uses, in one read. */
struct type_info {
  uint64_t flags, cached_keys;
  int64_t basicsize, dictoffset;
};

static int read_type(struct pst__py *py, struct pst__mem *mem, uint64_t type,
                     struct type_info *ti) {
  const struct pst__py_layout *l = &py->lay;
  int32_t end = l->type_flags;
  uint8_t buf[PST_PY_TYPE_SPAN];
  int err;

  if (l->type_basicsize > end)
    end = l->type_basicsize;
  if (l->type_dictoffset > end)
    end = l->type_dictoffset;
  if (l->ht_cached_keys > end)
    end = l->ht_cached_keys;
  end += 8;
  if (end > PST_PY_TYPE_SPAN)
    return PST_EBADDATA; /* pst__py_layout_check() rules this out */
  err = pst__mem_read(mem, type, buf, (size_t)end);
  if (err)
    return err;
  memcpy(&ti->flags, buf + l->type_flags, 8);
  memcpy(&ti->basicsize, buf + l->type_basicsize, 8);
  memcpy(&ti->dictoffset, buf + l->type_dictoffset, 8);
  ti->cached_keys = 0;
  if (l->ht_cached_keys != PST_NOFF)
    memcpy(&ti->cached_keys, buf + l->ht_cached_keys, 8);
  return 0;
}

/* 3.11+: the managed dict pointer (obj-24) and the 3.11 values pointer
 * (obj-32) in one read, with the object's type; before 3.11 the type. */
static int read_object(struct pst__py *py, struct pst__mem *mem, uint64_t obj,
                       uint64_t *type, uint64_t pre[2]) {
  size_t ty = (size_t)py->lay.ob_type / 8; /* word of ob_type: 1 or 3 */
  uint64_t w[8];

  pre[0] = pre[1] = 0;
  if (py->version_hex >= 0x030b &&
      pst__mem_read(mem, obj - 32, w, (5 + ty) * 8) == 0) {
    pre[0] = w[0]; /* obj-32: values (3.11) */
    /* obj-24: dict, or values - 1 (3.12); free-threaded (no GC head
     * before the object): obj-8 */
    pre[1] = py->lay.free_threaded ? w[3] : w[1];
    *type = w[4 + ty];
    return 0;
  }
  return pst__mem_read_u64(mem, obj + (uint64_t)py->lay.ob_type, type);
}

int pst__py_instance_attr(struct pst__py *py, struct pst__mem *mem,
                          uint64_t obj, const char *attr, uint64_t *memo,
                          uint64_t *value, uint64_t *slot) {
  struct type_info ti;
  uint64_t type, pre[2], p;
  int err;

  err = read_object(py, mem, obj, &type, pre);
  if (err == 0)
    err = read_type(py, mem, type, &ti);
  if (err)
    return err;
  if (py->version_hex >= 0x030d && (ti.flags & TPFLAGS_INLINE_VALUES)) {
    /* PyDictValues {capacity, size, embedded, valid; values[]}. */
    uint8_t vh[8];
    uint64_t values = obj + (uint64_t)ti.basicsize;
    if (ti.basicsize > 0 && ti.basicsize < (1 << 20) &&
        pst__mem_read(mem, values, vh, sizeof(vh)) == 0 && vh[3] &&
        ti.cached_keys)
      return lookup_keys(py, mem, ti.cached_keys, values + 8, vh[0], attr, memo,
                         value, slot);
  }
  if (py->version_hex >= 0x030b && (ti.flags & TPFLAGS_MANAGED_DICT)) {
    p = pre[1];
    if (py->version_hex == 0x030c && (p & 1)) /* stored as values - 1 */
      return ti.cached_keys ? lookup_keys(py, mem, ti.cached_keys, p + 1, -1,
                                          attr, memo, value, slot)
                            : PST_ENOSYM;
    if (p)
      return lookup_dict(py, mem, p, attr, memo, value, slot);
    if (py->version_hex == 0x030b && pre[0] && ti.cached_keys)
      return lookup_keys(py, mem, ti.cached_keys, pre[0], -1, attr, memo, value,
                         slot);
    return PST_ENOSYM;
  }
  if (ti.dictoffset <= 0 || ti.dictoffset >= (1 << 20))
    return PST_ENOSYM;
  err = pst__mem_read_u64(mem, obj + (uint64_t)ti.dictoffset, &p);
  if (err)
    return err;
  return p ? lookup_dict(py, mem, p, attr, memo, value, slot) : PST_ENOSYM;
}

int pst__py_thread_name_ref(struct pst__py *py, struct pst__mem *mem,
                            uint64_t thread_obj, char **name,
                            struct pst__py_name_ref *ref) {
  /* 2.7 keeps the name in a private, mangled attribute. */
  const char *attr = py->version_hex < 0x0300 ? "_Thread__name" : "_name";
  uint64_t v, slot;
  int err = pst__py_instance_attr(py, mem, thread_obj, attr, &py->name_key, &v,
                                  &slot);

  if (err == 0)
    err = pst__py_read_str(py, mem, v, name);
  if (err == 0 && ref) {
    ref->slot = slot;
    ref->str = v;
  }
  return err;
}

int pst__py_thread_name(struct pst__py *py, struct pst__mem *mem,
                        uint64_t thread_obj, char **name) {
  return pst__py_thread_name_ref(py, mem, thread_obj, name, NULL);
}

int pst__py_thread_names_changed(struct pst__py *py, struct pst__mem *mem,
                                 const struct pst__py_name_ref *refs, int n,
                                 uint8_t *changed) {
  struct pst__mem_iov *iov;
  uint64_t *now;
  uint8_t *ok;
  int got, k = 0;

  (void)py;
  if (n <= 0)
    return 0;
  iov = malloc((size_t)n * sizeof(*iov));
  now = malloc((size_t)n * sizeof(*now));
  ok = malloc((size_t)n);
  if (!iov || !now || !ok) {
    got = -ENOMEM;
    goto out;
  }
  for (int i = 0; i < n; i++)
    iov[i] = (struct pst__mem_iov){refs[i].slot, &now[i], 8};
  got = pst__mem_readv_each(mem, iov, (size_t)n, ok);
  if (got < 0)
    goto out;
  for (int i = 0; i < n; i++) {
    changed[i] = !ok[i] || now[i] != refs[i].str;
    k += changed[i];
  }
  got = k;
out:
  free(iov);
  free(now);
  free(ok);
  return got;
}
