/* gen-offsets.c: print the struct pst__py_layout table of one CPython version.
 *
 * Compiled once per interpreter by tools/gen-offsets.sh against that
 * interpreter's own headers:
 *
 *   gcc -std=gnu11 -I<src> -I<prefix>/include/pythonX.Y[m]
 *       [-I<prefix>/include/pythonX.Y/internal] tools/gen-offsets.c
 *
 * (never linked against libpython: only offsetof() and sizeof() are used).
 * Run without arguments it prints a C fragment
 *
 *   static const struct pst__py_layout pst__py_layout_XY = { .version = ... };
 *
 * with every field of PST_PY_LAYOUT_FIELDS (src/python/layout.h) set to its
 * value for this version or to PST_NOFF. A field of the X-list that the code
 * below forgets to set is a run-time error; a name that is not in the X-list
 * is a compile-time error, so the two stay in sync.
 * Run with "-v" it prints "X.Y.Z XY" (PY_VERSION and the table suffix).
 *
 * Values are those of the host ABI the generator is compiled for (pthread
 * types are part of several structs): x86_64 glibc for the checked-in tables.
 */

/* Which internal headers exist and how they are reached depends on the
 * version: read patchlevel.h (standalone) first. */
#include <patchlevel.h>

#if PY_MAJOR_VERSION == 2 && PY_MINOR_VERSION == 7
#elif PY_MAJOR_VERSION == 3 && PY_MINOR_VERSION >= 6 && PY_MINOR_VERSION <= 13
#else
#error "gen-offsets.c: unsupported CPython version (2.7, 3.6-3.13 are known)"
#endif

#if PY_VERSION_HEX >= 0x03070000
/* The internal headers refuse to compile without it; Py_BUILD_CORE_MODULE
 * implies it on 3.8+ and selects nothing else we need. */
#define Py_BUILD_CORE 1
#endif

#include <Python.h>

#ifdef Py_GIL_DISABLED
#error "gen-offsets.c: free-threaded builds have another layout (unsupported)"
#endif

#if PY_VERSION_HEX >= 0x03070000 && PY_VERSION_HEX < 0x03080000
/* 3.7: internal/ is reached with its prefix from the main include dir. */
#include "internal/pystate.h" /* _PyRuntimeState, gilstate, ceval.gil */
#elif PY_VERSION_HEX >= 0x03080000 && PY_VERSION_HEX < 0x03090000
#include "pycore_gil.h"
#include "pycore_pystate.h" /* _PyRuntimeState, struct _is */
#elif PY_VERSION_HEX >= 0x03090000
#include "pycore_gil.h"
#include "pycore_interp.h"
#include "pycore_runtime.h"
#if PY_VERSION_HEX >= 0x030b0000
#include "pycore_frame.h" /* _PyInterpreterFrame */
#endif
#endif

/* PyLongObject: longintrepr.h is not part of Python.h before 3.11. */
#if PY_VERSION_HEX < 0x030b0000
#include <longintrepr.h>
#endif

#if PY_MAJOR_VERSION == 2
#include <frameobject.h>
#include <stringobject.h>
#else
#if PY_VERSION_HEX < 0x030b0000
#include <frameobject.h> /* PyFrameObject is public up to 3.10 */
#endif
#endif

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python/layout.h"

/* ---- recording ---------------------------------------------------------- */

#define GEN_ENUM(name) F_##name,
enum { PST_PY_LAYOUT_FIELDS(GEN_ENUM) F_COUNT };
#undef GEN_ENUM

#define GEN_NAME(name) #name,
static const char *const field_names[F_COUNT] = {
    PST_PY_LAYOUT_FIELDS(GEN_NAME)};
#undef GEN_NAME

static long field_value[F_COUNT];
static const char *field_what[F_COUNT];
static int field_set[F_COUNT];
static int errors;

