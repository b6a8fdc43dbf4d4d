/* debug_offsets.c: the layout of CPython 3.13+ read from the _Py_DebugOffsets
 * the interpreter keeps at the start of _PyRuntime.
 *
 * _Py_DebugOffsets is a cookie, the version, a free-threaded flag, then
 * sections of uint64 offsets, each starting with the struct's size. Sections
 * grow between minor versions (3.14 inserted interpreter_state.threads_main
 * and set_object, and appended fields to interpreter_frame and code_object),
 * so the position of each field is given per schema below. A version newer
 * than the last schema is read with the last one and checked for
 * plausibility. Source: Include/internal/pycore_debug_offsets.h (3.14) and
 * pycore_runtime.h (3.13).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "python/python.h"
#include "util/log.h"

/* Word index (after cookie, version and free_threaded) of each field. */
struct schema {
  int version; /* first version it applies to */
  int rt_size, rt_interp_head;
  int is_next, is_threads_head, is_modules, is_gil_locked, is_gil_holder;
  int ts_size, ts_next, ts_interp, ts_current_frame, ts_thread_id,
      ts_native_thread_id, ts_datastack_chunk;
  int if_size, if_previous, if_executable, if_instr_ptr, if_localsplus,
      if_owner, if_tlbc_index, if_stackpointer;
  int gen_iframe, gen_frame_state, set_mask, set_table; /* 3.14+ */
  int co_size, co_filename, co_name, co_qualname, co_linetable, co_firstlineno,
      co_code_adaptive;
  int ob_type, type_size, type_flags;
  int dict_ma_keys, dict_ma_values, long_tag, long_digit;
  int bytes_size, bytes_sval, uni_state, uni_length, uni_ascii_size;
  /* Fields that 3.15 added (0: absent, the fixed values below apply). */
  int type_basicsize, type_dictoffset, ht_cached_keys, uni_compact_size;
  int ts_cur_exc, ei_value; /* current_exception, err_stackitem.exc_value */
  int co_localsplusnames;   /* the locals' names (dump --locals) */
  int tuple_item;           /* PyTupleObject.ob_item */
  int ts_status;            /* PyThreadState._status (its bits) */
  /* The interpreter's struct _gc_runtime_state and its collecting flag. */
  int is_gc, gc_collecting;
  int words; /* words to read */
};

/* 3.13: runtime 3, interp 13, tstate 9, iframe 6, code 10, pyobject 2,
 * type 4, tuple 3, list 3, dict 3, float 2, long 3, bytes 3, unicode 4. */
static const struct schema s313 = {
    .version = 0x030d,
    .rt_size = 0,
    .rt_interp_head = 2,
    .is_next = 5,
    .is_threads_head = 6,
    .is_modules = 8,
    .is_gil_locked = 14,
    .is_gil_holder = 15,
    .ts_size = 16,
    .ts_next = 18,
    .ts_interp = 19,
    .ts_current_frame = 20,
    .ts_thread_id = 21,
    .ts_native_thread_id = 22,
    .ts_datastack_chunk = 23,
    .ts_status = 24,
    .if_size = 25,
    .if_previous = 26,
    .if_executable = 27,
    .if_instr_ptr = 28,
    .if_localsplus = 29,
    .if_owner = 30,
    .co_size = 31,
    .co_filename = 32,
    .co_name = 33,
    .co_qualname = 34,
    .co_linetable = 35,
    .co_firstlineno = 36,
    .co_code_adaptive = 40,
    .ob_type = 42,
    /* pyobject 41-42, type 43-46, tuple 47-49, list 50-52, dict 53-55,
     * float 56-57, long 58-60, bytes 61-63, unicode 64-67 */
    .type_size = 43,
    .type_flags = 46,
    .dict_ma_keys = 54,
    .dict_ma_values = 55,
    .long_tag = 59,
    .long_digit = 60,
    .bytes_size = 62,
    .bytes_sval = 63,
    .uni_state = 65,
    .uni_length = 66,
    .uni_ascii_size = 67,
    .is_gc = 7,
    .gc_collecting = 69,      /* gc 68-69 */
    .co_localsplusnames = 38, /* code 31-40: ... argcount, names, kinds */
    .tuple_item = 48,
    .words = 70,
};

