/* eval_aarch64.c: what aarch64 instructions do to the symbolic evaluator's
 * registers (see internal.h), for the handful of instructions that libc's
 * pthread_getspecific and libpython's small getters are made of.
 *
 * Capstone 4 marks the first operand of cmp/cmn/tst as written, so compares
 * are handled by id before the generic "clobber what is written" rule. */

#include "internal.h"

/* Register slots 0-30 are x0-x30, slot 31 is sp. */
enum { X0 = 0, SP_SLOT = 31 };

/* slot_of's answer for xzr/wzr: reads 0, writes vanish. */
#define ZR_SLOT (-2)

/* MRS operand value of tpidr_el0, the EL0 thread pointer: op0=3, op1=3,
 * CRn=13, CRm=0, op2=2 packed as capstone 4 packs system registers. */
#define SYSREG_TPIDR_EL0 0xde82

_Static_assert(ARM64_REG_W30 - ARM64_REG_W0 == 30, "w0-w30 contiguous");
_Static_assert(ARM64_REG_X28 - ARM64_REG_X0 == 28, "x0-x28 contiguous");

/* The slot of a general-purpose register and its width in bytes; -1 for
 * registers we do not track (vector, floating point, system). */
static int slot_of(unsigned reg, int *width) {
  *width = 8;
  if (reg >= ARM64_REG_X0 && reg <= ARM64_REG_X28)
    return (int)(reg - ARM64_REG_X0);
  if (reg >= ARM64_REG_W0 && reg <= ARM64_REG_W30) {
    *width = 4;
    return (int)(reg - ARM64_REG_W0);
  }
  switch (reg) {
  case ARM64_REG_X29:
    return 29;
  case ARM64_REG_X30:
    return 30;
  case ARM64_REG_SP:
    return SP_SLOT;
  case ARM64_REG_WSP:
    *width = 4;
    return SP_SLOT;
  case ARM64_REG_XZR:
    return ZR_SLOT;
  case ARM64_REG_WZR:
    *width = 4;
    return ZR_SLOT;
  default:
    return -1;
  }
}

static int reg_bits(unsigned reg) {
  int width;

  slot_of(reg, &width);
  return 8 * width;
}

static struct pst__dx_val read_reg(const struct pst__dx_eval *ev,
                                   unsigned reg) {
  int width, slot = slot_of(reg, &width);

  if (slot == ZR_SLOT)
    return pst__dx_const(0);
  if (slot < 0)
    return pst__dx_unknown();
  return width == 4 ? pst__dx_trunc32(ev, ev->reg[slot]) : ev->reg[slot];
}

/* A write to a w register zero-extends into the x register. */
static void write_reg(struct pst__dx_eval *ev, unsigned reg,
                      struct pst__dx_val v) {
  int width, slot = slot_of(reg, &width);

  if (slot < 0)
    return;
  ev->reg[slot] = width == 4 ? pst__dx_trunc32(ev, v) : v;
}

/* Applies an operand's extend (uxtw, sxtw...) to v. */
static struct pst__dx_val extend(const struct pst__dx_eval *ev,
                                 struct pst__dx_val v, arm64_extender ext) {
  switch (ext) {
  case ARM64_EXT_INVALID:
  case ARM64_EXT_UXTX:
  case ARM64_EXT_SXTX:
    return v;
  case ARM64_EXT_UXTW:
    return pst__dx_trunc32(ev, v);
  case ARM64_EXT_SXTW:
    return pst__dx_sext(ev, v, 4);
  case ARM64_EXT_UXTB:
  case ARM64_EXT_UXTH:
    if (!pst__dx_is_const(&v))
      return pst__dx_unknown();
    return pst__dx_const(v.c & (ext == ARM64_EXT_UXTB ? 0xff : 0xffff));
  default:
    return pst__dx_sext(ev, v, ext == ARM64_EXT_SXTB ? 1 : 2);
  }
}

