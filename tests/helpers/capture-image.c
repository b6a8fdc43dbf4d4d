/* capture-image.c: records what one frame walk of a live target's main
 * thread reads, as a replay fixture for the frame-walker unit test
 * (frame-fixture.h; run by tools/capture-fixtures.sh).
 *
 * usage: capture-image PID OUT [NOTE]
 *
 * The target must be parked (its thread asleep, tests/targets/parked.py),
 * so that what it holds does not change while it is read. Steps:
 * 1. pst_target_open() and one snapshot, through the public API: the main
 *    thread's PyThreadState and the frames pystitch reports for it.
 * 2. The interpreter analysed again (pst__py_analyse, as the target does)
 *    into our own struct pst__py over a reader with a recorder
 *    (pst__mem_set_recorder), then, recorded: (3.13+) _Py_DebugOffsets, the
 *    interpreter pointer, the thread-state list, and one pst__py_walk()
 *    without a hint (the path that reads everything).
 * 3. The recorded pieces merged into disjoint regions (a piece read twice
 *    must read the same: else the target moved, and nothing is written).
 * 4. The image replayed as the unit test does (pst_fixture_py, a fresh
 *    code cache): its frames must equal the live walk's and the
 *    snapshot's, else nothing is written.
 * Exit 0 when OUT was written, 1 on failure (the reason on stderr), 2 on
 * usage. Not thread-safe; a test tool, not part of pystitch. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame-fixture.h"
#include "helpers.h"
#include "proc/maps.h"
#include "proc/mem.h"
#include "pystitch.h"
#include "python/python.h"

#define WALK_MAX PST_FIXTURE_FRAMES_MAX

static int same_frames(const char *what, const struct pst_frame *a, int na,
                       const struct pst_frame *b, int nb) {
  if (na != nb) {
    fprintf(stderr, "capture-image: %s: %d frames, the live walk %d\n", what,
            na, nb);
    return 0;
  }
  for (int i = 0; i < na; i++)
    if (strcmp(a[i].name, b[i].name) || strcmp(a[i].filename, b[i].filename) ||
        a[i].line != b[i].line) {
      fprintf(stderr,
              "capture-image: %s: frame %d is %s (%s:%d), the live "
              "walk has %s (%s:%d)\n",
              what, i, a[i].name, a[i].filename, a[i].line, b[i].name,
              b[i].filename, b[i].line);
      return 0;
    }
  return 1;
}

/* The main thread (tid == pid) as the public API reports it: *main_th
 * points into t, valid until the next snapshot or pst_target_close(). */
static int snapshot_main(struct pst_target *t, pid_t pid,
                         const struct pst_thread **main_th) {
  const struct pst_thread *th;
  int n = pst_target_snapshot(t, &th);

  if (n < 0)
    return n;
  for (int i = 0; i < n; i++)
    if (th[i].tid == pid) {
      *main_th = &th[i];
      if (th[i].error)
        return th[i].error;
      return th[i].tstate ? 0 : PST_ENOTHREADSTATE;
    }
  return -ESRCH;
}

/* Replays fx's image as the unit test does and compares with live[]. */
static int replay_check(const struct pst_fixture *fx,
                        const struct pst_frame *live, int nlive) {
  struct pst_frame frames[WALK_MAX];
  struct pst__mem mem;
  struct pst__py py;
  uint64_t top[2];
  int truncated, n, err;

  pst__mem_init_image(&mem, fx->regions, fx->nregions);
  pst__py_init(&py);
  err = pst_fixture_py(fx, &mem, &py);
  if (err == 0) {
    n = pst__py_walk(&py, &mem, fx->tstate, NULL, NULL, frames, WALK_MAX,
                     &truncated, NULL, top);
    if (n < 0)
      err = n;
    else if (!same_frames("replay", frames, n, live, nlive))
      err = PST_EBADDATA;
  }
  if (err)
    fprintf(stderr, "capture-image: replay: %s\n", pst_strerror(err));
  pst__py_exit(&py);
  pst__mem_exit(&mem);
  return err;
}

