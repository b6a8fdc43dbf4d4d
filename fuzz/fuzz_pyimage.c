/* fuzz_pyimage.c: libFuzzer harness for the readers of a real interpreter's
 * objects: dicts of every layout and sys.modules (src/python/dict.c), the
 * thread registry (registry.c), thread names and instance attributes
 * (threadname.c), every thread's frames with their local variables
 * (frame.c, locals.c), and both asyncio task readers (asyncio_legacy.c for
 * 3.8-3.13 through sys.modules, asyncio.c's task lists and coroutine
 * chains for 3.14+, with the .AsyncioDebug offsets given in the header),
 * over a mutated memory image of a real process.
 *
 * An input is a header (struct header: the version, the addresses analysis
 * found and, 3.14+, the 13 words of .AsyncioDebug) and the image as records
 * {u64 address, u32 length, bytes}; a record cut short ends the image. The
 * image is read through the replay mode of the one memory reader
 * (pst__mem_init_image), so the readers run as on a live process whose
 * memory is hostile. Seeds: the registry fixtures captured from pyenv's
 * CPythons 2.7, 3.6, 3.11, 3.12 and the sid rootfs's 3.14
 * (tests/fixtures/registry-*.txt, converted by make_seeds.py), and images
 * of tests/targets/tasks.py (20 waiting tasks) and locals.py (frames
 * holding each kind of value) captured by this same file built with
 * -DFUZZ_CAPTURE (capture-pyimage PID OUT: the harness's steps run on a
 * live target with every piece read recorded, written as an input;
 * make_seeds.py runs it on every interpreter found). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc/mem.h"
#include "python/dict.h"
#include "python/layout.h"
#include "python/python.h"
#include "regions.h"
#include "util/log.h"

#define REGIONS_MAX 1024
#define TASKS_MAX 32
#define FRAMES_MAX 128

/* Little-endian, as make_seeds.py packs it. */
struct header {
  uint32_t version_hex; /* 0xMMmm */
  uint32_t long_shift;  /* bits per int digit (30), 0: 30 */
  uint64_t runtime, interp_head, interp, tstate_current, code_type, none;
  uint64_t dict_type, long_type, int_type, str_type, module_type;
  uint64_t coro_type, gen_type, method_type, set_type;
  uint64_t aio[13]; /* 3.14+: .AsyncioDebug, else zeros */
};

static struct pst__code_cache *cache;

#ifndef FUZZ_CAPTURE /* the harness reads an input */
static struct pst__mem_region regions[REGIONS_MAX];

/* The regions of the image: how many. */
static size_t image(const uint8_t *p, size_t n) {
  return fuzz_regions(p, n, regions, REGIONS_MAX);
}

/* struct pst__py as analysis leaves it for a target of h's version: 0, or
 * nonzero when the layout is unknown or refused (as attaching refuses). */
static int setup(const struct header *h, struct pst__mem *mem,
                 struct pst__py *py) {
  char why[128];
  int hex;

  py->version_hex = (int)h->version_hex;
  py->runtime = h->runtime;
  py->interp_head_addr = h->interp_head;
  py->tstate_current = h->tstate_current;
  py->code_type = h->code_type;
  py->none = h->none;
  py->dict_type = h->dict_type;
  py->long_type = h->long_type;
  py->int_type = h->int_type;
  py->str_type = h->str_type;
  py->module_type = h->module_type;
  py->coro_type = h->coro_type;
  py->gen_type = h->gen_type;
  py->method_type = h->method_type;
  py->set_type = h->set_type;
  py->long_shift = h->long_shift == 15 ? 15 : 30;
  if (py->version_hex >= 0x030d) {
    if (!h->runtime || pst__py_debug_offsets(mem, h->runtime, &py->lay,
                                             &py->runtime_size, &hex))
      return -1;
  } else if (pst__py_layout_builtin_copy(py->version_hex, &py->lay)) {
    return -1;
  }
  if (pst__py_layout_check(&py->lay, why, sizeof(why)))
    return -1;
  py->owner_shim = 3;
  py->tag_mask = py->version_hex >= 0x030e ? 7 : 0;
  py->interp = h->interp;
  py->codes = cache;
  if (py->version_hex >= 0x030e && h->aio[0] &&
      pst__py_aio_offsets(&py->aio, h->aio, "the input") == 0)
    py->aio.found = 1; /* as pst__py_aio_find() leaves it */
  return 0;
}
#endif