/* Applies an operand's shift (lsl #4...) to v. */
static struct pst__dx_val shift(struct pst__dx_eval *ev, struct pst__dx_val v,
                                arm64_shifter type, unsigned n) {
  if (type == ARM64_SFT_INVALID || n == 0)
    return v;
  if (type == ARM64_SFT_LSL)
    return pst__dx_shl(ev, v, n);
  if (type == ARM64_SFT_LSR)
    return pst__dx_shr(ev, v, n);
  if (type == ARM64_SFT_ASR && pst__dx_is_const(&v))
    return pst__dx_const((uint64_t)((int64_t)v.c >> (n & 63)));
  return pst__dx_unknown();
}

/* The value of a register or immediate source operand, shifted and
 * extended as the instruction says. */
static struct pst__dx_val src_val(struct pst__dx_eval *ev,
                                  const cs_arm64_op *op) {
  struct pst__dx_val v;

  if (op->type == ARM64_OP_IMM || op->type == ARM64_OP_CIMM)
    v = pst__dx_const((uint64_t)op->imm);
  else if (op->type == ARM64_OP_REG)
    v = extend(ev, read_reg(ev, op->reg), op->ext);
  else
    return pst__dx_unknown();
  return shift(ev, v, op->shift.type, op->shift.value);
}

/* The address of [base, #disp] or [base, index{, ext/shift}]. */
static struct pst__dx_val mem_addr(struct pst__dx_eval *ev,
                                   const cs_arm64_op *op) {
  struct pst__dx_val a = read_reg(ev, op->mem.base), idx;

  if (op->mem.index == ARM64_REG_INVALID)
    return pst__dx_add(ev, a, pst__dx_const((uint64_t)(int64_t)op->mem.disp));
  idx = extend(ev, read_reg(ev, op->mem.index), op->ext);
  idx = shift(ev, idx, op->shift.type, op->shift.value);
  return pst__dx_add(ev, a, idx);
}

/* The base register of a pre- or post-indexed access, after the access. */
static void writeback(struct pst__dx_eval *ev, const cs_arm64 *a,
                      const cs_arm64_op *mem) {
  const cs_arm64_op *last = &a->operands[a->op_count - 1];
  struct pst__dx_val base = read_reg(ev, mem->mem.base);

  if (!a->writeback)
    return;
  /* Post-index has the increment as a trailing immediate; pre-index has it
   * as the displacement. */
  if (last->type == ARM64_OP_IMM)
    base = pst__dx_add(ev, base, pst__dx_const((uint64_t)last->imm));
  else
    base = mem_addr(ev, mem);
  write_reg(ev, mem->mem.base, base);
}

/* The first memory operand of insn, or NULL. */
static const cs_arm64_op *mem_op(const cs_arm64 *a) {
  uint8_t i;

  for (i = 0; i < a->op_count; i++)
    if (a->operands[i].type == ARM64_OP_MEM)
      return &a->operands[i];
  return NULL;
}

/* Anything else: whatever register it writes becomes unknown. Compares,
 * stores and branches never get here, so a register first operand is a
 * destination (A64 puts it first), whatever capstone's access flags say. */
static void clobber(struct pst__dx_eval *ev, const cs_insn *insn) {
  const cs_detail *d = insn->detail;
  const cs_arm64 *a = &d->arm64;
  const cs_arm64_op *mem = mem_op(a);
  uint8_t i;

  for (i = 0; i < a->op_count; i++)
    if (a->operands[i].type == ARM64_OP_REG &&
        (i == 0 || (a->operands[i].access & CS_AC_WRITE)))
      write_reg(ev, a->operands[i].reg, pst__dx_unknown());
  for (i = 0; i < d->regs_write_count; i++)
    write_reg(ev, d->regs_write[i], pst__dx_unknown());
  if (mem != NULL && a->writeback)
    write_reg(ev, mem->mem.base, pst__dx_unknown());
}

/* How many bytes a load reads (0: not a load we model) and whether it
 * sign-extends them. */
