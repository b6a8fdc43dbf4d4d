/* eval_x86_64.c: what x86_64 instructions do to the symbolic evaluator's
 * registers (see internal.h), for the handful of instructions that libc's
 * pthread_getspecific and libpython's small getters are made of. */

#include "internal.h"

/* Register slots: the 16 general-purpose registers in encoding order. */
enum { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI };

/* Where a capstone register lives: slot + 1 (0: not a general-purpose
 * register) and how many low bytes it names. Width 0 marks ah/bh/ch/dh,
 * which name bits 8-15: they read as unknown and clobber on write. */
struct gpr {
  uint8_t slot1;
  uint8_t width;
};

#define GPR(slot, q, d, w, b)                                                  \
  [X86_REG_##q] = {(slot) + 1, 8}, [X86_REG_##d] = {(slot) + 1, 4},            \
  [X86_REG_##w] = {(slot) + 1, 2}, [X86_REG_##b] = {(slot) + 1, 1}

static const struct gpr gprs[X86_REG_ENDING] = {
    GPR(0, RAX, EAX, AX, AL),       GPR(1, RCX, ECX, CX, CL),
    GPR(2, RDX, EDX, DX, DL),       GPR(3, RBX, EBX, BX, BL),
    GPR(4, RSP, ESP, SP, SPL),      GPR(5, RBP, EBP, BP, BPL),
    GPR(6, RSI, ESI, SI, SIL),      GPR(7, RDI, EDI, DI, DIL),
    GPR(8, R8, R8D, R8W, R8B),      GPR(9, R9, R9D, R9W, R9B),
    GPR(10, R10, R10D, R10W, R10B), GPR(11, R11, R11D, R11W, R11B),
    GPR(12, R12, R12D, R12W, R12B), GPR(13, R13, R13D, R13W, R13B),
    GPR(14, R14, R14D, R14W, R14B), GPR(15, R15, R15D, R15W, R15B),
    [X86_REG_AH] = {RAX + 1, 0},    [X86_REG_CH] = {RCX + 1, 0},
    [X86_REG_DH] = {RDX + 1, 0},    [X86_REG_BH] = {RBX + 1, 0},
};

static const struct gpr *gpr_of(unsigned reg) {
  if (reg >= X86_REG_ENDING || gprs[reg].slot1 == 0)
    return NULL;
  return &gprs[reg];
}

/* The low `width` bytes of v. */
static struct pst__dx_val narrow(const struct pst__dx_eval *ev,
                                 struct pst__dx_val v, int width) {
  if (width == 8)
    return v;
  if (width == 4)
    return pst__dx_trunc32(ev, v);
  if (width != 0 && pst__dx_is_const(&v))
    return pst__dx_const(v.c & ((1ULL << (8 * width)) - 1));
  return pst__dx_unknown();
}

static struct pst__dx_val read_reg(const struct pst__dx_eval *ev,
                                   unsigned reg) {
  const struct gpr *g = gpr_of(reg);

  if (g == NULL)
    return pst__dx_unknown();
  return narrow(ev, ev->reg[g->slot1 - 1], g->width);
}

/* A 32-bit write zero-extends into the 64-bit register; an 8- or 16-bit write
 * merges with bits we would have to track apart, so it gives up. */
static void write_reg(struct pst__dx_eval *ev, unsigned reg,
                      struct pst__dx_val v) {
  const struct gpr *g = gpr_of(reg);

  if (g == NULL)
    return;
  if (g->width < 4)
    v = pst__dx_unknown();
  ev->reg[g->slot1 - 1] = g->width == 4 ? pst__dx_trunc32(ev, v) : v;
}

/* The address a memory operand names (not what is stored there). */
static struct pst__dx_val mem_addr(struct pst__dx_eval *ev, const cs_insn *insn,
                                   const x86_op_mem *m) {
  struct pst__dx_val a = pst__dx_const((uint64_t)m->disp);

  if (m->base == X86_REG_RIP || m->base == X86_REG_EIP)
    a.c += insn->address + insn->size;
  else if (m->base != X86_REG_INVALID)
    a = pst__dx_add(ev, a, read_reg(ev, m->base));
  if (m->index != X86_REG_INVALID)
    a = pst__dx_add(
        ev, a, pst__dx_mul(ev, read_reg(ev, m->index), (uint64_t)m->scale));
  /* An 0x67 prefix computes the address in 32 bits. */
  if (insn->detail->x86.addr_size == 4)
    a = pst__dx_trunc32(ev, a);
  /* In 64-bit mode only fs and gs have a base; gs is not the thread
   * pointer on Linux user space. */
  if (m->segment == X86_REG_FS)
    a = pst__dx_add(ev, a, pst__dx_tp());
  else if (m->segment == X86_REG_GS)
    a = pst__dx_unknown();
  return a;
}

/* Whether addr is fs:0 or fs:0x10 exactly. The x86_64 TLS ABI puts the
 * thread pointer itself at fs:0 (musl's and glibc's TCB both start with a
 * self pointer), and glibc's tcbhead_t repeats it at 0x10 (`self`), which is
 * what its pthread_getspecific reads: `mov %fs:0x10,%rdx` or
 * `add %fs:0x10,%rax`. */
static int is_tp_self(const struct pst__dx_val *addr) {
  struct pst__dx_val rest = *addr;

  rest.tp = 0;
  rest.c = 0;
  return addr->known && addr->tp == 1 && pst__dx_is_const(&rest) &&
         (addr->c == 0 || addr->c == 0x10);
}

static struct pst__dx_val load_op(struct pst__dx_eval *ev, const cs_insn *insn,
                                  const cs_x86_op *op) {
  struct pst__dx_val addr = mem_addr(ev, insn, &op->mem);

  if (op->size == 8 && is_tp_self(&addr))
    return pst__dx_tp();
  return pst__dx_load(ev, addr, op->size);
}

/* The value an operand reads. */
static struct pst__dx_val op_val(struct pst__dx_eval *ev, const cs_insn *insn,
                                 const cs_x86_op *op) {
  switch (op->type) {
  case X86_OP_REG:
    return read_reg(ev, op->reg);
  case X86_OP_IMM:
    return pst__dx_const((uint64_t)op->imm);
  case X86_OP_MEM:
    return load_op(ev, insn, op);
  default:
    return pst__dx_unknown();
  }
}

/* mov, movabs, movzx (zero-extension is what a narrow read already gives)
 * and movsx/movsxd. A store to memory changes nothing we track. */
static void do_mov(struct pst__dx_eval *ev, const cs_insn *insn) {
  const cs_x86 *x = &insn->detail->x86;
  struct pst__dx_val v;

  if (x->op_count != 2 || x->operands[0].type != X86_OP_REG)
    return;
  v = op_val(ev, insn, &x->operands[1]);
  if (insn->id == X86_INS_MOVSX || insn->id == X86_INS_MOVSXD)
    v = pst__dx_sext(ev, v, x->operands[1].size);
  write_reg(ev, x->operands[0].reg, v);
}

static void do_lea(struct pst__dx_eval *ev, const cs_insn *insn) {
  const cs_x86 *x = &insn->detail->x86;

  if (x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
      x->operands[1].type == X86_OP_MEM)
    write_reg(ev, x->operands[0].reg, mem_addr(ev, insn, &x->operands[1].mem));
}

/* The shift count of shl/shr: an immediate (1 when omitted), masked the way
 * the CPU masks it; -1 for a count in cl. */
static int shift_count(const cs_x86 *x) {
  unsigned mask = x->operands[0].size == 8 ? 63 : 31;

  if (x->op_count == 1)
    return 1;
  if (x->operands[1].type != X86_OP_IMM)
    return -1;
  return (int)((uint64_t)x->operands[1].imm & mask);
}

/* and/or/xor: bitwise operations keep a value only in the forms
 * pst__dx_and knows, or when one side is 0. */
static struct pst__dx_val bitwise(struct pst__dx_eval *ev, unsigned id,
                                  struct pst__dx_val a, struct pst__dx_val b) {
  int ca = pst__dx_is_const(&a), cb = pst__dx_is_const(&b);

  if (ca && cb)
    return pst__dx_const(id == X86_INS_AND  ? a.c & b.c
                         : id == X86_INS_OR ? a.c | b.c
                                            : a.c ^ b.c);
  if (id == X86_INS_AND)
    return cb   ? pst__dx_and(ev, a, b.c)
           : ca ? pst__dx_and(ev, b, a.c)
                : pst__dx_unknown();
  /* x | 0 and x ^ 0 are x. */
  return cb && b.c == 0 ? a : ca && a.c == 0 ? b : pst__dx_unknown();
}

/* Two-operand arithmetic on a register destination. */
static struct pst__dx_val arith(struct pst__dx_eval *ev, const cs_insn *insn,
                                struct pst__dx_val a, struct pst__dx_val b) {
  const cs_x86 *x = &insn->detail->x86;
  int n;

  switch (insn->id) {
  case X86_INS_ADD:
    return pst__dx_add(ev, a, b);
  case X86_INS_SUB:
    return pst__dx_add(ev, a, pst__dx_mul(ev, b, (uint64_t)-1));
  case X86_INS_SHL:
  case X86_INS_SAL:
  case X86_INS_SHR:
    n = shift_count(x);
    if (n < 0)
      return pst__dx_unknown();
    return insn->id == X86_INS_SHR ? pst__dx_shr(ev, a, (unsigned)n)
                                   : pst__dx_shl(ev, a, (unsigned)n);
  case X86_INS_IMUL:
    return pst__dx_is_const(&b)   ? pst__dx_mul(ev, a, b.c)
           : pst__dx_is_const(&a) ? pst__dx_mul(ev, b, a.c)
                                  : pst__dx_unknown();
  default:
    return bitwise(ev, insn->id, a, b);
  }
}

/* add, sub, and, or, xor, shl, shr, imul, inc, dec, neg. */
static void do_arith(struct pst__dx_eval *ev, const cs_insn *insn) {
  const cs_x86 *x = &insn->detail->x86;
  const cs_x86_op *dst = &x->operands[0];
  struct pst__dx_val a, b;

  if (x->op_count == 0 || dst->type != X86_OP_REG)
    return; /* a memory destination: not tracked */
  /* `xor %eax,%eax` and friends zero the register whatever it held. */
  if ((insn->id == X86_INS_XOR || insn->id == X86_INS_SUB) &&
      x->op_count == 2 && x->operands[1].type == X86_OP_REG &&
      x->operands[1].reg == dst->reg) {
    write_reg(ev, dst->reg, pst__dx_const(0));
    return;
  }
  a = read_reg(ev, dst->reg);
  if (insn->id == X86_INS_INC || insn->id == X86_INS_DEC) {
    b = pst__dx_const(insn->id == X86_INS_INC ? 1 : (uint64_t)-1);
    write_reg(ev, dst->reg, pst__dx_add(ev, a, b));
    return;
  }
  if (insn->id == X86_INS_NEG) {
    write_reg(ev, dst->reg, pst__dx_mul(ev, a, (uint64_t)-1));
    return;
  }
  /* imul r, r/m, imm multiplies its second operand, not the destination. */
  if (insn->id == X86_INS_IMUL && x->op_count == 3) {
    a = op_val(ev, insn, &x->operands[1]);
    b = op_val(ev, insn, &x->operands[2]);
  } else {
    b = x->op_count > 1 ? op_val(ev, insn, &x->operands[1]) : pst__dx_unknown();
  }
  write_reg(ev, dst->reg, arith(ev, insn, a, b));
}

/* `cmp a, b` and `test r, r` are remembered for the branch after them. */
static void do_cmp(struct pst__dx_eval *ev, const cs_insn *insn) {
  const cs_x86 *x = &insn->detail->x86;
  const cs_x86_op *a = &x->operands[0], *b = &x->operands[1];

  if (x->op_count != 2)
    return;
  if (insn->id == X86_INS_TEST) {
    /* The flags of r & r are those of cmp r, 0 (CF = OF = 0). */
    if (a->type != X86_OP_REG || b->type != X86_OP_REG || a->reg != b->reg)
      return;
    ev->cmp.rhs = pst__dx_const(0);
  } else {
    ev->cmp.rhs = op_val(ev, insn, b);
  }
  ev->cmp.lhs = op_val(ev, insn, a);
  ev->cmp.bits = a->size == 8 ? 64 : 32;
  ev->cmp.valid = 1;
}

/* The condition a jcc tests, or -1 when insn is no jcc we name. */
static int jcc_cc(unsigned id) {
  switch (id) {
  case X86_INS_JE:
    return PST_DX_CC_EQ;
  case X86_INS_JNE:
    return PST_DX_CC_NE;
  case X86_INS_JA:
    return PST_DX_CC_UGT;
  case X86_INS_JAE:
    return PST_DX_CC_UGE;
  case X86_INS_JB:
    return PST_DX_CC_ULT;
  case X86_INS_JBE:
    return PST_DX_CC_ULE;
  case X86_INS_JG:
    return PST_DX_CC_SGT;
  case X86_INS_JGE:
    return PST_DX_CC_SGE;
  case X86_INS_JL:
    return PST_DX_CC_SLT;
  case X86_INS_JLE:
    return PST_DX_CC_SLE;
  case X86_INS_JS:
  case X86_INS_JNS:
  case X86_INS_JO:
  case X86_INS_JNO:
  case X86_INS_JP:
  case X86_INS_JNP:
  case X86_INS_JCXZ:
  case X86_INS_JECXZ:
  case X86_INS_JRCXZ:
    return PST_DX_CC_NONE;
  default:
    return -1;
  }
}

/* A conditional branch goes the way pst__dx_decide says the successful
 * lookup goes. When it cannot tell (something unknown is tested) the path
 * falls through, which compilers make the likely side. */
static void do_jcc(struct pst__dx_eval *ev, const cs_insn *insn, int cc,
                   struct pst__dx_flow *flow) {
  const cs_x86 *x = &insn->detail->x86;

  if (!ev->cmp.valid || x->op_count != 1 || x->operands[0].type != X86_OP_IMM)
    return;
  if (pst__dx_decide(ev, &ev->cmp.lhs, &ev->cmp.rhs, ev->cmp.bits,
                     (enum pst__dx_cc)cc) == 1) {
    flow->kind = PST_DX_GOTO;
    flow->has_target = 1;
    flow->target = (uint64_t)x->operands[0].imm;
  }
}

static void do_jmp(const cs_insn *insn, struct pst__dx_flow *flow) {
  const cs_x86 *x = &insn->detail->x86;

  flow->kind = PST_DX_JUMP;
  if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM) {
    flow->has_target = 1;
    flow->target = (uint64_t)x->operands[0].imm;
  }
}

/* Anything else: whatever register it writes becomes unknown, and so does
 * a register first operand (the destination in Intel order) even when
 * capstone does not say it is written: forgetting is always safe. */
static void clobber(struct pst__dx_eval *ev, const cs_insn *insn) {
  const cs_detail *d = insn->detail;
  const cs_x86 *x = &d->x86;
  uint8_t i;

  for (i = 0; i < x->op_count; i++)
    if (x->operands[i].type == X86_OP_REG &&
        (i == 0 || (x->operands[i].access & CS_AC_WRITE)))
      write_reg(ev, x->operands[i].reg, pst__dx_unknown());
  for (i = 0; i < d->regs_write_count; i++)
    write_reg(ev, d->regs_write[i], pst__dx_unknown());
}

static int writes_flags(const cs_insn *insn) {
  const cs_detail *d = insn->detail;
  uint8_t i;

  for (i = 0; i < d->regs_write_count; i++)
    if (d->regs_write[i] == X86_REG_EFLAGS)
      return 1;
  return 0;
}

/* Instructions that leave every tracked register alone, or (push) change
 * only rsp, which is never tracked. */
static int is_inert(unsigned id) {
  switch (id) {
  case X86_INS_NOP:
  case X86_INS_ENDBR64:
  case X86_INS_PUSH:
  case X86_INS_PREFETCHT0:
    return 1;
  default:
    return 0;
  }
}

static void do_control(const cs_insn *insn, struct pst__dx_flow *flow) {
  switch (insn->id) {
  case X86_INS_JMP:
    do_jmp(insn, flow);
    break;
  case X86_INS_CALL:
    flow->kind = PST_DX_CALL;
    break;
  case X86_INS_RET:
    flow->kind = PST_DX_RET;
    break;
  default: /* ud2, hlt, int3 */
    flow->kind = PST_DX_TRAP;
    break;
  }
}

static void step(struct pst__dx_eval *ev, const cs_insn *insn,
                 struct pst__dx_flow *flow) {
  int cc = jcc_cc(insn->id);

  if (writes_flags(insn))
    ev->cmp.valid = 0;
  if (cc >= 0) {
    do_jcc(ev, insn, cc, flow);
    return;
  }
  switch (insn->id) {
  case X86_INS_MOV:
  case X86_INS_MOVABS:
  case X86_INS_MOVZX:
  case X86_INS_MOVSX:
  case X86_INS_MOVSXD:
    do_mov(ev, insn);
    break;
  case X86_INS_LEA:
    do_lea(ev, insn);
    break;
  case X86_INS_ADD:
  case X86_INS_SUB:
  case X86_INS_AND:
  case X86_INS_OR:
  case X86_INS_XOR:
  case X86_INS_SHL:
  case X86_INS_SAL:
  case X86_INS_SHR:
  case X86_INS_IMUL:
  case X86_INS_INC:
  case X86_INS_DEC:
  case X86_INS_NEG:
    if (insn->id == X86_INS_IMUL && insn->detail->x86.op_count == 1)
      clobber(ev, insn); /* rdx:rax = rax * src */
    else
      do_arith(ev, insn);
    break;
  case X86_INS_CMP:
  case X86_INS_TEST:
    do_cmp(ev, insn);
    break;
  case X86_INS_JMP:
  case X86_INS_CALL:
  case X86_INS_RET:
  case X86_INS_UD2:
  case X86_INS_HLT:
  case X86_INS_INT3:
    do_control(insn, flow);
    break;
  default:
    if (!is_inert(insn->id))
      clobber(ev, insn);
    break;
  }
}

const struct pst__disasm_ops pst__disasm_x86_64_ops = {
    .name = "x86_64",
    .cs_arch = CS_ARCH_X86,
    .cs_mode = CS_MODE_64,
    .arg_slot = RDI,
    .ret_slot = RAX,
    .arg_name = "rdi",
    .ret_name = "rax",
    .step = step,
};