/* 3.14: runtime 3, interp 16 (threads_main after threads_head; code_object
 * and tlbc generations at the end), tstate 9, iframe 8 (stackpointer,
 * tlbc_index), code 11 (co_tlbc), pyobject 2, type 4, tuple 3, list 3,
 * set 4, dict 3, float 2, long 3, bytes 3, unicode 4. */
static const struct schema s314 = {
    .version = 0x030e,
    .rt_size = 0,
    .rt_interp_head = 2,
    .is_next = 5,
    .is_threads_head = 6,
    .is_modules = 9,
    .is_gil_locked = 15,
    .is_gil_holder = 16,
    .ts_size = 19,
    .ts_next = 21,
    .ts_interp = 22,
    .ts_current_frame = 23,
    .ts_thread_id = 24,
    .ts_native_thread_id = 25,
    .ts_datastack_chunk = 26,
    .ts_status = 27,
    .if_size = 28,
    .if_previous = 29,
    .if_executable = 30,
    .if_instr_ptr = 31,
    .if_localsplus = 32,
    .if_owner = 33,
    .if_tlbc_index = 35,
    .if_stackpointer = 34,
    .gen_iframe = 82,
    .gen_frame_state = 83,
    .set_table = 61,
    .set_mask = 62,
    .co_size = 36,
    .co_filename = 37,
    .co_name = 38,
    .co_qualname = 39,
    .co_linetable = 40,
    .co_firstlineno = 41,
    .co_code_adaptive = 45,
    .ob_type = 48,
    /* pyobject 47-48, type 49-52, tuple 53-55, list 56-58, set 59-62,
     * dict 63-65, float 66-67, long 68-70, bytes 71-73, unicode 74-77 */
    .type_size = 49,
    .type_flags = 52,
    .dict_ma_keys = 64,
    .dict_ma_values = 65,
    .long_tag = 69,
    .long_digit = 70,
    .bytes_size = 72,
    .bytes_sval = 73,
    .uni_state = 75,
    .uni_length = 76,
    .uni_ascii_size = 77,
    .is_gc = 8,
    .gc_collecting = 79,      /* gc 78-79, gen_object 80-83 */
    .co_localsplusnames = 43, /* code 36-46 */
    .tuple_item = 54,
    .words = 87, /* through gen_object */
};

/* 3.15: runtime 3, interp 16, tstate 16 (base_frame, the profiler's
 * last frame, holds_gil, exceptions), err_stackitem 1, iframe 8, code 11,
 * pyobject 2, type 6 (tp_name, tp_repr, tp_basicsize, tp_dictoffset),
 * heap type 2, tuple 3, list 3, set 4, dict 3, float 2, long 3, bytes 3,
 * unicode 5 (compact size), then gc, generators, llist and the debugger
 * support, which pystitch does not read. */
static const struct schema s315 = {
    .version = 0x030f,
    .rt_size = 0,
    .rt_interp_head = 2,
    .is_next = 5,
    .is_threads_head = 6,
    .is_modules = 9,
    .is_gil_locked = 15,
    .is_gil_holder = 16,
    .ts_size = 19,
    .ts_next = 21,
    .ts_interp = 22,
    .ts_current_frame = 23,
    .ts_thread_id = 27,
    .ts_native_thread_id = 28,
    .ts_datastack_chunk = 29,
    .ts_status = 30,
    .if_size = 36,
    .if_previous = 37,
    .if_executable = 38,
    .if_instr_ptr = 39,
    .if_localsplus = 40,
    .if_owner = 41,
    .if_tlbc_index = 43,
    .if_stackpointer = 42,
    .gen_iframe = 98,
    .gen_frame_state = 99,
    .set_table = 73,
    .set_mask = 74,
    .co_size = 44,
    .co_filename = 45,
    .co_name = 46,
    .co_qualname = 47,
    .co_linetable = 48,
    .co_firstlineno = 49,
    .co_code_adaptive = 53,
    .ob_type = 56,
    /* pyobject 55-56, type 57-62, heap type 63-64, tuple 65-67, list
     * 68-70, set 71-74, dict 75-77, float 78-79, long 80-82, bytes 83-85,
     * unicode 86-90 */
    .type_size = 57,
    .type_flags = 60,
    .type_basicsize = 61,
    .type_dictoffset = 62,
    .ht_cached_keys = 64,
    .dict_ma_keys = 76,
    .dict_ma_values = 77,
    .long_tag = 81,
    .long_digit = 82,
    .bytes_size = 84,
    .bytes_sval = 85,
    .uni_state = 87,
    .uni_length = 88,
    .uni_ascii_size = 89,
    .uni_compact_size = 90,
    .ts_cur_exc = 33, /* tstate 30-34: status, holds_gil, gil_requested,
                         current_exception, exc_state */
    .ei_value = 35,
    .is_gc = 8,
    .gc_collecting = 92,      /* gc 91-93 (size, collecting, frame) */
    .co_localsplusnames = 51, /* code 44-54 */
    .tuple_item = 66,
    .words = 103, /* through gen_object */
};

