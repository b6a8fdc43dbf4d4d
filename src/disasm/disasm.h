/* disasm.h: decoders that read facts out of a few short machine-code functions.
 *
 * Each decoder takes the bytes of one function as read from the target's ELF
 * file, the virtual address of its first byte, and evaluates the straight-line
 * code symbolically (capstone decodes; we track register values as small
 * expressions), never by byte patterns. They never touch target memory
 * directly: where the code loads a pointer from memory (a GOT slot), they ask
 * the caller through a pst__disasm_read64_fn.
 *
 * Ownership: the code buffer is borrowed for the duration of the call; all
 * results are copied into caller-provided structs. Thread-safe (each call opens
 * and closes its own capstone handle).
 */
#ifndef PST_DISASM_H
#define PST_DISASM_H

#include <stddef.h>
#include <stdint.h>

enum pst__arch {
  PST_ARCH_X86_64 = 1,
  PST_ARCH_AARCH64 = 2,
};

/* Reads the 8-byte little-endian value at addr (a GOT slot, for instance).
 * Returns 0 and sets *out, or a negative errno. */
typedef int (*pst__disasm_read64_fn)(void *arg, uint64_t addr, uint64_t *out);

/* The libc thread-specific-data layout, as pthread_getspecific computes it:
 *
 *   base  = indirect ? *(u64 *)(tp + offset) : tp + offset
 *   value = *(u64 *)(base + key * multiplier)          for key < 32 on glibc,
 *                                                       every key on musl
 *
 * and, when has_l2 (glibc keys 32..1023):
 *
 *   l2    = *(u64 *)(tp + l2_offset + 8 * (key >> 5))
 *   value = *(u64 *)(l2 + (key & 31) * multiplier + l2_data)
 *
 * tp is the thread pointer (fsbase on x86_64, tpidr_el0 on aarch64).
 * glibc 2.36 x86_64: {0x318, 16, 0, has_l2 1, l2_offset 0x510, l2_data 8};
 * musl 1.2 x86_64:   {0x80, 8, 1, has_l2 0}. */
struct pst__tsd_layout {
  int64_t offset;
  int64_t multiplier;
  int indirect;
  int has_l2;
  int64_t l2_offset;
  int64_t l2_data;
};

/* Decodes pthread_getspecific (glibc's __pthread_getspecific or musl's)
 * starting at addr. The first-level layout is taken from the value of the
 * return register at the first ret reached on the path key < 32; the second
 * level, when the code has one (a branch taken for key > 31), from the path
 * key in 32..1023. Returns 0, -EINVAL when the code does not compute a TSD
 * lookup (message in why, if non-NULL), -ENOMEM, or -ENOTSUP for an arch
 * this build cannot decode. */
int pst__disasm_tsd_layout(enum pst__arch arch, const uint8_t *code, size_t len,
                           uint64_t addr, struct pst__tsd_layout *out,
                           char *why, size_t why_len);

/* Decodes PyGILState_GetThisThreadState (3.6-3.14) starting at addr up to its
 * first call or jmp, and returns in *out the address passed in the first
 * argument register (rdi/edi, x0/w0) there: either the address of the int key
 * (3.6, and builds that pass the key value loaded from memory: then it is the
 * address the value was loaded from) or of the Py_tss_t. *is_load is set to 1
 * when the argument was loaded from *out (the key itself), 0 when the argument
 * is the address itself (a Py_tss_t*). shape (if non-NULL) receives a short
 * human description of what was recognised, e.g.
 * "mov edi,[rip+X]; jmp" for `info`. GOT loads go through read64.
 * Returns 0, or -EINVAL (no call/jmp reached, or the argument register is not
 * a known address at that point; message in why). */
int pst__disasm_tss_key(enum pst__arch arch, const uint8_t *code, size_t len,
                        uint64_t addr, pst__disasm_read64_fn read64, void *arg,
                        uint64_t *out, int *is_load, char *shape,
                        size_t shape_len, char *why, size_t why_len);

/* Decodes a getter of a C11 thread-local pointer, such as CPython 3.15's
 * PyGILState_GetThisThreadState (`mov rax,fs:[-0x28]; ret`, or with the
 * offset read from a GOT slot: initial-exec TLS), up to its ret: *tp_offset
 * gets the offset from the thread pointer of the pointer it returns, so
 * that a thread's value is the 8 bytes at its tp + *tp_offset. GOT loads go
 * through read64 (the slot holds the offset once the target has started).
 * Returns 0, or -EINVAL (a call first, or not such a read; message in why).
 * shape as for pst__disasm_tss_key. */
int pst__disasm_tls_getter(enum pst__arch arch, const uint8_t *code, size_t len,
                           uint64_t addr, pst__disasm_read64_fn read64,
                           void *arg, int64_t *tp_offset, char *shape,
                           size_t shape_len, char *why, size_t why_len);

/* Decodes a getter such as PyInterpreterState_Head (2.7, 3.6) that returns a
 * global: `mov rax,[rip+X]; ret`. Returns 0 with *out the address the return
 * value was loaded from, or -EINVAL. */
int pst__disasm_global_getter(enum pst__arch arch, const uint8_t *code,
                              size_t len, uint64_t addr,
                              pst__disasm_read64_fn read64, void *arg,
                              uint64_t *out, char *why, size_t why_len);

#endif
