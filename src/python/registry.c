/* registry.c: the interpreter's own thread registry, threading._active
 * ({ident: Thread}), read from outside, so that a thread's name does not
 * depend on reading its stack.
 *
 * The path, resolved once and cached (struct pst__py_reg, owned by the
 * struct pst__py): the main interpreter's sys.modules (interp->modules up
 * to 3.11, interp->imports.modules from 3.12, _Py_DebugOffsets'
 * interpreter_state.imports_modules from 3.13) -> sys.modules["threading"]
 * -> its md_dict (the word after PyObject_HEAD in every version's
 * PyModuleObject) -> ["_active"]. The keys are ints: threading.get_ident()
 * = PyThread_get_thread_ident() = pthread_self(), the same value as the
 * thread states' thread_id (and, with glibc or musl on x86_64, the thread
 * pointer fsbase). The values are the Thread objects: Thread, _MainThread
 * (keyed by the main thread's ident however it is renamed), and
 * _DummyThread for threads not started by threading that called
 * threading.current_thread(). Before 3.13 a _DummyThread's entry outlives
 * its OS thread: a new thread with the same ident (glibc reuses thread
 * descriptors) then maps to it, as threading.current_thread() in that
 * thread would.
 *
 * Staleness: one call reads, in one process_vm_readv, the _active dict's
 * head, the word of threading's dict that held _active when resolved (a
 * module reloaded or _active replaced shows there), the last keys object
 * seen and every int key seen; whatever moved is read again (2-3 more
 * reads when a thread came or went). A read that fails or an object that
 * does not look like what was cached starts the resolution over, once per
 * call. Only the main interpreter is read (sub-interpreters have their own
 * threading module). Not thread-safe, like the struct pst__py it lives in.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "python/dict.h"
#include "python/python.h"
#include "util/array.h"
#include "util/log.h"

#define MODULES_MAX (1 << 17) /* sys.modules entries: torch has ~3000 */
#define ACTIVE_MAX (1 << 16)  /* _active entries (threads) */
#define STALE 1               /* internal: the cache no longer holds */

/* An int key of _active as last read. */
struct reg_int {
  uint64_t addr;
  uint8_t buf[PST_PY_INT_READ];
};

struct pst__py_reg {
  /* Resolution. */
  uint64_t modules;       /* sys.modules, 0 until resolved */
  uint64_t threading_key; /* the interned "threading" str once seen */
  uint64_t active_key;    /* the interned "_active" str once seen */
  uint64_t active_slot;   /* the word of threading's dict entries that
                             held _active */
  uint64_t active;        /* threading._active, 0 when not resolved */
  /* sys.modules as last seen without "threading": no rescan until its
   * keys object or its size changes. */
  uint64_t miss_keys;
  int64_t miss_used;
  /* The last read of _active. */
  uint64_t keys; /* its keys object (the table on 2.7), 0: none */
  int64_t mask;  /* 2.7: its ma_mask */
  uint8_t *copy; /* the bytes of keys read (copy_len of them) */
  size_t copy_len, copy_cap;
  struct reg_int *ints, *next; /* int keys seen, and being read */
  int nints;
  size_t ints_cap;
  int *by_addr; /* indices of ints, sorted by address */
  struct pst__py_dict_item *items;
  size_t items_cap;
  struct pst__mem_iov *iov;
  uint8_t *ok;
  size_t iov_cap;
  uint64_t resolves; /* resolutions done (for tests) */
};

void pst__py_registry_free(struct pst__py_reg *r) {
  if (!r)
    return;
  free(r->copy);
  free(r->ints);
  free(r->next);
  free(r->by_addr);
  free(r->items);
  free(r->iov);
  free(r->ok);
  free(r);
}

uint64_t pst__py_registry_resolves(const struct pst__py *py) {
  return py->reg ? py->reg->resolves : 0;
}

/* The three int arrays to at least n elements (r->ints keeps its
 * content), with one capacity. */
