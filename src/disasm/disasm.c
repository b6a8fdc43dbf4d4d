/* disasm.c: the public entry points of disasm.h: check the arguments, pick
 * the arch's evaluator (a struct pst__disasm_ops) and run the decoder. */

#include <errno.h>
#include <stddef.h>

#include "internal.h"

/* The evaluator for arch, or NULL (with why set) when there is none. */
static const struct pst__disasm_ops *ops_for(enum pst__arch arch, char *why,
                                             size_t why_len) {
  switch (arch) {
  case PST_ARCH_X86_64:
    return &pst__disasm_x86_64_ops;
  case PST_ARCH_AARCH64:
    return &pst__disasm_aarch64_ops;
  }
  pst__dx_why(why, why_len, "no decoder for arch %d", (int)arch);
  return NULL;
}

/* Checks what every entry point shares and fills *c. */
static int prepare(enum pst__arch arch, const uint8_t *code, size_t len,
                   uint64_t addr, const struct pst__disasm_ops **ops,
                   struct pst__dx_code *c, char *why, size_t why_len) {
  *ops = ops_for(arch, why, why_len);
  if (*ops == NULL)
    return -ENOTSUP;
  if (code == NULL && len != 0) {
    pst__dx_why(why, why_len, "no code");
    return -EINVAL;
  }
  c->bytes = code;
  c->len = len;
  c->addr = addr;
  return 0;
}

int pst__disasm_tsd_layout(enum pst__arch arch, const uint8_t *code, size_t len,
                           uint64_t addr, struct pst__tsd_layout *out,
                           char *why, size_t why_len) {
  const struct pst__disasm_ops *ops;
  struct pst__dx_code c;
  int err;

  if (out == NULL)
    return -EINVAL;
  err = prepare(arch, code, len, addr, &ops, &c, why, why_len);
  if (err != 0)
    return err;
  return pst__dx_tsd_layout(ops, &c, out, why, why_len);
}

int pst__disasm_tss_key(enum pst__arch arch, const uint8_t *code, size_t len,
                        uint64_t addr, pst__disasm_read64_fn read64, void *arg,
                        uint64_t *out, int *is_load, char *shape,
                        size_t shape_len, char *why, size_t why_len) {
  const struct pst__disasm_ops *ops;
  struct pst__dx_code c;
  int err;

  if (out == NULL || is_load == NULL)
    return -EINVAL;
  err = prepare(arch, code, len, addr, &ops, &c, why, why_len);
  if (err != 0)
    return err;
  return pst__dx_tss_key(ops, &c, read64, arg, out, is_load, shape, shape_len,
                         why, why_len);
}

int pst__disasm_global_getter(enum pst__arch arch, const uint8_t *code,
                              size_t len, uint64_t addr,
                              pst__disasm_read64_fn read64, void *arg,
                              uint64_t *out, char *why, size_t why_len) {
  const struct pst__disasm_ops *ops;
  struct pst__dx_code c;
  int err;

  if (out == NULL)
    return -EINVAL;
  err = prepare(arch, code, len, addr, &ops, &c, why, why_len);
  if (err != 0)
    return err;
  return pst__dx_global_getter(ops, &c, read64, arg, out, why, why_len);
}

int pst__disasm_tls_getter(enum pst__arch arch, const uint8_t *code, size_t len,
                           uint64_t addr, pst__disasm_read64_fn read64,
                           void *arg, int64_t *tp_offset, char *shape,
                           size_t shape_len, char *why, size_t why_len) {
  const struct pst__disasm_ops *ops;
  struct pst__dx_code c;
  int err;

  if (tp_offset == NULL)
    return -EINVAL;
  err = prepare(arch, code, len, addr, &ops, &c, why, why_len);
  if (err != 0)
    return err;
  return pst__dx_tls_getter(ops, &c, read64, arg, tp_offset, shape, shape_len,
                            why, why_len);
}
