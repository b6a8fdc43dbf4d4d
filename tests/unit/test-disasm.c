/* test-disasm.c: the disasm decoders against machine code from real libc and
 * libpython builds (the shared disasm-vectors.md, sections A and B, and the
 * builds of this machine, tests/fixtures/disasm-vectors-local.md). The
 * list below is mirrored in test-list-disasm.h.
 */

/* TESTS:
 * X(disasm_tss_310_gcc12_lto_static)
 * X(disasm_tss_310_gcc12_noopt_static)
 * X(disasm_tss_310_clang16_noopt_shared_membase)
 * X(disasm_tss_312_gcc12_noopt_shared)
 * X(disasm_tss_310_clang18_lto_shared)
 * X(disasm_tss_310_clang18_lto_static)
 * X(disasm_tss_310_clang16_noopt_static)
 * X(disasm_tss_312_clang16_noopt_static)
 * X(disasm_tss_310_clang16_noopt_shared)
 * X(disasm_tss_312_gcc12_noopt_static)
 * X(disasm_tss_310_gcc12_lto_shared)
 * X(disasm_tss_err_empty)
 * X(disasm_tss_err_no_branch)
 * X(disasm_tss_err_invalid)
 * X(disasm_tss_synthetic_lea32_call)
 * X(disasm_tss_synthetic_lea32_jmp)
 * X(disasm_tss_deb12_libpython311)
 * X(disasm_tss_deb12_python311_static)
 * X(disasm_tss_sid_python314)
 * X(disasm_tss_arm64_amzn37_release_lock)
 * X(disasm_tss_arm64_amzn37)
 * X(disasm_tss_arm64_nix310)
 * X(disasm_tss_arm64_err_empty)
 * X(disasm_tss_read64_fails)
 * X(disasm_tss_bad_arch)
 * X(disasm_tss_pyenv_36)
 * X(disasm_tss_pyenv_37)
 * X(disasm_tss_pyenv_38)
 * X(disasm_tss_pyenv_39)
 * X(disasm_tss_pyenv_310)
 * X(disasm_tss_pyenv_311)
 * X(disasm_tss_pyenv_312)
 * X(disasm_tss_pyenv_313)
 * X(disasm_tss_trixie_python313)
 * X(disasm_getter_synthetic)
 * X(disasm_getter_synthetic_arm64)
 * X(disasm_getter_not_a_load)
 * X(disasm_getter_deb12_python311)
 * X(disasm_getter_deb12_libpython311)
 * X(disasm_getter_pyenv_27)
 * X(disasm_getter_pyenv_36)
 * X(disasm_getter_pyenv_312)
 * X(disasm_tsd_musl_123_arm64)
 * X(disasm_tsd_glibc_235_arm64)
 * X(disasm_tsd_glibc_233_arm64)
 * X(disasm_tsd_musl_123)
 * X(disasm_tsd_musl_1124)
 * X(disasm_tsd_glibc_232)
 * X(disasm_tsd_glibc_235)
 * X(disasm_tsd_glibc_238_arm64)
 * X(disasm_tsd_glibc_booking)
 * X(disasm_tsd_deepflow_musl)
 * X(disasm_tsd_deepflow_glibc_split)
 * X(disasm_tsd_glibc_236)
 * X(disasm_tsd_deepflow_prefix)
 * X(disasm_tsd_err_empty)
 * X(disasm_tsd_err_no_ret)
 * X(disasm_tsd_err_invalid)
 * X(disasm_tsd_err_not_tsd)
 * X(disasm_tsd_bad_arch)
 * X(disasm_tsd_musl_123_debian)
 * X(disasm_tsd_glibc_241_trixie)
 * X(disasm_tsd_glibc_243_sid)
 * X(disasm_tsd_model_glibc_clang_x86)
 * X(disasm_tsd_model_glibc_clang_arm64)
 * X(disasm_tsd_model_glibc_gcc_os)
 */

#include <errno.h>

#include "disasm/disasm.h"
#include "task.h"

#define X86 PST_ARCH_X86_64
#define ARM PST_ARCH_AARCH64

/* ---- Helpers ------------------------------------------------------------- */

/* What read64 answers: every slot holds base (the vectors' memBase, the
 * address of _PyRuntime that the GOT slot points at). */
struct fake_mem {
  uint64_t base;
  int err; /* returned instead, when non-zero */
  unsigned calls;
  uint64_t last_addr; /* the slot read last */
};

static int fake_read64(void *arg, uint64_t addr, uint64_t *out) {
  struct fake_mem *m = arg;

  m->calls++;
  m->last_addr = addr;
  if (m->err != 0)
    return m->err;
  *out = m->base;
  return 0;
}

/* Parses "f3 0f 1e fa ..." into buf; returns the byte count. */
static size_t unhex(const char *s, uint8_t *buf, size_t cap) {
  size_t n = 0;
  char *end;

  while (*s != '\0') {
    unsigned long b = strtoul(s, &end, 16);

    if (end == s)
      break;
    ASSERT(n < cap);
    ASSERT(b <= 0xff);
    buf[n++] = (uint8_t)b;
    s = end;
  }
  return n;
}

/* Decodes a PyGILState_GetThisThreadState vector and checks the answer.
 * got, when non-zero, is the GOT slot the code must read. */
static void expect_tss(enum pst__arch arch, const char *hex, uint64_t rip,
                       uint64_t mem_base, uint64_t want, int want_load,
                       uint64_t got) {
  struct fake_mem mem = {.base = mem_base};
  char shape[128] = "", why[256] = "";
  uint64_t out = 0;
  uint8_t code[256];
  int is_load = -1, err;
  size_t n = unhex(hex, code, sizeof(code));

  err = pst__disasm_tss_key(arch, code, n, rip, fake_read64, &mem, &out,
                            &is_load, shape, sizeof(shape), why, sizeof(why));
  if (err != 0)
    TEST_FAIL("pst__disasm_tss_key: %d (%s)", err, why);
  ASSERT_EQ(out, want);
  ASSERT_EQ(is_load, want_load);
  ASSERT(shape[0] != '\0');
  if (got != 0) {
    ASSERT_GE(mem.calls, 1);
    ASSERT_EQ(mem.last_addr, got);
  }
}

/* Decodes a vector that must fail with -EINVAL and a message containing
 * `says`. */