static void names(struct pst__py *py, struct pst__mem *mem,
                  const struct pst__py_thread_ent *ents, int n) {
  for (int i = 0; i < n; i++) {
    char *name = NULL;
    if (pst__py_thread_name(py, mem, ents[i].thread_obj, &name) == 0) {
      if (!name || strlen(name) > 1 << 20)
        abort();
      if (getenv("FUZZ_PYIMAGE_VERBOSE")) /* to check that the seeds read */
        fprintf(stderr, "%x: thread %s\n", py->version_hex, name);
      free(name);
    }
  }
}

static void dicts(struct pst__py *py, struct pst__mem *mem) {
  /* One name per module (each lookup scans a dict's keys: sys.modules'
   * hundreds cost the harness most of its time). */
  static const char *const mods[][2] = {{"threading", "_main_thread"},
                                        {"sys", "modules"},
                                        {"asyncio.tasks", "_current_tasks"}};
  uint64_t memo = 0, dict, value, slot;

  for (size_t i = 0; i < sizeof(mods) / sizeof(mods[0]); i++) {
    uint64_t kmemo = 0;
    if (pst__py_module_dict(py, mem, mods[i][0], &memo, &dict) ||
        pst__py_dict_get_str(py, mem, dict, 4096, mods[i][1], &kmemo, &value,
                             &slot))
      continue;
    kmemo = 0;
    (void)pst__py_instance_attr(py, mem, value, "_name", &kmemo, &value, &slot);
  }
}

static void tasks(struct pst__py *py, struct pst__mem *mem) {
  static struct pst__py_task t[TASKS_MAX];
  static struct pst_frame frames[FRAMES_MAX];
  uint64_t ts[16];
  int nts, n;

  if (py->version_hex < 0x0308 || (py->version_hex >= 0x030e && !py->aio.found))
    return; /* 3.14+ takes its offsets from the header (an ELF section) */
  /* Before 3.14 the maps are not looked at: the sets are found in
   * memory, through sys.modules. */
  if (pst__py_aio_find(py, 0, NULL, mem))
    return;
  nts = pst__py_tstates(py, mem, ts, 16);
  if (nts < 0)
    nts = 0;
  for (int pass = 0; pass < 2; pass++) { /* the second with what it kept */
    n = pst__py_aio_tasks(py, mem, ts, nts, t, TASKS_MAX, frames, FRAMES_MAX);
    if (n > TASKS_MAX)
      abort();
    for (int i = 0; i < n; i++) {
      if (t[i].nwaiters > PST_PY_TASK_WAITERS || t[i].frame0 < 0 ||
          t[i].nframes < 0 || t[i].frame0 + t[i].nframes > FRAMES_MAX)
        abort();
      if (t[i].name && strlen(t[i].name) > 1 << 20)
        abort();
      if (getenv("FUZZ_PYIMAGE_VERBOSE"))
        fprintf(stderr, "%x: task %s, %d frames, %d waiters\n", py->version_hex,
                t[i].name ? t[i].name : "?", t[i].nframes, t[i].nwaiters);
      free(t[i].name);
    }
  }
}

/* Every thread's frames walked, and each frame's locals read
 * (python/locals.c, `dump --locals`). */
