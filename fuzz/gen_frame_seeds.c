/* gen_frame_seeds.c: writes one well-formed input of the frame-walker
 * harness per built-in layout (frame_image.h) into the directory given:
 * an interpreter, a runtime, a thread state with two Python frames (the
 * outer one threading's _bootstrap_inner), their code objects, str
 * objects and line tables, all laid out with the layout's own offsets.
 * The fuzzer mutates from there. Run by fuzz/build.sh --seeds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame_image.h"
#include "python/python.h"

#define IMG_MAX 65536

static uint8_t img[IMG_MAX];
static uint32_t used;

/* Zeroed room for size bytes, 16-aligned; never offset 0 (a NULL). */
static uint32_t alloc(int64_t size) {
  uint32_t off = (used + 15) & ~15u;
  if (off == 0)
    off = 16;
  if (size < 16)
    size = 16;
  if (off + size > IMG_MAX) {
    fprintf(stderr, "image too big\n");
    exit(1);
  }
  used = off + (uint32_t)size;
  return off;
}

static void put64(uint32_t obj, int32_t field, uint64_t v) {
  if (field != PST_NOFF)
    memcpy(img + obj + field, &v, 8);
}

static void put32(uint32_t obj, int32_t field, uint32_t v) {
  if (field != PST_NOFF)
    memcpy(img + obj + field, &v, 4);
}

static uint64_t A(uint32_t off) { return IMAGE_BASE + off; }

static int32_t max3(int32_t a, int32_t b, int32_t c) {
  return a > b ? (a > c ? a : c) : (b > c ? b : c);
}

static uint32_t str(const struct pst__py_layout *l, const char *s) {
  size_t n = strlen(s);
  uint32_t o = alloc(l->str_ascii_data + (int64_t)n + 1);
  put64(o, l->str_length, n);
  /* PyASCIIObject.state: kind 1 (bits 2-4), compact (5), ascii (6). */
  put32(o, l->str_state, 1u << 2 | 1u << 5 | 1u << 6);
  memcpy(img + o + l->str_ascii_data, s, n);
  return o;
}

static uint32_t bytes(const struct pst__py_layout *l, const uint8_t *b,
                      size_t n) {
  uint32_t o = alloc(l->bytes_data + (int64_t)n + 1);
  put64(o, l->bytes_size, n);
  memcpy(img + o + l->bytes_data, b, n);
  return o;
}

static uint32_t code(const struct pst__py_layout *l, int version, uint32_t type,
                     const char *name, const char *file) {
  /* Small valid tables of each format (see code.c). */
  static const uint8_t lnotab[] = {2, 1, 4, 1, 6, 2};
  static const uint8_t t310[] = {4, 1, 6, 1, 8, 0x80, 4, 2};
  static const uint8_t t311[] = {0xe9, 0x02, 0xda, 0x04, 0x08, 0xf8,
                                 0xf0, 0x03, 0x02, 0x01, 0x05};
  uint32_t o = alloc(l->co_size), tab;

  put64(o, 8, A(type));
  put64(o, l->co_name, A(str(l, name)));
  put64(o, l->co_qualname, A(str(l, name)));
  put64(o, l->co_filename, A(str(l, file)));
  put32(o, l->co_firstlineno, 10);
  if (version >= 0x030b)
    tab = bytes(l, t311, sizeof(t311));
  else if (version == 0x030a)
    tab = bytes(l, t310, sizeof(t310));
  else
    tab = bytes(l, lnotab, sizeof(lnotab));
  put64(o, l->co_linetable != PST_NOFF ? l->co_linetable : l->co_lnotab,
        A(tab));
  return o;
}