static void expect_tss_error(enum pst__arch arch, const char *hex, uint64_t rip,
                             const char *says) {
  struct fake_mem mem = {0};
  char why[256] = "";
  uint64_t out = 0;
  uint8_t code[256];
  int is_load = -1, err;
  size_t n = unhex(hex, code, sizeof(code));

  err = pst__disasm_tss_key(arch, code, n, rip, fake_read64, &mem, &out,
                            &is_load, NULL, 0, why, sizeof(why));
  ASSERT_EQ(err, -EINVAL);
  if (strstr(why, says) == NULL)
    TEST_FAIL("why \"%s\" does not say \"%s\"", why, says);
}

static void expect_getter(enum pst__arch arch, const char *hex, uint64_t rip,
                          uint64_t mem_base, uint64_t want) {
  struct fake_mem mem = {.base = mem_base};
  char why[256] = "";
  uint64_t out = 0;
  uint8_t code[256];
  size_t n = unhex(hex, code, sizeof(code));
  int err;

  err = pst__disasm_global_getter(arch, code, n, rip, fake_read64, &mem, &out,
                                  why, sizeof(why));
  if (err != 0)
    TEST_FAIL("pst__disasm_global_getter: %d (%s)", err, why);
  ASSERT_EQ(out, want);
}

/* Decodes a pthread_getspecific vector: {offset, multiplier, indirect} and,
 * when has_l2, the second level. */
static void expect_tsd(enum pst__arch arch, const char *hex, int64_t offset,
                       int64_t multiplier, int indirect, int has_l2,
                       int64_t l2_offset, int64_t l2_data) {
  struct pst__tsd_layout l;
  char why[256] = "";
  uint8_t code[256];
  size_t n = unhex(hex, code, sizeof(code));
  int err;

  memset(&l, 0xa5, sizeof(l));
  err = pst__disasm_tsd_layout(arch, code, n, 0x10000, &l, why, sizeof(why));
  if (err != 0)
    TEST_FAIL("pst__disasm_tsd_layout: %d (%s)", err, why);
  ASSERT_EQ(l.offset, offset);
  ASSERT_EQ(l.multiplier, multiplier);
  ASSERT_EQ(l.indirect, indirect);
  ASSERT_EQ(l.has_l2, has_l2);
  ASSERT_EQ(l.l2_offset, has_l2 ? l2_offset : 0);
  ASSERT_EQ(l.l2_data, has_l2 ? l2_data : 0);
}

static void expect_tsd_error(enum pst__arch arch, const char *hex,
                             const char *says) {
  struct pst__tsd_layout l;
  char why[256] = "";
  uint8_t code[256];
  size_t n = unhex(hex, code, sizeof(code));
  int err;

  err = pst__disasm_tsd_layout(arch, code, n, 0, &l, why, sizeof(why));
  ASSERT_EQ(err, -EINVAL);
  if (strstr(why, says) == NULL)
    TEST_FAIL("why \"%s\" does not say \"%s\"", why, says);
}

/* ---- A. PyGILState_GetThisThreadState, shared vectors -------------------- */

/* endbr64; cmpq $0,[rip]; je; mov edi,[rip] (_PyRuntime+0x24c); jmp */
TEST_IMPL(disasm_tss_310_gcc12_lto_static) {
  expect_tss(X86,
             "f3 0f 1e fa 48 83 3d 74 90 1e 00 00 74 0b 8b 3d 78 90 1e 00 "
             "e9 e7 ea e9 ff",
             0x1bbba0, 0, 0x3a4c2c, 1, 0);
  return 0;
}

/* endbr64; cmpq; je; lea rdi,[rip] (_PyRuntime+0x248); jmp */
TEST_IMPL(disasm_tss_310_gcc12_noopt_static) {
  expect_tss(X86,
             "f3 0f 1e fa 48 83 3d 04 ef 24 00 00 74 12 48 8d 3d 03 ef 24 00 "
             "e9 86 1e 01 00",
             0x172e50, 0, 0x3c1d68, 0, 0);
  return 0;
}

/* mov rax,[GOT]; cmp; je; mov edi,0x248; add rdi,[GOT]; jmp */
TEST_IMPL(disasm_tss_310_clang16_noopt_shared_membase) {
  expect_tss(X86,
             "48 8b 05 99 70 16 00 48 83 b8 40 02 00 00 00 74 11 bf 48 02 00 "
             "00 48 03 3d 83 70 16 00 e9 2e 41 eb ff",
             0x1adc90, 0xcafe0000, 0xcafe0248, 0, 0);
  return 0;
}

/* mov rax,[GOT]; push rbx; lea rbx,[rax+0x608]; mov rdi,rbx; call */
TEST_IMPL(disasm_tss_312_gcc12_noopt_shared) {
  expect_tss(X86,
             "f3 0f 1e fa 48 8b 05 25 27 27 00 53 48 8d 98 08 06 00 00 48 89 "
             "df e8 95 78 e2 ff",
             0x2e25d0, 0xef00000, 0xef00608, 0, 0);
  return 0;
}

/* mov rax,[GOT]; cmp; je; mov edi,[rax+0x24c]; jmp */
TEST_IMPL(disasm_tss_310_clang18_lto_shared) {
  expect_tss(X86,
             "48 8b 05 d9 80 31 00 48 83 b8 40 02 00 00 00 74 0b 8b b8 4c 02 "
             "00 00 e9 24 55 f9 ff",
             0xcac50, 0xef00000, 0xef0024c, 1, 0);
  return 0;
}

TEST_IMPL(disasm_tss_310_clang18_lto_static) {
  expect_tss(X86,
             "48 83 3d 98 c5 36 00 00 74 0b 8b 3d 9c c5 36 00 e9 4b 70 fc ff",
             0x92000, 0, 0x3fe5ac, 1, 0);
  return 0;
}

/* lea rax,[rip] (not a GOT load); cmp; je; mov edi,0x248; add rdi,[GOT] */
TEST_IMPL(disasm_tss_310_clang16_noopt_static) {
  expect_tss(X86,
             "48 8d 05 69 19 21 00 48 83 b8 40 02 00 00 00 74 11 bf 48 02 00 "
             "00 48 03 3d 53 03 1e 00 e9 8e ec 00 00",
             0x129bc0, 0, 0x248, 0, 0);
  return 0;
}