static void locals(struct pst__py *py, struct pst__mem *mem) {
  static struct pst_frame frames[FRAMES_MAX];
  static struct pst__py_local loc[PST_PY_LOCALS_MAX];
  uint64_t ts[16], top[2], frame, code;
  int nts, n, got, total, truncated;

  nts = pst__py_tstates(py, mem, ts, 16);
  for (int i = 0; i < nts; i++) {
    n = pst__py_walk(py, mem, ts[i], NULL, NULL, frames, FRAMES_MAX, &truncated,
                     NULL, top);
    if (n > FRAMES_MAX)
      abort();
    for (int k = 0; k < n; k++) {
      if (pst__py_walked_frame(py, k, n, &frame, &code))
        continue;
      got = pst__py_frame_locals(py, mem, frame, code, loc, PST_PY_LOCALS_MAX,
                                 &total);
      if (got > PST_PY_LOCALS_MAX || (got > 0 && total < 0))
        abort();
      for (int j = 0; j < got; j++) {
        if (!memchr(loc[j].name, 0, sizeof(loc[j].name)) ||
            !memchr(loc[j].value, 0, sizeof(loc[j].value)))
          abort(); /* each a C string inside its buffer */
        if (getenv("FUZZ_PYIMAGE_VERBOSE"))
          fprintf(stderr, "%x: %s: %s = %s\n", py->version_hex, frames[k].name,
                  loc[j].name, loc[j].value);
      }
    }
  }
}

/* What the harness does with an interpreter set up. */
static void steps(struct pst__py *py, struct pst__mem *mem) {
  struct pst__py_thread_ent ents[64];
  int n;

  /* The registry twice: the second call takes the cached path. */
  for (int i = 0; i < 2; i++) {
    n = pst__py_thread_registry(py, mem, ents, 64);
    if (n > 64)
      abort();
    names(py, mem, ents, n < 0 ? 0 : n);
  }
  dicts(py, mem);
  tasks(py, mem);
  locals(py, mem);
}

#ifndef FUZZ_CAPTURE
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct pst__mem mem;
  struct pst__py py;
  struct header h;

  if (!getenv("FUZZ_PYIMAGE_VERBOSE"))
    pst__log_level = PST_LOG_ERR; /* a warning per input otherwise */
  if (size < sizeof(h))
    return 0;
  memcpy(&h, data, sizeof(h));
  pst__mem_init_image(&mem, regions, image(data + sizeof(h), size - sizeof(h)));
  pst__py_init(&py);
  if (!cache && !(cache = pst__code_cache_new()))
    abort();
  if (setup(&h, &mem, &py)) {
    if (getenv("FUZZ_PYIMAGE_VERBOSE"))
      fprintf(stderr, "%x: layout refused\n", h.version_hex);
    goto out;
  }
  steps(&py, &mem);
out:
  if (pst__code_cache_flush(cache))
    abort();
  py.codes = NULL; /* not pst__py_exit's to free */
  pst__py_exit(&py);
  pst__mem_exit(&mem);
  return 0;
}
#else
/* ---- capture-pyimage PID OUT ----
 * Analyses the live interpreter PID (it should be still: parked threads,
 * waiting tasks), runs steps() on it with every piece read recorded, and
 * writes header and pieces, merged into disjoint regions, as an input.
 * A piece read twice must read the same, else the target moved and
 * nothing is written. Exit 0 when OUT was written, 1 otherwise. */
#include <unistd.h>

#include "proc/maps.h"

struct piece {
  uint64_t addr;
  size_t len;
  uint8_t *bytes;
};

static struct piece *pieces;
static size_t npieces, pieces_cap;

static void record(void *arg, uint64_t addr, const void *buf, size_t len) {
  (void)arg;
  if (!len)
    return;
  if (npieces == pieces_cap) {
    pieces_cap = pieces_cap ? 2 * pieces_cap : 256;
    if (!(pieces = realloc(pieces, pieces_cap * sizeof(*pieces))))
      abort();
  }
  pieces[npieces] = (struct piece){addr, len, malloc(len)};
  if (!pieces[npieces].bytes)
    abort();
  memcpy(pieces[npieces++].bytes, buf, len);
}

