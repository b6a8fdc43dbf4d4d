/* fuzz_lines.c: libFuzzer harness for the line-table decoders of every
 * CPython version (src/python/code.c): co_lnotab with unsigned (2.7) and
 * signed (3.6-3.9) line deltas, co_linetable of 3.10, and the location
 * table of 3.11+.
 *
 * Input: format (1 byte, modulo 4), firstlineno (int32 LE), the offset to
 * resolve (int32 LE; bytes for lnotab and 3.10, code units for 3.11+),
 * then the table bytes. Seeds are real tables dumped from the installed
 * interpreters (fuzz/dump_linetables.py). Besides the offset given, the
 * offsets 0 to 255 are resolved, so that each input walks most of its
 * table. */
#include <stdint.h>
#include <string.h>

#include "python/python.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *tab = data + 9;
  size_t len = size - 9;
  int32_t first, addr;
  volatile int sink;

  if (size < 9)
    return 0;
  memcpy(&first, data + 1, 4);
  memcpy(&addr, data + 5, 4);
  for (int a = -1; a < 256; a++) {
    int at = a == -1 ? addr : a;
    switch (data[0] % 4) {
    case 0:
      sink = pst__py_line_lnotab(tab, len, first, at, 0);
      break;
    case 1:
      sink = pst__py_line_lnotab(tab, len, first, at, 1);
      break;
    case 2:
      sink = pst__py_line_310(tab, len, first, at);
      break;
    default:
      sink = pst__py_line_311(tab, len, first, at);
      break;
    }
  }
  (void)sink;
  return 0;
}