static void set_field(int idx, long value, const char *what) {
  if (field_set[idx]) {
    fprintf(stderr, "gen-offsets: field %s set twice\n", field_names[idx]);
    errors++;
  }
  if (value != PST_NOFF && (value < 0 || value > INT32_MAX)) {
    fprintf(stderr, "gen-offsets: field %s out of range: %ld\n",
            field_names[idx], value);
    errors++;
  }
  field_set[idx] = 1;
  field_value[idx] = value;
  field_what[idx] = what;
}

#define OFF(name, type, member)                                                \
  set_field(F_##name, (long)offsetof(type, member), #type "." #member)
#define SIZE(name, type)                                                       \
  set_field(F_##name, (long)sizeof(type), "sizeof(" #type ")")
#define NOFF(name) set_field(F_##name, PST_NOFF, NULL)

/* Bytes from the start of `type` through the end of `member`. */
#define END_OF(type, member)                                                   \
  (offsetof(type, member) + sizeof(((type *)0)->member))

/* ---- the fields, per version --------------------------------------------- */

static void runtime_fields(void) {
#if PY_VERSION_HEX >= 0x03070000
  OFF(rt_interp_head, _PyRuntimeState, interpreters.head);
#else
  NOFF(rt_interp_head);
#endif

#if PY_VERSION_HEX >= 0x030c0000
  OFF(rt_tss, _PyRuntimeState, autoTSSkey);
  NOFF(rt_gil_tstate); /* gone: _Py_tss_tstate is a C thread-local */
#elif PY_VERSION_HEX >= 0x03070000
  OFF(rt_tss, _PyRuntimeState, gilstate.autoTSSkey);
  OFF(rt_gil_tstate, _PyRuntimeState, gilstate.tstate_current);
#else
  NOFF(rt_tss); /* 3.6: static autoTLSkey in pystate.c; 2.7: no key */
  NOFF(rt_gil_tstate);
#endif
#if PY_VERSION_HEX >= 0x03070000 && PY_VERSION_HEX < 0x030c0000
  OFF(rt_gil, _PyRuntimeState, ceval.gil); /* the one GIL */
#else
  NOFF(rt_gil); /* 3.12+: interp->ceval.gil; 2.7, 3.6: statics */
#endif

  /* The collector's state: a static in gcmodule.c (2.7, 3.6), then
   * _PyRuntime.gc (3.7, 3.8), then each interpreter's (3.9+). */
#if PY_VERSION_HEX >= 0x03070000 && PY_VERSION_HEX < 0x03090000
  OFF(rt_gc_collecting, _PyRuntimeState, gc.collecting);
#else
  NOFF(rt_gc_collecting);
#endif
}

static void interp_fields(void) {
  OFF(is_next, PyInterpreterState, next);
#if PY_VERSION_HEX >= 0x030b0000
  /* 3.11 already moved the list into interp->threads (not 3.12). */
  OFF(is_tstate_head, PyInterpreterState, threads.head);
#else
  OFF(is_tstate_head, PyInterpreterState, tstate_head);
#endif
#if PY_VERSION_HEX >= 0x030c0000
  OFF(is_gil, PyInterpreterState, ceval.gil);
  OFF(is_gil_inline, PyInterpreterState, _gil);
#else
  NOFF(is_gil); /* <=3.11: the one GIL is _PyRuntime.ceval.gil */
  NOFF(is_gil_inline);
#endif
#if PY_VERSION_HEX >= 0x03090000
  OFF(is_gc_collecting, PyInterpreterState, gc.collecting);
#else
  NOFF(is_gc_collecting);
#endif
#if PY_VERSION_HEX >= 0x030c0000
  OFF(is_modules, PyInterpreterState, imports.modules);
#else
  OFF(is_modules, PyInterpreterState, modules);
#endif

#if PY_VERSION_HEX >= 0x03070000
  /* 3.7-3.11: struct _gil_runtime_state in _PyRuntime.ceval.gil;
   * 3.12+: in the interpreter (interp->ceval.gil points at it). */
  OFF(gil_last_holder, struct _gil_runtime_state, last_holder);
  OFF(gil_locked, struct _gil_runtime_state, locked);
#else
  /* 2.7, 3.6: static variables of ceval_gil.h / thread.c, no struct. */
  NOFF(gil_last_holder);
  NOFF(gil_locked);
#endif
}

static void tstate_fields(void) {
  OFF(ts_next, PyThreadState, next);
  OFF(ts_interp, PyThreadState, interp);
#if PY_VERSION_HEX >= 0x030d0000
  NOFF(ts_frame);
  NOFF(ts_cframe);
  OFF(ts_current_frame, PyThreadState, current_frame);
#elif PY_VERSION_HEX >= 0x030b0000
  NOFF(ts_frame);
  OFF(ts_cframe, PyThreadState, cframe);
  NOFF(ts_current_frame);
#else
  /* 3.10 also has a tstate->cframe, but its CFrame holds only use_tracing
   * and previous: frames are still reached through tstate->frame. */
  OFF(ts_frame, PyThreadState, frame);
  NOFF(ts_cframe);
  NOFF(ts_current_frame);
#endif
  OFF(ts_thread_id, PyThreadState, thread_id);
#if PY_VERSION_HEX >= 0x030b0000
  OFF(ts_native_thread_id, PyThreadState, native_thread_id);
#else
  NOFF(ts_native_thread_id); /* the field appeared in 3.11 */
#endif
  SIZE(ts_size, PyThreadState);
#if PY_VERSION_HEX >= 0x030b0000
  OFF(ts_datastack_chunk, PyThreadState, datastack_chunk);
#else
  NOFF(ts_datastack_chunk);  /* frames are heap objects before 3.11 */
#endif

  /* The exception being handled (sys.exc_info()) and the one being
   * raised. */
#if PY_VERSION_HEX >= 0x03070000
  NOFF(ts_exc_type);
  OFF(ts_exc_info, PyThreadState, exc_info);
  OFF(ei_previous, _PyErr_StackItem, previous_item);
#else
  OFF(ts_exc_type, PyThreadState, exc_type);
  NOFF(ts_exc_info);
  NOFF(ei_previous);
#endif
#if PY_VERSION_HEX >= 0x030b0000
  OFF(ei_value, _PyErr_StackItem, exc_value);
#elif PY_VERSION_HEX >= 0x03070000
  OFF(ei_value, _PyErr_StackItem, exc_type); /* what sys.exc_info tests */
#else
  NOFF(ei_value);
#endif
#if PY_VERSION_HEX >= 0x030c0000
  OFF(ts_cur_exc, PyThreadState, current_exception);
#else
  OFF(ts_cur_exc, PyThreadState, curexc_type);
#endif

#if PY_VERSION_HEX >= 0x030b0000 && PY_VERSION_HEX < 0x030d0000
  OFF(cf_current_frame, _PyCFrame, current_frame);
#else
  NOFF(cf_current_frame);
#endif
}

static void frame_fields(void) {
#if PY_VERSION_HEX < 0x030b0000
  OFF(f_back, PyFrameObject, f_back);
  OFF(f_code, PyFrameObject, f_code);
  OFF(f_lasti, PyFrameObject, f_lasti);
  OFF(f_lineno, PyFrameObject, f_lineno);
  SIZE(f_size, PyFrameObject);
  OFF(f_localsplus, PyFrameObject, f_localsplus);
#else
  NOFF(f_back);
  NOFF(f_code);
  NOFF(f_lasti);
  NOFF(f_lineno);
  NOFF(f_size);
  NOFF(f_localsplus);
#endif

#if PY_VERSION_HEX >= 0x030d0000
  OFF(if_code, _PyInterpreterFrame, f_executable);
  OFF(if_previous, _PyInterpreterFrame, previous);
  OFF(if_instr, _PyInterpreterFrame, instr_ptr);
  OFF(if_owner, _PyInterpreterFrame, owner);
  NOFF(if_is_entry);
  SIZE(if_size, _PyInterpreterFrame);
  OFF(if_localsplus, _PyInterpreterFrame, localsplus);
#elif PY_VERSION_HEX >= 0x030b0000
  OFF(if_code, _PyInterpreterFrame, f_code);
  OFF(if_previous, _PyInterpreterFrame, previous);
  OFF(if_instr, _PyInterpreterFrame, prev_instr);
  OFF(if_owner, _PyInterpreterFrame, owner); /* 3.11: no CSTACK value yet */
#if PY_VERSION_HEX < 0x030c0000
  OFF(if_is_entry, _PyInterpreterFrame, is_entry);
#else
  NOFF(if_is_entry);
#endif
  SIZE(if_size, _PyInterpreterFrame);
  OFF(if_localsplus, _PyInterpreterFrame, localsplus);
#else
  NOFF(if_code);
  NOFF(if_previous);
  NOFF(if_instr);
  NOFF(if_owner);
  NOFF(if_is_entry);
  NOFF(if_size);
  NOFF(if_localsplus);
#endif
}

static void code_fields(void) {
  size_t end = 0, e;
#define CO(name, member)                                                       \
  do {                                                                         \
    OFF(name, PyCodeObject, member);                                           \
    e = END_OF(PyCodeObject, member);                                          \
    if (e > end)                                                               \
      end = e;                                                                 \
  } while (0)

  CO(co_filename, co_filename);
  CO(co_name, co_name);
#if PY_VERSION_HEX >= 0x030b0000
  CO(co_qualname, co_qualname);
#else
  NOFF(co_qualname);
#endif
  CO(co_firstlineno, co_firstlineno);
#if PY_VERSION_HEX >= 0x030a0000
  NOFF(co_lnotab); /* 3.10+: computed from co_linetable on demand */
  CO(co_linetable, co_linetable);
#else
  CO(co_lnotab, co_lnotab);
  NOFF(co_linetable);
#endif
#if PY_VERSION_HEX >= 0x030b0000
  /* An address, not a field to read: the bytecode starts there. */
  OFF(co_code_adaptive, PyCodeObject, co_code_adaptive);
#else
  NOFF(co_code_adaptive);
#endif
  /* The local variables' names (dump --locals): read on their own, not
   * part of the header. */
#if PY_VERSION_HEX >= 0x030b0000
  NOFF(co_varnames);
  NOFF(co_nlocals);
  OFF(co_localsplusnames, PyCodeObject, co_localsplusnames);
#else
  OFF(co_varnames, PyCodeObject, co_varnames);
  OFF(co_nlocals, PyCodeObject, co_nlocals);
  NOFF(co_localsplusnames);
#endif
#undef CO
  if (end > sizeof(PyCodeObject)) {
    fprintf(stderr, "gen-offsets: code fields end past sizeof(PyCodeObject)\n");
    errors++;
  }
  SIZE(co_size, PyCodeObject);
}

static void string_fields(void) {
#if PY_MAJOR_VERSION == 2
  OFF(str_length, PyStringObject, ob_size);
  NOFF(str_state);
  OFF(str_ascii_data, PyStringObject, ob_sval);
  NOFF(str_compact_data);
  OFF(bytes_size, PyStringObject, ob_size);
  OFF(bytes_data, PyStringObject, ob_sval);
#else
  OFF(str_length, PyASCIIObject, length);
  OFF(str_state, PyASCIIObject, state);
  SIZE(str_ascii_data, PyASCIIObject);
  SIZE(str_compact_data, PyCompactUnicodeObject);
  OFF(bytes_size, PyBytesObject, ob_base.ob_size);
  OFF(bytes_data, PyBytesObject, ob_sval);
#endif
}

static void type_fields(void) {
  OFF(type_basicsize, PyTypeObject, tp_basicsize);
  OFF(type_flags, PyTypeObject, tp_flags);
  OFF(type_dictoffset, PyTypeObject, tp_dictoffset);
#if PY_MAJOR_VERSION >= 3
  OFF(ht_cached_keys, PyHeapTypeObject, ht_cached_keys);
#else
  NOFF(ht_cached_keys); /* 2.7 dicts are never split */
#endif
  OFF(type_itemsize, PyTypeObject, tp_itemsize);
}

static void dict_fields(void) {
  OFF(dict_ma_used, PyDictObject, ma_used);
#if PY_MAJOR_VERSION == 2
  NOFF(dict_ma_keys);
  NOFF(dict_ma_values);
  OFF(dict_ma_mask, PyDictObject, ma_mask);
  OFF(dict_ma_table, PyDictObject, ma_table);
#else
  OFF(dict_ma_keys, PyDictObject, ma_keys);
  OFF(dict_ma_values, PyDictObject, ma_values);
  NOFF(dict_ma_mask);
  NOFF(dict_ma_table);
#endif
}

static void int_fields(void) {
#if PY_VERSION_HEX >= 0x030c0000
  NOFF(long_size);
  OFF(long_tag, PyLongObject, long_value.lv_tag);
  OFF(long_digit, PyLongObject, long_value.ob_digit);
#elif PY_MAJOR_VERSION == 2
  OFF(long_size, PyLongObject, ob_size); /* PyObject_VAR_HEAD's fields */
  NOFF(long_tag);
  OFF(long_digit, PyLongObject, ob_digit);
#else
  OFF(long_size, PyLongObject, ob_base.ob_size);
  NOFF(long_tag);
  OFF(long_digit, PyLongObject, ob_digit);
#endif
#if PY_MAJOR_VERSION == 2
  OFF(int_ival, PyIntObject, ob_ival);
#else
  NOFF(int_ival);
#endif
}

/* ---- output ---------------------------------------------------------------- */

int main(int argc, char **argv) {
  char suffix[16];

  snprintf(suffix, sizeof suffix, "%d%d", PY_MAJOR_VERSION, PY_MINOR_VERSION);
  if (argc == 2 && strcmp(argv[1], "-v") == 0) {
    printf("%s %s\n", PY_VERSION, suffix);
    return 0;
  }
  if (argc != 1) {
    fprintf(stderr, "usage: %s [-v]\n", argv[0]);
    return 2;
  }

  runtime_fields();
  interp_fields();
  tstate_fields();
  frame_fields();
  code_fields();
  string_fields();
  type_fields();
  dict_fields();
  int_fields();

  for (int i = 0; i < F_COUNT; i++) {
    if (!field_set[i]) {
      fprintf(stderr, "gen-offsets: field %s not handled for %s\n",
              field_names[i], PY_VERSION);
      errors++;
    }
  }
  if (errors)
    return 1;

  printf("static const struct pst__py_layout pst__py_layout_%s = {\n", suffix);
  printf("  .version = 0x%02x%02x,\n", PY_MAJOR_VERSION, PY_MINOR_VERSION);
  for (int i = 0; i < F_COUNT; i++) {
    char lhs[64], rhs[32];
    snprintf(lhs, sizeof lhs, "  .%s = ", field_names[i]);
    if (field_value[i] == PST_NOFF)
      snprintf(rhs, sizeof rhs, "PST_NOFF,");
    else
      snprintf(rhs, sizeof rhs, "0x%lx,", field_value[i]);
    if (field_what[i])
      printf("%-26s%-10s /* %s */\n", lhs, rhs, field_what[i]);
    else
      printf("%-26s%s\n", lhs, rhs);
  }
  printf("};\n");
  return ferror(stdout) ? 1 : 0;
}