static int piece_cmp(const void *a, const void *b) {
  const struct piece *x = a, *y = b;
  return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Writes the pieces as disjoint regions: 0, or -1 when two pieces that
 * overlap disagree (the target moved). */
static int write_regions(FILE *f) {
  size_t i = 0;

  qsort(pieces, npieces, sizeof(*pieces), piece_cmp);
  while (i < npieces) {
    uint64_t start = pieces[i].addr, end = start;
    size_t j = i;
    uint8_t *buf;
    uint32_t len;
    for (; j < npieces && pieces[j].addr <= end; j++)
      if (pieces[j].addr + pieces[j].len > end)
        end = pieces[j].addr + pieces[j].len;
    len = (uint32_t)(end - start);
    if (!(buf = calloc(1, len)))
      abort();
    for (size_t k = i, covered = 0; k < j; k++) {
      size_t at = (size_t)(pieces[k].addr - start), same = 0;
      if (covered > at)
        same = covered - at < pieces[k].len ? covered - at : pieces[k].len;
      if (memcmp(buf + at, pieces[k].bytes, same)) {
        free(buf);
        return -1;
      }
      memcpy(buf + at, pieces[k].bytes, pieces[k].len);
      if (at + pieces[k].len > covered)
        covered = at + pieces[k].len;
    }
    fwrite(&start, 8, 1, f);
    fwrite(&len, 4, 1, f);
    fwrite(buf, 1, len, f);
    free(buf);
    i = j;
  }
  return 0;
}

int main(int argc, char **argv) {
  struct pst__py_found found;
  struct pst__maps maps;
  struct pst__mem mem;
  struct pst__py py;
  struct header h;
  char exe[4096], link[64];
  ssize_t n;
  pid_t pid;
  FILE *f;

  if (argc != 3) {
    fprintf(stderr, "usage: capture-pyimage PID OUT\n");
    return 2;
  }
  pid = (pid_t)atoi(argv[1]);
  snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
  if ((n = readlink(link, exe, sizeof(exe) - 1)) < 0) {
    perror(link);
    return 1;
  }
  exe[n] = 0;
  pst__mem_init(&mem, pid);
  pst__py_init(&py);
  if (pst__maps_load(pid, &maps) ||
      pst__py_analyse(&py, pid, &maps, &mem, PST_ARCH_X86_64, exe, &found)) {
    fprintf(stderr, "capture-pyimage: cannot analyse %d\n", (int)pid);
    return 1;
  }
  if (!(cache = pst__code_cache_new()))
    abort();
  py.codes = cache;
  if (py.version_hex >= 0x030e)
    (void)pst__py_aio_find(&py, pid, &maps, &mem); /* the section: no memory */
  memset(&h, 0, sizeof(h));
  h.version_hex = (uint32_t)py.version_hex;
  h.long_shift = (uint32_t)py.long_shift;
  h.runtime = py.runtime;
  h.interp_head = py.runtime ? 0 : py.interp_head_addr;
  h.interp = py.interp;
  h.tstate_current = py.tstate_current;
  h.code_type = py.code_type;
  h.none = py.none;
  h.dict_type = py.dict_type;
  h.long_type = py.long_type;
  h.int_type = py.int_type;
  h.str_type = py.str_type;
  h.module_type = py.module_type;
  h.coro_type = py.coro_type;
  h.gen_type = py.gen_type;
  h.method_type = py.method_type;
  h.set_type = py.set_type;
  if (py.aio.found && py.version_hex >= 0x030e)
    memcpy(h.aio, py.aio.words, sizeof(h.aio));
  pst__mem_set_recorder(&mem, record, NULL);
  if (py.version_hex >= 0x030d) { /* what setup() reads from the image */
    struct pst__py_layout lay;
    uint64_t size;
    int hex;
    (void)pst__py_debug_offsets(&mem, py.runtime, &lay, &size, &hex);
  }
  steps(&py, &mem);
  pst__mem_set_recorder(&mem, NULL, NULL);
  if (!(f = fopen(argv[2], "wb"))) {
    perror(argv[2]);
    return 1;
  }
  fwrite(&h, sizeof(h), 1, f);
  if (write_regions(f)) {
    fclose(f);
    unlink(argv[2]);
    fprintf(stderr, "capture-pyimage: the target moved while read\n");
    return 1;
  }
  if (fclose(f)) {
    perror(argv[2]);
    return 1;
  }
  fprintf(stderr, "capture-pyimage: %s: %zu pieces read\n", argv[2], npieces);
  return 0;
}
#endif
