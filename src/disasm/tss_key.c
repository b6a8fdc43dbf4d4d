/* tss_key.c: finds where CPython keeps its TSS key, by evaluating
 * PyGILState_GetThisThreadState up to its first call or jump, or (3.15+,
 * a C11 thread-local instead of a key) which thread-pointer offset it reads,
 * and which global a getter such as PyInterpreterState_Head returns; any
 * arch.
 *
 * Neither needs the shape of the code, only the value of one register at
 * one point: the first argument at the call (a constant address, or a value
 * read from one), the return value at the ret (a value read from a constant
 * address). Pointers the code loads and then dereferences or offsets are GOT
 * slots; read64 supplies their contents (see pst__dx_resolve).
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

/* Where the argument came from. */
struct source {
  uint64_t addr; /* the address, or where the value was read */
  int is_load;   /* 1: the value read at addr; 0: addr itself */
  int size;      /* bytes read, when is_load */
  int got;       /* a GOT pointer went into addr */
};

/* Says in why that reg, at the stop, is `problem`. Returns -EINVAL. */
static int not_constant(const struct pst__dx_eval *ev, const char *reg,
                        const char *problem, const struct pst__dx_stop *stop,
                        char *why, size_t why_len) {
  char detail[64] = "";

  /* The number, not strerror(), which is not thread-safe. */
  if (ev->read_err != 0)
    snprintf(detail, sizeof(detail),
             " (reading a GOT slot failed: read64 returned %d)", ev->read_err);
  pst__dx_why(why, why_len, "%s at the %s at 0x%" PRIx64 " is %s%s", reg,
              stop->mnemonic, stop->addr, problem, detail);
  return -EINVAL;
}

/* Classifies v as an address or a value read from one. A value read with
 * nothing added is taken as the argument itself (the key, is_load 1), even
 * when 8 bytes wide: the caller sees where it was read and can judge. */
static int classify(struct pst__dx_eval *ev, struct pst__dx_val v,
                    struct source *src) {
  const struct pst__dx_load *l = pst__dx_pure_load(ev, &v);

  if (l != NULL) {
    if (!pst__dx_is_const(&l->addr))
      return -EINVAL;
    src->addr = l->addr.c;
    src->is_load = 1;
    src->size = l->size;
    src->got = l->addr.got;
    return 0;
  }
  /* An address computed from a GOT pointer: fold the pointer in. */
  pst__dx_resolve(ev, &v);
  if (!pst__dx_is_const(&v))
    return -EINVAL;
  src->addr = v.c;
  src->is_load = 0;
  src->size = 0;
  src->got = v.got;
  return 0;
}

static void describe(const struct pst__dx_eval *ev, const struct source *src,
                     const struct pst__dx_stop *stop, char *shape,
                     size_t shape_len) {
  const char *got = src->got ? " (GOT-relative)" : "";

  if (shape == NULL || shape_len == 0)
    return;
  if (src->is_load)
    snprintf(shape, shape_len, "%s = %d-byte load from 0x%" PRIx64 "%s; %s",
             ev->ops->arg_name, src->size, src->addr, got, stop->mnemonic);
  else
    snprintf(shape, shape_len, "%s = 0x%" PRIx64 "%s; %s", ev->ops->arg_name,
             src->addr, got, stop->mnemonic);
}

int pst__dx_tss_key(const struct pst__disasm_ops *ops,
                    const struct pst__dx_code *code,
                    pst__disasm_read64_fn read64, void *arg, uint64_t *out,
                    int *is_load, char *shape, size_t shape_len, char *why,
                    size_t why_len) {
  struct pst__dx_stop stop;
  struct pst__dx_eval *ev;
  struct source src;
  int err;

  /* A few KiB: too much for the stack of a libuv worker thread. */
  ev = malloc(sizeof(*ev));
  if (ev == NULL)
    return -ENOMEM;
  pst__dx_init(ev, ops, read64, arg);
  err = pst__dx_run(ev, code, PST_DX_UNTIL_BRANCH, &stop, why, why_len);
  if (err != 0)
    goto out;
  err = classify(ev, ev->reg[ops->arg_slot], &src);
  if (err != 0) {
    err = not_constant(ev, ops->arg_name,
                       "neither a constant address nor read from one", &stop,
                       why, why_len);
    goto out;
  }
  *out = src.addr;
  *is_load = src.is_load;
  describe(ev, &src, &stop, shape, shape_len);
out:
  free(ev);
  return err;
}

