/* tsd.c: reads the libc thread-specific-data layout (struct pst__tsd_layout)
 * out of pthread_getspecific by evaluating it symbolically, any arch.
 *
 * The function is run twice with KEY, its argument, in a range: [0, 31]
 * follows glibc's first-level path (specific_1stblock in struct pthread) and
 * every key of musl; [32, 1023] follows glibc's second-level path
 * (specific[key >> 5][key & 31]); 32 and 1024 are glibc's
 * PTHREAD_KEY_2NDLEVEL_SIZE and PTHREAD_KEYS_MAX. The value returned at the
 * ret must then be a load whose address has one of the shapes
 *
 *   TP + offset + m*KEY                     direct (glibc)
 *   [TP + offset] + m*KEY                   indirect (musl: self->tsd[key])
 *   [TP + l2_offset + 8*HI] + m*LO + data   glibc level 2
 *
 * with HI = KEY >> 5 and LO = KEY & 31.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* glibc's second level: 32 keys per block, 8-byte block pointers. */
#define L2_SPLIT 5
#define L2_PTR_SIZE 8

/* Whether v is TP + c with nothing else; sets *c. */
static int is_tp_plus(const struct pst__dx_val *v, int64_t *c) {
  struct pst__dx_val rest = *v;

  rest.tp = 0;
  rest.c = 0;
  if (!v->known || v->tp != 1 || !pst__dx_is_const(&rest))
    return 0;
  *c = (int64_t)v->c;
  return 1;
}

/* The 8-byte load the function returns, or NULL with why set. */
static const struct pst__dx_load *returned_load(const struct pst__dx_eval *ev,
                                                char *why, size_t why_len) {
  const struct pst__dx_val *v = &ev->reg[ev->ops->ret_slot];
  const struct pst__dx_load *l = pst__dx_pure_load(ev, v);

  if (l == NULL || l->size != 8) {
    pst__dx_why(why, why_len,
                "%s at the ret is not an 8-byte value read from memory",
                ev->ops->ret_name);
    return NULL;
  }
  return l;
}

/* Level one: the load's address is TP + offset + m*KEY, or
 * [TP + offset] + m*KEY. */
static int match_level1(const struct pst__dx_eval *ev,
                        struct pst__tsd_layout *out, char *why,
                        size_t why_len) {
  const struct pst__dx_load *l = returned_load(ev, why, why_len), *base;
  struct pst__dx_val a;

  if (l == NULL)
    return -EINVAL;
  a = l->addr;
  out->multiplier = (int64_t)a.key;
  a.key = 0;
  if (out->multiplier > 0 && is_tp_plus(&a, &out->offset))
    return 0;
  base = pst__dx_pure_load(ev, &a);
  if (out->multiplier > 0 && base != NULL && base->size == 8 &&
      is_tp_plus(&base->addr, &out->offset)) {
    out->indirect = 1;
    return 0;
  }
  pst__dx_why(why, why_len,
              "%s at the ret is not read at TP + offset + m*key nor at "
              "*(TP + offset) + m*key",
              ev->ops->ret_name);
  return -EINVAL;
}

/* Level two: the load's address is [TP + l2_offset + 8*HI] + m*LO + data,
 * with m the multiplier of level one. Returns 1 when it matches. */
static int match_level2(const struct pst__dx_eval *ev,
                        struct pst__tsd_layout *out) {
  const struct pst__dx_load *l = returned_load(ev, NULL, 0), *block;
  struct pst__dx_val a, b;

  if (l == NULL || ev->split != L2_SPLIT)
    return 0;
  a = l->addr;
  if (a.key != 0 || a.tp != 0 || a.hi != 0 || (int64_t)a.lo != out->multiplier)
    return 0;
  if (a.load == 0 || ev->loads[a.load - 1].size != 8)
    return 0;
  block = &ev->loads[a.load - 1];
  b = block->addr;
  if (b.key != 0 || b.lo != 0 || b.load != 0 || b.hi != L2_PTR_SIZE)
    return 0;
  b.hi = 0;
  if (!is_tp_plus(&b, &out->l2_offset))
    return 0;
  out->l2_data = (int64_t)a.c;
  return 1;
}

/* Runs the function with KEY in [key_min, key_max] up to its ret. */
static int run_range(struct pst__dx_eval *ev, const struct pst__disasm_ops *ops,
                     const struct pst__dx_code *code, uint64_t key_min,
                     uint64_t key_max, char *why, size_t why_len) {
  struct pst__dx_stop stop;

  pst__dx_init(ev, ops, NULL, NULL);
  ev->key_min = key_min;
  ev->key_max = key_max;
  ev->reg[ops->arg_slot] = pst__dx_key();
  return pst__dx_run(ev, code, PST_DX_UNTIL_RET, &stop, why, why_len);
}

int pst__dx_tsd_layout(const struct pst__disasm_ops *ops,
                       const struct pst__dx_code *code,
                       struct pst__tsd_layout *out, char *why, size_t why_len) {
  struct pst__tsd_layout l = {0};
  struct pst__dx_eval *ev;
  int err;

  /* A few KiB: too much for the stack of a libuv worker thread. */
  ev = malloc(sizeof(*ev));
  if (ev == NULL)
    return -ENOMEM;
  err = run_range(ev, ops, code, 0, 31, why, why_len);
  if (err == 0)
    err = match_level1(ev, &l, why, why_len);
  if (err != 0)
    goto out;
  /* The second level is optional: musl has none, and a truncated copy of
   * glibc's function may not reach it. */
  if (run_range(ev, ops, code, 32, 1023, NULL, 0) == 0 && match_level2(ev, &l))
    l.has_l2 = 1;
  else
    l.l2_offset = l.l2_data = 0;
  *out = l;
out:
  free(ev);
  return err;
}