/* push rbx; mov ebx,0x608; add rbx,[GOT]; mov rdi,rbx; call */
TEST_IMPL(disasm_tss_312_clang16_noopt_static) {
  expect_tss(X86,
             "53 bb 08 06 00 00 48 03 1d 0b 1e 25 00 48 89 df e8 7b 41 01 00",
             0x2a20d0, 0, 0x608, 0, 0);
  return 0;
}

/* endbr64; mov rax,[GOT]; cmp; je; lea rdi,[rax+0x248]; jmp */
TEST_IMPL(disasm_tss_310_clang16_noopt_shared) {
  expect_tss(X86,
             "f3 0f 1e fa 48 8b 05 65 03 18 00 48 83 b8 40 02 00 00 00 74 13 "
             "48 8d b8 48 02 00 00 e9 8f 1f e6 ff",
             0x2079c0, 0, 0x248, 0, 0);
  return 0;
}

/* endbr64; push rbx; lea rbx,[rip]; mov rdi,rbx; call */
TEST_IMPL(disasm_tss_312_gcc12_noopt_static) {
  expect_tss(X86, "f3 0f 1e fa 53 48 8d 1d bc 21 37 00 48 89 df e8 0c 7f 01 00",
             0x2eb960, 0, 0x65db28, 0, 0);
  return 0;
}

/* endbr64; mov rax,[GOT]; cmp; je; mov edi,[rax+0x24c]; jmp */
TEST_IMPL(disasm_tss_310_gcc12_lto_shared) {
  expect_tss(X86,
             "f3 0f 1e fa 48 8b 05 5d 69 1b 00 48 83 b8 40 02 00 00 00 74 0b "
             "8b b8 4c 02 00 00 e9 10 b4 e9 ff",
             0x1c03c0, 0, 0x24c, 1, 0);
  return 0;
}

TEST_IMPL(disasm_tss_err_empty) {
  expect_tss_error(X86, "", 0, "EOF");
  return 0;
}

/* mov rdi,0xefefef and nothing after it. */
TEST_IMPL(disasm_tss_err_no_branch) {
  expect_tss_error(X86, "48 c7 c7 ef ef ef 00", 0, "EOF");
  return 0;
}

/* 0xea is no instruction in 64-bit mode. */
TEST_IMPL(disasm_tss_err_invalid) {
  expect_tss_error(X86, "48 c7 c7 ef ef ef 00 ea", 0, "at 0x7");
  return 0;
}

/* mov rax,0xcafe; mov ebx,0x6e000000; lea rdi,[ebx+eax*2+7] (32-bit
 * address size); call. */
TEST_IMPL(disasm_tss_synthetic_lea32_call) {
  expect_tss(X86,
             "48 c7 c0 fe ca 00 00 bb 00 00 00 6e 67 48 8d 7c 43 07 e8 fb ff "
             "ff ff",
             0, 0, 0xcafe * 2 + 0x6e000000 + 7, 0, 0);
  return 0;
}

/* mov eax,0xef; mov ebx,0x2a; lea edi,[ebx+eax*2+7]; jmp. */
TEST_IMPL(disasm_tss_synthetic_lea32_jmp) {
  expect_tss(X86, "b8 ef 00 00 00 bb 2a 00 00 00 67 8d 7c 43 07 eb ef", 0, 0,
             0xef * 2 + 0x2a + 7, 0, 0);
  return 0;
}

/* Debian 12 libpython3.11.so.1.0 (3.11.2): mov rax,[GOT 0x621d28]; cmpq;
 * je; lea rdi,[rax+0x250]; jmp. memBase is _PyRuntime (0x737660), which is
 * what the dynamic linker puts in the slot. */
TEST_IMPL(disasm_tss_deb12_libpython311) {
  expect_tss(X86,
             "48 8b 05 01 e6 36 00 48 83 b8 48 02 00 00 00 74 0f 48 8d b8 50 "
             "02 00 00 e9 23 ee 00 00",
             0x2b3720, 0x737660, 0x737660 + 0x250, 0, 0x621d28);
  return 0;
}

/* Debian 12 /usr/bin/python3.11 (static, PIE), the whole function of this
 * machine: cmpq $0,[rip]; je (far); mov edi,[rip] = 0xa5b994; jmp
 * pthread_getspecific. _PyRuntime is 0xa5b740 (readelf -s): the key itself
 * at +0x254, read as a value. */
TEST_IMPL(disasm_tss_deb12_python311_static) {
  expect_tss(X86,
             "48 83 3d 50 3d 56 00 00 0f 84 1f c8 f2 ff 8b 3d 50 3d 56 00 e9 "
             "a7 8a f2 ff",
             0x4f7c30, 0, 0xa5b740 + 0x254, 1, 0);
  return 0;
}

/* Debian sid /usr/bin/python3.14 (3.14.10-1, static, non-PIE), from the
 * rootfs of this machine: endbr64; cmpl $0,[rip]; je; mov edi,0xba10e0;
 * jmp PyThread_tss_get. The Py_tss_t is _PyRuntime (0xba07c0) + 0x920. */
TEST_IMPL(disasm_tss_sid_python314) {
  expect_tss(X86,
             "f3 0f 1e fa 83 3d 3b 49 77 00 00 74 0a bf e0 10 ba 00 e9 7f 2e "
             "11 00 31 c0 c3",
             0x42c79a, 0, 0xba07c0 + 0x920, 0, 0);
  return 0;
}

/* adrp x0; ldr x1,[x0,#0x7a8] (GOT, memBase 0); add x2,x1,#0x5d8;
 * ldr x0,[x2]; b. The argument is read from 0x5d8. */
TEST_IMPL(disasm_tss_arm64_amzn37_release_lock) {
  expect_tss(ARM, "40 0a 00 90 01 d4 43 f9 22 60 17 91 40 00 40 f9 a2 ff ff 17",
             0, 0, 1496, 1, 0x1487a8);
  return 0;
}

/* adrp x0; ldr x2,[x0,#0x7a8] (GOT); ldr x1,[x2,#0x5e8]; cbz x1;
 * add x0,x2,#0x5f0; b. */
TEST_IMPL(disasm_tss_arm64_amzn37) {
  expect_tss(ARM,
             "80 12 00 b0 02 d4 43 f9 41 f4 42 f9 61 00 00 b4 40 c0 17 91 ad "
             "e4 fe 17",
             0, 0, 1520, 0, 0);
  return 0;
}

