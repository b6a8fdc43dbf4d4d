/* fuzz_disasm.c: libFuzzer harness for the disassembly decoders
 * (src/disasm/), built once per architecture (-DFUZZ_ARCH=PST_ARCH_X86_64
 * or PST_ARCH_AARCH64: fuzz_disasm_x86_64, fuzz_disasm_aarch64).
 *
 * Input: the bytes of one function. Each of the three decoders runs on it
 * as on pthread_getspecific, PyGILState_GetThisThreadState and a global
 * getter read from an ELF file. Loads through the GOT are answered by a
 * reader that gives a value derived from the address, and fails for some
 * addresses (as a GOT slot outside the file would). Seeds are the test
 * vectors of tests/fixtures and /work/shared/testdata. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "disasm/disasm.h"

#ifndef FUZZ_ARCH
#error "build with -DFUZZ_ARCH=PST_ARCH_X86_64 or PST_ARCH_AARCH64"
#endif

#define CODE_ADDR 0x1bbba0ULL /* a libpython's .text, as in the vectors */

static int read64(void *arg, uint64_t addr, uint64_t *out) {
  (void)arg;
  if ((addr & 0xf) == 0xf)
    return -EFAULT;
  *out = 0xcafe0000 ^ (addr << 4);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct pst__tsd_layout tsd;
  uint64_t out;
  int is_load;
  char why[128], shape[128];

  (void)pst__disasm_tsd_layout(FUZZ_ARCH, data, size, CODE_ADDR, &tsd, why,
                               sizeof(why));
  (void)pst__disasm_tss_key(FUZZ_ARCH, data, size, CODE_ADDR, read64, NULL,
                            &out, &is_load, shape, sizeof(shape), why,
                            sizeof(why));
  (void)pst__disasm_global_getter(FUZZ_ARCH, data, size, CODE_ADDR, read64,
                                  NULL, &out, why, sizeof(why));
  /* Small buffers: messages must be cut, never overflow. */
  (void)pst__disasm_tss_key(FUZZ_ARCH, data, size, CODE_ADDR, read64, NULL,
                            &out, &is_load, shape, 3, why, 1);
  return 0;
}
