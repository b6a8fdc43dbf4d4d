/* fuzz_frame.c: libFuzzer harness for the Python frame walker
 * (src/python/frame.c) and what it calls: code objects and their line
 * tables (code.c), str objects, thread names (threadname.c), the thread
 * registry and its dict reader (registry.c, dict.c), a frame's locals
 * (locals.c), a thread's exception and the collector's flag (exc.c), the
 * 3.13+ _Py_DebugOffsets reader (debug_offsets.c) and the layout check.
 *
 * The target's memory is a random image (frame_image.h) read through the
 * replay mode of the one memory reader (pst__mem_init_image, proc/mem.h):
 * the walker runs exactly as on a live process whose memory is garbage,
 * torn or hostile, and must only ever fail with an error code. Seeds are
 * well-formed images of every layout (gen_frame_seeds.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame_image.h"
#include "python/python.h"

static struct pst__code_cache *cache;

static uint64_t at(uint32_t off) { return off ? IMAGE_BASE + off : 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct pst_frame frames[64];
  struct frame_header h;
  struct pst__mem_region region;
  struct pst__mem mem;
  struct pst__py py;
  uint64_t tstates[16], top[2], top2[2], holder, tid, nid, interp, thread_obj;
  struct pst__py_hint hint;
  struct pst__py_check check;
  char why[128];
  int version, truncated, n;

  if (size < sizeof(h))
    return 0;
  memcpy(&h, data, sizeof(h));
  region =
      (struct pst__mem_region){IMAGE_BASE, data + sizeof(h), size - sizeof(h)};
  pst__mem_init_image(&mem, &region, 1);
  pst__py_init(&py);
  version = versions[h.version % NVERSIONS];
  if (version == 0) {
    uint64_t runtime_size;
    if (pst__py_debug_offsets(&mem, at(h.runtime), &py.lay, &runtime_size,
                              &py.version_hex))
      goto out;
  } else {
    const struct pst__py_layout *l = version == 0x030d
                                         ? pst__py_layout_reference_313()
                                         : pst__py_layout_builtin(version);
    if (!l)
      abort(); /* the table list and the harness disagree */
    py.lay = *l;
    py.version_hex = version;
  }
  /* As attaching does: a layout that fails the check is refused. */
  if (pst__py_layout_check(&py.lay, why, sizeof(why)))
    goto out;
  py.runtime = py.version_hex >= 0x0307 ? at(h.runtime) : 0;
  py.interp = at(h.interp);
  py.code_type = at(h.code_type);
  if (py.version_hex >= 0x030d)
    py.none = at(h.none);
  else if (py.version_hex <= 0x0306)
    py.tstate_current = at(h.none);
  py.owner_shim = 3;
  py.tag_mask = (h.flags & FLAG_TAG_MASK) || py.version_hex >= 0x030e ? 7 : 0;
  /* One cache for every input, flushed after each (see below): a fresh
   * one per input made the harness ten times slower. */
  if (!cache && !(cache = pst__code_cache_new()))
    abort();
  py.codes = cache;

  (void)pst__py_tstates(&py, &mem, tstates, 16);
  (void)pst__py_gil_holder(&py, &mem, &holder);
  (void)pst__py_tstate_ids(&py, &mem, at(h.tstate), &tid, &nid, &interp);
  /* The hint starts empty (first walk: no guesses) and carries the
   * first walk's addresses into the second (guessed reads). */
  memset(&hint, 0, sizeof(hint));
  hint.owner_interp = (h.flags & FLAG_THREAD_OBJ) ? at(h.interp) : 0;
  n = pst__py_walk(&py, &mem, at(h.tstate), &hint, NULL, frames, 1 + h.max % 64,
                   &truncated, (h.flags & FLAG_THREAD_OBJ) ? &thread_obj : NULL,
                   top);
  if (n > 1 + h.max % 64)
    abort();
  if (getenv("FUZZ_FRAME_VERBOSE")) /* to check that the seeds walk */
    for (int i = 0; i < (n < 0 ? 0 : n); i++)
      fprintf(stderr, "%x: %s (%s:%d)\n", py.version_hex, frames[i].name,
              frames[i].filename, frames[i].line);
  if (getenv("FUZZ_FRAME_VERBOSE") && n < 0)
    fprintf(stderr, "%x: walk failed: %d\n", py.version_hex, n);
  for (int i = 0; i < n; i++) /* strings must be readable C strings */
    if (strlen(frames[i].name) + strlen(frames[i].filename) > 2 * 4096 * 4)
      abort();
  /* dump --locals: the walked frames' locals (names from the code
   * object, values decoded from their bytes), at most 4 frames. */
  for (int i = 0; i < n && i < 4; i++) {
    struct pst__py_local loc[8];
    uint64_t frame, code;
    int total, k;
    if (pst__py_walked_frame(&py, i, n, &frame, &code))
      abort(); /* i < n: the walk's own frame */
    k = pst__py_frame_locals(&py, &mem, frame, code, loc, 8, &total);
    if (k > 8)
      abort();
    for (int j = 0; j < k; j++)
      if (strlen(loc[j].name) >= sizeof(loc[j].name) ||
          strlen(loc[j].value) >= sizeof(loc[j].value))
        abort();
  }
  /* --mode exception and <GC>: the thread's exception, its type's name,
   * the collector's flag. */
  {
    struct pst__py_exc exc = {.tstate = at(h.tstate)};
    struct pst__py_exc *excp = &exc;
    char type[64];
    if (pst__py_exceptions(&py, &mem, &excp, 1) == 0 && exc.obj) {
      pst__py_exception_name(&py, &mem, exc.obj, exc.inst, type, sizeof(type));
      if (strlen(type) >= sizeof(type))
        abort();
    }
    (void)pst__py_gc_collecting(&py, &mem);
  }
  /* A second walk goes through the code cache's hit path and the
   * guessed reads, carrying the first walk's torn-read check. */
  pst__py_check_prepare(&py, at(h.tstate), &hint, top, &check);
  (void)pst__py_walk(&py, &mem, at(h.tstate), &hint, &check, frames,
                     1 + h.max % 64, &truncated, NULL, top2);
  (void)pst__py_check_done(&py, &mem, &check);
  if (n >= 0 && (h.flags & FLAG_THREAD_OBJ) && thread_obj) {
    char *name = NULL;
    if (pst__py_thread_name(&py, &mem, thread_obj, &name) == 0)
      free(name);
  }
  /* threading._active through the interpreter's sys.modules, twice (the
   * second call takes the cached path). */
  {
    struct pst__py_thread_ent ents[16];
    for (int i = 0; i < 2; i++) {
      int k = pst__py_thread_registry(&py, &mem, ents, 16);
      if (k > 16)
        abort();
      for (int j = 0; j < k && j < 2; j++) {
        char *name = NULL;
        if (pst__py_thread_name(&py, &mem, ents[j].thread_obj, &name) == 0)
          free(name);
      }
    }
  }
out:
  if (py.codes && pst__code_cache_flush(py.codes))
    abort();
  py.codes = NULL; /* not pst__py_exit's to free */
  pst__py_exit(&py);
  pst__mem_exit(&mem);
  return 0;
}
