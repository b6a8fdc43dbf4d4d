/* frame.c: walking one thread's Python frames, and its thread state. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "python/python.h"
#include "util/array.h"
#include "util/log.h"

#define TSTATES_MAX 4096 /* a longer list is a cycle or garbage */

static uint64_t u64_at(const uint8_t *p, int32_t off) {
  uint64_t v;
  memcpy(&v, p + off, 8);
  return v;
}

int pst_py_tstates(struct pst_py *py, struct pst_mem *mem, uint64_t *tstates,
                   int max) {
  uint64_t ts;
  int n = 0, err;

  err = pst_mem_read_u64(mem, py->interp + (uint64_t)py->lay.is_tstate_head,
                         &ts);
  if (err)
    return err;
  while (ts && n < max && n < TSTATES_MAX) {
    tstates[n++] = ts;
    err = pst_mem_read_u64(mem, ts + (uint64_t)py->lay.ts_next, &ts);
    if (err)
      return err;
  }
  return n;
}

int pst_py_gil_holder(struct pst_py *py, struct pst_mem *mem,
                      uint64_t *tstate) {
  const struct pst_py_layout *l = &py->lay;
  uint64_t gil, holder;
  int32_t locked;
  int err;

  *tstate = 0;
  if (py->tstate_current) /* 2.7, 3.6 */
    return pst_mem_read_u64(mem, py->tstate_current, tstate);
  if (l->rt_gil_tstate != PST_NOFF) /* 3.7-3.11 */
    return pst_mem_read_u64(mem, py->runtime + (uint64_t)l->rt_gil_tstate,
                            tstate);
  if (l->gil_locked == PST_NOFF)
    return -ENOSYS;
  if (l->is_gil != PST_NOFF) { /* 3.12: interp->ceval.gil */
    err = pst_mem_read_u64(mem, py->interp + (uint64_t)l->is_gil, &gil);
    if (err)
      return err;
  } else { /* 3.13+: the interpreter's own _gil */
    gil = py->interp + (uint64_t)l->is_gil_inline;
  }
  err = pst_mem_read(mem, gil + (uint64_t)l->gil_locked, &locked, 4);
  if (err == 0)
    err = pst_mem_read_u64(mem, gil + (uint64_t)l->gil_last_holder, &holder);
  if (err == 0 && locked)
    *tstate = holder;
  return err;
}

int pst_py_tstate_ids(struct pst_py *py, struct pst_mem *mem, uint64_t tstate,
                      uint64_t *thread_id, uint64_t *native_id,
                      uint64_t *interp) {
  const struct pst_py_layout *l = &py->lay;
  struct pst_mem_iov iov[3];
  size_t n = 0;
  int r;

  *native_id = 0;
  iov[n++] = (struct pst_mem_iov){tstate + (uint64_t)l->ts_thread_id,
                                  thread_id, 8};
  iov[n++] = (struct pst_mem_iov){tstate + (uint64_t)l->ts_interp, interp, 8};
  if (l->ts_native_thread_id != PST_NOFF)
    iov[n++] = (struct pst_mem_iov){tstate + (uint64_t)l->ts_native_thread_id,
                                    native_id, 8};
  r = pst_mem_readv(mem, iov, n);
  if (r < 0)
    return r;
  return (size_t)r == n ? 0 : -EFAULT;
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && !strcmp(s + a - b, suffix);
}

/* One frame found by the first pass of a walk. */
struct raw_frame {
  uint64_t frame, code;
  int64_t lasti;
};

/* Second pass: reads the headers of every frame's code object in one
 * batched read, decodes them (cached), and finds threading's
 * Thread._bootstrap_inner(self) to read its first local (self) at
 * frame + locals into *thread_obj. A frame whose code is not a code object
 * (torn read, garbage) fails the walk with PST_EBADDATA. Returns the frame
 * count. */
static int decode_frames(struct pst_py *py, struct pst_mem *mem,
                         const struct raw_frame *raw, int n,
                         struct pst_frame *frames, int32_t locals,
                         uint64_t *thread_obj) {
  struct pst_py_scratch *sc = &py->scratch;
  size_t hsize = pst_py_code_header_size(py);
  int got, err;

  if (n == 0)
    return 0;
  if (pst_array_reserve((void **)&sc->iov, &sc->iov_cap, (size_t)n,
                        sizeof(*sc->iov)) ||
      pst_array_reserve((void **)&sc->hdrs, &sc->hdrs_cap, (size_t)n * hsize,
                        1))
    return -ENOMEM;
  for (int i = 0; i < n; i++)
    sc->iov[i] = (struct pst_mem_iov){raw[i].code,
                                      sc->hdrs + (size_t)i * hsize, hsize};
  got = pst_mem_readv(mem, sc->iov, (size_t)n);
  if (got < 0)
    return got;
  for (int i = 0; i < n; i++) {
    struct pst_frame *f = &frames[i];
    err = i < got ? pst_py_code_header(py, mem, raw[i].code,
                                       sc->hdrs + (size_t)i * hsize,
                                       raw[i].lasti, &f->name, &f->filename,
                                       &f->line)
                  : -EFAULT;
    if (err)
      return err;
    if (thread_obj && locals != PST_NOFF &&
        ends_with(f->name, "_bootstrap_inner") &&
        ends_with(f->filename, "threading.py") &&
        pst_mem_read_u64(mem, raw[i].frame + (uint64_t)locals,
                         thread_obj) == 0)
      *thread_obj &= ~(uint64_t)py->tag_mask; /* 2.7: __bootstrap_inner */
  }
  return n;
}