static int grow_ints(struct pst__py_reg *r, int n) {
  size_t cap = r->ints_cap, cap2 = r->ints_cap;
  int err;

  if ((size_t)n <= r->ints_cap)
    return 0;
  err =
      pst__array_reserve((void **)&r->ints, &cap, (size_t)n, sizeof(*r->ints));
  if (err == 0)
    err = pst__array_reserve((void **)&r->next, &cap2, cap, sizeof(*r->next));
  cap2 = r->ints_cap;
  if (err == 0)
    err = pst__array_reserve((void **)&r->by_addr, &cap2, cap,
                             sizeof(*r->by_addr));
  if (err == 0)
    r->ints_cap = cap;
  return err;
}

/* r->iov and r->ok to at least n elements, with one capacity. */
static int grow_iov(struct pst__py_reg *r, int n) {
  size_t cap = r->iov_cap;
  int err =
      pst__array_reserve((void **)&r->iov, &cap, (size_t)n, sizeof(*r->iov));

  if (err == 0) {
    cap = r->iov_cap;
    err = pst__array_reserve((void **)&r->ok, &cap, (size_t)n, 1);
  }
  if (err == 0)
    r->iov_cap = cap;
  return err;
}

static void forget(struct pst__py_reg *r) {
  r->modules = r->active = r->active_slot = 0;
  r->keys = 0;
  r->copy_len = 0;
  r->nints = 0;
}

/* sys.modules["threading"].__dict__["_active"]: fills r->active and
 * r->active_slot. PST_ENOSYM when threading is not imported. */
static int resolve(struct pst__py *py, struct pst__mem *mem,
                   struct pst__py_reg *r) {
  struct pst__py_dict_item *items = NULL;
  struct pst__py_dict_head h;
  struct pst__py_dict_table t;
  uint64_t modules, mod[5], tdict, active, slot;
  size_t ty = (size_t)py->lay.ob_type / 8; /* word of ob_type: 1 or 3 */
  uint8_t head[PST_PY_DICT_HEAD];
  int n, i, err;

  forget(r);
  if (py->lay.is_modules == PST_NOFF || !py->interp)
    return PST_ENOSYM;
  r->resolves++;
  err = pst__mem_read_u64(mem, py->interp + (uint64_t)py->lay.is_modules,
                          &modules);
  if (err)
    return err;
  if (!modules)
    return PST_ENOSYM; /* not initialised yet, or finalised */
  err = pst__py_dict_open(py, mem, modules, MODULES_MAX, &t, &h);
  if (err)
    return err;
  if (h.keys == r->miss_keys && h.used == r->miss_used)
    return PST_ENOSYM; /* unchanged since threading was not there */
  items = malloc(((size_t)t.n + 1) * sizeof(*items));
  if (!items)
    return -ENOMEM;
  n = pst__py_dict_items(py, mem, &t, items, (int)t.n);
  if (n < 0) {
    err = n;
    goto out;
  }
  i = pst__py_dict_find_str(py, mem, items, n, "threading", &r->threading_key);
  if (i == PST_ENOSYM) {
    r->miss_keys = h.keys;
    r->miss_used = h.used;
  }
  if (i < 0) {
    err = i;
    goto out;
  }
  r->miss_keys = 0;
  /* The module object: ob_type, md_dict. A None placeholder (an import
   * that failed under 2.7, or sys.modules["threading"] = None) is not a
   * module. */
  err = pst__mem_read(mem, items[i].value, mod, (ty + 2) * 8);
  if (err)
    goto out;
  if ((py->module_type && mod[ty] != py->module_type) || !mod[ty + 1]) {
    err = PST_EBADDATA;
    goto out;
  }
  tdict = mod[ty + 1];
  err = pst__py_dict_get_str(py, mem, tdict, MODULES_MAX, "_active",
                             &r->active_key, &active, &slot);
  if (err)
    goto out;
  err = pst__mem_read(mem, active, head, PST_PY_DICT_LEN(py));
  if (err == 0)
    err = pst__py_dict_head_parse(py, head, ACTIVE_MAX, &h);
  if (err)
    goto out;
  r->modules = modules;
  r->active = active;
  r->active_slot = slot;
  pst__debug("thread registry: sys.modules 0x%llx, threading.__dict__ "
             "0x%llx, _active 0x%llx",
             (unsigned long long)modules, (unsigned long long)tdict,
             (unsigned long long)active);
out:
  free(items);
  return err;
}