/* adrp x0; ldr x0,[x0,#3392]; ldr x1,[x0,#592]; cbz x1; ldr w0,[x0,#604];
 * b pthread_getspecific; mov x0,#0; ret. */
TEST_IMPL(disasm_tss_arm64_nix310) {
  expect_tss(ARM,
             "40 1a 00 d0 00 a0 46 f9 01 28 41 f9 61 00 00 b4 00 5c 42 b9 93 "
             "20 ff 17 00 00 80 d2 c0 03 5f d6",
             0, 0, 604, 1, 0);
  return 0;
}

TEST_IMPL(disasm_tss_arm64_err_empty) {
  expect_tss_error(ARM, "", 0, "EOF");
  return 0;
}

/* The GOT slot cannot be read: the argument is unknown, and why says so. */
TEST_IMPL(disasm_tss_read64_fails) {
  struct fake_mem mem = {.err = -EFAULT};
  char why[256] = "";
  uint64_t out = 0;
  uint8_t code[64];
  int is_load = -1, err;
  size_t n = unhex("48 8b 05 d9 80 31 00 48 83 b8 40 02 00 00 00 74 0b 8b b8 "
                   "4c 02 00 00 e9 24 55 f9 ff",
                   code, sizeof(code));

  err = pst__disasm_tss_key(X86, code, n, 0xcac50, fake_read64, &mem, &out,
                            &is_load, NULL, 0, why, sizeof(why));
  ASSERT_EQ(err, -EINVAL);
  ASSERT(strstr(why, "GOT") != NULL);
  ASSERT_GE(mem.calls, 1);
  return 0;
}

TEST_IMPL(disasm_tss_bad_arch) {
  uint8_t code[] = {0xc3};
  uint64_t out;
  int is_load;

  ASSERT_EQ(pst__disasm_tss_key((enum pst__arch)0, code, sizeof(code), 0, NULL,
                                NULL, &out, &is_load, NULL, 0, NULL, 0),
            -ENOTSUP);
  return 0;
}

/* ---- A. PyGILState_GetThisThreadState, this machine's builds ------------- */

/* For the pyenv builds (--enable-shared) memBase is the file's _PyRuntime
 * symbol (readelf -s) and the GOT slot is the one objdump -R shows as
 * R_X86_64_GLOB_DAT _PyRuntime; the expected answer is _PyRuntime plus the
 * displacement of the lea. */

/* pyenv 3.6.15 libpython3.6m.so.1.0: cmpq; je; mov edi,[rip] = autoTLSkey
 * (0x2acf00, a static int: readelf -s); jmp PyThread_get_key_value. */
TEST_IMPL(disasm_tss_pyenv_36) {
  expect_tss(X86,
             "48 83 3d 70 a1 18 00 00 74 0e 8b 3d 80 81 13 00 e9 4b a7 ee ff "
             "0f 1f 00 31 c0 c3",
             0x174d70, 0, 0x2acf00, 1, 0);
  return 0;
}

/* pyenv 3.7.16: mov rax,[GOT 0x2a6c78]; cmpq [rax+0x5d8]; je;
 * lea rdi,[rax+0x5e0]; jmp PyThread_tss_get. _PyRuntime 0x32fe20. */
TEST_IMPL(disasm_tss_pyenv_37) {
  expect_tss(X86,
             "48 8b 05 e1 ee 11 00 48 83 b8 d8 05 00 00 00 74 0f 48 8d b8 e0 "
             "05 00 00 e9 73 ee ed ff 0f 1f 00 31 c0 c3",
             0x187d90, 0x32fe20, 0x32fe20 + 0x5e0, 0, 0x2a6c78);
  return 0;
}

/* pyenv 3.8.18: the same shape, +0x570; _PyRuntime 0x372e00. */
TEST_IMPL(disasm_tss_pyenv_38) {
  expect_tss(X86,
             "48 8b 05 c1 86 16 00 48 83 b8 68 05 00 00 00 74 0f 48 8d b8 70 "
             "05 00 00 e9 23 7a eb ff 0f 1f 00 31 c0 c3",
             0x1b25b0, 0x372e00, 0x372e00 + 0x570, 0, 0x31ac78);
  return 0;
}

/* pyenv 3.9.18: +0x248; _PyRuntime 0x3acf60. */
TEST_IMPL(disasm_tss_pyenv_39) {
  expect_tss(X86,
             "48 8b 05 21 7b 17 00 48 83 b8 40 02 00 00 00 74 0f 48 8d b8 48 "
             "02 00 00 e9 83 90 e8 ff 0f 1f 00 31 c0 c3",
             0x1dc1e0, 0x3acf60, 0x3acf60 + 0x248, 0, 0x353d08);
  return 0;
}

/* pyenv 3.10.13: +0x248; _PyRuntime 0x3a8660. */
TEST_IMPL(disasm_tss_pyenv_310) {
  expect_tss(X86,
             "48 8b 05 69 d1 17 00 48 83 b8 40 02 00 00 00 74 0f 48 8d b8 48 "
             "02 00 00 e9 13 d5 e6 ff 0f 1f 00 31 c0 c3",
             0x1f6bc0, 0x3a8660, 0x3a8660 + 0x248, 0, 0x373d30);
  return 0;
}

/* pyenv 3.11.7: +0x250; _PyRuntime 0x54e540. */
TEST_IMPL(disasm_tss_pyenv_311) {
  expect_tss(X86,
             "48 8b 05 09 d8 1a 00 48 83 b8 48 02 00 00 00 74 0f 48 8d b8 50 "
             "02 00 00 e9 f3 3b e6 ff 0f 1f 00 31 c0 c3",
             0x296520, 0x54e540, 0x54e540 + 0x250, 0, 0x443d30);
  return 0;
}

/* pyenv 3.12.1: mov rax,[GOT 0x543d00]; push rbx; lea rbx,[rax+0x608];
 * mov rdi,rbx; call PyThread_tss_is_created. _PyRuntime 0x643340. */
TEST_IMPL(disasm_tss_pyenv_312) {
  expect_tss(X86,
             "48 8b 05 c9 c0 26 00 53 48 8d 98 08 06 00 00 48 89 df e8 d9 21 "
             "e3 ff 85 c0 74 0d 48 89 df 5b e9 ec 36 e3 ff 0f 1f 40 00 31 c0 "
             "5b c3",
             0x2d7c30, 0x643340, 0x643340 + 0x608, 0, 0x543d00);
  return 0;
}