static int load_size(unsigned id, unsigned dst, int *sext) {
  *sext = 0;
  switch (id) {
  case ARM64_INS_LDR:
  case ARM64_INS_LDUR:
  case ARM64_INS_LDAR:
    return reg_bits(dst) / 8;
  case ARM64_INS_LDRB:
  case ARM64_INS_LDURB:
  case ARM64_INS_LDARB:
    return 1;
  case ARM64_INS_LDRH:
  case ARM64_INS_LDURH:
  case ARM64_INS_LDARH:
    return 2;
  case ARM64_INS_LDRSB:
  case ARM64_INS_LDURSB:
    *sext = 1;
    return 1;
  case ARM64_INS_LDRSH:
  case ARM64_INS_LDURSH:
    *sext = 1;
    return 2;
  case ARM64_INS_LDRSW:
  case ARM64_INS_LDURSW:
    *sext = 1;
    return 4;
  default:
    return 0;
  }
}

/* ldr and friends: [base, #imm], [base, reg], pre/post-index, literal. */
static void do_load(struct pst__dx_eval *ev, const cs_insn *insn, int size,
                    int sext) {
  const cs_arm64 *a = &insn->detail->arm64;
  const cs_arm64_op *dst = &a->operands[0], *src = &a->operands[1];
  int post = a->op_count > 2 && a->operands[2].type == ARM64_OP_IMM;
  struct pst__dx_val v;

  if (a->op_count < 2 || dst->type != ARM64_OP_REG) {
    clobber(ev, insn);
    return;
  }
  if (src->type == ARM64_OP_IMM) { /* a pc-relative literal */
    v = pst__dx_load(ev, pst__dx_const((uint64_t)src->imm), size);
  } else if (src->type == ARM64_OP_MEM) {
    v = pst__dx_load(ev, post ? read_reg(ev, src->mem.base) : mem_addr(ev, src),
                     size);
    writeback(ev, a, src);
  } else {
    clobber(ev, insn);
    return;
  }
  write_reg(ev, dst->reg, sext ? pst__dx_sext(ev, v, size) : v);
}

static int is_store(unsigned id) {
  switch (id) {
  case ARM64_INS_STR:
  case ARM64_INS_STRB:
  case ARM64_INS_STRH:
  case ARM64_INS_STUR:
  case ARM64_INS_STURB:
  case ARM64_INS_STURH:
  case ARM64_INS_STP:
  case ARM64_INS_STNP:
  case ARM64_INS_STLR:
  case ARM64_INS_STLRB:
  case ARM64_INS_STLRH:
    return 1;
  default:
    return 0;
  }
}

/* movz, movn, movk: a 16-bit immediate at a shift. */
static void do_movw(struct pst__dx_eval *ev, const cs_insn *insn) {
  const cs_arm64 *a = &insn->detail->arm64;
  const cs_arm64_op *imm = &a->operands[1];
  unsigned sh = imm->shift.type == ARM64_SFT_LSL ? imm->shift.value : 0;
  uint64_t part = (uint64_t)imm->imm << sh;
  struct pst__dx_val old;

  if (insn->id == ARM64_INS_MOVZ) {
    write_reg(ev, a->operands[0].reg, pst__dx_const(part));
  } else if (insn->id == ARM64_INS_MOVN) {
    write_reg(ev, a->operands[0].reg, pst__dx_const(~part));
  } else {
    old = read_reg(ev, a->operands[0].reg);
    if (pst__dx_is_const(&old))
      old.c = (old.c & ~(0xffffULL << sh)) | part;
    else
      old = pst__dx_unknown();
    write_reg(ev, a->operands[0].reg, old);
  }
}

/* The low `bits` ones. */
static uint64_t low_mask(uint64_t bits) {
  return bits >= 64 ? ~0ULL : (1ULL << bits) - 1;
}

/* ubfiz d, n, #lsb, #width = (n & mask(width)) << lsb;
 * ubfx d, n, #lsb, #width = (n >> lsb) & mask(width). */