/* Steps 2 to 4 (see the top of the file), then OUT written. */
static int capture(pid_t pid, const struct pst_target_info *opened,
                   const struct pst_thread *main_th, const char *out,
                   const char *note) {
  struct pst_frame frames[WALK_MAX];
  struct pst_target_info info;
  struct pst__py_found found;
  struct pst_fixture_rec rec = {0};
  struct pst_fixture fx;
  struct pst__maps maps;
  struct pst__mem mem;
  struct pst__py py;
  uint64_t top[2], tstates[16], interp, thread_obj;
  int truncated, n = 0, err;
  char comment[1024];

  /* What the target found before analysis (exe, pids), as it does. */
  info = *opened;
  memset(&fx, 0, sizeof(fx));
  memset(&maps, 0, sizeof(maps));
  pst__mem_init(&mem, pid);
  pst__py_init(&py);
  err = pst__maps_load(pid, &maps);
  if (err == 0)
    err = pst__py_analyse(&py, pid, &maps, &mem, test_host_arch(), info.exe,
                          &found);
  if (err)
    goto out;

  pst__mem_set_recorder(&mem, pst_fixture_record, &rec);
  if (py.version_hex >= 0x030d) {
    struct pst__py_layout lay;
    uint64_t size;
    int hex;
    err = pst__py_debug_offsets(&mem, py.runtime, &lay, &size, &hex);
  }
  if (err == 0)
    err = pst__mem_read_u64(&mem,
                            py.runtime
                                ? py.runtime + (uint64_t)py.lay.rt_interp_head
                                : py.interp_head_addr,
                            &interp);
  if (err == 0 && interp != py.interp)
    err = PST_EBADDATA;
  if (err == 0 && (n = pst__py_tstates(&py, &mem, tstates, 16)) < 0)
    err = n;
  if (err == 0) {
    n = pst__py_walk(&py, &mem, main_th->tstate, NULL, NULL, frames, WALK_MAX,
                     &truncated, &thread_obj, top);
    if (n < 0)
      err = n;
    else if (truncated)
      err = -E2BIG;
  }
  pst__mem_set_recorder(&mem, NULL, NULL);
  if (err == 0)
    err = rec.err;
  if (err)
    goto out;
  if (!same_frames("snapshot", main_th->frames, (int)main_th->nframes, frames,
                   n)) {
    err = PST_ETORN;
    goto out;
  }

  snprintf(fx.python, sizeof(fx.python), "%s", info.version);
  fx.version_hex = py.version_hex;
  fx.runtime = py.runtime;
  fx.interp_head = py.runtime ? 0 : py.interp_head_addr;
  fx.interp = py.interp;
  fx.tstate_current = py.tstate_current;
  fx.code_type = py.code_type;
  fx.none = py.none;
  fx.tstate = main_th->tstate;
  for (int i = 0; i < n; i++) {
    struct pst_fixture_frame *f = &fx.frames[i];
    f->line = frames[i].line;
    snprintf(f->name, sizeof(f->name), "%s", frames[i].name);
    snprintf(f->filename, sizeof(f->filename), "%s", frames[i].filename);
  }
  fx.nframes = n;
  err = pst_fixture_merge(&rec, &fx);
  if (err == 0)
    err = replay_check(&fx, frames, n);
  if (err)
    goto out;
  snprintf(comment, sizeof(comment),
           "Frame-walker replay fixture: CPython %s (%s), %s.\n"
           "Made by tools/capture-fixtures.sh (tests/helpers/capture-image.c)"
           ": do not edit.\n%d regions, %zu bytes of image.",
           info.version, info.exe, note ? note : "", (int)fx.nregions,
           pst_fixture_image_size(&fx));
  err = pst_fixture_save(out, &fx, comment);
out:
  if (err)
    fprintf(stderr, "capture-image: pid %d: %s\n", (int)pid, pst_strerror(err));
  pst_fixture_exit(&fx);
  pst_fixture_rec_free(&rec);
  pst__py_exit(&py);
  pst__maps_exit(&maps);
  pst__mem_exit(&mem);
  return err;
}

int main(int argc, char **argv) {
  const struct pst_thread *main_th = NULL;
  struct pst_target *t;
  char *end;
  long pid;
  int err;

  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: capture-image PID OUT [NOTE]\n");
    return 2;
  }
  pid = strtol(argv[1], &end, 10);
  if (*end || pid <= 0 || pid > 0x3fffffff) {
    fprintf(stderr, "capture-image: bad pid %s\n", argv[1]);
    return 2;
  }
  err = pst_target_open((pid_t)pid, &t);
  if (err) {
    fprintf(stderr, "capture-image: open %ld: %s\n", pid, pst_strerror(err));
    return 1;
  }
  err = snapshot_main(t, (pid_t)pid, &main_th);
  if (err)
    fprintf(stderr, "capture-image: main thread of %ld: %s\n", pid,
            pst_strerror(err));
  else
    err = capture((pid_t)pid, pst_target_info(t), main_th, argv[2],
                  argc > 3 ? argv[3] : NULL);
  pst_target_close(t);
  return err ? 1 : 0;
}
