/* test-lines.c: the line-table decoders against real code objects: each
 * installed interpreter prints a function's table and its own idea of the
 * line of every instruction, and the decoder must agree everywhere. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "python/python.h"
#include "pythons.h"
#include "task.h"

/* The function under test, compiled from a string so that it can hold a
 * jump of more than 127 lines and expressions spread over several lines
 * (the line goes backwards), on every version from 2.7 on. */
#define FUNC_SRC                                                               \
  "src = ('def f(a):\\n'\n"                                                    \
  "       '    x = a + 1\\n' + '\\n' * 140 +\n"                                \
  "       '    for i in range(3):\\n'\n"                                       \
  "       '        x += (i +\\n'\n"                                            \
  "       '              x)\\n'\n"                                             \
  "       '    y = [i\\n'\n"                                                   \
  "       '         for i in range(2)]\\n'\n"                                  \
  "       '    if x:\\n'\n"                                                    \
  "       '        return (x,\\n'\n"                                           \
  "       '                y)\\n'\n"                                           \
  "       '    return None\\n')\n"                                             \
  "ns = {}\n"                                                                  \
  "exec(compile(src, 'f.py', 'exec'), ns)\n"                                   \
  "f = ns['f']\n"

/* The script prints: first line, the table in hex, then "offset line"
 * pairs (offset in the unit the decoder takes). */
static const char script_lnotab[] =
    "import dis\n" FUNC_SRC "c = f.__code__\n"
    "import binascii\n"
    "print(c.co_firstlineno)\n"
    "print(binascii.hexlify(c.co_lnotab).decode())\n"
    "starts = dict(dis.findlinestarts(c))\n"
    "line = c.co_firstlineno\n"
    "for off in range(0, len(c.co_code)):\n"
    "    line = starts.get(off, line)\n"
    "    print(\"%d %d\" % (off, line))\n";

static const char script_310[] =
    FUNC_SRC "c = f.__code__\n"
             "print(c.co_firstlineno)\n"
             "print(c.co_linetable.hex())\n"
             "for s, e, l in c.co_lines():\n"
             "    for off in range(s, e, 2):\n"
             "        print(off // 2, -1 if l is None else l)\n";

static const char script_311[] =
    FUNC_SRC "c = f.__code__\n"
             "print(c.co_firstlineno)\n"
             "print(c.co_linetable.hex())\n"
             "for i, p in enumerate(c.co_positions()):\n"
             "    print(i, -1 if p[0] is None else p[0])\n";

enum family { LNOTAB, T310, T311 };

/* Checks one interpreter; returns 0 when it ran, 1 when not installed. */
static int check_one(int major, int minor, const char *script,
                     enum family fam) {
  char py[512], path[] = "/tmp/pst-lines-XXXXXX", cmd[1200], hex[8192];
  uint8_t tab[4096];
  size_t tlen = 0;
  int first, off, want, checked = 0, fd;
  FILE *f;

  if (find_python(major, minor, py, sizeof(py)))
    return 1;
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
    int got = fam == LNOTAB
                  ? pst__py_line_lnotab(tab, tlen, first, off, major >= 3)
              : fam == T310 ? pst__py_line_310(tab, tlen, first, off * 2)
                            : pst__py_line_311(tab, tlen, first, off);
    if (got != want)
      TEST_FAIL("python%d.%d offset %d: line %d, interpreter says %d", major,
                minor, off, got, want);
    checked++;
  }
  pclose(f);
  unlink(path);
  ASSERT_GT(checked, 5);
  printf("# python%d.%d: %d offsets agree\n", major, minor, checked);
  return 0;
}

/* Every installed minor version in [lo, hi] of one family. */
static int check(int major, int lo, int hi, const char *script,
                 enum family fam) {
  int ran = 0;

  for (int minor = lo; minor <= hi; minor++)
    ran += check_one(major, minor, script, fam) == 0;
  if (!ran)
    SKIP("no python%d.%d-%d.%d installed", major, lo, major, hi);
  return 0;
}

TEST_IMPL(lines_lnotab_27) { return check(2, 7, 7, script_lnotab, LNOTAB); }
TEST_IMPL(lines_lnotab_36) { return check(3, 6, 9, script_lnotab, LNOTAB); }
TEST_IMPL(lines_310) { return check(3, 10, 10, script_310, T310); }
TEST_IMPL(lines_311) { return check(3, 11, 14, script_311, T311); }
