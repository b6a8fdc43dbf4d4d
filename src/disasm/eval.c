/* eval.c: the arch-neutral half of the symbolic evaluator: the expression
 * algebra of internal.h and the loop that walks one path through the code. */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* ---- Values -------------------------------------------------------------- */

struct pst__dx_val pst__dx_unknown(void) {
  struct pst__dx_val v = {0};
  return v;
}

struct pst__dx_val pst__dx_const(uint64_t c) {
  struct pst__dx_val v = {.known = 1, .c = c};
  return v;
}

struct pst__dx_val pst__dx_key(void) {
  struct pst__dx_val v = {.known = 1, .key = 1};
  return v;
}

struct pst__dx_val pst__dx_tp(void) {
  struct pst__dx_val v = {.known = 1, .tp = 1};
  return v;
}

/* Whether v has no term but (possibly) the constant. */
static int no_terms(const struct pst__dx_val *v) {
  return v->key == 0 && v->tp == 0 && v->hi == 0 && v->lo == 0 && v->load == 0;
}

int pst__dx_is_const(const struct pst__dx_val *v) {
  return v->known && no_terms(v);
}

int pst__dx_is_key(const struct pst__dx_val *v) {
  struct pst__dx_val rest = *v;

  rest.key = 0;
  return v->known && v->key == 1 && v->c == 0 && no_terms(&rest);
}

/* Whether v is exactly KEY >> split (want_hi) or KEY & mask (!want_hi). */
static int is_split(const struct pst__dx_val *v, int want_hi) {
  struct pst__dx_val rest = *v;

  rest.hi = rest.lo = 0;
  return v->known && v->c == 0 && no_terms(&rest) &&
         (want_hi ? v->hi == 1 && v->lo == 0 : v->lo == 1 && v->hi == 0);
}

const struct pst__dx_load *pst__dx_pure_load(const struct pst__dx_eval *ev,
                                             const struct pst__dx_val *v) {
  struct pst__dx_val rest = *v;

  rest.load = 0;
  if (!v->known || v->load == 0 || v->c != 0 || !no_terms(&rest))
    return NULL;
  return &ev->loads[v->load - 1];
}

/* ---- Arithmetic ---------------------------------------------------------- */

int pst__dx_resolve(struct pst__dx_eval *ev, struct pst__dx_val *v) {
  struct pst__dx_load *l;
  int err;

  if (v->load == 0)
    return 1;
  l = &ev->loads[v->load - 1];
  if (l->state == 0) {
    /* Memoised, so that the caller's read64 sees each slot once. */
    l->state = -1;
    if (ev->read64 != NULL && l->size == 8 && pst__dx_is_const(&l->addr)) {
      err = ev->read64(ev->arg, l->addr.c, &l->value);
      if (err == 0)
        l->state = 1;
      else if (ev->read_err == 0)
        ev->read_err = err;
    }
  }
  if (l->state != 1)
    return 0;
  v->c += l->value;
  v->load = 0;
  v->got = 1;
  return 1;
}

struct pst__dx_val pst__dx_add(struct pst__dx_eval *ev, struct pst__dx_val a,
                               struct pst__dx_val b) {
  struct pst__dx_val r;

  if (!a.known || !b.known)
    return pst__dx_unknown();
  /* Two loaded terms do not fit; a GOT pointer among them can be folded. */
  if (a.load && b.load) {
    pst__dx_resolve(ev, &a);
    pst__dx_resolve(ev, &b);
    if (a.load && b.load)
      return pst__dx_unknown();
  }
  r.known = 1;
  r.got = a.got | b.got;
  r.load = a.load ? a.load : b.load;
  r.c = a.c + b.c;
  r.key = a.key + b.key;
  r.tp = a.tp + b.tp;
  r.hi = a.hi + b.hi;
  r.lo = a.lo + b.lo;
  return r;
}

struct pst__dx_val pst__dx_mul(struct pst__dx_eval *ev, struct pst__dx_val a,
                               uint64_t k) {
  if (k == 0)
    return pst__dx_const(0);
  if (!a.known || k == 1)
    return a;
  /* A loaded term is kept with coefficient 1 only. */
  if (!pst__dx_resolve(ev, &a))
    return pst__dx_unknown();
  a.c *= k;
  a.key *= k;
  a.tp *= k;
  a.hi *= k;
  a.lo *= k;
  return a;
}

struct pst__dx_val pst__dx_shl(struct pst__dx_eval *ev, struct pst__dx_val a,
                               unsigned n) {
  return n < 64 ? pst__dx_mul(ev, a, (uint64_t)1 << n) : pst__dx_const(0);
}

