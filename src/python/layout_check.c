/* layout_check.c: a layout made ready for use: a built-in table completed
 * with the fields it does not hold, and the bounds of every offset used on
 * a local buffer checked. */
#include <stdio.h>

#include "python/dict.h"
#include "python/python.h"

/* Field off (absent: PST_NOFF, skipped) of width bytes must lie within
 * [0, limit). */
static int fits(int32_t off, int width, int32_t limit, const char *name,
                char *why, size_t why_len) {
  if (off == PST_NOFF)
    return 1;
  if (off >= 0 && limit >= 0 && off + width <= limit)
    return 1;
  snprintf(why, why_len, "%s = %d does not fit in %d bytes", name, off, limit);
  return 0;
}

static int32_t min32(int32_t a, int32_t b) { return a < b ? a : b; }

int pst__py_layout_check(const struct pst__py_layout *l, char *why,
                         size_t why_len) {
  int32_t frame = l->f_size != PST_NOFF ? min32(l->f_size, PST_PY_FRAME_BUF)
                                        : min32(l->if_size, PST_PY_FRAME_BUF);
  int32_t code = min32(l->co_size, PST_PY_CODE_HEADER_MAX);
  /* sizeof(PyObject): 16, 32 free-threaded (the generated tables leave
   * ob_type 0 for 8). What of a dict and of an int is read. */
  int32_t head = l->ob_type ? l->ob_type + 8 : 16;
  int32_t dict_len = min32(head + 32, PST_PY_DICT_HEAD);
  int32_t int_len = min32(head + 16, PST_PY_INT_READ);
  int ok = 1;

#define FIT(field, width, limit)                                               \
  ok = ok && fits(l->field, width, limit, #field, why, why_len)
  FIT(f_back, 8, frame);
  FIT(f_code, 8, frame);
  FIT(f_lasti, 4, frame);
  FIT(if_previous, 8, frame);
  FIT(if_code, 8, frame);
  FIT(if_instr, 8, frame);
  FIT(if_owner, 1, frame);
  FIT(if_tlbc_index, 4, frame);
  FIT(ei_value, 8, 32); /* exc.c reads 32 bytes of a _PyErr_StackItem */
  FIT(ei_previous, 8, 32);
  FIT(if_stackpointer, 8, frame);
  FIT(gen_frame_state, 1, 512);
  FIT(gen_iframe, 0, 512 - l->if_size); /* asyncio.c reads both at once */
  FIT(set_mask, 8, 4096);
  FIT(set_table, 8, 4096);
  FIT(co_filename, 8, code);
  FIT(co_name, 8, code);
  FIT(co_qualname, 8, code);
  FIT(co_lnotab, 8, code);
  FIT(co_linetable, 8, code);
  FIT(co_firstlineno, 4, code);
  FIT(str_length, 8, l->str_ascii_data);
  FIT(str_state, 4, l->str_ascii_data);
  FIT(str_ascii_data, 0, PST_PY_STR_HEAD + 1);
  /* Offsets added to target addresses only: sane sizes, no overflow. */
  FIT(str_compact_data, 0, 4096);
  FIT(bytes_size, 8, 4096);
  FIT(bytes_data, 0, 4096);
  FIT(co_code_adaptive, 0, 1 << 16);
  FIT(if_localsplus, 8, 1 << 16);
  FIT(f_localsplus, 8, 1 << 16);
  /* Dicts, ints and types are read into local buffers (dict.c,
   * threadname.c); the interpreter's sys.modules is read at an offset. */
  FIT(ob_type, 8, 32);
  FIT(dict_ma_used, 8, dict_len);
  FIT(dict_ma_keys, 8, dict_len);
  FIT(dict_ma_values, 8, dict_len);
  FIT(dict_ma_mask, 8, dict_len);
  FIT(dict_ma_table, 8, dict_len);
  FIT(long_size, 8, int_len - 8);
  FIT(long_tag, 8, int_len - 8);
  FIT(long_digit, 4, int_len);
  FIT(int_ival, 8, int_len - 8);
  FIT(type_flags, 8, PST_PY_TYPE_SPAN);
  FIT(type_basicsize, 8, PST_PY_TYPE_SPAN);
  FIT(type_dictoffset, 8, PST_PY_TYPE_SPAN);
  FIT(type_itemsize, 8, PST_PY_TYPE_SPAN);
  FIT(ht_cached_keys, 8, PST_PY_TYPE_SPAN);
  FIT(is_modules, 8, 1 << 20);
  /* str_is() (dict.c) reads a str's length at str_length as 8 bytes. */
  FIT(str_length, 8, PST_PY_STR_HEAD);
#undef FIT
  if (ok && code < 16) {
    snprintf(why, why_len, "co_size = %d is too small", l->co_size);
    ok = 0;
  }
  return ok ? 0 : PST_EPYVERSION;
}

int pst__py_layout_builtin_copy(int version, struct pst__py_layout *out) {
  const struct pst__py_layout *l = pst__py_layout_builtin(version);

  if (!l)
    return PST_EPYVERSION;
  *out = *l;
  out->ob_type = 8; /* no free-threaded build before 3.13 */
  out->free_threaded = 0;
  out->if_tlbc_index = out->if_stackpointer = out->gen_iframe = PST_NOFF;
  out->gen_frame_state = out->set_mask = out->set_table = PST_NOFF;
  out->tuple_item = 24; /* PyVarObject: 3 words */
  out->ts_status = PST_NOFF;
  return 0;
}