/* pyenv 3.13.0: the same shape, +0x870; _PyRuntime 0x5294c0. */
TEST_IMPL(disasm_tss_pyenv_313) {
  expect_tss(X86,
             "48 8b 05 e9 6b 25 00 53 48 8d 98 70 08 00 00 48 89 df e8 d9 59 "
             "df ff 85 c0 74 0d 48 89 df 5b e9 5c 6d df ff 0f 1f 40 00 31 c0 "
             "5b c3",
             0x2940c0, 0x5294c0, 0x5294c0 + 0x870, 0, 0x4eacb0);
  return 0;
}

/* Debian trixie /usr/bin/python3.13 (3.13.5-2+deb13u5, static, non-PIE):
 * endbr64; cmpl $0,[rip] (_PyRuntime+0x870); je (far); mov edi,[rip];
 * jmp pthread_getspecific. _PyRuntime 0xa3f400: the key at +0x874. */
TEST_IMPL(disasm_tss_trixie_python313) {
  expect_tss(X86,
             "f3 0f 1e fa 83 3d 65 c8 51 00 00 0f 84 d0 2a f0 ff 8b 3d 5d c8 "
             "51 00 e9 94 e3 ef ff",
             0x523400, 0, 0xa3f400 + 0x874, 1, 0);
  return 0;
}

/* ---- Global getters ------------------------------------------------------ */

/* mov rax,[rip+0x200000]; ret. */
TEST_IMPL(disasm_getter_synthetic) {
  expect_getter(X86, "48 8b 05 00 00 20 00 c3", 0x1000, 0, 0x1007 + 0x200000);
  return 0;
}

/* adrp x0,#0x148000; ldr x0,[x0,#0x7a8]; ret. */
TEST_IMPL(disasm_getter_synthetic_arm64) {
  expect_getter(ARM, "40 0a 00 90 00 d4 43 f9 c0 03 5f d6", 0, 0, 0x1487a8);
  return 0;
}

/* lea rax,[rip+0x10]; ret returns an address, not a global's value. */
TEST_IMPL(disasm_getter_not_a_load) {
  uint8_t code[] = {0x48, 0x8d, 0x05, 0x10, 0x00, 0x00, 0x00, 0xc3};
  char why[256] = "";
  uint64_t out;

  ASSERT_EQ(pst__disasm_global_getter(X86, code, sizeof(code), 0, NULL, NULL,
                                      &out, why, sizeof(why)),
            -EINVAL);
  ASSERT(strstr(why, "rax") != NULL);
  return 0;
}

/* Debian 12 /usr/bin/python3.11 PyInterpreterState_Head: mov rax,[rip];
 * ret, objdump: _PyRuntime+0x28 = 0xa5b768 (interpreters.head). */
TEST_IMPL(disasm_getter_deb12_python311) {
  expect_getter(X86, "48 8b 05 81 f6 3a 00 c3", 0x6ac0e0, 0, 0xa5b768);
  return 0;
}

/* Debian 12 libpython3.11.so.1.0 PyInterpreterState_Head: mov rax,[GOT
 * 0x621d28]; mov rax,[rax+0x28]; ret. memBase _PyRuntime 0x737660. */
TEST_IMPL(disasm_getter_deb12_libpython311) {
  expect_getter(X86, "48 8b 05 21 26 37 00 48 8b 40 28 c3", 0x2af700, 0x737660,
                0x737660 + 0x28);
  return 0;
}

/* pyenv 2.7.18 libpython2.7.so.1.0: mov rax,[rip] = interp_head
 * (0x1f76d0, a static: readelf -s); ret. */
TEST_IMPL(disasm_getter_pyenv_27) {
  expect_getter(X86, "48 8b 05 c9 08 0e 00 c3", 0x116e00, 0, 0x1f76d0);
  return 0;
}

/* pyenv 3.6.15 libpython3.6m.so.1.0: interp_head at 0x2feee0. */
TEST_IMPL(disasm_getter_pyenv_36) {
  expect_getter(X86, "48 8b 05 49 a3 18 00 c3", 0x174b90, 0, 0x2feee0);
  return 0;
}

/* pyenv 3.12.1: mov rax,[GOT 0x543d00]; mov rax,[rax+0x28]; ret.
 * _PyRuntime 0x643340. */
TEST_IMPL(disasm_getter_pyenv_312) {
  expect_getter(X86, "48 8b 05 a9 c5 26 00 48 8b 40 28 c3", 0x2d7750, 0x643340,
                0x643340 + 0x28);
  return 0;
}

/* ---- B. pthread_getspecific, shared vectors ------------------------------ */

/* mrs x1,tpidr_el0; ldur x1,[x1,#-88]; ldr x0,[x1,w0,uxtw #3]; ret */
TEST_IMPL(disasm_tsd_musl_123_arm64) {
  expect_tsd(ARM, "41 d0 3b d5 21 80 5a f8 20 58 60 f8 c0 03 5f d6", -88, 8, 1,
             0, 0, 0);
  return 0;
}

/* glibc 2.35, Fedora 36: ubfiz x0,x1,#4,#32; mrs x2; sub x0,x0,#0x6b0;
 * add x2,x2,x0; ldr x0,[x2,#8]. The key > 31 branch leaves the bytes. */
TEST_IMPL(disasm_tsd_glibc_235_arm64) {
  expect_tsd(ARM,
             "5f 24 03 d5 e1 03 00 2a 1f 7c 00 71 48 02 00 54 20 7c 7c d3 42 "
             "d0 3b d5 00 c0 1a d1 42 00 00 8b 40 04 40 f9 40 01 00 b4 21 7c "
             "7c d3 e3 08 00 d0 63 40 0a 91 44 00 40 f9 61 68 61 f8 3f 00 04 "
             "eb 41 00 00 54 c0 03 5f d6",
             -0x6b0 + 8, 16, 0, 0, 0, 0);
  return 0;
}

/* glibc 2.33, Fedora 34: add w2,w1,#0x11; sub x0,x0,#0x790;
 * add x2,x0,x2,lsl #4; ldr x0,[x2,#8]. */