/* Sets the width of the hi/lo split of KEY, which must be the same for every
 * shift and mask on the path (glibc splits at 5: 32 keys per block). */
static int use_split(struct pst__dx_eval *ev, unsigned n) {
  if (n == 0 || n >= 32 || (ev->split != 0 && ev->split != n))
    return 0;
  ev->split = n;
  return 1;
}

struct pst__dx_val pst__dx_shr(struct pst__dx_eval *ev, struct pst__dx_val a,
                               unsigned n) {
  struct pst__dx_val r = {.known = 1, .hi = 1};

  if (n == 0)
    return a;
  if (pst__dx_is_const(&a))
    return pst__dx_const(n < 64 ? a.c >> n : 0);
  if (pst__dx_is_key(&a) && use_split(ev, n))
    return r;
  return pst__dx_unknown();
}

struct pst__dx_val pst__dx_and(struct pst__dx_eval *ev, struct pst__dx_val a,
                               uint64_t mask) {
  struct pst__dx_val r = {.known = 1, .lo = 1};
  unsigned bits;

  if (mask == 0)
    return pst__dx_const(0);
  if (pst__dx_is_const(&a))
    return pst__dx_const(a.c & mask);
  /* Only low-bit masks 2^bits - 1 say something about KEY. */
  if (!a.known || (mask & (mask + 1)) != 0)
    return pst__dx_unknown();
  bits = (unsigned)__builtin_popcountll(mask);
  /* A mask of 32 bits or more keeps what fits in 32 bits whole: KEY (a
   * pthread_key_t), KEY >> split, a 32-bit load. */
  if (bits == 64)
    return a;
  if (bits >= 32)
    return pst__dx_trunc32(ev, a);
  if (pst__dx_is_key(&a))
    return use_split(ev, bits) ? r : pst__dx_unknown();
  /* KEY & (2^split - 1) has split bits, KEY >> split 32 - split. */
  if (is_split(&a, 1) && bits >= 32 - ev->split)
    return a;
  if (is_split(&a, 0) && bits >= ev->split)
    return a;
  return pst__dx_unknown();
}

struct pst__dx_val pst__dx_trunc32(const struct pst__dx_eval *ev,
                                   struct pst__dx_val a) {
  if (!a.known)
    return a;
  if (pst__dx_is_const(&a))
    return pst__dx_const((uint32_t)a.c);
  /* The thread pointer and 8-byte loads (pointers) do not fit in 32 bits. */
  if (a.tp != 0 || (a.load && ev->loads[a.load - 1].size > 4))
    return pst__dx_unknown();
  /* What is left is KEY arithmetic or a 32-bit load plus small constants:
   * offsets a libc computes from a key below 1024, which do not wrap. */
  return a;
}

struct pst__dx_val pst__dx_sext(const struct pst__dx_eval *ev,
                                struct pst__dx_val a, int bytes) {
  unsigned sh = 64 - 8 * (unsigned)bytes;

  if (pst__dx_is_const(&a))
    return pst__dx_const((uint64_t)((int64_t)(a.c << sh) >> sh));
  /* A key or an int read from memory is non-negative and stays as it is;
   * narrower values are not tracked. */
  return bytes == 4 ? pst__dx_trunc32(ev, a) : pst__dx_unknown();
}

struct pst__dx_val pst__dx_load(struct pst__dx_eval *ev,
                                struct pst__dx_val addr, int size) {
  struct pst__dx_val v = {.known = 1};
  struct pst__dx_load *l;

  if (!addr.known || ev->nloads == PST_DX_NLOADS)
    return pst__dx_unknown();
  /* Dereferencing a loaded pointer: it was a GOT slot if read64 knows it. */
  pst__dx_resolve(ev, &addr);
  l = &ev->loads[ev->nloads++];
  l->addr = addr;
  l->size = size;
  l->state = 0;
  l->value = 0;
  v.load = (uint16_t)ev->nloads;
  return v;
}

/* ---- Branch decisions ---------------------------------------------------- */

/* Whether cc holds for x compared with y (as unsigned uy, signed sy). */
static int holds(enum pst__dx_cc cc, uint64_t x, uint64_t uy, int64_t sy) {
  int64_t sx = (int64_t)x; /* keys are far below 2^63 */

  switch (cc) {
  case PST_DX_CC_EQ:
    return x == uy;
  case PST_DX_CC_NE:
    return x != uy;
  case PST_DX_CC_UGT:
    return x > uy;
  case PST_DX_CC_UGE:
    return x >= uy;
  case PST_DX_CC_ULT:
    return x < uy;
  case PST_DX_CC_ULE:
    return x <= uy;
  case PST_DX_CC_SGT:
    return sx > sy;
  case PST_DX_CC_SGE:
    return sx >= sy;
  case PST_DX_CC_SLT:
    return sx < sy;
  case PST_DX_CC_SLE:
    return sx <= sy;
  case PST_DX_CC_NONE:
    break;
  }
  return -1;
}

