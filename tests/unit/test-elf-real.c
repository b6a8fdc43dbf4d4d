/* test-elf-real.c: the decoders on the real functions of this machine: the
 * libc's pthread_getspecific (checked against glibc's _thread_db
 * descriptors) and PyGILState_GetThisThreadState of every installed
 * interpreter (checked against the layout generated from its headers). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "disasm/disasm.h"
#include "elf/elf.h"
#include "python/layout.h"
#include "pythons.h"
#include "task.h"

static struct pst__elf *open_elf(const char *path) {
  struct pst__elf *e;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || pst__elf_open(fd, &e))
    return NULL;
  return e;
}

TEST_IMPL(real_libc_getspecific) {
  struct pst__tsd_layout l;
  uint8_t code[256] = {0};
  uint32_t spec[3], data[3], size;
  uint64_t a, sz, s1, s2, s3;
  char why[128];
  struct pst__elf *e = open_elf("/lib/x86_64-linux-gnu/libc.so.6");

  if (!e)
    SKIP("no /lib/x86_64-linux-gnu/libc.so.6");
  ASSERT_EQ(pst__elf_symbol(e, "__pthread_getspecific", &a, &sz), 0);
  ASSERT(sz > 0 && sz <= sizeof(code));
  ASSERT_EQ(pst__elf_read(e, a, code, sz), 0);
  ASSERT_EQ(pst__disasm_tsd_layout(PST_ARCH_X86_64, code, sz, a, &l, why,
                                   sizeof(why)),
            0);
  ASSERT_EQ(pst__elf_symbol(e, "_thread_db_pthread_specific", &s1, NULL), 0);
  ASSERT_EQ(pst__elf_symbol(e, "_thread_db_pthread_key_data_data", &s2, NULL),
            0);
  ASSERT_EQ(pst__elf_symbol(e, "_thread_db_sizeof_pthread_key_data", &s3, NULL),
            0);
  ASSERT_EQ(pst__elf_read(e, s1, spec, sizeof(spec)), 0);
  ASSERT_EQ(pst__elf_read(e, s2, data, sizeof(data)), 0);
  ASSERT_EQ(pst__elf_read(e, s3, &size, sizeof(size)), 0);
  ASSERT_EQ(l.indirect, 0);
  ASSERT_EQ(l.multiplier, size);
  ASSERT_EQ(l.has_l2, 1);
  ASSERT_EQ(l.l2_offset, spec[2]);
  ASSERT_EQ(l.l2_data, data[2]);
  /* struct pthread keeps specific_1stblock (32 key_data entries) right
   * before specific[], the level-2 pointers. */
  ASSERT_EQ(l.offset + 32 * (int64_t)size - (int64_t)data[2], spec[2]);
  pst__elf_close(e);
  return 0;
}

static uint64_t runtime_vaddr;

static int read_got(void *arg, uint64_t addr, uint64_t *out) {
  (void)arg;
  (void)addr;
  *out = runtime_vaddr; /* a GOT slot here holds &_PyRuntime */
  return 0;
}

static int check_python(const char *py, int hex, const struct pst__py_layout *l,
                        int *checked) {
  char lib[600];
  struct pst__elf *e = NULL;
  uint8_t code[128] = {0};
  uint64_t a, sz, got;
  char shape[96], why[96];
  int is_load;

  /* pyenv builds are --enable-shared: the code is in libpython. */
  snprintf(lib, sizeof(lib), "%s", py);
  char *bin = strstr(lib, "/bin/");
  if (bin) {
    snprintf(bin, sizeof(lib) - (size_t)(bin - lib),
             "/lib/libpython%d.%d%s.so.1.0", hex >> 8, hex & 0xff,
             hex <= 0x0307 ? "m" : "");
    e = open_elf(lib);
  }
  if (!e)
    e = open_elf(py);
  ASSERT(e != NULL);
  ASSERT_EQ(pst__elf_symbol(e, "PyGILState_GetThisThreadState", &a, &sz), 0);
  if (sz == 0 || sz > sizeof(code))
    sz = sizeof(code);
  ASSERT_EQ(pst__elf_read(e, a, code, sz), 0);
  runtime_vaddr = 0;
  if (hex >= 0x0307)
    ASSERT_EQ(pst__elf_symbol(e, "_PyRuntime", &runtime_vaddr, NULL), 0);
  if (pst__disasm_tss_key(PST_ARCH_X86_64, code, sz, a, read_got, NULL, &got,
                          &is_load, shape, sizeof(shape), why, sizeof(why)))
    TEST_FAIL("%s: %s", py, why);
  printf("# %s: %s -> 0x%llx%s\n", py, shape, (unsigned long long)got,
         is_load ? " (loaded)" : "");
  if (hex >= 0x0307) {
    /* A load reads the key itself (Py_tss_t + 4); otherwise the argument
     * is the Py_tss_t: either way the key is at rt_tss + 4. */
    uint64_t key_off = got - runtime_vaddr + (is_load ? 0 : 4);
    if (key_off != (uint64_t)l->rt_tss + 4)
      TEST_FAIL("%s: key at _PyRuntime+0x%llx (is_load %d), headers say "
                "+0x%x",
                py, (unsigned long long)key_off, is_load, l->rt_tss + 4);
  } else {
    /* 3.6: the static int autoTLSkey, loaded. */
    uint64_t key;
    ASSERT_EQ(is_load, 1);
    if (pst__elf_symbol(e, "autoTLSkey", &key, NULL) == 0)
      ASSERT_EQ(got, key);
    else
      printf("# %s: no .symtab, autoTLSkey not checked by name\n", py);
  }
  pst__elf_close(e);
  (*checked)++;
  return 0;
}

TEST_IMPL(real_python_tss_key) {
  char py[512];
  int checked = 0;

  for (int minor = 6; minor <= 13; minor++) {
    const struct pst__py_layout *l =
        minor == 13 ? pst__py_layout_reference_313()
                    : pst__py_layout_builtin(0x300 | minor);
    if (find_python(3, minor, py, sizeof(py))) {
      printf("# python3.%d not installed: skipped\n", minor);
      continue;
    }
    check_python(py, 0x300 | minor, l, &checked);
  }
  if (access("/usr/bin/python3.11", X_OK) == 0)
    check_python("/usr/bin/python3.11", 0x030b, pst__py_layout_builtin(0x030b),
                 &checked);
  if (!checked)
    SKIP("no CPython 3.6+ installed");
  return 0;
}
