/* fuzz_symtab.c: libFuzzer harness for the native side's readers of mapped
 * ELF files: the function table of src/native/symtab.c (.symtab, .dynsym,
 * MiniDebugInfo's xz-compressed .gnu_debugdata, a separate debug file,
 * C++ names demangled) and the .eh_frame_hdr check of src/native/module.c
 * (an in-memory module, as the [vdso] is made one).
 *
 * An input is a 4-byte little-endian split point and an ELF image: when the
 * split falls inside the image, the bytes after it are the image's separate
 * debug file (pst__symtab_build_debug), else the whole image becomes a
 * module whose table is built through pst__module_symtab(). Lookups follow:
 * the ranges of a few names (each range's first and last byte looked up)
 * and a stride over the low addresses where small files have their code.
 * Seeds: small real files (C and C++, with MiniDebugInfo, a stripped file
 * with its debug file, the vDSO), written by make_seeds.py. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "native/module.h"
#include "native/symtab.h"
#include "util/log.h"

static const char *const names[] = {
    "main",
    "_PyEval_EvalFrameDefault",
    "local_fn",
    "__vdso_clock_gettime",
    "ns::Foo<int>::bar(int)",
    "",
};

static void check_name(const char *s) {
  /* A name is a C string inside the table's pool: reading it all must not
   * leave the allocation (ASan sees it otherwise). */
  volatile size_t sink = strlen(s);
  (void)sink;
}

static void lookups(const struct pst__symtab *t) {
  uint64_t starts[8], ends[8], off;
  const char *s;

  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    int n = pst__symtab_ranges(t, names[i], starts, ends, 8);
    if (n < 0)
      abort();
    for (int k = 0; k < n && k < 8; k++) {
      if (starts[k] == ends[k] || (k && starts[k] < starts[k - 1]))
        abort(); /* ranges are in address order, never empty */
      if (!(s = pst__symtab_lookup(t, starts[k], &off)))
        abort(); /* a symbol's own start is covered */
      check_name(s);
      if ((s = pst__symtab_lookup(t, ends[k] - 1, &off)))
        check_name(s);
    }
  }
  for (uint64_t a = 0; a < 0x40000; a += 0x1f0)
    if ((s = pst__symtab_lookup(t, a, &off))) {
      check_name(s);
      if (off > a)
        abort();
    }
  (void)pst__symtab_lookup(t, UINT64_MAX, &off);
  (void)pst__symtab_count(t);
  (void)pst__symtab_memory(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct pst__symtab *t = NULL;
  struct pst__module *m;
  struct pst__eh_table eh;
  const uint8_t *image;
  uint32_t split;
  size_t len;

  pst__log_level = PST_LOG_ERR; /* every image is someone's mistake */
  if (size < 4)
    return 0;
  memcpy(&split, data, 4);
  image = data + 4;
  len = size - 4;
  if (split > 0 && split < len) {
    if (pst__symtab_build_debug(image, split, image + split, len - split, &t) ==
        0) {
      lookups(t);
      pst__symtab_free(t);
    }
    return 0;
  }
  if (pst__module_new_image("fuzz-symtab", image, len, &m) != 0) {
    /* libelf refused it: our own reader may still take it. */
    if (pst__symtab_build(image, len, &t) == 0) {
      lookups(t);
      pst__symtab_free(t);
    }
    return 0;
  }
  if (pst__module_eh_table(m, &eh) == 0 &&
      (eh.fde_count == 0 || eh.table_vaddr <= eh.hdr_vaddr))
    abort();
  {
    struct pst__map mp = {.start = 0x7f0000000000,
                          .end = 0x7f0000010000,
                          .offset = 0,
                          .perms = PST_MAP_R | PST_MAP_X,
                          .path = ""};
    uint64_t bias;
    (void)pst__module_bias(m, &mp, &bias);
  }
  {
    const struct pst__symtab *mt = pst__module_symtab(m);
    if (mt)
      lookups(mt);
  }
  pst__module_put(m);
  return 0;
}
