/* fuzz_pyimage.c: libFuzzer harness for the readers of a real interpreter's
 * objects: dicts of every layout and sys.modules (src/python/dict.c), the
 * thread registry (registry.c), thread names and instance attributes
 * (threadname.c), and the asyncio task readers (asyncio_legacy.c for
 * 3.8-3.13, asyncio.c's chains), over a mutated memory image of a real
 * process.
 *
 * An input is a header (struct header: the version and the addresses
 * analysis found) and the image as records {u64 address, u32 length,
 * bytes}; a record cut short ends the image. The image is read through the
 * replay mode of the one memory reader (pst__mem_init_image), so the readers
 * run as on a live process whose memory is hostile. Seeds: the registry
 * fixtures captured from pyenv's CPythons 2.7, 3.6, 3.11, 3.12 and the sid
 * rootfs's 3.14 (tests/fixtures/registry-*.txt), converted by
 * make_seeds.py; they hold no asyncio task yet, so the task readers see
 * only what mutations of sys.modules make of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc/mem.h"
#include "python/dict.h"
#include "python/layout.h"
#include "python/python.h"
#include "regions.h"

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
};

static struct pst__code_cache *cache;
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
  return 0;
}

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

  if (py->version_hex < 0x0308 || py->version_hex >= 0x030e)
    return; /* 3.14+ finds its offsets in an ELF section, not in memory */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct pst__py_thread_ent ents[64];
  struct pst__mem mem;
  struct pst__py py;
  struct header h;
  int n;

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
  /* The registry twice: the second call takes the cached path. */
  for (int i = 0; i < 2; i++) {
    n = pst__py_thread_registry(&py, &mem, ents, 64);
    if (n > 64)
      abort();
    names(&py, &mem, ents, n < 0 ? 0 : n);
  }
  dicts(&py, &mem);
  tasks(&py, &mem);
out:
  if (pst__code_cache_flush(cache))
    abort();
  py.codes = NULL; /* not pst__py_exit's to free */
  pst__py_exit(&py);
  pst__mem_exit(&mem);
  return 0;
}
