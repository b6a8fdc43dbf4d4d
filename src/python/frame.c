/* frame.c: walking one thread's Python frames, and its thread state. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "python/python.h"
#include "util/array.h"
#include "util/log.h"

#define TSTATES_MAX 4096 /* a longer list is a cycle or garbage */

int pst__py_tstates(struct pst__py *py, struct pst__mem *mem, uint64_t *tstates,
                    int max) {
  return pst__py_tstates_of(py, mem, py->interp, tstates, max);
}

int pst__py_tstates_of(struct pst__py *py, struct pst__mem *mem,
                       uint64_t interp, uint64_t *tstates, int max) {
  uint64_t ts;
  int n = 0, err;

  err = pst__mem_read_u64(mem, interp + (uint64_t)py->lay.is_tstate_head, &ts);
  if (err)
    return err;
  while (ts && n < max && n < TSTATES_MAX) {
    tstates[n++] = ts;
    err = pst__mem_read_u64(mem, ts + (uint64_t)py->lay.ts_next, &ts);
    if (err)
      return err;
  }
  return n;
}

int64_t pst__py_frame_lasti(const struct pst__py *py, const uint8_t *fr,
                            uint64_t code) {
  const struct pst__py_layout *l = &py->lay;
  uint64_t instr = pst__py_u64_at(fr, l->if_instr);

  /* 3.14t+: a thread other than the first to run the code runs its own
   * copy of the bytecode (co_tlbc->entries[tlbc_index]), elsewhere: no
   * line rather than a wrong one (not followed yet). */
  if (l->if_tlbc_index != PST_NOFF &&
      (fr[l->if_tlbc_index] | fr[l->if_tlbc_index + 1] |
       fr[l->if_tlbc_index + 2] | fr[l->if_tlbc_index + 3]))
    return -1;
  /* Instruction index in code units of 2 bytes from co_code_adaptive. */
  return instr >= code + (uint64_t)l->co_code_adaptive
             ? (int64_t)(instr - code - (uint64_t)l->co_code_adaptive) / 2
             : -1;
}

int pst__py_gil_holder(struct pst__py *py, struct pst__mem *mem,
                       uint64_t *tstate) {
  const struct pst__py_layout *l = &py->lay;
  uint64_t gil, holder;
  int32_t locked;
  int err;

  *tstate = 0;
  if (l->free_threaded) /* no GIL to hold (its struct exists, unused) */
    return -ENOSYS;
  if (py->tstate_current) /* 2.7, 3.6 */
    return pst__mem_read_u64(mem, py->tstate_current, tstate);
  if (l->rt_gil_tstate != PST_NOFF) /* 3.7-3.11 */
    return pst__mem_read_u64(mem, py->runtime + (uint64_t)l->rt_gil_tstate,
                             tstate);
  if (l->gil_locked == PST_NOFF)
    return -ENOSYS;
  if (l->is_gil != PST_NOFF) { /* 3.12: interp->ceval.gil */
    err = pst__mem_read_u64(mem, py->interp + (uint64_t)l->is_gil, &gil);
    if (err)
      return err;
  } else { /* 3.13+: the interpreter's own _gil */
    gil = py->interp + (uint64_t)l->is_gil_inline;
  }
  err = pst__mem_read(mem, gil + (uint64_t)l->gil_locked, &locked, 4);
  if (err == 0)
    err = pst__mem_read_u64(mem, gil + (uint64_t)l->gil_last_holder, &holder);
  if (err == 0 && locked)
    *tstate = holder;
  return err;
}

int pst__py_tstate_ids(struct pst__py *py, struct pst__mem *mem,
                       uint64_t tstate, uint64_t *thread_id,
                       uint64_t *native_id, uint64_t *interp) {
  const struct pst__py_layout *l = &py->lay;
  struct pst__mem_iov iov[3];
  size_t n = 0;
  int r;

  *native_id = 0;
  iov[n++] =
      (struct pst__mem_iov){tstate + (uint64_t)l->ts_thread_id, thread_id, 8};
  iov[n++] = (struct pst__mem_iov){tstate + (uint64_t)l->ts_interp, interp, 8};
  if (l->ts_native_thread_id != PST_NOFF)
    iov[n++] = (struct pst__mem_iov){tstate + (uint64_t)l->ts_native_thread_id,
                                     native_id, 8};
  r = pst__mem_readv(mem, iov, n);
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
  int entry; /* first frame of its eval-loop call (see pst_frame) */
};

/* ---- the walk's reads ----
 *
 * A walk needs the thread state, then (3.11/3.12) the _PyCFrame it points
 * to, the data-stack chunk (3.11+) or each frame object (<= 3.10), frames
 * outside the chunk (3.12+ entry frames on the C stack), and the header of
 * each code object. Read one after the other, that is 5 to 30+ syscalls.
 * The previous walk of the same thread is a good guess of the next (the
 * bottom of a stack rarely changes): its addresses (struct pst__py_hint,
 * one per thread) are read speculatively in the same process_vm_readv as
 * the thread state, and every copy is used only if the walk then asks for
 * exactly that address. A stable stack costs one syscall; what the guess
 * missed is read as before. Copies are never trusted for anything but the
 * address they were read from, so a stale guess costs time, not
 * correctness. */

#define CHUNK_MAX (64 * 1024)
#define CHUNK_HEADER 24 /* _PyStackChunk {previous, size, top} */
/* Guessed chunk reads allow this much growth: a frame or two (2048
 * copied 8% more for nothing). */
#define CHUNK_SLACK 256

struct region {
  uint64_t addr;
  uint8_t ok;         /* read by the first syscall */
  const uint8_t *buf; /* code headers: the copy (frames: fbuf) */
};

/* What one walk has in hand: the chunk copy and the guessed copies. */
struct reads {
  uint64_t chunk_start, chunk_end; /* copied chunk range [start, end) */
  const uint8_t *chunk;
  struct region frames[PST_PY_HINT_MAX];
  uint32_t nframes, fcur; /* guessed frames, search cursor */
  struct region codes[PST_PY_HINT_MAX];
  uint32_t ncodes, ccur;
  size_t flen, hsize;
  uint8_t *fbuf, *cbuf; /* frames' bytes fstride apart; code headers: own */
  size_t fstride;
  /* what this walk read, the next walk's guess */
  uint64_t seen_frames[PST_PY_HINT_MAX];
  uint32_t nseen;
};

/* Finds addr among n regions starting at *cur (walks visit addresses in
 * the order the previous walk did, shifted by the frames pushed or popped
 * since), returns its index or -1. */
static int find_region(const struct region *r, uint32_t n, uint32_t *cur,
                       uint64_t addr) {
  for (uint32_t k = 0; k < n; k++) {
    uint32_t i = (*cur + k) % n;
    if (r[i].addr == addr) {
      if (!r[i].ok)
        return -1;
      *cur = i + 1;
      return (int)i;
    }
  }
  return -1;
}

/* Remembers addr (a frame read outside the chunk) for the next guess. */
static void seen_frame(struct reads *rd, uint64_t addr) {
  if (rd->nseen < PST_PY_HINT_MAX)
    rd->seen_frames[rd->nseen++] = addr;
}

