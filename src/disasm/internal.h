/* internal.h: private interfaces shared by the disasm decoders.
 *
 * Every decoder runs one symbolic evaluator over one path through the code:
 * eval.c holds the expression algebra and the loop that walks the path,
 * eval_x86_64.c and eval_aarch64.c give each instruction its meaning on the
 * register file (one struct pst__disasm_ops per arch), and tsd.c and tss_key.c
 * read the facts they want out of the state at the end of the path.
 *
 * An expression is linear over a few atoms,
 *
 *   c + key*KEY + tp*TP + hi*(KEY >> split) + lo*(KEY & (2^split - 1))
 *     [+ LOAD]
 *
 * where KEY is the first argument (a pthread key), TP the thread pointer
 * (fsbase, tpidr_el0) and LOAD, at most one, the value of an earlier memory
 * read, itself described by its address expression and size. That is enough
 * for a TSD lookup (one or two chained loads off TP indexed by KEY) and for
 * passing a global's address or contents to a function. Anything else is
 * "unknown" and poisons what is computed from it.
 *
 * Nothing here is thread-shared: a struct pst__dx_eval belongs to one call.
 */
#ifndef PST_DISASM_INTERNAL_H
#define PST_DISASM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <capstone/capstone.h>

#include "disasm.h"

/* ---- Expressions ------------------------------------------------------- */

/* A register or memory value. Coefficients are uint64_t so that arithmetic
 * wraps like the machine's instead of overflowing; read them as int64_t. */
struct pst__dx_val {
  uint8_t known; /* 0: nothing is known, the other fields are meaningless */
  uint8_t got;   /* a pointer read through read64 went into it */
  uint16_t load; /* 1 + index in pst__dx_eval.loads of a loaded term, or 0 */
  uint64_t c;    /* constant term */
  uint64_t key;  /* coefficient of KEY */
  uint64_t tp;   /* coefficient of the thread pointer */
  uint64_t hi;   /* coefficient of KEY >> split */
  uint64_t lo;   /* coefficient of KEY & ((1 << split) - 1) */
};

/* One memory read seen on the path. */
struct pst__dx_load {
  struct pst__dx_val addr; /* where it read */
  int size;                /* how many bytes */
  int state;               /* 0 not read64'd yet, 1 value is valid, -1 failed */
  uint64_t value;          /* what read64 returned, when state == 1 */
};

/* The code is short (a libc or libpython stub): these bound the work. */
#define PST_DX_NREGS 32      /* aarch64: x0-x30 and sp; x86_64 uses 16 */
#define PST_DX_NLOADS 64     /* memory reads remembered on one path */
#define PST_DX_MAX_STEPS 256 /* instructions executed on one path */

/* Condition codes after a compare of lhs with rhs, arch-neutral. */
enum pst__dx_cc {
  PST_DX_CC_NONE, /* anything we do not decide (sign, overflow, parity) */
  PST_DX_CC_EQ,
  PST_DX_CC_NE,
  PST_DX_CC_UGT,
  PST_DX_CC_UGE,
  PST_DX_CC_ULT,
  PST_DX_CC_ULE,
  PST_DX_CC_SGT,
  PST_DX_CC_SGE,
  PST_DX_CC_SLT,
  PST_DX_CC_SLE,
};

/* The last `cmp lhs, rhs` (or `test r, r`, which compares r with 0), for
 * the conditional branch that follows it. */
struct pst__dx_cmp {
  int valid;
  struct pst__dx_val lhs;
  struct pst__dx_val rhs;
  int bits; /* width of the compare: 32 or 64 */
};

struct pst__disasm_ops;