/* KEY against the constant rhs, for every KEY of the range. */
static int decide_key(const struct pst__dx_eval *ev, uint64_t rhs, int bits,
                      enum pst__dx_cc cc) {
  uint64_t uy = bits == 32 ? (uint32_t)rhs : rhs;
  int64_t sy = bits == 32 ? (int32_t)rhs : (int64_t)rhs;
  int at_min, at_max;

  /* Every predicate but EQ/NE is monotonic in KEY: the two ends of the
   * range decide it. EQ/NE agree at both ends yet differ inside when the
   * constant lies strictly within the range. */
  at_min = holds(cc, ev->key_min, uy, sy);
  at_max = holds(cc, ev->key_max, uy, sy);
  if ((cc == PST_DX_CC_EQ || cc == PST_DX_CC_NE) && uy > ev->key_min &&
      uy < ev->key_max)
    return -1;
  return at_min == at_max ? at_min : -1;
}

/* A value known only to be non-zero, against 0. Signed order is unknown. */
static int decide_nonzero(enum pst__dx_cc cc) {
  switch (cc) {
  case PST_DX_CC_NE:
  case PST_DX_CC_UGT:
  case PST_DX_CC_UGE:
    return 1;
  case PST_DX_CC_EQ:
  case PST_DX_CC_ULT:
  case PST_DX_CC_ULE:
    return 0;
  default:
    return -1;
  }
}

/* Two equal values. */
static int decide_equal(enum pst__dx_cc cc) {
  switch (cc) {
  case PST_DX_CC_EQ:
  case PST_DX_CC_UGE:
  case PST_DX_CC_ULE:
  case PST_DX_CC_SGE:
  case PST_DX_CC_SLE:
    return 1;
  case PST_DX_CC_NONE:
    return -1;
  default:
    return 0;
  }
}

int pst__dx_decide(const struct pst__dx_eval *ev, const struct pst__dx_val *lhs,
                   const struct pst__dx_val *rhs, int bits,
                   enum pst__dx_cc cc) {
  if (cc == PST_DX_CC_NONE || !lhs->known || !rhs->known)
    return -1;
  if (pst__dx_is_key(lhs) && pst__dx_is_const(rhs))
    return decide_key(ev, rhs->c, bits, cc);
  if (lhs->load != 0 && pst__dx_is_const(rhs) && rhs->c == 0)
    return decide_nonzero(cc);
  if (lhs->load != 0 && rhs->load != 0)
    return decide_equal(cc);
  return -1;
}

/* ---- Walking a path ------------------------------------------------------ */

void pst__dx_why(char *why, size_t why_len, const char *fmt, ...) {
  va_list ap;

  if (why == NULL || why_len == 0)
    return;
  va_start(ap, fmt);
  vsnprintf(why, why_len, fmt, ap);
  va_end(ap);
}

void pst__dx_init(struct pst__dx_eval *ev, const struct pst__disasm_ops *ops,
                  pst__disasm_read64_fn read64, void *arg) {
  memset(ev, 0, sizeof(*ev));
  ev->ops = ops;
  ev->key_min = 0;
  ev->key_max = UINT32_MAX;
  ev->read64 = read64;
  ev->arg = arg;
}

/* Opens a capstone handle in detail mode for ops' arch; on failure nothing
 * is left open. */
static int open_cs(const struct pst__disasm_ops *ops, csh *h, char *why,
                   size_t why_len) {
  cs_err cerr;

  cerr = cs_open(ops->cs_arch, ops->cs_mode, h);
  if (cerr == CS_ERR_OK) {
    cerr = cs_option(*h, CS_OPT_DETAIL, CS_OPT_ON);
    if (cerr != CS_ERR_OK)
      cs_close(h);
  }
  if (cerr == CS_ERR_OK)
    return 0;
  pst__dx_why(why, why_len, "capstone (%s): %s", ops->name, cs_strerror(cerr));
  if (cerr == CS_ERR_MEM)
    return -ENOMEM;
  /* A capstone built without this arch. */
  if (cerr == CS_ERR_ARCH || cerr == CS_ERR_MODE)
    return -ENOTSUP;
  return -EINVAL;
}

/* The cursor of cs_disasm_iter. */
struct cursor {
  const uint8_t *p;
  size_t left;
  uint64_t pc;
};

