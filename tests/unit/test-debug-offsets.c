/* test-debug-offsets.c: the layout read at run time from a live 3.13's
 * _Py_DebugOffsets equals the one generated from 3.13's headers, field by
 * field (so the 3.13 schema in debug_offsets.c is right, and the
 * exception fields it derives). */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elf/elf.h"
#include "proc/maps.h"
#include "proc/mem.h"
#include "python/python.h"
#include "pythons.h"
#include "spawn.h"
#include "task.h"

static int is_libpython313(const char *base) {
  return !strncmp(base, "libpython3.13", 13);
}

TEST_IMPL(debug_offsets_313) {
  const struct pst__py_layout *ref = pst__py_layout_reference_313();
  struct pst__py_layout lay;
  const struct pst__map *mp;
  struct pst__maps maps;
  struct pst__mem mem;
  struct pst__elf *e;
  uint64_t sym, bias, size;
  char py[512];
  char *argv[] = {py, "-c", "import time; time.sleep(60)", NULL};
  int hex, fd, compared = 0;
  pid_t pid;

  if (find_python(3, 13, py, sizeof(py)))
    SKIP("python3.13 not installed");
  pid = test_spawn(argv, NULL, NULL);
  ASSERT_GT(pid, 0);
  usleep(300000);
  ASSERT_EQ(pst__maps_load(pid, &maps), 0);
  mp = pst__maps_find_file(&maps, is_libpython313);
  if (!mp)
    SKIP("%s is not linked against libpython3.13", py);
  mp = pst__maps_file_base(&maps, mp);
  fd = pst__maps_open(pid, mp);
  ASSERT(fd >= 0);
  ASSERT_EQ(pst__elf_open(fd, &e), 0);
  ASSERT_EQ(pst__elf_symbol(e, "_PyRuntime", &sym, NULL), 0);
  ASSERT_EQ(pst__elf_bias(e, mp->start, mp->offset, &bias), 0);
  pst__mem_init(&mem, pid);
  ASSERT_EQ(pst__py_debug_offsets(&mem, sym + bias, &lay, &size, &hex), 0);
  ASSERT_EQ(hex, 0x030d);
  ASSERT_GT(size, 0);
  /* The GIL fields differ in frame of reference: checked below. */
#define CMP(name)                                                              \
  if (lay.name != PST_NOFF && ref->name != PST_NOFF &&                         \
      strncmp(#name, "gil_", 4) && strcmp(#name, "is_gil_inline")) {           \
    if (lay.name != ref->name)                                                 \
      TEST_FAIL(#name ": _Py_DebugOffsets %d, headers %d", lay.name,           \
                ref->name);                                                    \
    compared++;                                                                \
  }
  PST_PY_LAYOUT_FIELDS(CMP)
#undef CMP
  /* gil offsets: relative to the interpreter at run time, inside the
   * struct in the table. */
  ASSERT_EQ(lay.gil_locked, ref->is_gil_inline + ref->gil_locked);
  ASSERT_EQ(lay.gil_last_holder, ref->is_gil_inline + ref->gil_last_holder);
  ASSERT_GE(compared, 25);
  /* Derived, not named by 3.13's _Py_DebugOffsets: present and equal. */
  ASSERT_EQ(lay.ts_cur_exc, ref->ts_cur_exc);
  ASSERT_EQ(lay.ts_exc_info, ref->ts_exc_info);
  ASSERT_EQ(lay.ei_value, ref->ei_value);
  ASSERT_EQ(lay.ei_previous, ref->ei_previous);
  ASSERT_EQ(lay.is_gc_collecting, ref->is_gc_collecting);
  pst__elf_close(e);
  pst__maps_exit(&maps);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return 0;
}

/* Every built-in layout passes the bounds check; offsets that would read
 * past a local buffer (as a corrupt _Py_DebugOffsets could give) fail it. */
TEST_IMPL(layout_check_bounds) {
  struct pst__py_layout bad;
  char why[128];
  int checked = 0;

  for (int v = 0x0200; v <= 0x030f; v++) {
    const struct pst__py_layout *l = pst__py_layout_builtin(v);
    if (!l)
      continue;
    if (pst__py_layout_check(l, why, sizeof(why)))
      TEST_FAIL("built-in %x rejected: %s", v, why);
    checked++;
  }
  ASSERT_GE(checked, 8);
  bad = *pst__py_layout_builtin(0x030c);
  bad.if_size = 0x1000;
  bad.if_previous = 0x108;
  ASSERT_EQ(pst__py_layout_check(&bad, why, sizeof(why)), PST_EPYVERSION);
  ASSERT(strstr(why, "if_previous") != NULL);
  bad = *pst__py_layout_builtin(0x030c);
  bad.co_name = bad.co_size - 4;
  ASSERT_EQ(pst__py_layout_check(&bad, why, sizeof(why)), PST_EPYVERSION);
  bad = *pst__py_layout_builtin(0x030c);
  bad.str_length = -8;
  ASSERT_EQ(pst__py_layout_check(&bad, why, sizeof(why)), PST_EPYVERSION);
  /* The registry's local buffers: a dict head, an int, a type span. */
  bad = *pst__py_layout_builtin(0x030c);
  bad.dict_ma_values = 48;
  ASSERT_EQ(pst__py_layout_check(&bad, why, sizeof(why)), PST_EPYVERSION);
  ASSERT(strstr(why, "dict_ma_values") != NULL);
  bad = *pst__py_layout_builtin(0x030c);
  bad.long_digit = 30;
  ASSERT_EQ(pst__py_layout_check(&bad, why, sizeof(why)), PST_EPYVERSION);
  bad = *pst__py_layout_builtin(0x030c);
  bad.ht_cached_keys = 4096;
  ASSERT_EQ(pst__py_layout_check(&bad, why, sizeof(why)), PST_EPYVERSION);
  bad = *pst__py_layout_builtin(0x0207);
  bad.int_ival = 20;
  ASSERT_EQ(pst__py_layout_check(&bad, why, sizeof(why)), PST_EPYVERSION);
  return 0;
}
