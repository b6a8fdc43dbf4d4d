/* exc.c: what a thread's exception state and its interpreter's collector
 * hold now: the exception a thread handles or raises (--mode exception,
 * dump), and whether the garbage collector runs (the <GC> frame). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "python/python.h"
#include "util/esc.h"

/* _PyErr_StackItems followed from a thread state at most: each generator
 * that runs adds one, so the chain is as deep as the generators nested; a
 * longer one is a cycle or garbage. */
#define ITEMS_MAX 64
#define ITEM_READ 32 /* bytes of a _PyErr_StackItem read (layout_check) */
/* A chain read while a generator run from an except block yields (a
 * loop over it unlinks and links its item every iteration) is torn about
 * half the time: 2 retries left 1 dump in 5-20 without an answer for
 * such a thread (CI, 3.13); 8 leave 1 in ~10^4. Only torn chains cost. */
#define TORN_RETRIES 8

int pst__py_type_name(struct pst__py *py, struct pst__mem *mem, uint64_t type,
                      char *name, size_t len) {
  uint64_t at = 0;
  char buf[64];

  /* tp_name is the word after PyVarObject's ob_size. */
  if (pst__mem_read_u64(mem, type + (uint64_t)py->lay.ob_type + 16, &at) ||
      !at || pst__mem_read(mem, at, buf, sizeof(buf) - 1))
    return -EFAULT;
  buf[sizeof(buf) - 1] = 0;
  pst__utf8_copy(name, len, buf);
  return 0;
}

void pst__py_exception_name(struct pst__py *py, struct pst__mem *mem,
                            uint64_t obj, int inst, char *type, size_t len) {
  uint64_t tp = obj;

  if ((inst && pst__mem_read_u64(mem, obj + (uint64_t)py->lay.ob_type, &tp)) ||
      pst__py_type_name(py, mem, tp, type, len))
    snprintf(type, len, "?");
}

#define CHUNK 64 /* thread states per syscall (a stack buffer's worth) */

/* Round one for e[0..n): the raised exception and the top of the handled
 * ones, both words of each thread state in one syscall. */
static int read_heads(struct pst__py *py, struct pst__mem *mem,
                      struct pst__py_exc **e, size_t n) {
  const struct pst__py_layout *l = &py->lay;
  int32_t top_off =
      l->ts_exc_info != PST_NOFF ? l->ts_exc_info : l->ts_exc_type;
  struct pst__mem_iov iov[2 * CHUNK];
  uint8_t ok[2 * CHUNK];
  int r;

  if (n == 0 || n > CHUNK)
    return n ? -EINVAL : 0;
  for (size_t i = 0; i < n; i++) {
    iov[2 * i] = (struct pst__mem_iov){e[i]->tstate + (uint64_t)l->ts_cur_exc,
                                       &e[i]->cur, 8};
    iov[2 * i + 1] =
        (struct pst__mem_iov){e[i]->tstate + (uint64_t)top_off, &e[i]->top, 8};
  }
  r = pst__mem_readv_each(mem, iov, 2 * n, ok);
  if (r < 0)
    return r;
  for (size_t i = 0; i < n; i++) {
    struct pst__py_exc *x = e[i];
    x->err = ok[2 * i] && ok[2 * i + 1] ? 0 : -EFAULT;
    if (x->err)
      continue;
    if (x->cur) { /* being raised: an instance from 3.12 on, else its type */
      x->obj = x->cur;
      x->inst = py->version_hex >= 0x030c;
      x->top = 0;
    } else if (l->ts_exc_info == PST_NOFF) { /* 2.7, 3.6: the type handled */
      x->obj = x->top != py->none ? x->top : 0;
      x->top = 0;
    }
  }
  return 0;
}

/* The next round: each thread state still looking reads its current
 * _PyErr_StackItem; sys.exc_info() takes the innermost that holds one (a
 * generator's own item is empty until it handles one itself). */