/* len bytes of the frame at addr: from the chunk copy or a guessed copy,
 * else read now. */
static int read_frame(struct pst__mem *mem, struct reads *rd, uint64_t addr,
                      uint8_t *buf, size_t len) {
  int i;

  if (rd->chunk && addr >= rd->chunk_start && addr < rd->chunk_end &&
      len <= rd->chunk_end - addr) {
    memcpy(buf, rd->chunk + (addr - rd->chunk_start), len);
    return 0;
  }
  seen_frame(rd, addr);
  if (len <= rd->flen &&
      (i = find_region(rd->frames, rd->nframes, &rd->fcur, addr)) >= 0) {
    memcpy(buf, rd->fbuf + (size_t)i * rd->fstride, len);
    return 0;
  }
  return pst__mem_read(mem, addr, buf, len);
}

/* Second pass: the headers of every frame's code object (guessed copies,
 * the rest in one batched read), decoded through the code cache; and
 * threading's Thread._bootstrap_inner(self): its first local (self) at
 * frame + locals into *thread_obj. A frame whose code is not a code object
 * (torn read, garbage) fails the walk with PST_EBADDATA. Returns the frame
 * count. */
static int decode_frames(struct pst__py *py, struct pst__mem *mem,
                         struct reads *rd, const struct raw_frame *raw, int n,
                         struct pst_frame *frames, int32_t locals,
                         uint64_t *thread_obj) {
  struct pst__py_scratch *sc = &py->scratch;
  size_t hsize = rd->hsize, nmiss = 0;
  int got, err;

  if (n == 0)
    return 0;
  if (pst__array_reserve((void **)&sc->iov, &sc->iov_cap, (size_t)n,
                         sizeof(*sc->iov)) ||
      pst__array_reserve((void **)&sc->hdrs, &sc->hdrs_cap, (size_t)n * hsize,
                         1) ||
      pst__array_reserve((void **)&sc->hdr_of, &sc->hdr_of_cap, (size_t)n,
                         sizeof(*sc->hdr_of)))
    return -ENOMEM;
  for (int i = 0; i < n; i++) {
    int k = find_region(rd->codes, rd->ncodes, &rd->ccur, raw[i].code);
    if (k >= 0) {
      sc->hdr_of[i] = rd->codes[k].buf;
      continue;
    }
    sc->hdr_of[i] = sc->hdrs + nmiss * hsize;
    sc->iov[nmiss] =
        (struct pst__mem_iov){raw[i].code, sc->hdrs + nmiss * hsize, hsize};
    nmiss++;
  }
  got = nmiss ? pst__mem_readv(mem, sc->iov, nmiss) : 0;
  if (got < 0)
    return got;
  if ((size_t)got < nmiss)
    return -EFAULT;
  for (int i = 0; i < n; i++) {
    struct pst_frame *f = &frames[i];
    err = pst__py_code_header(py, mem, raw[i].code, sc->hdr_of[i], raw[i].lasti,
                              &f->name, &f->filename, &f->line);
    f->kind = PST_FRAME_PYTHON;
    f->entry = (unsigned char)raw[i].entry;
    f->ip = 0;
    if (err) {
      py->err_addr = raw[i].code;
      return err;
    }
    /* A multiprocessing worker runs under BaseProcess._bootstrap(self):
     * its Process object names its role ("Process-1", "SpawnPoolWorker-2");
     * torch's DataLoader workers run _worker_loop under it (met first: the
     * frames go from the innermost). */
    if (!py->process_obj && locals != PST_NOFF &&
        ends_with(f->name, "_worker_loop") &&
        ends_with(f->filename, "torch/utils/data/_utils/worker.py"))
      py->dataloader = 1;
    if (!py->process_obj && locals != PST_NOFF &&
        ends_with(f->name, "_bootstrap") &&
        ends_with(f->filename, "multiprocessing/process.py") &&
        pst__mem_read_u64(mem, raw[i].frame + (uint64_t)locals,
                          &py->process_obj) == 0)
      py->process_obj &= ~(uint64_t)py->tag_mask;
    if (thread_obj && locals != PST_NOFF &&
        ends_with(f->name, "_bootstrap_inner") &&
        ends_with(f->filename, "threading.py") &&
        pst__mem_read_u64(mem, raw[i].frame + (uint64_t)locals, thread_obj) ==
            0)
      *thread_obj &= ~(uint64_t)py->tag_mask; /* 2.7: __bootstrap_inner */
  }
  return n;
}

/* Remembers a frame the walk followed, with its link and code word as
 * read, for the torn-read check. -ENOMEM. */
static int visit(struct pst__py *py, uint64_t frame, const uint8_t *buf,
                 int32_t link_off, int32_t code_off) {
  struct pst__py_scratch *sc = &py->scratch;

  if (pst__array_reserve((void **)&sc->visit, &sc->visit_cap, sc->nvisit + 1,
                         sizeof(*sc->visit)))
    return -ENOMEM;
  sc->visit[sc->nvisit++] = (struct pst__py_visit){
      frame, pst__py_u64_at(buf, link_off), pst__py_u64_at(buf, code_off)};
  return 0;
}

/* A frame met twice: the links form a cycle, which no real stack has (a
 * stack read while frames were freed and reused, or garbage). Brent's
 * method: the frame at the last power of two is kept and compared, so a
 * cycle is found within twice its length, in O(1) memory. */
struct cycle {
  uint64_t saved;
  unsigned steps, power;
};

static int cycle_seen(struct cycle *c, uint64_t frame) {
  if (frame == c->saved)
    return 1;
  if (++c->steps == c->power) {
    c->saved = frame;
    c->power *= 2;
    c->steps = 0;
  }
  return 0;
}

/* <= 3.10: PyFrameObject linked by f_back. */
static int walk_frameobjects(struct pst__py *py, struct pst__mem *mem,
                             struct reads *rd, uint64_t frame,
                             struct raw_frame *raw, int max, int *truncated) {
  const struct pst__py_layout *l = &py->lay;
  uint8_t buf[PST_PY_FRAME_BUF];
  size_t len = (size_t)l->f_size < PST_PY_FRAME_BUF ? (size_t)l->f_size
                                                    : PST_PY_FRAME_BUF;
  struct cycle cy = {0, 0, 1};
  int n = 0, err;

  while (frame) {
    int32_t lasti;
    if (n == max) {
      *truncated = 1;
      break;
    }
    if (cycle_seen(&cy, frame))
      return PST_ETORN;
    err = read_frame(mem, rd, frame, buf, len);
    if (err == 0)
      err = visit(py, frame, buf, l->f_back, l->f_code);
    if (err)
      return err;
    memcpy(&lasti, buf + l->f_lasti, 4);
    /* Each frame object has its own eval-loop call. */
    raw[n++] =
        (struct raw_frame){frame, pst__py_u64_at(buf, l->f_code), lasti, 1};
    frame = pst__py_u64_at(buf, l->f_back);
  }
  return n;
}

/* 3.11+: _PyInterpreterFrame linked by previous. Frames owned by the C
 * stack (3.12+ shims) are skipped. */
