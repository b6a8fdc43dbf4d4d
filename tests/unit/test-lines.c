/* test-lines.c: the line-table decoders against real code objects: each
 * installed interpreter prints a function's table and its own idea of the
 * line of every instruction, and the decoder must agree everywhere. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pythons.h"
#include "python/python.h"
#include "task.h"

/* The script prints: first line, the table in hex, then "offset line"
 * pairs (offset in the unit the decoder takes). */
static const char script_lnotab[] =
    "import dis\n"
    "def f(a):\n"
    "    x = a + 1\n"
    "    for i in range(3):\n"
    "        x += i\n"
    "\n\n\n\n\n\n\n"
    "    if x:\n"
    "        return x\n"
    "    return None\n"
    "c = f.__code__\n"
    "import binascii\n"
    "print(c.co_firstlineno)\n"
    "print(binascii.hexlify(c.co_lnotab).decode())\n"
    "starts = dict(dis.findlinestarts(c))\n"
    "line = c.co_firstlineno\n"
    "for off in range(0, len(c.co_code)):\n"
    "    line = starts.get(off, line)\n"
    "    print(\"%d %d\" % (off, line))\n";

static const char script_310[] =
    "def f(a):\n"
    "    x = a + 1\n"
    "    for i in range(3):\n"
    "        x += i\n"
    "\n\n\n\n\n\n\n"
    "    if x:\n"
    "        return x\n"
    "    return None\n"
    "c = f.__code__\n"
    "print(c.co_firstlineno)\n"
    "print(c.co_linetable.hex())\n"
    "for s, e, l in c.co_lines():\n"
    "    for off in range(s, e, 2):\n"
    "        print(off // 2, -1 if l is None else l)\n";

static const char script_311[] =
    "def f(a):\n"
    "    x = a + 1\n"
    "    for i in range(3):\n"
    "        x += i\n"
    "\n\n\n\n\n\n\n"
    "    if x:\n"
    "        return (x,\n"
    "                x)\n"
    "    return None\n"
    "c = f.__code__\n"
    "print(c.co_firstlineno)\n"
    "print(c.co_linetable.hex())\n"
    "for i, p in enumerate(c.co_positions()):\n"
    "    print(i, -1 if p[0] is None else p[0])\n";

enum family { LNOTAB, T310, T311 };

static int check(int major, int minor, const char *script, enum family fam) {
  char py[512], path[] = "/tmp/pst-lines-XXXXXX", cmd[1200], hex[8192];
  uint8_t tab[4096];
  size_t tlen = 0;
  int first, off, want, checked = 0, fd;
  FILE *f;

  if (find_python(major, minor, py, sizeof(py)))
    SKIP("python%d.%d not installed", major, minor);
  fd = mkstemp(path);
  ASSERT(fd >= 0);
  ASSERT((size_t)write(fd, script, strlen(script)) == strlen(script));
  close(fd);
  snprintf(cmd, sizeof(cmd), "%s %s", py, path);
  f = popen(cmd, "r");
  ASSERT(f != NULL);
  ASSERT(fscanf(f, "%d", &first) == 1);
  ASSERT(fscanf(f, "%8191s", hex) == 1);
  for (size_t i = 0; hex[2 * i] && hex[2 * i + 1]; i++) {
    unsigned b;
    sscanf(hex + 2 * i, "%2x", &b);
    tab[tlen++] = (uint8_t)b;
  }
  while (fscanf(f, "%d %d", &off, &want) == 2) {
    int got = fam == LNOTAB ? pst_py_line_lnotab(tab, tlen, first, off,
                                                 major >= 3)
              : fam == T310 ? pst_py_line_310(tab, tlen, first, off * 2)
                            : pst_py_line_311(tab, tlen, first, off);
    if (got != want)
      TEST_FAIL("python%d.%d offset %d: line %d, interpreter says %d",
                major, minor, off, got, want);
    checked++;
  }
  pclose(f);
  unlink(path);
  ASSERT_GT(checked, 5);
  return 0;
}

TEST_IMPL(lines_lnotab_27) { return check(2, 7, script_lnotab, LNOTAB); }
TEST_IMPL(lines_lnotab_36) { return check(3, 8, script_lnotab, LNOTAB); }
TEST_IMPL(lines_310) { return check(3, 10, script_310, T310); }
TEST_IMPL(lines_311) { return check(3, 12, script_311, T311); }