/* The machine state along one path. */
struct pst__dx_eval {
  const struct pst__disasm_ops *ops;
  struct pst__dx_val reg[PST_DX_NREGS];
  struct pst__dx_load loads[PST_DX_NLOADS];
  unsigned nloads;
  unsigned split; /* the shift of the hi/lo atoms; 0 until seen */
  struct pst__dx_cmp cmp;
  uint64_t key_min;             /* KEY is assumed in [key_min, key_max]: this */
  uint64_t key_max;             /* picks the side of a branch that tests it */
  pst__disasm_read64_fn read64; /* may be NULL: loads then stay symbolic */
  void *arg;
  int read_err; /* first error read64 returned, for messages */
};

struct pst__dx_val pst__dx_unknown(void);
struct pst__dx_val pst__dx_const(uint64_t c);
struct pst__dx_val pst__dx_key(void);
struct pst__dx_val pst__dx_tp(void);

/* Predicates on the shape of a value. */
int pst__dx_is_const(const struct pst__dx_val *v);
int pst__dx_is_key(const struct pst__dx_val *v);
/* v is exactly one loaded value, nothing added: returns its load, or NULL. */
const struct pst__dx_load *pst__dx_pure_load(const struct pst__dx_eval *ev,
                                             const struct pst__dx_val *v);

/* Arithmetic. Each returns unknown when the result leaves the form above. */
struct pst__dx_val pst__dx_add(struct pst__dx_eval *ev, struct pst__dx_val a,
                               struct pst__dx_val b);
struct pst__dx_val pst__dx_mul(struct pst__dx_eval *ev, struct pst__dx_val a,
                               uint64_t k);
struct pst__dx_val pst__dx_shl(struct pst__dx_eval *ev, struct pst__dx_val a,
                               unsigned n);
struct pst__dx_val pst__dx_shr(struct pst__dx_eval *ev, struct pst__dx_val a,
                               unsigned n);
struct pst__dx_val pst__dx_and(struct pst__dx_eval *ev, struct pst__dx_val a,
                               uint64_t mask);
/* What a 32-bit register write keeps (x86_64 and aarch64 both zero-extend). */
struct pst__dx_val pst__dx_trunc32(const struct pst__dx_eval *ev,
                                   struct pst__dx_val a);
/* Sign-extends the low `bytes` bytes (1, 2 or 4). */
struct pst__dx_val pst__dx_sext(const struct pst__dx_eval *ev,
                                struct pst__dx_val a, int bytes);

/* The value of a `size`-byte read at addr. When addr has a loaded term that
 * read64 can resolve, it is resolved first (see pst__dx_resolve). */
struct pst__dx_val pst__dx_load(struct pst__dx_eval *ev,
                                struct pst__dx_val addr, int size);

/* Replaces the loaded term of *v by its value when it is an 8-byte read of a
 * constant address that read64 can answer: a pointer that the code goes on to
 * use must come from a GOT slot or another pointer global. Returns 1 when *v
 * has no loaded term left, 0 otherwise. */
int pst__dx_resolve(struct pst__dx_eval *ev, struct pst__dx_val *v);

/* Whether a branch on cc after comparing lhs with rhs (bits wide) is taken
 * (1), not taken (0) or undecided (-1) on the path we follow, which is the
 * path where the lookup succeeds:
 *  - KEY against a constant: decided when cc holds for every KEY in
 *    [key_min, key_max], or for none;
 *  - a value read from memory against 0: the value is taken as non-zero
 *    (the pointer is set, the slot holds data);
 *  - two values read from memory: taken as equal (glibc's sequence-number
 *    check, which compilers place on either side of the branch).
 * The caller falls through when undecided. */
int pst__dx_decide(const struct pst__dx_eval *ev, const struct pst__dx_val *lhs,
                   const struct pst__dx_val *rhs, int bits, enum pst__dx_cc cc);

/* ---- Walking a path ---------------------------------------------------- */