/* <= 3.10: PyFrameObject linked by f_back. */
static int walk_frameobjects(struct pst_py *py, struct pst_mem *mem,
                             uint64_t frame, struct raw_frame *raw, int max,
                             int *truncated) {
  const struct pst_py_layout *l = &py->lay;
  uint8_t buf[PST_PY_FRAME_BUF];
  size_t len = (size_t)l->f_size < PST_PY_FRAME_BUF ? (size_t)l->f_size
                                                    : PST_PY_FRAME_BUF;
  int n = 0, err;

  while (frame) {
    int32_t lasti;
    if (n == max) {
      *truncated = 1;
      break;
    }
    err = pst_mem_read(mem, frame, buf, len);
    if (err)
      return err;
    memcpy(&lasti, buf + l->f_lasti, 4);
    raw[n++] = (struct raw_frame){frame, u64_at(buf, l->f_code), lasti};
    frame = u64_at(buf, l->f_back);
  }
  return n;
}

/* 3.11+ frames live in the thread's data stack: the current chunk is read
 * in one go (two reads: header, then the used part) and frames inside it
 * are decoded from the copy. A chunk is 16 KiB at first; bigger ones are
 * read up to CHUNK_MAX and the rest frame by frame. */
#define CHUNK_MAX (64 * 1024)
#define CHUNK_HEADER 24 /* _PyStackChunk {previous, size, top} */

struct chunk {
  uint64_t start, end; /* copied range [start, end) */
  const uint8_t *buf;
};

/* Copies [start, top) of the thread's current chunk: the frames in use. */
static void read_chunk(struct pst_py *py, struct pst_mem *mem, uint64_t start,
                       uint64_t top, struct chunk *c) {
  c->buf = NULL;
  if (!start || top < start + CHUNK_HEADER || top - start > CHUNK_MAX)
    return;
  if (!py->chunk_buf && !(py->chunk_buf = malloc(CHUNK_MAX)))
    return;
  if (pst_mem_read(mem, start, py->chunk_buf, top - start))
    return;
  c->start = start;
  c->end = top;
  c->buf = py->chunk_buf;
}

/* len bytes of the frame at addr: from the chunk copy when inside it. */
static int read_frame(struct pst_mem *mem, const struct chunk *c,
                      uint64_t addr, uint8_t *buf, size_t len) {
  if (c->buf && addr >= c->start && addr < c->end &&
      len <= c->end - addr) {
    memcpy(buf, c->buf + (addr - c->start), len);
    return 0;
  }
  return pst_mem_read(mem, addr, buf, len);
}

/* 3.11+: _PyInterpreterFrame linked by previous. Frames owned by the C
 * stack (3.12+ shims) are skipped. */
static int walk_iframes(struct pst_py *py, struct pst_mem *mem,
                        const struct chunk *cp, uint64_t frame,
                        struct raw_frame *raw, int max, int *truncated) {
  const struct pst_py_layout *l = &py->lay;
  uint8_t buf[PST_PY_FRAME_BUF];
  size_t len = (size_t)l->if_size < PST_PY_FRAME_BUF ? (size_t)l->if_size
                                                      : PST_PY_FRAME_BUF;
  struct chunk c = *cp;
  int n = 0, steps = 0, err;

  while (frame) {
    uint64_t code, instr, self = frame;
    if (n == max || ++steps > 4 * max) {
      *truncated = 1;
      break;
    }
    err = read_frame(mem, &c, frame, buf, len);
    if (err)
      return err;
    frame = u64_at(buf, l->if_previous);
    if (l->if_owner != PST_NOFF && py->version_hex >= 0x030c &&
        buf[l->if_owner] >= py->owner_shim)
      continue;
    code = u64_at(buf, l->if_code) & ~(uint64_t)py->tag_mask;
    if (py->none && code == py->none)
      continue; /* 3.13+: a shim executes None */
    instr = u64_at(buf, l->if_instr);
    /* Instruction index in code units of 2 bytes from co_code_adaptive. */
    raw[n++] = (struct raw_frame){
        self, code,
        instr >= code + (uint64_t)l->co_code_adaptive
            ? (int64_t)(instr - code - (uint64_t)l->co_code_adaptive) / 2
            : -1};
  }
  return n;
}

/* The thread state's fields, read in one go: every field the walk needs
 * lies in the first TS_VIEW_MAX bytes (3.6's 2 KiB state has its frame
 * pointer near the start), and in 3.11/3.12 the usual _PyCFrame
 * (root_cframe) is inside the state too. */
#define TS_VIEW_MAX 1024

struct ts_view {
  uint64_t addr;
  size_t len;
  uint8_t buf[TS_VIEW_MAX];
};