/* Moves cur to target, which must lie inside the code. */
static int seek(const struct pst__dx_code *code, uint64_t target,
                struct cursor *cur) {
  if (target < code->addr || target - code->addr >= code->len)
    return -EINVAL;
  cur->p = code->bytes + (target - code->addr);
  cur->left = code->len - (size_t)(target - code->addr);
  cur->pc = target;
  return 0;
}

static const char *until_name(enum pst__dx_until until) {
  return until == PST_DX_UNTIL_RET ? "ret" : "call or jmp";
}

/* Decides what the path does after insn, whose effect is flow: 1 to stop
 * there, 0 to go on at *cur, or -EINVAL with why set. */
static int follow(const struct pst__dx_code *code, enum pst__dx_until until,
                  const cs_insn *insn, const struct pst__dx_flow *flow,
                  struct cursor *cur, char *why, size_t why_len) {
  int stop_here;

  switch (flow->kind) {
  case PST_DX_NEXT:
    return 0;
  case PST_DX_GOTO:
    break;
  case PST_DX_JUMP:
    if (until == PST_DX_UNTIL_BRANCH)
      return 1;
    if (!flow->has_target) {
      pst__dx_why(why, why_len, "indirect %s at 0x%" PRIx64, insn->mnemonic,
                  insn->address);
      return -EINVAL;
    }
    break;
  case PST_DX_CALL:
  case PST_DX_RET:
    stop_here = (flow->kind == PST_DX_RET) == (until == PST_DX_UNTIL_RET);
    if (stop_here)
      return 1;
    pst__dx_why(why, why_len, "%s at 0x%" PRIx64 " before any %s",
                insn->mnemonic, insn->address, until_name(until));
    return -EINVAL;
  case PST_DX_TRAP:
    pst__dx_why(why, why_len, "%s at 0x%" PRIx64 " ends the path",
                insn->mnemonic, insn->address);
    return -EINVAL;
  }
  if (seek(code, flow->target, cur) != 0) {
    pst__dx_why(why, why_len,
                "%s at 0x%" PRIx64 " leaves the code for 0x%" PRIx64
                " before any %s",
                insn->mnemonic, insn->address, flow->target, until_name(until));
    return -EINVAL;
  }
  return 0;
}

/* Decodes and applies the instruction at cur: 1 to stop, 0 to go on, or a
 * negative errno with why set. */
static int one_step(struct pst__dx_eval *ev, const struct pst__dx_code *code,
                    enum pst__dx_until until, csh h, cs_insn *insn,
                    struct cursor *cur, struct pst__dx_flow *flow, char *why,
                    size_t why_len) {
  if (cur->left == 0) {
    pst__dx_why(why, why_len,
                "EOF: the %zu bytes at 0x%" PRIx64 " end before any %s",
                code->len, code->addr, until_name(until));
    return -EINVAL;
  }
  if (!cs_disasm_iter(h, &cur->p, &cur->left, &cur->pc, insn)) {
    pst__dx_why(why, why_len, "invalid or truncated instruction at 0x%" PRIx64,
                cur->pc);
    return -EINVAL;
  }
  flow->kind = PST_DX_NEXT;
  flow->has_target = 0;
  flow->target = 0;
  ev->ops->step(ev, insn, flow);
  return follow(code, until, insn, flow, cur, why, why_len);
}

int pst__dx_run(struct pst__dx_eval *ev, const struct pst__dx_code *code,
                enum pst__dx_until until, struct pst__dx_stop *stop, char *why,
                size_t why_len) {
  struct cursor cur = {code->bytes, code->len, code->addr};
  struct pst__dx_flow flow;
  cs_insn *insn = NULL;
  unsigned steps;
  csh h;
  int err;

  err = open_cs(ev->ops, &h, why, why_len);
  if (err != 0)
    return err;
  insn = cs_malloc(h);
  if (insn == NULL) {
    err = -ENOMEM;
    goto out;
  }
  for (steps = 0; steps < PST_DX_MAX_STEPS; steps++) {
    err = one_step(ev, code, until, h, insn, &cur, &flow, why, why_len);
    if (err < 0)
      goto out;
    if (err == 1)
      break;
  }
  if (steps == PST_DX_MAX_STEPS) {
    pst__dx_why(why, why_len, "no %s within %d instructions (a loop?)",
                until_name(until), PST_DX_MAX_STEPS);
    err = -EINVAL;
    goto out;
  }
  stop->kind = flow.kind;
  stop->addr = insn->address;
  memcpy(stop->mnemonic, insn->mnemonic, sizeof(stop->mnemonic));
  err = 0;
out:
  if (insn != NULL)
    cs_free(insn, 1);
  cs_close(&h);
  return err;
}