TEST_IMPL(disasm_tsd_glibc_233_arm64) {
  expect_tsd(ARM,
             "5f 24 03 d5 e1 03 00 2a 1f 7c 00 71 48 02 00 54 40 d0 3b d5 22 "
             "44 00 11 00 40 1e d1 02 10 02 8b 40 04 40 f9 00 01 00 b4 21 7c "
             "7c d3 03 01 00 b0 63 80 01 91 44 00 40 f9 61 68 61 f8 3f 00 04 "
             "eb 41 00 00 54 c0 03 5f d6",
             -0x790 + (0x11 << 4) + 8, 16, 0, 0, 0, 0);
  return 0;
}

/* mov %fs:0,%rax; mov 0x80(%rax),%rax; mov %edi,%edi;
 * mov (%rax,%rdi,8),%rax; ret */
TEST_IMPL(disasm_tsd_musl_123) {
  expect_tsd(X86,
             "64 48 8b 04 25 00 00 00 00 48 8b 80 80 00 00 00 89 ff 48 8b 04 "
             "f8 c3",
             0x80, 8, 1, 0, 0, 0);
  return 0;
}

TEST_IMPL(disasm_tsd_musl_1124) {
  expect_tsd(X86,
             "64 48 8b 04 25 00 00 00 00 48 8b 80 88 00 00 00 89 ff 48 8b 04 "
             "f8 c3",
             0x88, 8, 1, 0, 0, 0);
  return 0;
}

/* glibc 2.32, Fedora 33: lea 0x31(%rdi),%eax; shl $4,%rax;
 * mov %fs:0x10,%rdx; add %rdx,%rax; mov 0x8(%rax),%r8; ... mov %r8,%rax */
TEST_IMPL(disasm_tsd_glibc_232) {
  expect_tsd(X86,
             "f3 0f 1e fa 83 ff 1f 77 37 8d 47 31 48 c1 e0 04 64 48 8b 14 25 "
             "10 00 00 00 48 01 d0 4c 8b 40 08 4d 85 c0 74 16 89 ff 48 8d 15 "
             "c2 c4 00 00 48 8b 30 48 c1 e7 04 48 39 34 3a 75 35 4c 89 c0 c3",
             0x318, 16, 0, 0, 0, 0);
  return 0;
}

/* glibc 2.35, Fedora 36: add $0x31,%rax; shl $4,%rax; add %fs:0x10,%rax */
TEST_IMPL(disasm_tsd_glibc_235) {
  expect_tsd(X86,
             "f3 0f 1e fa 83 ff 1f 77 37 89 f8 48 83 c0 31 48 c1 e0 04 64 48 "
             "03 04 25 10 00 00 00 48 8b 50 08 48 85 d2 74 53 89 ff 48 8d 0d "
             "92 7b 16 00 48 8b 30 48 c1 e7 04 48 39 34 39 75 35 48 89 d0 c3",
             0x318, 16, 0, 0, 0, 0);
  return 0;
}

/* glibc 2.38, Fedora 39: paciasp; stp; mov x0,#-1584; mrs x2;
 * add x0,x0,w1,uxtw #4; add x2,x2,x0; ldr x0,[x2,#8]; ...; autiasp; ret */
TEST_IMPL(disasm_tsd_glibc_238_arm64) {
  expect_tsd(ARM,
             "3f 23 03 d5 fd 7b bf a9 e1 03 00 2a fd 03 00 91 1f 7c 00 71 28 "
             "02 00 54 e0 c5 80 92 42 d0 3b d5 00 50 21 8b 42 00 00 8b 40 04 "
             "40 f9 00 03 00 b4 21 7c 7c d3 83 09 00 b0 63 40 17 91 44 00 40 "
             "f9 61 68 61 f8 3f 00 04 eb 01 02 00 54 fd 7b c1 a8 bf 23 03 d5 "
             "c0 03 5f d6",
             -1584 + 8, 16, 0, 0, 0, 0);
  return 0;
}

/* Older glibc, no CET: add $0x30,%rax; shl $4; mov %fs:0x10,%rdx;
 * lea 0x10(%rdx,%rax,1),%rdx; mov 0x8(%rdx),%rax; ...; repz ret */
TEST_IMPL(disasm_tsd_glibc_booking) {
  expect_tsd(X86,
             "83 ff 1f 77 49 89 f8 48 83 c0 30 48 c1 e0 04 64 48 8b 14 25 10 "
             "00 00 00 48 8d 54 02 10 48 8b 42 08 48 85 c0 74 1a 89 ff 48 8d "
             "0d 61 aa 20 00 48 c1 e7 04 48 8b 34 39 48 39 32 75 07 f3 c3",
             0x318, 16, 0, 0, 0, 0);
  return 0;
}

/* Synthetic (DeepFlow): musl without `mov %edi,%edi`. */
TEST_IMPL(disasm_tsd_deepflow_musl) {
  expect_tsd(X86,
             "64 48 8b 04 25 00 00 00 00 48 8b 80 80 00 00 00 48 8b 04 f8 c3",
             0x80, 8, 1, 0, 0, 0);
  return 0;
}

/* Synthetic (DeepFlow): mov %fs:0x10,%rax; shl $4,%rdi; add %rdi,%rax;
 * mov 0x318(%rax),%rax; ret */
TEST_IMPL(disasm_tsd_deepflow_glibc_split) {
  expect_tsd(X86,
             "64 48 8b 04 25 10 00 00 00 48 c1 e7 04 48 01 f8 48 8b 80 18 03 "
             "00 00 c3",
             0x318, 16, 0, 0, 0, 0);
  return 0;
}

/* Debian 12 glibc 2.36-9+deb12u14, the whole __pthread_getspecific of this
 * machine, second level included: cmp $0x3ff,%edi; ja; mov %edi,%edx;
 * mov %edi,%eax; and $0x1f,%edx; shr $5,%eax;
 * mov %fs:0x510(,%rax,8),%rax; test; je; shl $4,%rdx; add %rdx,%rax;
 * jmp back to mov 0x8(%rax),%rdx. */
TEST_IMPL(disasm_tsd_glibc_236) {
  expect_tsd(X86,
             "83 ff 1f 77 3b 89 f8 48 83 c0 31 48 c1 e0 04 64 48 03 04 25 10 "
             "00 00 00 48 8b 50 08 48 85 d2 74 57 89 ff 48 8d 0d 56 af 14 00 "
             "48 8b 30 48 c1 e7 04 48 39 34 39 75 39 48 89 d0 c3 0f 1f 44 00 "
             "00 81 ff ff 03 00 00 77 30 89 fa 89 f8 83 e2 1f c1 e8 05 64 48 "
             "8b 04 c5 10 05 00 00 48 85 c0 74 18 48 c1 e2 04 48 01 d0 eb af "
             "0f 1f 80 00 00 00 00 48 c7 40 08 00 00 00 00 31 d2 eb bb",
             0x318, 16, 0, 1, 0x510, 8);
  return 0;
}