static size_t view_len(const struct pst_py_layout *l) {
  return l->ts_size > 0 && l->ts_size < TS_VIEW_MAX ? (size_t)l->ts_size
                                                     : TS_VIEW_MAX;
}

/* u64 at addr + off from the view when it holds it, else from memory. */
static int view_u64(struct pst_mem *mem, const struct ts_view *v,
                    uint64_t addr, uint64_t *out) {
  if (addr >= v->addr && addr < v->addr + v->len &&
      v->addr + v->len - addr >= 8) {
    memcpy(out, v->buf + (addr - v->addr), 8);
    return 0;
  }
  return pst_mem_read_u64(mem, addr, out);
}

/* The thread's innermost frame pointer (0 when it runs no Python). */
static int view_frame(struct pst_py *py, struct pst_mem *mem,
                      const struct ts_view *v, uint64_t *frame) {
  const struct pst_py_layout *l = &py->lay;
  uint64_t cframe;
  int err;

  *frame = 0;
  if (l->ts_frame != PST_NOFF)
    return view_u64(mem, v, v->addr + (uint64_t)l->ts_frame, frame);
  if (l->ts_current_frame != PST_NOFF)
    return view_u64(mem, v, v->addr + (uint64_t)l->ts_current_frame, frame);
  err = view_u64(mem, v, v->addr + (uint64_t)l->ts_cframe, &cframe);
  if (err == 0 && cframe)
    err = view_u64(mem, v, cframe + (uint64_t)l->cf_current_frame, frame);
  return err;
}

static int32_t code_off(const struct pst_py_layout *l) {
  return l->f_code != PST_NOFF ? l->f_code : l->if_code;
}

int pst_py_top_frame(struct pst_py *py, struct pst_mem *mem, uint64_t tstate,
                     const uint64_t before[2], uint64_t top[2]) {
  struct ts_view v;
  struct pst_mem_iov iov[2];
  size_t n = 1;
  int got, err;

  v.addr = tstate;
  v.len = view_len(&py->lay);
  iov[0] = (struct pst_mem_iov){tstate, v.buf, v.len};
  top[1] = 0;
  /* The code of the frame that was on top, in the same read. */
  if (before && before[0])
    iov[n++] = (struct pst_mem_iov){
        before[0] + (uint64_t)code_off(&py->lay), &top[1], 8};
  got = pst_mem_readv(mem, iov, n);
  if (got < 1)
    return got < 0 ? got : -EFAULT;
  err = view_frame(py, mem, &v, &top[0]);
  if (err)
    return err;
  if (!before || top[0] != before[0] || (size_t)got < n) {
    top[1] = 0;
    if (top[0] &&
        pst_mem_read_u64(mem, top[0] + (uint64_t)code_off(&py->lay),
                         &top[1]))
      top[1] = 0;
  }
  return 0;
}

int pst_py_walk(struct pst_py *py, struct pst_mem *mem, uint64_t tstate,
                struct pst_frame *frames, int max, int *truncated,
                uint64_t *thread_obj, uint64_t top[2]) {
  const struct pst_py_layout *l = &py->lay;
  struct chunk c = {0, 0, NULL};
  struct raw_frame *raw;
  struct ts_view v;
  uint64_t frame = 0;
  int32_t locals;
  int n, err;

  *truncated = 0;
  if (thread_obj)
    *thread_obj = 0;
  top[0] = top[1] = 0;
  v.addr = tstate;
  v.len = view_len(l);
  err = pst_mem_read(mem, tstate, v.buf, v.len);
  if (err == 0)
    err = view_frame(py, mem, &v, &frame);
  if (err)
    return err;
  top[0] = frame;
  if (pst_array_reserve(&py->scratch.raw, &py->scratch.raw_cap, (size_t)max,
                        sizeof(*raw)))
    return -ENOMEM;
  raw = py->scratch.raw;
  if (l->ts_frame != PST_NOFF) {
    n = walk_frameobjects(py, mem, frame, raw, max, truncated);
    locals = l->f_localsplus;
  } else {
    /* datastack_top follows datastack_chunk (3.11-3.14). */
    uint64_t start = 0, stop = 0;
    if (l->ts_datastack_chunk != PST_NOFF &&
        (size_t)l->ts_datastack_chunk + 16 <= v.len) {
      memcpy(&start, v.buf + l->ts_datastack_chunk, 8);
      memcpy(&stop, v.buf + l->ts_datastack_chunk + 8, 8);
    }
    read_chunk(py, mem, start, stop, &c);
    n = walk_iframes(py, mem, &c, frame, raw, max, truncated);
    locals = l->if_localsplus;
  }
  /* The top frame's code as the walk saw it (a skipped shim's too). */
  if (n > 0 && raw[0].frame == frame)
    top[1] = raw[0].code;
  else if (frame && (read_frame(mem, &c, frame + (uint64_t)code_off(l),
                                (uint8_t *)&top[1], 8)))
    top[1] = 0;
  if (n >= 0)
    n = decode_frames(py, mem, raw, n, frames, locals, thread_obj);
  return n;
}