#define MAX_WORDS 104 /* the most any schema reads */

/* The head of _Py_DebugOffsets, then the words a schema reads. */
struct debug_offsets {
  char cookie[8];
  uint64_t version;
  uint64_t free_threaded;
  uint64_t w[MAX_WORDS];
};

/* An offset must lie inside its struct: a wrong schema shows as offsets
 * past the size. */
static int inside(const uint64_t *w, int field, int size_field) {
  return w[field] < w[size_field];
}

/* Where a thread's exception state is. 3.15 names current_exception and
 * err_stackitem.exc_value; 3.13 and 3.14 do not, and their PyThreadState
 * has, as 3.12's, the same run from current_frame to thread_id:
 * current_frame, four tracing words, current_exception, exc_info, dict,
 * gilstate_counter, async_exc, thread_id. Taken there only when both ends
 * agree (a changed struct leaves the fields out: no exception states, said
 * when asked for). exc_info, which no version names, is the word after
 * current_exception from 3.12 to 3.15, and thread_id the fifth after it
 * (checked on 3.15 too). */
static void exc_fields(const struct schema *s, const uint64_t *w,
                       struct pst__py_layout *lay) {
  uint64_t cur =
      s->ts_cur_exc ? w[s->ts_cur_exc] : w[s->ts_current_frame] + 0x28;

  if (w[s->ts_thread_id] != cur + 0x28 ||
      (s->ei_value && w[s->ei_value] != 0) || cur + 16 > w[s->ts_size]) {
    pst__debug("_Py_DebugOffsets: the thread state's exception fields are "
               "not where 3.12-3.15 have them; no exception states");
    return;
  }
  lay->ts_cur_exc = (int32_t)cur;
  lay->ts_exc_info = (int32_t)cur + 8;
  lay->ei_value = 0;    /* _PyErr_StackItem {exc_value, previous_item} */
  lay->ei_previous = 8; /* since 3.11 */
}

