/* fuzz_elf.c: libFuzzer harness for src/elf/elf.c. The input is an ELF file
 * (seeds: small real ones); it is opened from a memfd as the analysis opens
 * a target's file, then every lookup the analysis makes is run on it:
 * symbols in one batch and one by one, sections and their bytes, reads at
 * the symbols' and sections' addresses (the real uses read a stub of up to
 * 256 bytes, a 4-byte Py_Version, libc descriptors), the load bias, and
 * the notes a debug file is matched by (build-id, .gnu_debuglink). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elf/debuginfo.h"
#include "elf/elf.h"

/* What analyse.c and libc/tsd.c look up. */
static const char *const names[] = {
    "Py_Initialize",
    "Py_Version",
    "_PyRuntime",
    "PyCode_Type",
    "_PyThreadState_Current",
    "interp_head",
    "PyInterpreterState_Head",
    "PyGILState_GetThisThreadState",
    "_Py_NoneStruct",
    "pthread_getspecific",
    "__pthread_getspecific",
    "_thread_db_pthread_specific",
    "_thread_db_pthread_key_data_data",
    "_thread_db_sizeof_pthread_key_data",
    "_thread_db_pthread_start_routine",
    "_thread_db_sizeof_pthread",
    "main",
    "",
};
#define NNAMES (sizeof(names) / sizeof(names[0]))

static const char *const sections[] = {".rodata", ".text", ".dynsym", ".symtab",
                                       ".bss",    ".data", ""};

static void read_at(const struct pst__elf *e, uint64_t vaddr, size_t len) {
  uint8_t buf[256];
  if (len > sizeof(buf))
    len = sizeof(buf);
  /* The buffer must be fully written on success (memset past filesz). */
  if (pst__elf_read(e, vaddr, buf, len) == 0) {
    volatile uint8_t sink = 0;
    for (size_t i = 0; i < len; i++)
      sink ^= buf[i];
    (void)sink;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint64_t values[NNAMES], sizes[NNAMES], v, sz, addr, bias;
  struct pst__elf *e;
  const void *bytes;
  int fd;

  fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
  if (fd < 0)
    return 0;
  if (write(fd, data, size) != (ssize_t)size) {
    close(fd);
    return 0;
  }
  if (pst__elf_open(fd, &e) != 0)
    return 0; /* fd closed by pst__elf_open */
  (void)pst__elf_machine(e);
  (void)pst__elf_type(e);
  if (pst__elf_symbols(e, names, NNAMES, values, sizes) > 0)
    for (size_t i = 0; i < NNAMES; i++)
      if (values[i])
        read_at(e, values[i], (size_t)sizes[i]);
  (void)pst__elf_symbols(e, names, 2, values, NULL);
  if (pst__elf_symbol(e, "Py_Version", &v, &sz) == 0)
    read_at(e, v, 4);
  for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
    if (pst__elf_section(e, sections[i], &addr, &sz) == 0) {
      read_at(e, addr, (size_t)sz);
      read_at(e, addr + sz - 1, 8); /* across the end */
    }
    bytes = pst__elf_section_bytes(e, sections[i], &sz);
    if (bytes && sz) {
      volatile uint8_t sink =
          ((const uint8_t *)bytes)[0] ^ ((const uint8_t *)bytes)[sz - 1];
      (void)sink;
    }
  }
  read_at(e, 0, 8);
  read_at(e, UINT64_MAX - 3, 8);
  {
    const uint8_t *id;
    const char *link;
    size_t id_len;
    uint32_t crc;
    if (pst__debuginfo_build_id(e, &id, &id_len) == 0) {
      volatile uint8_t sink = id[0] ^ id[id_len - 1];
      (void)sink;
    }
    if (pst__debuginfo_debuglink(e, &link, &crc) == 0) {
      volatile size_t sink = strlen(link);
      (void)sink;
    }
  }
  (void)pst__elf_bias(e, 0x7f0000000000, 0, &bias);
  (void)pst__elf_bias(e, 0x7f0000001000, 0x1000, &bias);
  pst__elf_close(e);
  return 0;
}