static struct pst__dx_val bitfield(struct pst__dx_eval *ev,
                                   const cs_insn *insn) {
  const cs_arm64 *a = &insn->detail->arm64;
  struct pst__dx_val v = read_reg(ev, a->operands[1].reg);
  unsigned lsb = (unsigned)a->operands[2].imm & 63;
  uint64_t mask = low_mask((uint64_t)a->operands[3].imm);

  if (insn->id == ARM64_INS_UBFIZ)
    return pst__dx_shl(ev, pst__dx_and(ev, v, mask), lsb);
  return pst__dx_and(ev, pst__dx_shr(ev, v, lsb), mask);
}

/* and/orr/eor with constant or zero operands (orr with xzr is a move). */
static struct pst__dx_val bitwise(struct pst__dx_eval *ev, unsigned id,
                                  struct pst__dx_val a, struct pst__dx_val b) {
  int ca = pst__dx_is_const(&a), cb = pst__dx_is_const(&b);

  if (ca && cb)
    return pst__dx_const(id == ARM64_INS_AND   ? a.c & b.c
                         : id == ARM64_INS_ORR ? a.c | b.c
                                               : a.c ^ b.c);
  if (id == ARM64_INS_AND)
    return cb   ? pst__dx_and(ev, a, b.c)
           : ca ? pst__dx_and(ev, b, a.c)
                : pst__dx_unknown();
  return cb && b.c == 0 ? a : ca && a.c == 0 ? b : pst__dx_unknown();
}

/* Three-operand data processing: d = n OP m. */
static struct pst__dx_val data3(struct pst__dx_eval *ev, const cs_insn *insn) {
  const cs_arm64 *a = &insn->detail->arm64;
  struct pst__dx_val n = read_reg(ev, a->operands[1].reg);
  struct pst__dx_val m = src_val(ev, &a->operands[2]);

  switch (insn->id) {
  case ARM64_INS_ADD:
    return pst__dx_add(ev, n, m);
  case ARM64_INS_SUB:
    return pst__dx_add(ev, n, pst__dx_mul(ev, m, (uint64_t)-1));
  case ARM64_INS_LSL:
  case ARM64_INS_LSR:
    if (!pst__dx_is_const(&m))
      return pst__dx_unknown();
    return insn->id == ARM64_INS_LSL ? pst__dx_shl(ev, n, (unsigned)m.c & 63)
                                     : pst__dx_shr(ev, n, (unsigned)m.c & 63);
  case ARM64_INS_MUL:
    return pst__dx_is_const(&m)   ? pst__dx_mul(ev, n, m.c)
           : pst__dx_is_const(&n) ? pst__dx_mul(ev, m, n.c)
                                  : pst__dx_unknown();
  default:
    return bitwise(ev, insn->id, n, m);
  }
}

/* Two-operand moves and extensions: d = f(n). */
static struct pst__dx_val data2(struct pst__dx_eval *ev, const cs_insn *insn) {
  const cs_arm64 *a = &insn->detail->arm64;
  const cs_arm64_op *src = &a->operands[1];

  switch (insn->id) {
  case ARM64_INS_MOV:
    return src_val(ev, src);
  case ARM64_INS_ADR:
  case ARM64_INS_ADRP: /* capstone gives the absolute (page) address */
    return pst__dx_const((uint64_t)src->imm);
  case ARM64_INS_SXTW:
    return pst__dx_sext(ev, read_reg(ev, src->reg), 4);
  case ARM64_INS_UXTB:
    return pst__dx_and(ev, read_reg(ev, src->reg), 0xff);
  case ARM64_INS_UXTH:
    return pst__dx_and(ev, read_reg(ev, src->reg), 0xffff);
  case ARM64_INS_MRS:
    if (src->type == ARM64_OP_REG_MRS && src->reg == SYSREG_TPIDR_EL0)
      return pst__dx_tp();
    return pst__dx_unknown();
  default:
    return pst__dx_unknown();
  }
}

/* `cmp reg, #imm` and `cmp reg, reg` are remembered for the b.cond after
 * them. */
static void do_cmp(struct pst__dx_eval *ev, const cs_insn *insn) {
  const cs_arm64 *a = &insn->detail->arm64;

  if (a->op_count != 2 || a->operands[0].type != ARM64_OP_REG)
    return;
  ev->cmp.valid = 1;
  ev->cmp.lhs = read_reg(ev, a->operands[0].reg);
  ev->cmp.rhs = src_val(ev, &a->operands[1]); /* may be lsl #12 */
  ev->cmp.bits = reg_bits(a->operands[0].reg);
}