int pst__py_debug_offsets(struct pst__mem *mem, uint64_t runtime,
                          struct pst__py_layout *lay, uint64_t *runtime_size,
                          int *version_hex) {
  struct debug_offsets d;
  const struct schema *s;
  const uint64_t *w = d.w;
  int hex, head, err;

  /* The head, then exactly the words of the version's schema (a test's
   * memory image holds no more). */
  err = pst__mem_read(mem, runtime, &d, offsetof(struct debug_offsets, w));
  if (err)
    return err;
  if (memcmp(d.cookie, "xdebugpy", 8) != 0) {
    pst__err("_PyRuntime does not start with _Py_DebugOffsets");
    return PST_EPYVERSION;
  }
  hex = (int)(d.version >> 16);
  if (hex < 0x030d)
    return PST_EPYVERSION;
  s = hex >= s315.version ? &s315 : hex >= s314.version ? &s314 : &s313;
  if (s->words > MAX_WORDS)
    return PST_EPYVERSION; /* a schema longer than the buffer: a bug */
  err = pst__mem_read(mem, runtime + offsetof(struct debug_offsets, w), d.w,
                      (size_t)s->words * 8);
  if (err)
    return err;
  if (hex > s315.version)
    pst__warn("CPython %d.%d is newer than this pystitch knows (untested); "
              "reading its _Py_DebugOffsets as 3.15's",
              hex >> 8, hex & 0xff);
  if (!inside(w, s->ts_current_frame, s->ts_size) ||
      !inside(w, s->ts_native_thread_id, s->ts_size) ||
      !inside(w, s->if_owner, s->if_size) ||
      !inside(w, s->co_qualname, s->co_size) ||
      w[s->co_code_adaptive] > w[s->co_size] ||
      !inside(w, s->uni_length, s->uni_ascii_size) ||
      !inside(w, s->is_threads_head, 3) /* interpreter_state.size */ ||
      !inside(w, s->is_modules, 3) ||
      !inside(w, s->dict_ma_values, s->dict_ma_keys - 1) /* its size */ ||
      !inside(w, s->long_digit, s->long_tag - 1) ||
      /* PyObject: 16 bytes, or 32 free-threaded; ob_type its last word */
      w[s->ob_type] + 8 != w[s->ob_type - 1] ||
      (w[s->ob_type] != 8 && w[s->ob_type] != 24)) {
    pst__err("_Py_DebugOffsets of CPython %d.%d do not match a known schema",
             hex >> 8, hex & 0xff);
    return PST_EPYVERSION;
  }

  /* Offsets become int32 below: anything this large is not an offset. */
  for (int i = 0; i < s->words; i++)
    if (w[i] > (1u << 24)) {
      pst__err("_Py_DebugOffsets word %d is 0x%llx: not an offset", i,
               (unsigned long long)w[i]);
      return PST_EPYVERSION;
    }

    /* Every field absent unless set below. */
#define PST_NOFF_FIELD(name) lay->name = PST_NOFF;
  PST_PY_LAYOUT_FIELDS(PST_NOFF_FIELD)
#undef PST_NOFF_FIELD
  lay->version = hex;
  lay->free_threaded = d.free_threaded != 0;
  lay->ob_type = (int32_t)w[s->ob_type];
#define PST_OPT_WORD(f) (s->f ? (int32_t)w[s->f] : PST_NOFF)
  lay->if_stackpointer = PST_OPT_WORD(if_stackpointer);
  lay->gen_iframe = PST_OPT_WORD(gen_iframe);
  lay->gen_frame_state = PST_OPT_WORD(gen_frame_state);
  lay->set_mask = PST_OPT_WORD(set_mask);
  lay->set_table = PST_OPT_WORD(set_table);
#undef PST_OPT_WORD
  /* asyncio's fields (3.14+) inside their structs (the gen object's size
   * is the word before gi_name, the set's before used), else left out:
   * only --async needs them. */
  if (lay->gen_iframe != PST_NOFF &&
      (w[s->gen_iframe] + w[s->if_size] > w[s->gen_iframe - 2] ||
       w[s->gen_frame_state] >= w[s->gen_iframe - 2] ||
       w[s->gen_iframe - 2] > 512 ||
       w[s->if_stackpointer] + 8 > w[s->if_size] ||
       w[s->set_mask] >= w[s->set_table - 2] ||
       w[s->set_table] >= w[s->set_table - 2])) {
    pst__debug("_Py_DebugOffsets: the generator or set section does not "
               "look right; no asyncio tasks");
    lay->if_stackpointer = lay->gen_iframe = lay->gen_frame_state = PST_NOFF;
    lay->set_mask = lay->set_table = PST_NOFF;
  }
  /* 3.14t+: 0 in a default build (where the field is absent). */
  lay->if_tlbc_index = d.free_threaded && s->if_tlbc_index
                           ? (int32_t)w[s->if_tlbc_index]
                           : PST_NOFF;
  head = lay->ob_type + 8; /* sizeof(PyObject) */
  lay->rt_interp_head = (int32_t)w[s->rt_interp_head];
  lay->is_next = (int32_t)w[s->is_next];
  lay->is_tstate_head = (int32_t)w[s->is_threads_head];
  lay->is_modules = (int32_t)w[s->is_modules];
  /* The interpreter's own _gil: offsets relative to the interpreter. */
  lay->is_gil_inline = 0;
  lay->gil_locked = (int32_t)w[s->is_gil_locked];
  lay->gil_last_holder = (int32_t)w[s->is_gil_holder];
  lay->ts_next = (int32_t)w[s->ts_next];
  lay->ts_interp = (int32_t)w[s->ts_interp];
  lay->ts_current_frame = (int32_t)w[s->ts_current_frame];
  lay->ts_thread_id = (int32_t)w[s->ts_thread_id];
  lay->ts_native_thread_id = (int32_t)w[s->ts_native_thread_id];
  lay->ts_size = (int32_t)w[s->ts_size];
  lay->ts_datastack_chunk = (int32_t)w[s->ts_datastack_chunk];
  lay->ts_status = s->ts_status && inside(w, s->ts_status, s->ts_size)
                       ? (int32_t)w[s->ts_status]
                       : PST_NOFF;
  lay->if_code = (int32_t)w[s->if_executable];
  lay->if_previous = (int32_t)w[s->if_previous];
  lay->if_instr = (int32_t)w[s->if_instr_ptr];
  lay->if_owner = (int32_t)w[s->if_owner];
  lay->if_size = (int32_t)w[s->if_size];
  lay->if_localsplus = (int32_t)w[s->if_localsplus];
  lay->co_filename = (int32_t)w[s->co_filename];
  lay->co_name = (int32_t)w[s->co_name];
  lay->co_qualname = (int32_t)w[s->co_qualname];
  lay->co_firstlineno = (int32_t)w[s->co_firstlineno];
  lay->co_linetable = (int32_t)w[s->co_linetable];
  lay->co_code_adaptive = (int32_t)w[s->co_code_adaptive];
  lay->co_size = (int32_t)w[s->co_size];
  lay->str_length = (int32_t)w[s->uni_length];
  lay->str_state = (int32_t)w[s->uni_state];
  lay->str_ascii_data = (int32_t)w[s->uni_ascii_size];
  /* 3.15 gives the size of PyCompactUnicodeObject; before, it is
   * PyASCIIObject + utf8_length + utf8 (2 words). */
  lay->str_compact_data = s->uni_compact_size
                              ? (int32_t)w[s->uni_compact_size]
                              : (int32_t)w[s->uni_ascii_size] + 16;
  lay->bytes_size = (int32_t)w[s->bytes_size];
  lay->bytes_data = (int32_t)w[s->bytes_sval];
  lay->type_flags = (int32_t)w[s->type_flags];
  /* 3.15 gives these three. Before: tp_basicsize and tp_dictoffset sit
   * where they have since 2.x (the stable ABI fixes PyTypeObject's
   * head after PyObject_VAR_HEAD); PyHeapTypeObject follows
   * PyTypeObject with the async (4), number (36), mapping (3), sequence
   * (10) and buffer (2) method tables and ht_name, ht_slots, ht_qualname
   * before ht_cached_keys: 58 pointers. */
  lay->type_basicsize =
      s->type_basicsize ? (int32_t)w[s->type_basicsize] : head + 16;
  lay->type_dictoffset =
      s->type_dictoffset ? (int32_t)w[s->type_dictoffset] : head + 272;
  lay->ht_cached_keys = s->ht_cached_keys ? (int32_t)w[s->ht_cached_keys]
                                          : (int32_t)w[s->type_size] + 58 * 8;
  lay->type_itemsize = lay->type_basicsize + 8; /* as fixed as it */
  /* PyDictObject: ma_used follows PyObject_HEAD in every 3.x. */
  lay->dict_ma_used = head;
  lay->dict_ma_keys = (int32_t)w[s->dict_ma_keys];
  lay->dict_ma_values = (int32_t)w[s->dict_ma_values];
  lay->long_tag = (int32_t)w[s->long_tag];
  lay->long_digit = (int32_t)w[s->long_digit];
  exc_fields(s, w, lay);
  if (s->co_localsplusnames && inside(w, s->co_localsplusnames, s->co_size))
    lay->co_localsplusnames = (int32_t)w[s->co_localsplusnames];
  /* ob_item: at least PyVarObject's size in, at most 2 words more. */
  lay->tuple_item = PST_NOFF;
  if (s->tuple_item && w[s->tuple_item] >= (uint64_t)head + 8 &&
      w[s->tuple_item] <= (uint64_t)head + 24)
    lay->tuple_item = (int32_t)w[s->tuple_item];
  /* The collector's flag, inside the interpreter's gc state (whose size
   * is the word before it). */
  if (s->is_gc && w[s->gc_collecting] + 4 <= w[s->gc_collecting - 1] &&
      w[s->is_gc] + w[s->gc_collecting - 1] <= w[3])
    lay->is_gc_collecting = (int32_t)(w[s->is_gc] + w[s->gc_collecting]);
  *runtime_size = w[s->rt_size];
  *version_hex = (int)(d.version >> 16);
  return 0;
}