/* What an instruction does to control flow. */
enum pst__dx_flow_kind {
  PST_DX_NEXT, /* falls through (or a conditional branch not taken) */
  PST_DX_GOTO, /* a conditional branch decided taken: go on at target */
  PST_DX_JUMP, /* unconditional jump; target valid when has_target */
  PST_DX_CALL,
  PST_DX_RET,
  PST_DX_TRAP, /* ud2, brk, hlt: the path does not go on */
};

struct pst__dx_flow {
  enum pst__dx_flow_kind kind;
  int has_target;
  uint64_t target;
};

/* The per-arch half of the evaluator. */
struct pst__disasm_ops {
  const char *name; /* "x86_64" */
  cs_arch cs_arch;
  cs_mode cs_mode;
  int arg_slot;         /* pst__dx_eval.reg index of the first argument */
  int ret_slot;         /* and of the return value */
  const char *arg_name; /* "rdi", for messages */
  const char *ret_name; /* "rax" */
  /* Applies insn (decoded with detail) to ev and says where control goes.
   * Never fails: what it does not understand becomes unknown. */
  void (*step)(struct pst__dx_eval *ev, const cs_insn *insn,
               struct pst__dx_flow *flow);
};

extern const struct pst__disasm_ops pst__disasm_x86_64_ops;
extern const struct pst__disasm_ops pst__disasm_aarch64_ops;

/* The code being decoded: borrowed from the caller of the public API. */
struct pst__dx_code {
  const uint8_t *bytes;
  size_t len;
  uint64_t addr; /* virtual address of bytes[0] */
};

/* Where a path stops. */
enum pst__dx_until {
  PST_DX_UNTIL_RET,    /* follow jumps inside the code up to a ret */
  PST_DX_UNTIL_BRANCH, /* stop at the first call or unconditional jump */
};

/* The instruction a path stopped at. */
struct pst__dx_stop {
  enum pst__dx_flow_kind kind; /* PST_DX_RET, PST_DX_CALL or PST_DX_JUMP */
  uint64_t addr;
  char mnemonic[CS_MNEMONIC_SIZE];
};

/* Resets ev: every register unknown, KEY anywhere in 32 bits. */
void pst__dx_init(struct pst__dx_eval *ev, const struct pst__disasm_ops *ops,
                  pst__disasm_read64_fn read64, void *arg);

/* Runs ev along code from its first byte until `until`, leaving the final
 * state in ev and the stopping instruction in *stop. Returns 0, -EINVAL when
 * the path runs off the code, meets an undecodable instruction, a trap, a
 * call (UNTIL_RET) or a ret (UNTIL_BRANCH), or loops (message in why),
 * -ENOMEM, or -ENOTSUP when capstone lacks the arch. */
int pst__dx_run(struct pst__dx_eval *ev, const struct pst__dx_code *code,
                enum pst__dx_until until, struct pst__dx_stop *stop, char *why,
                size_t why_len);

/* snprintf into why when it is non-NULL. */
void pst__dx_why(char *why, size_t why_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- Decoders (tsd.c, tss_key.c) ---------------------------------------- */

int pst__dx_tsd_layout(const struct pst__disasm_ops *ops,
                       const struct pst__dx_code *code,
                       struct pst__tsd_layout *out, char *why, size_t why_len);

int pst__dx_tss_key(const struct pst__disasm_ops *ops,
                    const struct pst__dx_code *code,
                    pst__disasm_read64_fn read64, void *arg, uint64_t *out,
                    int *is_load, char *shape, size_t shape_len, char *why,
                    size_t why_len);

int pst__dx_tls_getter(const struct pst__disasm_ops *ops,
                       const struct pst__dx_code *code,
                       pst__disasm_read64_fn read64, void *arg,
                       int64_t *tp_offset, char *shape, size_t shape_len,
                       char *why, size_t why_len);

int pst__dx_global_getter(const struct pst__disasm_ops *ops,
                          const struct pst__dx_code *code,
                          pst__disasm_read64_fn read64, void *arg,
                          uint64_t *out, char *why, size_t why_len);

#endif