static enum pst__dx_cc cc_of(arm64_cc cc) {
  switch (cc) {
  case ARM64_CC_EQ:
    return PST_DX_CC_EQ;
  case ARM64_CC_NE:
    return PST_DX_CC_NE;
  case ARM64_CC_HI:
    return PST_DX_CC_UGT;
  case ARM64_CC_HS:
    return PST_DX_CC_UGE;
  case ARM64_CC_LO:
    return PST_DX_CC_ULT;
  case ARM64_CC_LS:
    return PST_DX_CC_ULE;
  case ARM64_CC_GT:
    return PST_DX_CC_SGT;
  case ARM64_CC_GE:
    return PST_DX_CC_SGE;
  case ARM64_CC_LT:
    return PST_DX_CC_SLT;
  case ARM64_CC_LE:
    return PST_DX_CC_SLE;
  default:
    return PST_DX_CC_NONE;
  }
}

static void go_to(struct pst__dx_flow *flow, enum pst__dx_flow_kind kind,
                  const cs_arm64_op *target) {
  flow->kind = kind;
  if (target->type == ARM64_OP_IMM) {
    flow->has_target = 1;
    flow->target = (uint64_t)target->imm;
  }
}

/* b, b.cond, cbz, cbnz. A conditional branch goes the way pst__dx_decide
 * says the successful lookup goes, and falls through when it cannot tell. */
static void do_branch(struct pst__dx_eval *ev, const cs_insn *insn,
                      struct pst__dx_flow *flow) {
  const cs_arm64 *a = &insn->detail->arm64;
  struct pst__dx_val lhs, zero = pst__dx_const(0);
  enum pst__dx_cc cc;
  int taken;

  if (insn->id == ARM64_INS_B &&
      (a->cc == ARM64_CC_INVALID || a->cc == ARM64_CC_AL)) {
    go_to(flow, PST_DX_JUMP, &a->operands[0]);
    return;
  }
  if (insn->id == ARM64_INS_B) {
    taken = ev->cmp.valid && pst__dx_decide(ev, &ev->cmp.lhs, &ev->cmp.rhs,
                                            ev->cmp.bits, cc_of(a->cc)) == 1;
    if (taken)
      go_to(flow, PST_DX_GOTO, &a->operands[0]);
    return;
  }
  /* cbz/cbnz compare a register with 0 without touching the flags. */
  lhs = read_reg(ev, a->operands[0].reg);
  cc = insn->id == ARM64_INS_CBZ ? PST_DX_CC_EQ : PST_DX_CC_NE;
  if (pst__dx_decide(ev, &lhs, &zero, reg_bits(a->operands[0].reg), cc) == 1)
    go_to(flow, PST_DX_GOTO, &a->operands[1]);
}

/* Whether insn transfers control (capstone 4 files bl under "jump"). It
 * cannot use cs_insn_group, which wants the handle. */
static int is_control(const cs_insn *insn) {
  const cs_detail *d = insn->detail;
  uint8_t i;

  if (insn->id == ARM64_INS_BRK || insn->id == ARM64_INS_HLT)
    return 1;
  for (i = 0; i < d->groups_count; i++)
    if (d->groups[i] == ARM64_GRP_JUMP || d->groups[i] == ARM64_GRP_CALL ||
        d->groups[i] == ARM64_GRP_RET)
      return 1;
  return 0;
}

/* Control transfers other than b/b.cond/cbz/cbnz. */
static void do_control(const cs_insn *insn, struct pst__dx_flow *flow) {
  switch (insn->id) {
  case ARM64_INS_BL:
  case ARM64_INS_BLR:
    flow->kind = PST_DX_CALL;
    break;
  case ARM64_INS_BR:
    flow->kind = PST_DX_JUMP;
    break;
  case ARM64_INS_RET:
    flow->kind = PST_DX_RET;
    break;
  case ARM64_INS_TBZ:
  case ARM64_INS_TBNZ:
    break; /* a bit test of something: fall through */
  default: /* brk, hlt */
    flow->kind = PST_DX_TRAP;
    break;
  }
}

