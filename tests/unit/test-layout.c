/* test-layout.c: the generated pst__py_layout tables (src/python/offsets/).
 *
 * The known values were checked against the DWARF of the pyenv builds the
 * tables were generated from (gdb ptype/o), and the 3.13 ones against the
 * _Py_DebugOffsets embedded in libpython3.13.so (3.13.0).
 */
#include "task.h"

#include "python/layout.h"

/* Every minor version with a built-in table. */
static const int builtin_versions[] = {0x0207, 0x0306, 0x0307, 0x0308,
                                       0x0309, 0x030a, 0x030b, 0x030c};
#define N_BUILTIN (int)(sizeof builtin_versions / sizeof builtin_versions[0])

#define NEED(l, f)                                                             \
  do {                                                                         \
    if ((l)->f == PST_NOFF)                                                    \
      TEST_FAIL("version 0x%04x: %s is PST_NOFF", (l)->version, #f);           \
  } while (0)

#define NONE(l, f)                                                             \
  do {                                                                         \
    if ((l)->f != PST_NOFF)                                                    \
      TEST_FAIL("version 0x%04x: %s is 0x%x, expected PST_NOFF", (l)->version, \
                #f, (unsigned)(l)->f);                                         \
  } while (0)

/* Field f, when present, lies within the first `size` bytes with `width`
 * bytes to read, and is aligned to `align`. */
#define INSIDE(l, f, width, size, align)                                       \
  do {                                                                         \
    if ((l)->f != PST_NOFF &&                                                  \
        ((l)->f < 0 || (l)->f + (width) > (size) || (l)->f % (align) != 0))    \
      TEST_FAIL("version 0x%04x: %s = 0x%x outside 0x%x or misaligned",        \
                (l)->version, #f, (unsigned)(l)->f, (unsigned)(size));         \
  } while (0)

static const struct pst__py_layout *get(int version) {
  const struct pst__py_layout *l = pst__py_layout_builtin(version);

  if (l == NULL)
    TEST_FAIL("no built-in table for 0x%04x", version);
  return l;
}

TEST_IMPL(layout_builtin_versions) {
  for (int i = 0; i < N_BUILTIN; i++) {
    const struct pst__py_layout *l = get(builtin_versions[i]);
    ASSERT_EQ(l->version, builtin_versions[i]);
    ASSERT(l == pst__py_layout_builtin(builtin_versions[i]));
  }
  /* 3.13+ come from _Py_DebugOffsets; no table for unknown versions. */
  ASSERT(pst__py_layout_builtin(0x030d) == NULL);
  ASSERT(pst__py_layout_builtin(0x030e) == NULL);
  ASSERT(pst__py_layout_builtin(0x0305) == NULL);
  ASSERT(pst__py_layout_builtin(0x0300) == NULL);
  ASSERT(pst__py_layout_builtin(0x0206) == NULL);
  ASSERT(pst__py_layout_builtin(0) == NULL);
  ASSERT(pst__py_layout_builtin(-1) == NULL);
  return 0;
}

static void check_required(const struct pst__py_layout *l) {
  int v = l->version;

  /* No value below PST_NOFF anywhere. */
#define CHECK_NOT_NEGATIVE(name)                                               \
  if (l->name < PST_NOFF)                                                      \
    TEST_FAIL("version 0x%04x: %s = %d", v, #name, (int)l->name);
  PST_PY_LAYOUT_FIELDS(CHECK_NOT_NEGATIVE)
#undef CHECK_NOT_NEGATIVE

  /* Every version */
  NEED(l, is_next);
  NEED(l, is_tstate_head);
  NEED(l, ts_next);
  NEED(l, ts_interp);
  NEED(l, ts_thread_id);
  NEED(l, ts_size);
  NEED(l, co_filename);
  NEED(l, co_name);
  NEED(l, co_firstlineno);
  NEED(l, co_size);
  NEED(l, str_length);
  NEED(l, str_ascii_data);
  NEED(l, bytes_size);
  NEED(l, bytes_data);

  /* Runtime state and GIL struct: 3.7+ */
  if (v >= 0x0307) {
    NEED(l, rt_interp_head);
    NEED(l, rt_tss);
    NEED(l, gil_last_holder);
    NEED(l, gil_locked);
  } else {
    NONE(l, rt_interp_head);
    NONE(l, rt_tss);
    NONE(l, rt_gil_tstate);
    NONE(l, gil_last_holder);
    NONE(l, gil_locked);
  }
  if (v >= 0x0307 && v <= 0x030b)
    NEED(l, rt_gil_tstate);
  else
    NONE(l, rt_gil_tstate);
  if (v >= 0x030c) {
    NEED(l, is_gil);
    NEED(l, is_gil_inline);
  } else {
    NONE(l, is_gil);
    NONE(l, is_gil_inline);
  }

  /* Thread state */
  if (v >= 0x030b)
    NEED(l, ts_native_thread_id);
  else
    NONE(l, ts_native_thread_id);
  NONE(l, ts_current_frame); /* 3.13+ only */

  /* Frames */
  if (v <= 0x030a) {
    NEED(l, ts_frame);
    NEED(l, f_back);
    NEED(l, f_code);
    NEED(l, f_lasti);
    NEED(l, f_lineno);
    NEED(l, f_size);
    NONE(l, ts_cframe);
    NONE(l, cf_current_frame);
    NONE(l, if_code);
    NONE(l, if_previous);
    NONE(l, if_instr);
    NONE(l, if_owner);
    NONE(l, if_is_entry);
    NONE(l, if_size);
    NONE(l, co_qualname);
    NONE(l, co_code_adaptive);
  } else {
    NONE(l, ts_frame);
    NONE(l, f_back);
    NONE(l, f_code);
    NONE(l, f_lasti);
    NONE(l, f_lineno);
    NONE(l, f_size);
    NEED(l, ts_cframe);
    NEED(l, cf_current_frame);
    NEED(l, if_code);
    NEED(l, if_previous);
    NEED(l, if_instr);
    NEED(l, if_owner);
    NEED(l, if_size);
    NEED(l, co_qualname);
    NEED(l, co_code_adaptive);
    if (v == 0x030b)
      NEED(l, if_is_entry);
    else
      NONE(l, if_is_entry);
  }

  /* Code objects */
  if (v <= 0x0309) {
    NEED(l, co_lnotab);
    NONE(l, co_linetable);
  } else {
    NONE(l, co_lnotab);
    NEED(l, co_linetable);
  }

  /* Strings */
  if (v >= 0x0300) {
    NEED(l, str_state);
    NEED(l, str_compact_data);
  } else {
    NONE(l, str_state);
    NONE(l, str_compact_data);
  }

  /* The thread registry: sys.modules, dicts, ints (registry.c, dict.c) */
  NEED(l, is_modules);
  NEED(l, dict_ma_used);
  NEED(l, type_itemsize);
  NEED(l, long_digit);
  if (v >= 0x0300) {
    NEED(l, dict_ma_keys);
    NEED(l, dict_ma_values);
    NONE(l, dict_ma_mask);
    NONE(l, dict_ma_table);
    NONE(l, int_ival);
  } else {
    NONE(l, dict_ma_keys);
    NONE(l, dict_ma_values);
    NEED(l, dict_ma_mask);
    NEED(l, dict_ma_table);
    NEED(l, int_ival);
  }
  if (v >= 0x030c) {
    NEED(l, long_tag);
    NONE(l, long_size);
  } else {
    NEED(l, long_size);
    NONE(l, long_tag);
  }
}

TEST_IMPL(layout_required_fields) {
  for (int i = 0; i < N_BUILTIN; i++)
    check_required(get(builtin_versions[i]));
  return 0;
}

static void check_bounds(const struct pst__py_layout *l) {
  /* Pointers are 8 bytes and 8-aligned (x86_64 / aarch64). */
  INSIDE(l, ts_next, 8, l->ts_size, 8);
  INSIDE(l, ts_interp, 8, l->ts_size, 8);
  INSIDE(l, ts_frame, 8, l->ts_size, 8);
  INSIDE(l, ts_cframe, 8, l->ts_size, 8);
  INSIDE(l, ts_current_frame, 8, l->ts_size, 8);
  INSIDE(l, ts_thread_id, 8, l->ts_size, 8);
  INSIDE(l, ts_native_thread_id, 8, l->ts_size, 8);

  if (l->f_size != PST_NOFF) {
    INSIDE(l, f_back, 8, l->f_size, 8);
    INSIDE(l, f_code, 8, l->f_size, 8);
    INSIDE(l, f_lasti, 4, l->f_size, 4);
    INSIDE(l, f_lineno, 4, l->f_size, 4);
  }
  if (l->if_size != PST_NOFF) {
    INSIDE(l, if_code, 8, l->if_size, 8);
    INSIDE(l, if_previous, 8, l->if_size, 8);
    INSIDE(l, if_instr, 8, l->if_size, 8);
    INSIDE(l, if_owner, 1, l->if_size, 1);
    INSIDE(l, if_is_entry, 1, l->if_size, 1);
  }

  INSIDE(l, co_filename, 8, l->co_size, 8);
  INSIDE(l, co_name, 8, l->co_size, 8);
  INSIDE(l, co_qualname, 8, l->co_size, 8);
  INSIDE(l, co_firstlineno, 4, l->co_size, 4);
  INSIDE(l, co_lnotab, 8, l->co_size, 8);
  INSIDE(l, co_linetable, 8, l->co_size, 8);
  INSIDE(l, co_code_adaptive, 2, l->co_size, 1);

  INSIDE(l, str_length, 8, l->str_ascii_data, 8);
  INSIDE(l, str_state, 4, l->str_ascii_data, 4);
  if (l->str_compact_data != PST_NOFF)
    ASSERT_GT(l->str_compact_data, l->str_ascii_data);
  INSIDE(l, bytes_size, 8, l->bytes_data, 8);

  INSIDE(l, is_next, 8, 1 << 20, 8);
  INSIDE(l, is_tstate_head, 8, 1 << 20, 8);
  INSIDE(l, is_gil, 8, 1 << 20, 8);
  INSIDE(l, is_gil_inline, 8, 1 << 20, 8);
  INSIDE(l, rt_interp_head, 8, 1 << 20, 8);
  INSIDE(l, rt_tss, 8, 1 << 14, 4); /* a few KiB into _PyRuntime */
  INSIDE(l, rt_gil_tstate, 8, 1 << 14, 8);
  INSIDE(l, gil_last_holder, 8, 256, 8);
  INSIDE(l, gil_locked, 4, 256, 4);
  INSIDE(l, is_modules, 8, 1 << 20, 8);

  /* A 3.x PyDictObject is 48 bytes; 2.7's table pointer follows ma_mask. */
  INSIDE(l, dict_ma_used, 8, 48, 8);
  INSIDE(l, dict_ma_keys, 8, 48, 8);
  INSIDE(l, dict_ma_values, 8, 48, 8);
  INSIDE(l, dict_ma_mask, 8, 48, 8);
  INSIDE(l, dict_ma_table, 8, 48, 8);
  INSIDE(l, long_size, 8, 24, 8);
  INSIDE(l, long_tag, 8, 24, 8);
  INSIDE(l, long_digit, 4, 32, 4);
  INSIDE(l, int_ival, 8, 24, 8);
  INSIDE(l, type_itemsize, 8, 64, 8);
}

TEST_IMPL(layout_field_bounds) {
  const struct pst__py_layout *ref = pst__py_layout_reference_313();

  for (int i = 0; i < N_BUILTIN; i++)
    check_bounds(get(builtin_versions[i]));
  if (ref != NULL)
    check_bounds(ref);
  return 0;
}

TEST_IMPL(layout_known_values) {
  const struct pst__py_layout *l;

  /* Py_tss_t autoTSSkey in _PyRuntime (facts.md section 2). */
  ASSERT_EQ(get(0x030a)->rt_tss, 0x248);
  ASSERT_EQ(get(0x030b)->rt_tss, 0x250);
  ASSERT_EQ(get(0x030c)->rt_tss, 0x608);

  l = get(0x0207);
  ASSERT_EQ(l->is_tstate_head, 0x8);
  ASSERT_EQ(l->ts_next, 0x0);
  ASSERT_EQ(l->ts_interp, 0x8);
  ASSERT_EQ(l->ts_frame, 0x10);
  ASSERT_EQ(l->ts_thread_id, 0x90);
  ASSERT_EQ(l->f_back, 0x18);
  ASSERT_EQ(l->f_code, 0x20);
  ASSERT_EQ(l->f_lasti, 0x78);
  ASSERT_EQ(l->co_filename, 0x50);
  ASSERT_EQ(l->co_lnotab, 0x68);
  ASSERT_EQ(l->str_length, 0x10);
  ASSERT_EQ(l->str_ascii_data, 0x24); /* PyStringObject.ob_sval */
  ASSERT_EQ(l->bytes_data, 0x24);

  l = get(0x0306);
  ASSERT_EQ(l->ts_next, 0x8); /* struct _ts gained prev in 3.x */
  ASSERT_EQ(l->ts_frame, 0x18);
  ASSERT_EQ(l->ts_thread_id, 0x98);
  ASSERT_EQ(l->co_firstlineno, 0x24);

  l = get(0x0307);
  ASSERT_EQ(l->rt_interp_head, 0x18);
  ASSERT_EQ(l->rt_tss, 0x5e0);
  ASSERT_EQ(l->rt_gil_tstate, 0x5c8);
  ASSERT_EQ(l->ts_thread_id, 0xb0);

  l = get(0x0309);
  ASSERT_EQ(l->rt_interp_head, 0x20);
  ASSERT_EQ(l->rt_tss, 0x248);
  ASSERT_EQ(l->ts_frame, 0x18);
  ASSERT_EQ(l->f_lasti, 0x68);

  l = get(0x030a);
  ASSERT_EQ(l->rt_gil_tstate, 0x238);
  ASSERT_EQ(l->ts_frame, 0x18);
  ASSERT_EQ(l->ts_thread_id, 0xb0);
  ASSERT_EQ(l->f_lasti, 0x60);
  ASSERT_EQ(l->co_linetable, 0x78);

  l = get(0x030b);
  ASSERT_EQ(l->rt_interp_head, 0x28);
  ASSERT_EQ(l->rt_gil_tstate, 0x240);
  ASSERT_EQ(l->is_tstate_head, 0x10); /* interp->threads.head in 3.11 */
  ASSERT_EQ(l->gil_last_holder, 0x8);
  ASSERT_EQ(l->gil_locked, 0x10);
  ASSERT_EQ(l->ts_cframe, 0x38);
  ASSERT_EQ(l->ts_thread_id, 0x98);
  ASSERT_EQ(l->ts_native_thread_id, 0xa0);
  ASSERT_EQ(l->cf_current_frame, 0x8); /* after uint8_t use_tracing */
  ASSERT_EQ(l->if_code, 0x20);
  ASSERT_EQ(l->if_previous, 0x30);
  ASSERT_EQ(l->if_instr, 0x38);
  ASSERT_EQ(l->if_is_entry, 0x44);
  ASSERT_EQ(l->if_owner, 0x45);
  ASSERT_EQ(l->if_size, 0x50);
  ASSERT_EQ(l->co_qualname, 0x80);
  ASSERT_EQ(l->co_code_adaptive, 0xb8);
  ASSERT_EQ(l->co_size, 0xc0);
  ASSERT_EQ(l->str_ascii_data, 0x30);
  ASSERT_EQ(l->str_compact_data, 0x48);

  l = get(0x030c);
  ASSERT_EQ(l->rt_interp_head, 0x28);
  ASSERT_EQ(l->is_tstate_head, 0x48);
  ASSERT_EQ(l->is_gil, 0x180);
  ASSERT_EQ(l->is_gil_inline, 0x410);
  ASSERT_EQ(l->ts_cframe, 0x38);
  ASSERT_EQ(l->ts_thread_id, 0x88);
  ASSERT_EQ(l->ts_native_thread_id, 0x90);
  ASSERT_EQ(l->cf_current_frame, 0x0);
  ASSERT_EQ(l->if_code, 0x0);
  ASSERT_EQ(l->if_previous, 0x8);
  ASSERT_EQ(l->if_instr, 0x38);
  ASSERT_EQ(l->if_owner, 0x46);
  ASSERT_EQ(l->co_code_adaptive, 0xc0);
  ASSERT_EQ(l->co_size, 0xc8);
  ASSERT_EQ(l->str_ascii_data, 0x28); /* wstr gone in 3.12 */
  ASSERT_EQ(l->str_compact_data, 0x38);
  ASSERT_EQ(l->is_modules, 0x3b0); /* interp->imports.modules */
  ASSERT_EQ(l->long_tag, 0x10);
  ASSERT_EQ(l->long_digit, 0x18);

  /* The thread registry's fields that hold in every version: PyDictObject
   * {head, ma_used, version, ma_keys, ma_values} (3.x) or {head, ma_fill,
   * ma_used, ma_mask, ma_table} (2.7), ints {head, size or tag, digits},
   * tp_itemsize after tp_basicsize. */
  for (int i = 0; i < N_BUILTIN; i++) {
    l = get(builtin_versions[i]);
    ASSERT_EQ(l->type_itemsize, 0x28);
    ASSERT_EQ(l->long_digit, 0x18);
    if (l->version >= 0x0300) {
      ASSERT_EQ(l->dict_ma_used, 0x10);
      ASSERT_EQ(l->dict_ma_keys, 0x20);
      ASSERT_EQ(l->dict_ma_values, 0x28);
    }
  }
  l = get(0x0207);
  ASSERT_EQ(l->is_modules, 0x10);
  ASSERT_EQ(l->dict_ma_used, 0x18);
  ASSERT_EQ(l->dict_ma_mask, 0x20);
  ASSERT_EQ(l->dict_ma_table, 0x28);
  ASSERT_EQ(l->int_ival, 0x10);
  ASSERT_EQ(get(0x0306)->is_modules, 0x10);
  ASSERT_EQ(get(0x030a)->is_modules, 0x358);
  ASSERT_EQ(get(0x030b)->is_modules, 0x378);
  return 0;
}

TEST_IMPL(layout_reference_313) {
  const struct pst__py_layout *l = pst__py_layout_reference_313();

  if (l == NULL)
    SKIP("no 3.13 table generated");
  ASSERT_EQ(l->version, 0x030d);
  ASSERT(pst__py_layout_builtin(0x030d) == NULL);

  /* Values of _PyRuntime.debug_offsets in libpython3.13.so (3.13.0). */
  ASSERT_EQ(l->rt_interp_head, 0x278);
  ASSERT_EQ(l->rt_tss, 0x870); /* not in _Py_DebugOffsets: facts.md */
  NONE(l, rt_gil_tstate);
  ASSERT_EQ(l->is_next, 0x1c60);
  ASSERT_EQ(l->is_tstate_head, 0x1cb0);
  ASSERT_EQ(l->is_gil, 0x10);
  ASSERT_EQ(l->is_gil_inline, 0x1e48);
  ASSERT_EQ(l->is_gil_inline + l->gil_last_holder, 0x1e50);
  ASSERT_EQ(l->is_gil_inline + l->gil_locked, 0x1e58);
  ASSERT_EQ(l->is_modules, 0x1de8); /* interpreter_state.imports_modules */
  ASSERT_EQ(l->ts_size, 0x130);
  ASSERT_EQ(l->ts_next, 0x8);
  ASSERT_EQ(l->ts_interp, 0x10);
  ASSERT_EQ(l->ts_current_frame, 0x48);
  ASSERT_EQ(l->ts_thread_id, 0x98);
  ASSERT_EQ(l->ts_native_thread_id, 0xa0);
  NONE(l, ts_frame);
  NONE(l, ts_cframe);
  NONE(l, cf_current_frame);
  ASSERT_EQ(l->if_size, 0x50);
  ASSERT_EQ(l->if_previous, 0x8);
  ASSERT_EQ(l->if_code, 0x0);
  ASSERT_EQ(l->if_instr, 0x38);
  ASSERT_EQ(l->if_owner, 0x46);
  NONE(l, if_is_entry);
  ASSERT_EQ(l->co_size, 0xd0);
  ASSERT_EQ(l->co_filename, 0x70);
  ASSERT_EQ(l->co_name, 0x78);
  ASSERT_EQ(l->co_qualname, 0x80);
  ASSERT_EQ(l->co_linetable, 0x88);
  ASSERT_EQ(l->co_firstlineno, 0x44);
  ASSERT_EQ(l->co_code_adaptive, 0xc8);
  ASSERT_EQ(l->bytes_size, 0x10);
  ASSERT_EQ(l->bytes_data, 0x20);
  ASSERT_EQ(l->str_state, 0x20);
  ASSERT_EQ(l->str_length, 0x10);
  ASSERT_EQ(l->str_ascii_data, 0x28);
  return 0;
}