/* Runs code up to its ret in a new evaluator (*evp, for the caller to
 * free; NULL on -ENOMEM) and gives in *l the load the return value is, or
 * NULL when it is not one value read from memory. 0 or -errno (why). */
static int run_getter(const struct pst__disasm_ops *ops,
                      const struct pst__dx_code *code,
                      pst__disasm_read64_fn read64, void *arg,
                      struct pst__dx_eval **evp, struct pst__dx_stop *stop,
                      const struct pst__dx_load **l, char *why,
                      size_t why_len) {
  int err;

  *l = NULL;
  *evp = malloc(sizeof(**evp));
  if (*evp == NULL)
    return -ENOMEM;
  pst__dx_init(*evp, ops, read64, arg);
  err = pst__dx_run(*evp, code, PST_DX_UNTIL_RET, stop, why, why_len);
  if (err == 0)
    *l = pst__dx_pure_load(*evp, &(*evp)->reg[ops->ret_slot]);
  return err;
}

int pst__dx_global_getter(const struct pst__disasm_ops *ops,
                          const struct pst__dx_code *code,
                          pst__disasm_read64_fn read64, void *arg,
                          uint64_t *out, char *why, size_t why_len) {
  const struct pst__dx_load *l;
  struct pst__dx_stop stop;
  struct pst__dx_eval *ev;
  int err;

  err = run_getter(ops, code, read64, arg, &ev, &stop, &l, why, why_len);
  if (err == 0 && (l == NULL || !pst__dx_is_const(&l->addr)))
    err = not_constant(ev, ops->ret_name, "not read from a constant address",
                       &stop, why, why_len);
  if (err == 0)
    *out = l->addr.c;
  free(ev);
  return err;
}

int pst__dx_tls_getter(const struct pst__disasm_ops *ops,
                       const struct pst__dx_code *code,
                       pst__disasm_read64_fn read64, void *arg,
                       int64_t *tp_offset, char *shape, size_t shape_len,
                       char *why, size_t why_len) {
  const struct pst__dx_load *l;
  struct pst__dx_stop stop;
  struct pst__dx_eval *ev;
  int err;

  err = run_getter(ops, code, read64, arg, &ev, &stop, &l, why, why_len);
  /* The thread pointer plus a constant (local-exec: in the code; initial-
   * exec: read from a GOT slot, which the load folded in), read as a
   * pointer: nothing else. */
  if (err == 0 &&
      (l == NULL || l->size != 8 || !l->addr.known || l->addr.load ||
       l->addr.tp != 1 || l->addr.key || l->addr.hi || l->addr.lo))
    err = not_constant(ev, ops->ret_name,
                       "not a pointer read at the thread pointer plus a "
                       "constant",
                       &stop, why, why_len);
  if (err == 0) {
    *tp_offset = (int64_t)l->addr.c;
    if (shape != NULL && shape_len > 0)
      snprintf(shape, shape_len,
               "%s = 8-byte load from tp%s0x%" PRIx64 "%s; %s", ops->ret_name,
               *tp_offset < 0 ? "-" : "+",
               *tp_offset < 0 ? -(uint64_t)*tp_offset : (uint64_t)*tp_offset,
               l->addr.got ? " (offset from the GOT)" : "", stop.mnemonic);
  }
  free(ev);
  return err;
}