/* The DeepFlow failure-log prefix plus the synthetic tail mov %r8,%rax; ret */
TEST_IMPL(disasm_tsd_deepflow_prefix) {
  expect_tsd(X86,
             "f3 0f 1e fa 83 ff 1f 77 37 8d 47 31 48 c1 e0 04 64 48 03 04 25 "
             "10 00 00 00 4c 8b 40 08 4c 89 c0 c3",
             0x318, 16, 0, 0, 0, 0);
  return 0;
}

TEST_IMPL(disasm_tsd_err_empty) {
  expect_tsd_error(X86, "", "EOF");
  expect_tsd_error(ARM, "", "EOF");
  return 0;
}

TEST_IMPL(disasm_tsd_err_no_ret) {
  expect_tsd_error(X86, "48 c7 c7 ef ef ef 00", "EOF");
  return 0;
}

TEST_IMPL(disasm_tsd_err_invalid) {
  expect_tsd_error(X86, "48 c7 c7 ef ef ef 00 ea", "at 0x7");
  return 0;
}

/* A getter (mov rax,[rip]; ret) and a function returning the key itself
 * are no TSD lookups. */
TEST_IMPL(disasm_tsd_err_not_tsd) {
  expect_tsd_error(X86, "48 8b 05 00 00 20 00 c3", "rax");
  expect_tsd_error(X86, "48 89 f8 c3", "rax");
  return 0;
}

TEST_IMPL(disasm_tsd_bad_arch) {
  struct pst__tsd_layout l;
  uint8_t code[] = {0xc3};

  ASSERT_EQ(pst__disasm_tsd_layout((enum pst__arch)3, code, sizeof(code), 0, &l,
                                   NULL, 0),
            -ENOTSUP);
  return 0;
}

/* ---- B. pthread_getspecific, this machine's libcs ------------------------ */

/* Debian 12 musl 1.2.3-1, /lib/x86_64-linux-musl/libc.so: byte for byte the
 * Alpine 3.16 function. */
TEST_IMPL(disasm_tsd_musl_123_debian) {
  expect_tsd(X86,
             "64 48 8b 04 25 00 00 00 00 48 8b 80 80 00 00 00 89 ff 48 8b 04 "
             "f8 c3",
             0x80, 8, 1, 0, 0, 0);
  return 0;
}

/* Debian trixie glibc 2.41-12+deb13u5 (rootfs of this machine): the first
 * level as in 2.36; the second level moved after the NULL return:
 * cmp $0x3ff,%edi; ja; mov %edi,%edx; mov %edi,%eax; and $0x1f,%edx;
 * shr $5,%eax; mov %fs:0x510(,%rax,8),%rax; test; je; shl $4,%rdx;
 * add %rdx,%rax; jmp back to mov 0x8(%rax),%rdx. */
TEST_IMPL(disasm_tsd_glibc_241_trixie) {
  expect_tsd(X86,
             "83 ff 1f 77 4b 89 f8 48 83 c0 31 48 c1 e0 04 64 48 03 04 25 10 "
             "00 00 00 48 8b 50 08 48 85 d2 74 27 89 ff 48 8d 0d 56 35 15 00 "
             "48 8b 30 48 c1 e7 04 48 39 34 39 75 09 48 89 d0 c3 0f 1f 44 00 "
             "00 48 c7 40 08 00 00 00 00 31 d2 48 89 d0 c3 66 90 81 ff ff 03 "
             "00 00 77 f0 89 fa 89 f8 83 e2 1f c1 e8 05 64 48 8b 04 c5 10 05 "
             "00 00 48 85 c0 74 d8 48 c1 e2 04 48 01 d0 eb 9f",
             0x318, 16, 0, 1, 0x510, 8);
  return 0;
}

/* Debian sid glibc 2.43-7 (rootfs of this machine): as 2.41 but the mask
 * is computed after the block pointer is loaded: mov %edi,%eax;
 * shr $5,%eax; mov %fs:0x510(,%rax,8),%rax; test; je; mov %edi,%edx;
 * and $0x1f,%edx; shl $4,%rdx; add %rdx,%rax; jmp. */
TEST_IMPL(disasm_tsd_glibc_243_sid) {
  expect_tsd(X86,
             "83 ff 1f 77 4b 89 f8 48 83 c0 31 48 c1 e0 04 64 48 03 04 25 10 "
             "00 00 00 48 8b 50 08 48 85 d2 74 27 89 ff 48 8d 0d f6 2d 15 00 "
             "48 8b 30 48 c1 e7 04 48 39 34 39 75 09 48 89 d0 c3 0f 1f 44 00 "
             "00 48 c7 40 08 00 00 00 00 31 d2 48 89 d0 c3 66 90 81 ff ff 03 "
             "00 00 77 f0 89 f8 c1 e8 05 64 48 8b 04 c5 10 05 00 00 48 85 c0 "
             "74 dd 89 fa 83 e2 1f 48 c1 e2 04 48 01 d0 eb 9f",
             0x318, 16, 0, 1, 0x510, 8);
  return 0;
}

/* ---- B. pthread_getspecific, compiled models ----------------------------- */

/* The three below are not from a libc: they are a C model of glibc's
 * __pthread_getspecific (specific_1stblock at 0x310 of struct pthread,
 * specific[] at 0x510, the seq check against __pthread_keys) compiled on
 * this machine (Debian gcc 12.2, clang 14.0.6) and taken from the .o, so
 * relocated fields read 0. They cover what no real vector does: the
 * successful seq check on the taken side of the branch, and aarch64's
 * second level. */

/* clang -O2, x86_64: `cmp (%rdi,%rsi,1),%rdx; je ret` on the success side;
 * thread pointer from %fs:0x10 (inline asm, as glibc's THREAD_SELF). */