static int write_seed(const char *dir, int idx, const struct pst__py_layout *l,
                      int version) {
  struct frame_header h = {0};
  uint32_t type, none, runtime, interp, ts, gil, c1, c2, thread, f1, f2;
  char path[4096];
  FILE *f;

  memset(img, 0, sizeof(img));
  used = 0;
  type = alloc(0x100);
  none = alloc(0x20);
  runtime = alloc(max3(l->rt_interp_head, l->rt_gil_tstate, l->rt_tss) + 8);
  interp = alloc(
      max3(l->is_tstate_head, l->is_gil,
           l->is_gil_inline + max3(l->gil_locked, l->gil_last_holder, 0)) +
      16);
  ts = alloc(l->ts_size > 1024 ? l->ts_size : 1024);
  thread = alloc(0x200);
  c1 = code(l, version, type, "work", "/srv/app.py");
  c2 = code(l, version, type, "Thread._bootstrap_inner",
            "/usr/lib/python3/threading.py");

  put64(runtime, l->rt_interp_head, A(interp));
  put64(runtime, l->rt_gil_tstate, A(ts));
  put64(interp, l->is_tstate_head, A(ts));
  if (l->is_gil != PST_NOFF) { /* 3.12: a pointer to the GIL */
    gil = alloc(max3(l->gil_locked, l->gil_last_holder, 0) + 8);
    put64(interp, l->is_gil, A(gil));
  } else {
    gil = interp + (l->is_gil_inline != PST_NOFF ? l->is_gil_inline : 0);
  }
  put32(gil, l->gil_locked, 1);
  put64(gil, l->gil_last_holder, A(ts));
  if (version <= 0x0306) /* _PyThreadState_Current: a pointer cell */
    put64(none, 0, A(ts));
  put64(ts, l->ts_interp, A(interp));
  put64(ts, l->ts_thread_id, 0x7f3a5d000700ULL);
  put64(ts, l->ts_native_thread_id, 4242);

  if (l->ts_frame != PST_NOFF) { /* PyFrameObject (<= 3.10) */
    f2 = alloc(l->f_size + 64);
    f1 = alloc(l->f_size + 64);
    put64(f1, l->f_back, A(f2));
    put64(f1, l->f_code, A(c1));
    put32(f1, l->f_lasti, 3);
    put64(f2, l->f_code, A(c2));
    put32(f2, l->f_lasti, 0);
    put64(f2, l->f_localsplus, A(thread));
    put64(ts, l->ts_frame, A(f1));
  } else { /* _PyInterpreterFrame in the data-stack chunk (3.11+) */
    uint32_t chunk = alloc(24 + 2 * (l->if_size + 64)), end;
    f2 = chunk + 24;
    f1 = f2 + (uint32_t)l->if_size + 64;
    end = f1 + (uint32_t)l->if_size + 64;
    put64(chunk, 8, 24 + 2 * (l->if_size + 64)); /* size */
    put64(chunk, 16, A(end));                    /* top */
    put64(f1, l->if_previous, A(f2));
    put64(f1, l->if_code, A(c1));
    put64(f1, l->if_instr, A(c1) + (uint64_t)l->co_code_adaptive + 6);
    put64(f2, l->if_code, A(c2));
    put64(f2, l->if_instr, A(c2) + (uint64_t)l->co_code_adaptive);
    put64(f2, l->if_localsplus, A(thread));
    put64(ts, l->ts_datastack_chunk, A(chunk));
    put64(ts, l->ts_datastack_chunk + 8, A(end));
    if (l->ts_current_frame != PST_NOFF) {
      put64(ts, l->ts_current_frame, A(f1));
    } else {
      uint32_t cf = alloc(l->cf_current_frame + 8);
      put64(cf, l->cf_current_frame, A(f1));
      put64(ts, l->ts_cframe, A(cf));
    }
  }

  h.version = (uint8_t)idx;
  h.flags = FLAG_THREAD_OBJ;
  h.max = 63;
  h.tstate = ts;
  h.interp = interp;
  h.code_type = type;
  h.none = none;
  h.runtime = runtime;
  snprintf(path, sizeof(path), "%s/py%x", dir, version);
  f = fopen(path, "wb");
  if (!f || fwrite(&h, sizeof(h), 1, f) != 1 || fwrite(img, used, 1, f) != 1 ||
      fclose(f)) {
    perror(path);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  int err = 0;

  if (argc != 2) {
    fprintf(stderr, "usage: gen-frame-seeds DIR\n");
    return 2;
  }
  for (size_t i = 0; i < NVERSIONS; i++) {
    const struct pst__py_layout *l;
    if (!versions[i])
      continue;
    l = versions[i] == 0x030d ? pst__py_layout_reference_313()
                              : pst__py_layout_builtin(versions[i]);
    if (l)
      err |= write_seed(argv[1], (int)i, l, versions[i]);
  }
  return err;
}