/* Instructions that change no tracked register: hints (bti, paciasp and
 * autiasp are hints to capstone 4), barriers, prefetches, and compares
 * whose flags we do not use. */
static int is_inert(unsigned id) {
  switch (id) {
  case ARM64_INS_HINT:
  case ARM64_INS_NOP:
  case ARM64_INS_CLREX:
  case ARM64_INS_DMB:
  case ARM64_INS_DSB:
  case ARM64_INS_ISB:
  case ARM64_INS_PRFM:
  case ARM64_INS_PRFUM:
  case ARM64_INS_CMN:
  case ARM64_INS_TST:
  case ARM64_INS_CCMP:
  case ARM64_INS_CCMN:
  case ARM64_INS_FCMP:
    return 1;
  default:
    return 0;
  }
}

/* Data processing we model, writing operand 0; 0 when insn is not one. */
static int do_data(struct pst__dx_eval *ev, const cs_insn *insn) {
  const cs_arm64 *a = &insn->detail->arm64;
  unsigned dst = a->operands[0].reg;

  switch (insn->id) {
  case ARM64_INS_MOVZ:
  case ARM64_INS_MOVN:
  case ARM64_INS_MOVK:
    do_movw(ev, insn);
    return 1;
  case ARM64_INS_UBFIZ:
  case ARM64_INS_UBFX:
    write_reg(ev, dst,
              a->op_count == 4 ? bitfield(ev, insn) : pst__dx_unknown());
    return 1;
  case ARM64_INS_ADD:
  case ARM64_INS_SUB:
  case ARM64_INS_AND:
  case ARM64_INS_ORR:
  case ARM64_INS_EOR:
  case ARM64_INS_LSL:
  case ARM64_INS_LSR:
  case ARM64_INS_MUL:
    write_reg(ev, dst, a->op_count == 3 ? data3(ev, insn) : pst__dx_unknown());
    return 1;
  case ARM64_INS_MOV:
  case ARM64_INS_ADR:
  case ARM64_INS_ADRP:
  case ARM64_INS_SXTW:
  case ARM64_INS_UXTB:
  case ARM64_INS_UXTH:
  case ARM64_INS_MRS:
    write_reg(ev, dst, a->op_count == 2 ? data2(ev, insn) : pst__dx_unknown());
    return 1;
  default:
    return 0;
  }
}

static void step(struct pst__dx_eval *ev, const cs_insn *insn,
                 struct pst__dx_flow *flow) {
  const cs_arm64 *a = &insn->detail->arm64;
  int size, sext;

  if (a->update_flags)
    ev->cmp.valid = 0;
  if (insn->id == ARM64_INS_CMP) {
    do_cmp(ev, insn);
    return;
  }
  if (insn->id == ARM64_INS_B || insn->id == ARM64_INS_CBZ ||
      insn->id == ARM64_INS_CBNZ) {
    do_branch(ev, insn, flow);
    return;
  }
  if (is_control(insn)) {
    do_control(insn, flow);
    return;
  }
  size = a->op_count > 0 ? load_size(insn->id, a->operands[0].reg, &sext) : 0;
  if (size > 0)
    do_load(ev, insn, size, sext);
  else if (is_store(insn->id) && mem_op(a) != NULL)
    writeback(ev, a, mem_op(a));
  else if (is_inert(insn->id))
    return;
  else if (a->op_count == 0 || a->operands[0].type != ARM64_OP_REG ||
           !do_data(ev, insn))
    clobber(ev, insn);
}

const struct pst__disasm_ops pst__disasm_aarch64_ops = {
    .name = "aarch64",
    .cs_arch = CS_ARCH_ARM64,
    .cs_mode = CS_MODE_ARM,
    .arg_slot = X0,
    .ret_slot = X0,
    .arg_name = "x0",
    .ret_name = "x0",
    .step = step,
};