static int read_items(struct pst__py *py, struct pst__mem *mem,
                      struct pst__py_exc **e, size_t n, int *more) {
  const struct pst__py_layout *l = &py->lay;
  struct pst__mem_iov iov[CHUNK];
  uint8_t ok[CHUNK], items[CHUNK * ITEM_READ] = {0};
  size_t k = 0, at[CHUNK];
  int r;

  for (size_t i = 0; i < n; i++)
    if (!e[i]->err && e[i]->top) {
      iov[k] =
          (struct pst__mem_iov){e[i]->top, items + k * ITEM_READ, ITEM_READ};
      at[k++] = i;
    }
  if (!k)
    return 0;
  r = pst__mem_readv_each(mem, iov, k, ok);
  if (r < 0)
    return r;
  for (size_t j = 0; j < k; j++) {
    struct pst__py_exc *x = e[at[j]];
    uint64_t v;
    if (!ok[j]) {
      x->err = -EFAULT;
      continue;
    }
    v = pst__py_u64_at(items + j * ITEM_READ, (size_t)l->ei_value);
    if (v && v != py->none) {
      x->obj = v;
      x->inst = py->version_hex >= 0x030b; /* exc_value, else exc_type */
      x->top = 0;
      continue;
    }
    x->top = pst__py_u64_at(items + j * ITEM_READ, (size_t)l->ei_previous);
    *more |= x->top != 0;
    /* The chain ends at the thread's own item, inside its state; one that
     * ends at a generator's was read after that generator yielded (which
     * unlinks its item): read it again. */
    if (!x->top && (iov[j].addr < x->tstate ||
                    iov[j].addr >= x->tstate + (uint64_t)l->ts_size))
      x->err = PST_ETORN;
  }
  return 0;
}

/* e[0..n)'s chains, from their heads to the item holding one (or the
 * end). */
static int read_chains(struct pst__py *py, struct pst__mem *mem,
                       struct pst__py_exc **e, size_t n) {
  int more = 1, err;

  for (size_t i = 0; i < n; i++) {
    e[i]->obj = e[i]->cur = e[i]->top = 0;
    e[i]->inst = 0;
  }
  err = read_heads(py, mem, e, n);
  for (int round = 0; !err && more && round < ITEMS_MAX; round++) {
    more = 0;
    err = read_items(py, mem, e, n, &more);
  }
  return err;
}

int pst__py_exceptions(struct pst__py *py, struct pst__mem *mem,
                       struct pst__py_exc **e, size_t n) {
  const struct pst__py_layout *l = &py->lay;
  int err;

  if (l->ts_cur_exc == PST_NOFF ||
      (l->ts_exc_info == PST_NOFF && l->ts_exc_type == PST_NOFF) || !py->none)
    return -ENOSYS;
  for (size_t off = 0; off < n; off += CHUNK) {
    size_t m = n - off < CHUNK ? n - off : CHUNK;
    err = read_chains(py, mem, e + off, m);
    /* Chains that changed while read, again (as a group). */
    for (int again = 0; !err && again < TORN_RETRIES; again++) {
      struct pst__py_exc *torn[CHUNK];
      size_t k = 0;
      for (size_t i = off; i < off + m; i++)
        if (e[i]->err == PST_ETORN)
          torn[k++] = e[i];
      if (!k)
        break;
      err = read_chains(py, mem, torn, k);
    }
    if (err)
      return err;
  }
  return 0;
}

int pst__py_gc_flag_addr(const struct pst__py *py, uint64_t *addr) {
  const struct pst__py_layout *l = &py->lay;

  if (l->is_gc_collecting != PST_NOFF && py->interp)
    *addr = py->interp + (uint64_t)l->is_gc_collecting;
  else if (l->rt_gc_collecting != PST_NOFF && py->runtime)
    *addr = py->runtime + (uint64_t)l->rt_gc_collecting;
  else
    return -ENOSYS;
  return 0;
}

int pst__py_gc_collecting(struct pst__py *py, struct pst__mem *mem) {
  int32_t collecting = 0;
  uint64_t at;
  int err = pst__py_gc_flag_addr(py, &at);

  if (err == 0)
    err = pst__mem_read(mem, at, &collecting, sizeof(collecting));
  return err ? err : collecting != 0;
}