TEST_IMPL(disasm_tsd_model_glibc_clang_x86) {
  expect_tsd(X86,
             "83 ff 1f 77 1b 64 48 8b 04 25 10 00 00 00 89 f9 48 c1 e1 04 48 "
             "01 c1 48 81 c1 10 03 00 00 eb 2f 81 ff ff 03 00 00 77 4e 64 48 "
             "8b 04 25 10 00 00 00 89 f9 c1 e9 05 48 8b 8c c8 10 05 00 00 48 "
             "85 c9 74 33 89 f8 83 e0 1f 48 c1 e0 04 48 01 c1 48 8b 41 08 48 "
             "85 c0 74 1e 48 8b 11 89 fe 48 c1 e6 04 48 8b 3d 00 00 00 00 48 "
             "3b 14 37 74 0a 48 c7 41 08 00 00 00 00 31 c0 c3",
             0x318, 16, 0, 1, 0x510, 8);
  return 0;
}

/* clang -O2 -mbranch-protection=standard, aarch64, struct pthread at
 * tp - 0x9c0: cbnz to the seq check, lsr w8,w0,#5;
 * add x8,x9,w8,uxtw #3; sub x8,x8,#1200; and w9,w0,#0x1f;
 * add x9,x8,w9,uxtw #4; cmp x11,x10; b.eq to the return. */
TEST_IMPL(disasm_tsd_model_glibc_clang_arm64) {
  expect_tsd(ARM,
             "5f 24 03 d5 1f 7c 00 71 08 01 00 54 48 d0 3b d5 08 51 20 8b 09 "
             "c1 1a d1 28 05 40 f9 28 02 00 b5 e0 03 08 aa c0 03 5f d6 1f fc "
             "0f 71 69 00 00 54 e0 03 1f aa c0 03 5f d6 08 7c 05 53 49 d0 3b "
             "d5 28 4d 28 8b 08 c1 12 d1 08 01 40 f9 a8 fe ff b4 09 10 00 12 "
             "09 51 29 8b 28 05 40 f9 28 fe ff b4 0b 00 00 90 ea 03 00 2a 4a "
             "ed 7c d3 6b 01 40 f9 6a 69 6a f8 2b 01 40 f9 7f 01 0a eb 20 fd "
             "ff 54 e8 03 1f aa 3f 05 00 f9 e0 03 08 aa c0 03 5f d6",
             -0x9c0 + 0x318, 16, 0, 1, -0x9c0 + 0x510, 8);
  return 0;
}

/* gcc -Os, x86_64: both levels jump into one shared tail
 * `shl $4,%rdx; add %rdx,%rax; mov 0x8(%rax),%rdx`, level one with
 * rdx = key + 0x31 and rax = fs. */
TEST_IMPL(disasm_tsd_model_glibc_gcc_os) {
  expect_tsd(X86,
             "83 ff 1f 77 11 89 fa 48 83 c2 31 64 48 8b 04 25 10 00 00 00 eb "
             "28 81 ff ff 03 00 00 77 4c 89 f8 c1 e8 05 64 48 8b 14 25 10 00 "
             "00 00 48 8b 84 c2 10 05 00 00 48 85 c0 74 31 89 fa 83 e2 1f 48 "
             "c1 e2 04 48 01 d0 48 8b 50 08 48 85 d2 74 1c 89 ff 48 8d 0d 00 "
             "00 00 00 48 c1 e7 04 48 8b 34 39 48 39 30 74 08 31 d2 48 89 50 "
             "08 31 d2 48 89 d0 c3",
             0x318, 16, 0, 1, 0x510, 8);
  return 0;
}

/* CPython 3.15: PyGILState_GetThisThreadState reads a C11 thread-local. */
static void expect_tls(enum pst__arch arch, const char *hex, uint64_t rip,
                       uint64_t got_value, int64_t want, uint64_t got) {
  struct fake_mem mem = {.base = got_value};
  char shape[128] = "", why[256] = "";
  int64_t off = 0;
  uint8_t code[256];
  size_t n = unhex(hex, code, sizeof(code));
  int err;

  err = pst__disasm_tls_getter(arch, code, n, rip, fake_read64, &mem, &off,
                               shape, sizeof(shape), why, sizeof(why));
  if (err != 0)
    TEST_FAIL("pst__disasm_tls_getter: %d (%s)", err, why);
  ASSERT_EQ(off, want);
  ASSERT(shape[0] != '\0');
  if (got != 0) {
    ASSERT_EQ(mem.calls, 1);
    ASSERT_EQ(mem.last_addr, got);
  } else {
    ASSERT_EQ(mem.calls, 0);
  }
}

/* Debian sid's static python3.15 (local-exec TLS): endbr64;
 * mov rax,fs:[-0x28]; ret. It has no key: the TSS decoder says no. */
TEST_IMPL(disasm_tls_315_static_local_exec) {
  static const char hex[] = "f3 0f 1e fa 64 48 8b 04 25 d8 ff ff ff c3";
  expect_tls(X86, hex, 0x42fa7d, 0, -0x28, 0);
  expect_tss_error(X86, hex, 0x42fa7d, "ret");
  return 0;
}

/* A shared libpython (initial-exec TLS): mov rax,[rip+0x10] (the GOT slot
 * holding the offset, -0x40 here); mov rax,fs:[rax]; ret. */
TEST_IMPL(disasm_tls_shared_initial_exec) {
  expect_tls(X86, "48 8b 05 10 00 00 00 64 48 8b 00 c3", 0x1000,
             (uint64_t)-0x40, -0x40, 0x1017);
  return 0;
}

/* aarch64: mrs x0,tpidr_el0; ldr x0,[x0,#16]; ret. */
TEST_IMPL(disasm_tls_aarch64_local_exec) {
  expect_tls(ARM, "40 d0 3b d5 00 08 40 f9 c0 03 5f d6", 0x2000, 0, 16, 0);
  return 0;
}

/* A key-based getter (3.12: the key loaded, then a call) is not a
 * thread-local read. */
TEST_IMPL(disasm_tls_rejects_tss_getter) {
  struct fake_mem mem = {.base = 0xef00000};
  uint8_t code[64];
  char why[256] = "";
  int64_t off = 0;
  size_t n = unhex("f3 0f 1e fa 48 8b 05 25 27 27 00 53 48 8d 98 08 06 00 00 "
                   "48 89 df e8 95 78 e2 ff",
                   code, sizeof(code));

  ASSERT_EQ(pst__disasm_tls_getter(X86, code, n, 0x2e25d0, fake_read64, &mem,
                                   &off, NULL, 0, why, sizeof(why)),
            -EINVAL);
  ASSERT(why[0] != '\0');
  return 0;
}