/* The cached int object at addr, read in this call (ok), or NULL: a
 * binary search of r->by_addr (thousands of threads stay cheap). */
static const struct reg_int *cached_int(const struct pst__py_reg *r,
                                        uint64_t addr, const uint8_t *ok) {
  int lo = 0, hi = r->nints;

  while (lo < hi) {
    int mid = lo + (hi - lo) / 2, i = r->by_addr[mid];
    if (r->ints[i].addr == addr)
      return ok[i] ? &r->ints[i] : NULL;
    if (r->ints[i].addr < addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

static _Thread_local const struct reg_int *sort_base;

static int cmp_addr(const void *a, const void *b) {
  uint64_t x = sort_base[*(const int *)a].addr,
           y = sort_base[*(const int *)b].addr;
  return x < y ? -1 : x > y;
}

/* Rebuilds r->by_addr for r->ints (qsort has no context argument: a
 * thread-local base, as targets are refreshed on the loop and warmed on
 * the engine's worker at once). */
static void index_ints(struct pst__py_reg *r) {
  if (r->nints <= 0)
    return; /* qsort's base may be NULL then, which it must not be */
  for (int i = 0; i < r->nints; i++)
    r->by_addr[i] = i;
  sort_base = r->ints;
  qsort(r->by_addr, (size_t)r->nints, sizeof(*r->by_addr), cmp_addr);
  sort_base = NULL;
}

/* Reads the bytes of the keys object (table) of t into r->copy when what
 * was copied does not cover it. */
static int copy_keys(struct pst__mem *mem, struct pst__py_reg *r,
                     const struct pst__py_dict_table *t) {
  size_t span = pst__py_dict_table_span(t);
  int err;

  if (r->keys == t->keys && r->copy_len >= span)
    return 0;
  if (span > r->copy_cap) {
    uint8_t *p = realloc(r->copy, span);
    if (!p)
      return -ENOMEM;
    r->copy = p;
    r->copy_cap = span;
  }
  r->copy_len = 0;
  err = pst__mem_read(mem, t->keys, r->copy, span);
  if (err)
    return err;
  r->keys = t->keys;
  r->copy_len = span;
  return 0;
}

/* One read of _active with the cache: 0 and the entries, STALE when the
 * cache no longer holds, -errno or PST_EBADDATA. */
static int read_active(struct pst__py *py, struct pst__mem *mem,
                       struct pst__py_reg *r, struct pst__py_thread_ent *out,
                       int max) {
  uint8_t head[PST_PY_DICT_HEAD];
  struct pst__py_dict_head h;
  struct pst__py_dict_table t;
  uint64_t slot_now = 0;
  int ni = 0, nmiss = 0, n, k = 0, got, err;

  err = grow_iov(r, r->nints + 3);
  if (err)
    return err;
  /* The speculative batch: head, slot, keys copy, int keys. */
  r->iov[ni++] = (struct pst__mem_iov){r->active, head, PST_PY_DICT_LEN(py)};
  r->iov[ni++] = (struct pst__mem_iov){r->active_slot, &slot_now, 8};
  if (r->keys && r->copy_len)
    r->iov[ni++] = (struct pst__mem_iov){r->keys, r->copy, r->copy_len};
  for (int i = 0; i < r->nints; i++)
    r->iov[ni++] = (struct pst__mem_iov){r->ints[i].addr, r->ints[i].buf,
                                         PST_PY_INT_LEN(py)};
  got = pst__mem_readv_each(mem, r->iov, (size_t)ni, r->ok);
  if (got < 0)
    return got;
  if (!r->ok[0] || !r->ok[1] || slot_now != r->active)
    return STALE;
  err = pst__py_dict_head_parse(py, head, ACTIVE_MAX, &h);
  if (err || h.values)
    return STALE; /* a module global is never a split dict */
  if (r->keys && r->copy_len && !r->ok[2])
    r->copy_len = 0;
  if (py->version_hex < 0x0300) {
    err = pst__py_dict_table_parse(py, h.keys, NULL, 0, h.mask, ACTIVE_MAX, &t);
  } else {
    uint8_t khdr[PST_PY_KEYS_HEAD];
    if (h.keys == r->keys && r->copy_len >= PST_PY_KEYS_HEAD)
      memcpy(khdr, r->copy, sizeof(khdr));
    else
      err = pst__mem_read(mem, h.keys, khdr, sizeof(khdr));
    if (err == 0)
      err = pst__py_dict_table_parse(py, h.keys, khdr, 0, 0, ACTIVE_MAX, &t);
  }
  if (err == 0)
    err = copy_keys(mem, r, &t);
  if (err)
    return err == PST_EBADDATA ? STALE : err;
  err = pst__array_reserve((void **)&r->items, &r->items_cap, (size_t)t.n + 1,
                           sizeof(*r->items));
  if (err)
    return err;
  n = pst__py_dict_items_parse(&t, r->copy + (t.entries - t.keys), NULL,
                               r->items, (int)t.n);

  /* The int keys: from this call's speculative copies, the rest read now
   * in one batch into r->next (which becomes the cache). */
  err = grow_ints(r, n);
  if (err)
    return err;
  for (int i = 0; i < n; i++) {
    const struct reg_int *c =
        cached_int(r, r->items[i].key, r->ok + (ni - r->nints));
    r->next[i].addr = r->items[i].key;
    if (c) {
      memcpy(r->next[i].buf, c->buf, PST_PY_INT_LEN(py));
    } else {
      err = grow_iov(r, nmiss + 1);
      if (err)
        return err;
      r->iov[nmiss++] = (struct pst__mem_iov){r->items[i].key, r->next[i].buf,
                                              PST_PY_INT_LEN(py)};
    }
  }
  if (nmiss) {
    got = pst__mem_readv_each(mem, r->iov, (size_t)nmiss, r->ok);
    if (got < 0)
      return got;
    /* A key that cannot be read is garbage: a real one is a live int of
     * at most two digits, exactly PST_PY_INT_LEN bytes (2.7: a PyInt in
     * a block of them). Filled so that it parses as no int, skipped. */
    for (int i = 0; i < nmiss; i++)
      if (!r->ok[i])
        memset(r->iov[i].buf, 0xff, PST_PY_INT_LEN(py));
  }
  {
    struct reg_int *swap = r->ints;
    r->ints = r->next;
    r->next = swap;
    r->nints = n;
    index_ints(r);
  }
  for (int i = 0; i < n && k < max; i++) {
    uint64_t ident;
    uint8_t big[PST_PY_INT_READ + 16];
    err = pst__py_int_parse(py, r->ints[i].buf, PST_PY_INT_LEN(py), &ident);
    if (err == -ENOBUFS &&
        pst__mem_read(mem, r->ints[i].addr, big, sizeof(big)) == 0)
      err = pst__py_int_parse(py, big, sizeof(big), &ident);
    if (err) {
      pst__debug("thread registry: key 0x%llx of _active is not an int",
                 (unsigned long long)r->ints[i].addr);
      continue;
    }
    out[k].ident = ident;
    out[k].thread_obj = r->items[i].value;
    k++;
  }
  return k;
}

int pst__py_thread_registry(struct pst__py *py, struct pst__mem *mem,
                            struct pst__py_thread_ent *out, int max) {
  struct pst__py_reg *r = py->reg;
  int err;

  if (max < 0)
    return -EINVAL;
  if (!r) {
    r = calloc(1, sizeof(*r));
    if (!r)
      return -ENOMEM;
    py->reg = r;
  }
  if (!r->active) {
    err = resolve(py, mem, r);
    if (err)
      return err;
    err = read_active(py, mem, r, out, max);
  } else {
    err = read_active(py, mem, r, out, max);
    if (err == STALE || err == -EFAULT || err == PST_EBADDATA) {
      err = resolve(py, mem, r);
      if (err == 0)
        err = read_active(py, mem, r, out, max);
    }
  }
  if (err == STALE) {
    forget(r);
    err = PST_EBADDATA;
  }
  return err;
}