static int walk_iframes(struct pst__py *py, struct pst__mem *mem,
                        struct reads *rd, uint64_t frame, struct raw_frame *raw,
                        int max, int *truncated) {
  const struct pst__py_layout *l = &py->lay;
  uint8_t buf[PST_PY_FRAME_BUF];
  size_t len = (size_t)l->if_size < PST_PY_FRAME_BUF ? (size_t)l->if_size
                                                     : PST_PY_FRAME_BUF;
  struct cycle cy = {0, 0, 1};
  int n = 0, steps = 0, err;

  py->nshims = 0;
  while (frame) {
    uint64_t code, self = frame;
    if (n == max || ++steps > 4 * max) {
      *truncated = 1;
      break;
    }
    if (cycle_seen(&cy, frame))
      return PST_ETORN;
    err = read_frame(mem, rd, frame, buf, len);
    if (err == 0)
      err = visit(py, frame, buf, l->if_previous, l->if_code);
    if (err)
      return err;
    frame = pst__py_u64_at(buf, l->if_previous);
    /* 3.12+: an eval-loop call pushes a shim (owned by the C stack)
     * under the first frame it runs: the frame above a shim is an entry. */
    if (l->if_owner != PST_NOFF && py->version_hex >= 0x030c &&
        buf[l->if_owner] >= py->owner_shim) {
      if (n > 0)
        raw[n - 1].entry = 1;
      /* The shim is a local of the eval-loop call that runs the frames
       * above it: its address tells that call's native frame. */
      if (py->nshims < PST_PY_SHIMS_MAX)
        py->shims[py->nshims++] = self;
      continue;
    }
    code = pst__py_u64_at(buf, l->if_code) & ~(uint64_t)py->tag_mask;
    if (py->none && code == py->none) {
      if (n > 0)
        raw[n - 1].entry = 1;
      continue; /* 3.13+: a shim executes None */
    }
    raw[n++] = (struct raw_frame){
        self, code, pst__py_frame_lasti(py, buf, code),
        /* 3.11: the frame says so itself. */
        l->if_is_entry != PST_NOFF && buf[l->if_is_entry] != 0};
  }
  /* The outermost frame was entered from C (the thread's start). */
  if (n > 0 && !frame)
    raw[n - 1].entry = 1;
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

static size_t view_len(const struct pst__py_layout *l) {
  return l->ts_size > 0 && l->ts_size < TS_VIEW_MAX ? (size_t)l->ts_size
                                                    : TS_VIEW_MAX;
}

/* u64 at addr + off from the view when it holds it, else from memory. */
static int view_u64(struct pst__mem *mem, const struct ts_view *v,
                    uint64_t addr, uint64_t *out) {
  if (addr >= v->addr && addr < v->addr + v->len &&
      v->addr + v->len - addr >= 8) {
    memcpy(out, v->buf + (addr - v->addr), 8);
    return 0;
  }
  return pst__mem_read_u64(mem, addr, out);
}

/* The offset in the thread state of the field that leads to the innermost
 * frame: the frame itself, or (3.11/3.12) the _PyCFrame holding it. */
static int32_t ts_frame_field(const struct pst__py_layout *l) {
  if (l->ts_frame != PST_NOFF)
    return l->ts_frame;
  if (l->ts_current_frame != PST_NOFF)
    return l->ts_current_frame;
  return l->ts_cframe;
}

static int uses_cframe(const struct pst__py_layout *l) {
  return l->ts_frame == PST_NOFF && l->ts_current_frame == PST_NOFF;
}

/* The thread's innermost frame pointer (0 when it runs no Python), and
 * (3.11/3.12) the _PyCFrame it was found through. guess/guess_ok: the
 * current_frame read at hint->cframe in the first syscall. */
static int view_frame(struct pst__py *py, struct pst__mem *mem,
                      const struct ts_view *v, uint64_t guess_cframe,
                      uint64_t guess, int guess_ok, uint64_t *frame,
                      uint64_t *cframe) {
  const struct pst__py_layout *l = &py->lay;
  int err;

  *frame = 0;
  *cframe = 0;
  err = view_u64(mem, v, v->addr + (uint64_t)ts_frame_field(l),
                 uses_cframe(l) ? cframe : frame);
  if (err || !uses_cframe(l) || !*cframe)
    return err;
  if (guess_ok && *cframe == guess_cframe) {
    *frame = guess;
    return 0;
  }
  return view_u64(mem, v, *cframe + (uint64_t)l->cf_current_frame, frame);
}

static int32_t code_off(const struct pst__py_layout *l) {
  return l->f_code != PST_NOFF ? l->f_code : l->if_code;
}

/* Where a frame's link and code word lie: one piece of span bytes at
 * frame + lo holds both. */
static void link_span(const struct pst__py_layout *l, int32_t *link_o,
                      int32_t *code_o, int32_t *lo, size_t *span) {
  *link_o = l->ts_frame != PST_NOFF ? l->f_back : l->if_previous;
  *code_o = code_off(l);
  *lo = *link_o < *code_o ? *link_o : *code_o;
  *span = (size_t)((*link_o > *code_o ? *link_o : *code_o) - *lo) + 8;
}

/* Does the piece read again at frame + lo (span bytes) hold the visit's
 * link and code? */
static int same_visit(const struct pst__py_layout *l,
                      const struct pst__py_visit *v, const uint8_t *again) {
  int32_t link_o, code_o, lo;
  size_t span;

  link_span(l, &link_o, &code_o, &lo, &span);
  return pst__py_u64_at(again, link_o - lo) == v->link &&
         pst__py_u64_at(again, code_o - lo) == v->code;
}

void pst__py_check_prepare(struct pst__py *py, uint64_t tstate,
                           const struct pst__py_hint *hint,
                           const uint64_t before[2], struct pst__py_check *c) {
  memset(c, 0, sizeof(*c));
  c->before[0] = before[0];
  c->before[1] = before[1];
  c->tstate = tstate;
  c->cframe = uses_cframe(&py->lay) && hint ? hint->cframe : 0;
  if (hint && hint->owner_interp) { /* what check_owner() held the walk to */
    c->thread_id = hint->owner_thread_id;
    if (py->lay.ts_native_thread_id != PST_NOFF)
      c->native_id = hint->owner_native_id;
  }
  c->result = -1;
}

/* Reads the check: the frame field (and the guessed cframe's frame), the
 * owner's ids, and every visited frame's link and code again, in one
 * batch. */
static int check_read(struct pst__py *py, struct pst__mem *mem,
                      const struct pst__py_check *c) {
  const struct pst__py_layout *l = &py->lay;
  struct pst__py_scratch *sc = &py->scratch;
  size_t n = sc->nvisit + 4, span, k = 0, p, ig = 0, it = 0, in = 0;
  int32_t link_o, code_o, lo;
  uint64_t field, frame, guess = 0, tid = 0, nid = 0;
  uint8_t *ok;

  link_span(l, &link_o, &code_o, &lo, &span);
  if (pst__array_reserve((void **)&sc->civ, &sc->civ_cap, n,
                         sizeof(*sc->civ)) ||
      pst__array_reserve((void **)&sc->cbytes, &sc->cbytes_cap,
                         n * (span + 8) + n, 1))
    return 0;
  ok = sc->cbytes + n * (span + 8);
  sc->civ[k++] =
      (struct pst__mem_iov){c->tstate + (uint64_t)ts_frame_field(l), &field, 8};
  if (c->cframe) {
    ig = k;
    sc->civ[k++] = (struct pst__mem_iov){
        c->cframe + (uint64_t)l->cf_current_frame, &guess, 8};
  }
  if (c->thread_id) {
    it = k;
    sc->civ[k++] =
        (struct pst__mem_iov){c->tstate + (uint64_t)l->ts_thread_id, &tid, 8};
  }
  if (c->native_id) {
    in = k;
    sc->civ[k++] = (struct pst__mem_iov){
        c->tstate + (uint64_t)l->ts_native_thread_id, &nid, 8};
  }
  p = k;
  for (size_t i = 0; i < sc->nvisit; i++)
    sc->civ[k++] = (struct pst__mem_iov){sc->visit[i].frame + (uint64_t)lo,
                                         sc->cbytes + i * span, span};
  if (pst__mem_readv_each(mem, sc->civ, k, ok) < 0 || !ok[0])
    return 0;
  if ((it && (!ok[it] || tid != c->thread_id)) ||
      (in && (!ok[in] || nid != c->native_id)))
    return 0; /* another thread's now */
  frame = field;
  if (uses_cframe(l) && field) {
    if (ig && field == c->cframe && ok[ig])
      frame = guess;
    else if (pst__mem_read_u64(mem, field + (uint64_t)l->cf_current_frame,
                               &frame))
      return 0;
  }
  if (frame != c->before[0])
    return 0;
  for (size_t i = 0; i < sc->nvisit; i++, p++)
    if (!ok[p] || !same_visit(l, &sc->visit[i], sc->cbytes + i * span))
      return 0;
  return 1;
}

int pst__py_check_done(struct pst__py *py, struct pst__mem *mem,
                       struct pst__py_check *c) {
  if (c->result < 0)
    c->result = check_read(py, mem, c);
  return c->result;
}

/* The thread state still belongs to the hint's thread (see
 * pst__py_hint.owner_*): 0 or -ESRCH. */
static int check_owner(const struct pst__py_layout *l, const struct ts_view *v,
                       struct pst__py_hint *h) {
  uint64_t val;

  if ((size_t)l->ts_interp + 8 <= v->len &&
      (memcpy(&val, v->buf + l->ts_interp, 8), val != h->owner_interp))
    return -ESRCH;
  if (h->owner_thread_id && (size_t)l->ts_thread_id + 8 <= v->len &&
      (memcpy(&val, v->buf + l->ts_thread_id, 8), val != h->owner_thread_id))
    return -ESRCH;
  if (l->ts_native_thread_id != PST_NOFF &&
      (size_t)l->ts_native_thread_id + 8 <= v->len) {
    memcpy(&val, v->buf + l->ts_native_thread_id, 8);
    if (!h->owner_native_id)
      h->owner_native_id = val;
    else if (val != h->owner_native_id)
      return -ESRCH;
  }
  return 0;
}

/* Bytes of a frame the walk reads. */
static size_t frame_len(const struct pst__py_layout *l) {
  size_t len =
      (size_t)(l->f_size != PST_NOFF && l->ts_frame != PST_NOFF ? l->f_size
                                                                : l->if_size);
  return len > PST_PY_FRAME_BUF ? PST_PY_FRAME_BUF : len;
}

/* Buffers for the guessed reads: frames and code headers, kept in py. */
static int guess_buffers(struct pst__py *py, struct reads *rd) {
  struct pst__py_scratch *sc = &py->scratch;

  if (!py->chunk_buf && !(py->chunk_buf = malloc(CHUNK_MAX)))
    return -ENOMEM;
  if (!sc->guess &&
      !(sc->guess = malloc(PST_PY_HINT_MAX *
                           (PST_PY_FRAME_BUF + PST_PY_CODE_HEADER_MAX))))
    return -ENOMEM;
  rd->fbuf = sc->guess;
  rd->cbuf = sc->guess + PST_PY_HINT_MAX * rd->flen;
  rd->fstride = rd->flen;
  return 0;
}

/* The first syscall of a walk: the thread state and, from the hint, the
 * _PyCFrame's frame pointer, the chunk, frames and code headers. */
static int first_read(struct pst__py *py, struct pst__mem *mem,
                      const struct pst__py_hint *h, struct ts_view *v,
                      struct reads *rd, uint64_t *guess, int *guess_ok,
                      uint64_t *chunk_guess, size_t *chunk_guess_len) {
  const struct pst__py_layout *l = &py->lay;
  struct pst__mem_iov iov[6 + 2 * PST_PY_HINT_MAX];
  uint8_t ok[6 + 2 * PST_PY_HINT_MAX];
  size_t n = 0, ig = 0, ic = 0, i0f, i0c, it;

  it = n;
  iov[n++] = (struct pst__mem_iov){v->addr, v->buf, v->len};
  if (h && uses_cframe(l) && h->cframe) {
    ig = n;
    iov[n++] = (struct pst__mem_iov){h->cframe + (uint64_t)l->cf_current_frame,
                                     guess, 8};
  }
  if (h && h->chunk && h->chunk_len && h->chunk_len <= CHUNK_MAX) {
    ic = n;
    iov[n++] = (struct pst__mem_iov){h->chunk, py->chunk_buf, h->chunk_len};
  }
  i0f = n;
  for (uint32_t i = 0; h && i < h->nframes; i++)
    iov[n++] = (struct pst__mem_iov){h->frames[i],
                                     rd->fbuf + (size_t)i * rd->flen, rd->flen};
  i0c = n;
  for (uint32_t i = 0; h && i < h->ncodes; i++)
    iov[n++] = (struct pst__mem_iov){
        h->codes[i], rd->cbuf + (size_t)i * rd->hsize, rd->hsize};
  if (n == 1)
    return pst__mem_read(mem, v->addr, v->buf, v->len);
  int got = pst__mem_readv_each(mem, iov, n, ok);
  if (got < 0)
    return got;
  if (!ok[it])
    return -EFAULT;
  *guess_ok = ig && ok[ig];
  if (ic && ok[ic]) {
    *chunk_guess = h->chunk;
    *chunk_guess_len = h->chunk_len;
  }
  rd->nframes = h ? h->nframes : 0;
  for (uint32_t i = 0; i < rd->nframes; i++)
    rd->frames[i] = (struct region){h->frames[i], ok[i0f + i], NULL};
  rd->ncodes = h ? h->ncodes : 0;
  for (uint32_t i = 0; i < rd->ncodes; i++)
    rd->codes[i] = (struct region){h->codes[i], ok[i0c + i],
                                   rd->cbuf + (size_t)i * rd->hsize};
  return 0;
}

/* 3.11+: the used part [start, top) of the thread's current data-stack
 * chunk, from the guessed copy when it covers it, else read now. */
static void chunk_copy(struct pst__py *py, struct pst__mem *mem,
                       struct reads *rd, uint64_t start, uint64_t top,
                       uint64_t guess, size_t guess_len,
                       const uint8_t *guess_buf) {
  rd->chunk = NULL;
  if (!start || top < start + CHUNK_HEADER || top - start > CHUNK_MAX)
    return;
  if (guess == start && top - start <= guess_len) {
    rd->chunk = guess_buf;
  } else {
    if (pst__mem_read(mem, start, py->chunk_buf, top - start))
      return;
    rd->chunk = py->chunk_buf;
  }
  rd->chunk_start = start;
  rd->chunk_end = top;
}

/* The next walk's guess: what this one read. */
static void update_hint(struct pst__py_hint *h, const struct reads *rd,
                        uint64_t cframe, const struct raw_frame *raw, int n) {
  h->cframe = cframe;
  h->chunk = rd->chunk ? rd->chunk_start : 0;
  h->chunk_len = 0;
  if (rd->chunk) {
    uint64_t want = rd->chunk_end - rd->chunk_start + CHUNK_SLACK;
    h->chunk_len = (uint32_t)(want < CHUNK_MAX ? want : CHUNK_MAX);
  }
  h->top = n > 0 ? raw[0].frame : 0;
  h->nframes = rd->nseen;
  memcpy(h->frames, rd->seen_frames, rd->nseen * sizeof(h->frames[0]));
  h->ncodes = 0;
  for (int i = 0; i < n && h->ncodes < PST_PY_HINT_MAX; i++) {
    uint32_t k = 0;
    while (k < h->ncodes && h->codes[k] != raw[i].code)
      k++;
    if (k == h->ncodes)
      h->codes[h->ncodes++] = raw[i].code;
  }
}

/* What a walk's first read gave, besides the thread state's view. */
struct first {
  uint64_t guess; /* current_frame read at hint->cframe */
  int guess_ok;
  uint64_t chunk_guess; /* the chunk copied, and how much of it */
  size_t chunk_guess_len;
  const uint8_t *chunk_buf; /* where its copy is */
};

/* What every walk does first: the read buffers and the state's view. */
static int walk_setup(struct pst__py *py, struct pst__mem *mem, uint64_t tstate,
                      struct reads *rd, struct ts_view *v, uint64_t *thread_obj,
                      uint64_t top[2], int *truncated) {
  const struct pst__py_layout *l = &py->lay;

  *truncated = 0;
  if (thread_obj)
    *thread_obj = 0;
  top[0] = top[1] = 0;
  py->nshims = 0;
  py->err_addr = 0;
  py->scratch.nvisit = 0;
  mem->fault_addr = 0;
  memset(rd, 0, offsetof(struct reads, seen_frames));
  rd->nseen = 0;
  rd->flen = frame_len(l);
  rd->hsize = pst__py_code_header_size(py);
  v->addr = tstate;
  v->len = view_len(l);
  return guess_buffers(py, rd);
}

/* The walk once the first read is in hand. */
static int walk_rest(struct pst__py *py, struct pst__mem *mem, uint64_t tstate,
                     struct pst__py_hint *hint, struct ts_view *v,
                     struct reads *rd, const struct first *fr,
                     struct pst_frame *frames, int max, int *truncated,
                     uint64_t *thread_obj, uint64_t top[2]) {
  const struct pst__py_layout *l = &py->lay;
  struct raw_frame *raw;
  uint64_t frame = 0, cframe = 0;
  int32_t locals;
  int n, err = 0;

  if (hint && hint->owner_interp)
    err = check_owner(l, v, hint);
  if (err == 0)
    err = view_frame(py, mem, v, hint ? hint->cframe : 0, fr->guess,
                     fr->guess_ok, &frame, &cframe);
  if (err) {
    py->err_addr = err == -EFAULT ? mem->fault_addr : tstate;
    return err;
  }
  top[0] = frame;
  if (pst__array_reserve(&py->scratch.raw, &py->scratch.raw_cap, (size_t)max,
                         sizeof(*raw)))
    return -ENOMEM;
  raw = py->scratch.raw;
  if (l->ts_frame != PST_NOFF) {
    n = walk_frameobjects(py, mem, rd, frame, raw, max, truncated);
    locals = l->f_localsplus;
  } else {
    /* datastack_top follows datastack_chunk (3.11-3.14). */
    uint64_t start = 0, stop = 0;
    if (l->ts_datastack_chunk != PST_NOFF &&
        (size_t)l->ts_datastack_chunk + 16 <= v->len) {
      memcpy(&start, v->buf + l->ts_datastack_chunk, 8);
      memcpy(&stop, v->buf + l->ts_datastack_chunk + 8, 8);
    }
    chunk_copy(py, mem, rd, start, stop, fr->chunk_guess, fr->chunk_guess_len,
               fr->chunk_buf);
    n = walk_iframes(py, mem, rd, frame, raw, max, truncated);
    locals = l->if_localsplus;
  }
  /* The top frame's code as the walk saw it (a skipped shim's too). */
  if (n > 0 && raw[0].frame == frame)
    top[1] = raw[0].code;
  else if (frame) {
    uint64_t at = frame + (uint64_t)code_off(l);
    if (rd->chunk && at >= rd->chunk_start && at < rd->chunk_end &&
        rd->chunk_end - at >= 8)
      memcpy(&top[1], rd->chunk + (at - rd->chunk_start), 8);
    else if (pst__mem_read_u64(mem, at, &top[1]))
      top[1] = 0;
  }
  if (n >= 0)
    n = decode_frames(py, mem, rd, raw, n, frames, locals, thread_obj);
  if (n >= 0 && hint)
    update_hint(hint, rd, cframe, raw, n);
  if (n < 0 && !py->err_addr)
    py->err_addr = mem->fault_addr;
  return n;
}

int pst__py_walked_frame(const struct pst__py *py, int i, int n,
                         uint64_t *frame, uint64_t *code) {
  const struct raw_frame *raw = py->scratch.raw;

  if (!raw || i < 0 || i >= n || (size_t)n > py->scratch.raw_cap)
    return -EINVAL;
  *frame = raw[i].frame;
  *code = raw[i].code;
  return 0;
}

int pst__py_walk(struct pst__py *py, struct pst__mem *mem, uint64_t tstate,
                 struct pst__py_hint *hint, struct pst__py_check *carry,
                 struct pst_frame *frames, int max, int *truncated,
                 uint64_t *thread_obj, uint64_t top[2]) {
  struct reads rd;
  struct ts_view v;
  struct first fr = {0, 0, 0, 0, NULL};
  int err;

  /* Another thread's check, read before this walk reuses the scratch. */
  if (carry)
    pst__py_check_done(py, mem, carry);
  err = walk_setup(py, mem, tstate, &rd, &v, thread_obj, top, truncated);
  if (err == 0)
    err = first_read(py, mem, hint, &v, &rd, &fr.guess, &fr.guess_ok,
                     &fr.chunk_guess, &fr.chunk_guess_len);
  if (err) {
    py->err_addr = err == -EFAULT ? mem->fault_addr : tstate;
    return err;
  }
  fr.chunk_buf = py->chunk_buf;
  return walk_rest(py, mem, tstate, hint, &v, &rd, &fr, frames, max, truncated,
                   thread_obj, top);
}

/* ---- batched first reads ---- */

void pst__py_batch_init(struct pst__py_batch *b) {
  memset(b, 0, sizeof(*b));
  b->gil_pre = b->gil_post = PST_PY_NOPIECE;
  b->ngroups = 1;
}

void pst__py_batch_exit(struct pst__py_batch *b) {
  free(b->code_slot);
  free(b->code_piece);
  free(b->group);
  free(b->order);
  free(b->riov);
  free(b->rok);
  free(b->rof);
  free(b->stage);
  free(b->plan_key);
  free(b->iov);
  free(b->off);
  free(b->ok);
  free(b->arena);
  memset(b, 0, sizeof(*b));
}

void pst__py_batch_reset(struct pst__py_batch *b) {
  b->gil_pre = b->gil_post = PST_PY_NOPIECE;
  b->n = 0;
  b->used = 0;
  b->ngroups = 1; /* 0: code headers and the GIL; 1: unchecked threads */
  b->ncode = 0;
  if (b->ncode_keys)
    for (size_t i = 0; i < b->code_slots; i++)
      b->code_slot[i] = PST_PY_NOPIECE;
  b->ncode_keys = 0;
}

/* Adds a piece of len bytes at addr; its index, or PST_PY_NOPIECE on
 * -ENOMEM (*err set). Buffers are placed at read time (the arena may
 * grow until then). */
static size_t piece_in(struct pst__py_batch *b, uint32_t group, uint64_t addr,
                       size_t len, int *err) {
  size_t cap;

  if (*err)
    return PST_PY_NOPIECE;
  if (b->n == b->cap) {
    cap = b->cap ? 2 * b->cap : 256;
    struct pst__mem_iov *iov = realloc(b->iov, cap * sizeof(*iov));
    if (iov)
      b->iov = iov;
    size_t *off = realloc(b->off, cap * sizeof(*off));
    if (off)
      b->off = off;
    uint8_t *ok = realloc(b->ok, cap);
    if (ok)
      b->ok = ok;
    if (!iov || !off || !ok) {
      *err = -ENOMEM;
      return PST_PY_NOPIECE;
    }
    b->cap = cap;
  }
  if (pst__array_reserve((void **)&b->arena, &b->arena_cap, b->used + len, 1)) {
    *err = -ENOMEM;
    return PST_PY_NOPIECE;
  }
  if (pst__array_reserve((void **)&b->group, &b->group_cap, b->n + 1,
                         sizeof(*b->group))) {
    *err = -ENOMEM;
    return PST_PY_NOPIECE;
  }
  b->group[b->n] = group;
  b->iov[b->n] = (struct pst__mem_iov){addr, NULL, len};
  b->off[b->n] = b->used;
  b->used += (len + 7) & ~(size_t)7;
  return b->n++;
}

/* A piece in the current group (the last thread's first read or check). */
static size_t piece(struct pst__py_batch *b, uint64_t addr, size_t len,
                    int *err) {
  return piece_in(b, b->ngroups, addr, len, err);
}

/* The shared piece of the code header at addr (group 0: read before every
 * thread's group), added once per batch. Its index or PST_PY_NOPIECE. */
static size_t code_piece(struct pst__py_batch *b, uint64_t addr, size_t len,
                         int *err) {
  size_t mask, i, k;

  if (*err)
    return PST_PY_NOPIECE;
  if (2 * (b->ncode_keys + 1) > b->code_slots) {
    size_t slots = b->code_slots ? 2 * b->code_slots : 256;
    size_t *v = malloc(slots * sizeof(*v));
    if (!v) {
      *err = -ENOMEM;
      return PST_PY_NOPIECE;
    }
    for (i = 0; i < slots; i++)
      v[i] = PST_PY_NOPIECE;
    for (i = 0; i < b->code_slots; i++) /* rehash */
      if (b->code_slot[i] != PST_PY_NOPIECE) {
        uint64_t a = b->iov[b->code_slot[i]].addr;
        for (k = (size_t)(a >> 4) & (slots - 1); v[k] != PST_PY_NOPIECE;
             k = (k + 1) & (slots - 1))
          ;
        v[k] = b->code_slot[i];
      }
    free(b->code_slot);
    b->code_slot = v;
    b->code_slots = slots;
  }
  mask = b->code_slots - 1;
  for (k = (size_t)(addr >> 4) & mask; b->code_slot[k] != PST_PY_NOPIECE;
       k = (k + 1) & mask)
    if (b->iov[b->code_slot[k]].addr == addr &&
        b->iov[b->code_slot[k]].len == len)
      return b->code_slot[k];
  i = piece_in(b, 0, addr, len, err);
  if (i != PST_PY_NOPIECE) {
    b->code_slot[k] = i;
    b->ncode_keys++;
  }
  return i;
}

size_t pst__py_batch_word(struct pst__py_batch *b, uint64_t addr, size_t len) {
  int err = 0;

  b->ngroups++; /* a group of its own */
  return piece(b, addr, len, &err);
}

int pst__py_batch_copy(const struct pst__py_batch *b, size_t i, void *out,
                       size_t len) {
  if (i == PST_PY_NOPIECE || i >= b->n || !b->ok[i] || len > b->iov[i].len)
    return -EFAULT;
  memcpy(out, b->arena + b->off[i], len);
  return 0;
}

static int prefetch(struct pst__py *py, struct pst__py_batch *b,
                    uint64_t tstate, struct pst__py_hint *h,
                    struct pst__py_prefetch *pf, int check);

int pst__py_prefetch_add(struct pst__py *py, struct pst__py_batch *b,
                         uint64_t tstate, struct pst__py_hint *h,
                         struct pst__py_prefetch *pf) {
  return prefetch(py, b, tstate, h, pf, 1);
}

int pst__py_prefetch_add_unchecked(struct pst__py *py, struct pst__py_batch *b,
                                   uint64_t tstate, struct pst__py_hint *h,
                                   struct pst__py_prefetch *pf) {
  return prefetch(py, b, tstate, h, pf, 0);
}

#define GIL_WORDS 24 /* last_holder, int locked (padded), switch_number */

void pst__py_batch_gil(struct pst__py_batch *b, uint64_t addr) {
  int err = 0;

  b->gil_pre = piece_in(b, 0, addr, GIL_WORDS, &err);
  b->gil_post = piece_in(b, UINT32_MAX, addr, GIL_WORDS, &err);
}

int pst__py_batch_gil_quiet(const struct pst__py_batch *b, uint64_t *holder) {
  uint64_t pre[3], post[3];

  if (pst__py_batch_copy(b, b->gil_pre, pre, sizeof(pre)) ||
      pst__py_batch_copy(b, b->gil_post, post, sizeof(post)) ||
      pre[0] != post[0] || pre[2] != post[2])
    return 0;
  *holder = pre[0];
  return 1;
}

int pst__py_gil_words(struct pst__py *py, struct pst__mem *mem,
                      uint64_t *addr) {
  const struct pst__py_layout *l = &py->lay;
  uint64_t gil;
  int err;

  if (py->gil_words) {
    *addr = py->gil_words;
    return 0;
  }
  /* struct _gil_runtime_state {unsigned long interval; PyThreadState
   * *last_holder; int locked; unsigned long switch_number; ...}: the
   * layout's two offsets must sit as there, else the shape is unknown. */
  if (l->free_threaded || l->gil_locked == PST_NOFF ||
      l->gil_last_holder == PST_NOFF ||
      l->gil_last_holder + 8 != l->gil_locked || (l->gil_locked & 7))
    return -ENOSYS;
  if (l->rt_gil != PST_NOFF) { /* 3.7-3.11: _PyRuntime.ceval.gil */
    if (!py->runtime)
      return -ENOSYS;
    gil = py->runtime + (uint64_t)l->rt_gil;
  } else if (l->is_gil != PST_NOFF) { /* 3.12: interp->ceval.gil */
    err = pst__mem_read_u64(mem, py->interp + (uint64_t)l->is_gil, &gil);
    if (err)
      return err;
    if (!gil)
      return -ENOSYS; /* not created yet */
  } else {
    gil = py->interp + (uint64_t)l->is_gil_inline;
  }
  py->gil_words = gil + (uint64_t)l->gil_last_holder;
  *addr = py->gil_words;
  return 0;
}

int pst__py_check_quiet(const struct pst__mem *mem,
                        const struct pst__py_prefetch *pf, int quiet,
                        uint64_t holder) {
  return quiet && pf->tstate != holder && mem->reads == pf->reads ? 1 : -1;
}

static int prefetch(struct pst__py *py, struct pst__py_batch *b,
                    uint64_t tstate, struct pst__py_hint *h,
                    struct pst__py_prefetch *pf, int check) {
  const struct pst__py_layout *l = &py->lay;
  size_t flen = frame_len(l), hsize = pst__py_code_header_size(py), span;
  int32_t link_o, code_o, lo;
  int err = 0;
  /* A thread without a check shares group 1 with the others: their
   * pieces merge into common ranges (thread states lie close together). */
  uint32_t grp = check ? ++b->ngroups : 1;

  memset(pf, 0, sizeof(*pf));
  pf->tstate = tstate;
  pf->hint = h;
  pf->ig = pf->ic = pf->i0f = pf->i0c = PST_PY_NOPIECE;
  pf->ck_guess = pf->ck_chunk = pf->ck_f0 = PST_PY_NOPIECE;
  pf->it = piece_in(b, grp, tstate, view_len(l), &err);
  if (uses_cframe(l) && h->cframe) {
    pf->cframe = h->cframe;
    pf->ig =
        piece_in(b, grp, h->cframe + (uint64_t)l->cf_current_frame, 8, &err);
  }
  if (h->chunk && h->chunk_len && h->chunk_len <= CHUNK_MAX) {
    pf->chunk = h->chunk;
    pf->chunk_len = h->chunk_len;
    pf->ic = piece_in(b, grp, h->chunk, h->chunk_len, &err);
  }
  pf->nframes = h->nframes;
  for (uint32_t i = 0; i < h->nframes; i++) {
    size_t k = piece_in(b, grp, h->frames[i], flen, &err);
    if (i == 0)
      pf->i0f = k;
  }
  /* Code headers: one piece per code object for all threads (the same
   * functions run on many), read before them; pf->i0c indexes
   * b->code_piece. */
  if (!err && pst__array_reserve((void **)&b->code_piece, &b->code_piece_cap,
                                 b->ncode + h->ncodes, sizeof(*b->code_piece)))
    err = -ENOMEM;
  pf->i0c = b->ncode;
  for (uint32_t i = 0; i < h->ncodes && !err; i++) {
    size_t k = code_piece(b, h->codes[i], hsize, &err);
    if (k != PST_PY_NOPIECE)
      b->code_piece[b->ncode++] = k;
  }
  pf->ncodes = err ? 0 : h->ncodes;
  if (!check) {
    pf->ck_field = PST_PY_NOPIECE;
    pf->unchecked = 1;
    return err;
  }
  /* The check, read after all of the above (pst__py_check's, planned from
   * the guess): the frame pointer again, the chunk again (3.11+: where
   * most frames are), each guessed frame's link and code again. */
  b->ngroups++; /* its check: read after the group above */
  pf->ck_field = piece(b, tstate + (uint64_t)ts_frame_field(l), 8, &err);
  if (pf->cframe)
    pf->ck_guess =
        piece(b, pf->cframe + (uint64_t)l->cf_current_frame, 8, &err);
  if (pf->ic != PST_PY_NOPIECE)
    pf->ck_chunk = piece(b, pf->chunk, pf->chunk_len, &err);
  link_span(l, &link_o, &code_o, &lo, &span);
  for (uint32_t i = 0; i < h->nframes; i++) {
    size_t k = piece(b, h->frames[i] + (uint64_t)lo, span, &err);
    if (i == 0)
      pf->ck_f0 = k;
  }
  return err;
}

/* Pieces this close are read as one range: at most a page, so that the
 * bytes between lie in the pages the two pieces touch. */
#define RANGE_GAP 4096
#define RANGE_MAX (64 << 10) /* bytes of a range at most */

static const struct pst__py_batch *sort_batch;

static int by_group_addr(const void *a, const void *b) {
  const struct pst__py_batch *bt = sort_batch;
  size_t i = *(const size_t *)a, j = *(const size_t *)b;

  if (bt->group[i] != bt->group[j])
    return bt->group[i] < bt->group[j] ? -1 : 1;
  if (bt->iov[i].addr != bt->iov[j].addr)
    return bt->iov[i].addr < bt->iov[j].addr ? -1 : 1;
  return i < j ? -1 : i > j;
}

/* The ranges to read: each group's pieces sorted by address, merged when
 * they overlap or lie within RANGE_GAP of each other (the bytes between
 * lie in pages the pieces touch: mapped). -ENOMEM. */
static int plan_ranges(struct pst__py_batch *b) {
  size_t stage = 0;
  int same = b->plan_n == b->n;

  b->plan_n = 0; /* valid again only once this plan is made */
  if (pst__array_reserve((void **)&b->plan_key, &b->plan_key_cap, b->n,
                         sizeof(*b->plan_key)))
    return -ENOMEM;
  for (size_t i = 0; i < b->n; i++) {
    struct pst__py_plan_key k = {b->iov[i].addr, b->iov[i].len, b->group[i], 0};
    if (same && memcmp(&b->plan_key[i], &k, sizeof(k)))
      same = 0;
    b->plan_key[i] = k;
  }
  if (same && b->n) { /* order, rof, riov and stage hold as they are */
    b->plan_n = b->n;
    b->plans_reused++;
    return 0;
  }
  if (pst__array_reserve((void **)&b->order, &b->order_cap, b->n,
                         sizeof(*b->order)) ||
      pst__array_reserve((void **)&b->rof, &b->rof_cap, b->n,
                         sizeof(*b->rof)) ||
      pst__array_reserve((void **)&b->riov, &b->rcap, b->n, sizeof(*b->riov)) ||
      !(b->rok = realloc(b->rok, b->rcap)))
    return -ENOMEM;
  for (size_t i = 0; i < b->n; i++)
    b->order[i] = i;
  sort_batch = b; /* one thread samples: qsort has no context argument */
  qsort(b->order, b->n, sizeof(*b->order), by_group_addr);
  b->nranges = 0;
  for (size_t k = 0; k < b->n; k++) {
    size_t i = b->order[k];
    uint64_t a = b->iov[i].addr, e = a + b->iov[i].len;
    struct pst__mem_iov *r = b->nranges ? &b->riov[b->nranges - 1] : NULL;
    if (r && b->group[b->order[k - 1]] == b->group[i] &&
        a <= r->addr + r->len + RANGE_GAP && e - r->addr <= RANGE_MAX) {
      if (e > r->addr + r->len)
        r->len = (size_t)(e - r->addr);
    } else {
      b->riov[b->nranges++] = (struct pst__mem_iov){a, NULL, b->iov[i].len};
    }
    b->rof[i] = b->nranges - 1;
  }
  for (size_t r = 0; r < b->nranges; r++)
    stage += (b->riov[r].len + 7) & ~(size_t)7;
  if (pst__array_reserve((void **)&b->stage, &b->stage_cap, stage, 1))
    return -ENOMEM;
  stage = 0;
  for (size_t r = 0; r < b->nranges; r++) {
    b->riov[r].buf = b->stage + stage;
    stage += (b->riov[r].len + 7) & ~(size_t)7;
  }
  b->plan_n = b->n;
  return 0;
}

int pst__py_batch_read(struct pst__mem *mem, struct pst__py_batch *b) {
  size_t again = 0;
  int got;

  for (size_t i = 0; i < b->n; i++)
    b->iov[i].buf = b->arena + b->off[i];
  if (!b->n)
    return 0;
  if (plan_ranges(b)) /* read piece by piece, as they come */
    return pst__mem_readv_each(mem, b->iov, b->n, b->ok);
  got = pst__mem_readv_each(mem, b->riov, b->nranges, b->rok);
  if (got < 0)
    return got;
  b->ranges_read += b->nranges;
  b->pieces_read += b->n;
  for (size_t r = 0; r < b->nranges; r++)
    b->bytes_read += b->riov[r].len;
  for (size_t i = 0; i < b->n; i++) {
    const struct pst__mem_iov *r = &b->riov[b->rof[i]];
    b->ok[i] = b->rok[b->rof[i]];
    if (b->ok[i])
      memcpy(b->iov[i].buf,
             (const uint8_t *)r->buf + (b->iov[i].addr - r->addr),
             b->iov[i].len);
    else
      again++;
  }
  /* A range that failed holds a piece that did (a stale guess): its
   * pieces all count as unread. Reading them again one by one would read
   * a thread's pieces after its check, which then proves nothing. */
  (void)again;
  return (int)b->n;
}

static const uint8_t *piece_buf(const struct pst__py_batch *b, size_t i) {
  return b->arena + b->off[i];
}

static int piece_ok(const struct pst__py_batch *b, size_t i) {
  return i != PST_PY_NOPIECE && b->ok[i];
}

int pst__py_walk_prefetched(struct pst__py *py, struct pst__mem *mem,
                            const struct pst__py_batch *b,
                            struct pst__py_prefetch *pf,
                            struct pst_frame *frames, int max, int *truncated,
                            uint64_t *thread_obj, uint64_t top[2]) {
  struct reads rd;
  struct ts_view v;
  struct first fr = {0, 0, 0, 0, NULL};
  int err;

  pf->reads = mem->reads;
  err = walk_setup(py, mem, pf->tstate, &rd, &v, thread_obj, top, truncated);
  if (err)
    return err;
  if (!piece_ok(b, pf->it)) {
    /* Its state could not be read in the batch: read it as usual. */
    return pst__py_walk(py, mem, pf->tstate, pf->hint, NULL, frames, max,
                        truncated, thread_obj, top);
  }
  memcpy(v.buf, piece_buf(b, pf->it), v.len);
  if (piece_ok(b, pf->ig)) {
    fr.guess_ok = 1;
    memcpy(&fr.guess, piece_buf(b, pf->ig), 8);
  }
  if (piece_ok(b, pf->ic)) {
    fr.chunk_guess = pf->chunk;
    fr.chunk_guess_len = pf->chunk_len;
    fr.chunk_buf = piece_buf(b, pf->ic);
  }
  rd.nframes = pf->nframes;
  if (pf->nframes) {
    rd.fbuf = (uint8_t *)piece_buf(b, pf->i0f);
    for (uint32_t i = 0; i < pf->nframes; i++) {
      size_t k = pf->i0f + i;
      rd.frames[i] = (struct region){b->iov[k].addr, b->ok[k], NULL};
    }
  }
  /* Code headers: pieces shared by every thread that guessed them. */
  rd.ncodes = pf->ncodes;
  for (uint32_t i = 0; i < pf->ncodes; i++) {
    size_t k = b->code_piece[pf->i0c + i];
    rd.codes[i] = (struct region){b->iov[k].addr, b->ok[k], piece_buf(b, k)};
  }
  /* The guessed frames are laid out flen apart, rounded to 8. */
  rd.fstride = (rd.flen + 7) & ~(size_t)7;
  return walk_rest(py, mem, pf->tstate, pf->hint, &v, &rd, &fr, frames, max,
                   truncated, thread_obj, top);
}

int pst__py_check_batched(const struct pst__py *py, const struct pst__mem *mem,
                          const struct pst__py_batch *b,
                          const struct pst__py_prefetch *pf,
                          const uint64_t top[2]) {
  const struct pst__py_layout *l = &py->lay;
  const struct pst__py_scratch *sc = &py->scratch;
  uint64_t field, frame;
  int32_t link_o, code_o, lo;
  size_t span;
  uint32_t cur = 0;

  (void)top;
  /* A walk that had to read more than the batch read it after the
   * check: only a check read after the walk can tell. */
  if (mem->reads != pf->reads || !piece_ok(b, pf->ck_field))
    return -1;
  memcpy(&field, piece_buf(b, pf->ck_field), 8);
  frame = field;
  if (uses_cframe(l) && field) {
    if (field != pf->cframe || !piece_ok(b, pf->ck_guess))
      return -1;
    memcpy(&frame, piece_buf(b, pf->ck_guess), 8);
  }
  if (frame != top[0])
    return 0;
  /* Every frame followed, read again: from the chunk's second copy or
   * the guessed frame's second read; one that neither holds: cannot
   * tell. */
  link_span(l, &link_o, &code_o, &lo, &span);
  for (size_t i = 0; i < sc->nvisit; i++) {
    const struct pst__py_visit *v = &sc->visit[i];
    uint64_t at = v->frame + (uint64_t)lo;
    const uint8_t *again = NULL;

    if (piece_ok(b, pf->ck_chunk) && at >= pf->chunk &&
        at - pf->chunk + span <= pf->chunk_len) {
      again = piece_buf(b, pf->ck_chunk) + (at - pf->chunk);
    } else {
      for (uint32_t k = 0; k < pf->nframes && !again; k++) {
        uint32_t j = (cur + k) % pf->nframes;
        if (b->iov[pf->ck_f0 + j].addr == at) {
          if (!b->ok[pf->ck_f0 + j])
            return -1;
          again = piece_buf(b, pf->ck_f0 + j);
          cur = j + 1;
        }
      }
    }
    if (!again)
      return -1;
    if (!same_visit(l, v, again))
      return 0;
  }
  return 1;
}
