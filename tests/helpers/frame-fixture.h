/* frame-fixture.h: frame-walker replay fixtures (tests/fixtures/frames-*.txt).
 *
 * A fixture is what one walk of a live target's thread read (a memory
 * image: byte regions at target addresses), what struct pst__py needs to
 * walk it again (the version and the addresses analysis found), and the
 * frames the live walk returned. capture-image.c writes them from a live
 * process; tests/unit/test-frame-replay.c replays them through
 * pst__mem_init_image(). Shared by both.
 *
 * The file is text, so that a fixture diffs and reviews like source:
 *
 *   # comment lines
 *   pystitch-frame-image 1
 *   python 3.12.1                        (the target's version string)
 *   version 0x30c                        (struct pst__py.version_hex)
 *   runtime 0x...                        (and interp_head, interp,
 *   ...                                   tstate_current, code_type, none,
 *                                         tstate: 0 when none)
 *   dict_type 0x...                      (registry fixtures: the type
 *   ...                                   objects, long_type, int_type,
 *                                         str_type, module_type, and
 *                                         long_shift; absent: 0)
 *   frame<TAB>line<TAB>name<TAB>filename (live walk, innermost first)
 *   thread<TAB>0xIDENT<TAB>name          (registry fixtures: the entries of
 *                                         threading._active, as the live
 *                                         read found and named them)
 *   region 0xADDR LEN                    (then LEN bytes as hex, 32 a line;
 *   ...                                   a line "zero N" stands for N zero
 *                                         bytes, N a multiple of 32)
 *   end
 */
#ifndef PST_TEST_FRAME_FIXTURE_H
#define PST_TEST_FRAME_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "proc/mem.h"
#include "python/python.h"

#define PST_FIXTURE_FRAMES_MAX 64
#define PST_FIXTURE_THREADS_MAX 32

/* One entry of threading._active in a registry fixture. */
struct pst_fixture_thread {
  uint64_t ident;
  char name[128];
};

struct pst_fixture_frame {
  int line;
  char name[256];
  char filename[512];
};

struct pst_fixture {
  char python[32];         /* "3.12.1" */
  int version_hex;         /* 0xMMmm, as pst__py.version_hex */
  uint64_t runtime;        /* &_PyRuntime (3.7+), else 0 */
  uint64_t interp_head;    /* &interp_head (2.7, 3.6), else 0 */
  uint64_t interp;         /* the main interpreter */
  uint64_t tstate_current; /* &_PyThreadState_Current (2.7, 3.6), else 0 */
  uint64_t code_type;      /* &PyCode_Type */
  uint64_t none;           /* &_Py_NoneStruct */
  uint64_t tstate;         /* the thread state walked (0 in a registry
                              fixture) */
  /* Registry fixtures: what struct pst__py holds for the dict reader. */
  uint64_t dict_type, long_type, int_type, str_type, module_type;
  uint64_t long_shift;
  struct pst_fixture_frame frames[PST_FIXTURE_FRAMES_MAX];
  int nframes;
  struct pst_fixture_thread threads[PST_FIXTURE_THREADS_MAX];
  int nthreads;
  struct pst__mem_region *regions; /* sorted, disjoint; bytes owned */
  size_t nregions;
};

/* What a live reader read, piece by piece, for pst_fixture_merge(): pass
 * pst_fixture_record as the pst__mem recorder with a zeroed struct. */
struct pst_fixture_rec {
  struct pst_fixture_piece {
    uint64_t addr;
    size_t len;
    uint8_t *bytes;
  } * v;
  size_t n, cap;
  int err; /* -ENOMEM once a copy failed */
};
void pst_fixture_record(void *arg, uint64_t addr, const void *buf, size_t len);
void pst_fixture_rec_free(struct pst_fixture_rec *r);

/* Merges r's pieces into fx's regions (fx->regions must be empty):
 * overlapping or touching pieces become one region. A byte read twice with
 * two values fails with PST_ETORN (the target moved); -ENOMEM. */
int pst_fixture_merge(struct pst_fixture_rec *r, struct pst_fixture *fx);

/* Reads the fixture at path into *fx (zeroed first). 0, -errno, or
 * PST_EBADDATA when the file is not a well-formed fixture (then fx holds
 * nothing to free). Free with pst_fixture_exit(). */
int pst_fixture_load(const char *path, struct pst_fixture *fx);

/* Writes fx to path, with comment (may be NULL; lines get a "# "). 0 or
 * -errno. */
int pst_fixture_save(const char *path, const struct pst_fixture *fx,
                     const char *comment);

/* Frees the regions' bytes; fx may be loaded again. */
void pst_fixture_exit(struct pst_fixture *fx);

/* Total bytes of fx's image. */
size_t pst_fixture_image_size(const struct pst_fixture *fx);

/* Sets up py (fresh from pst__py_init()) to walk fx's image through mem (a
 * replay reader of fx->regions) as pst__py_analyse() does for a target of
 * fx's version: the layout from the built-in table, or (3.13+) parsed out
 * of the image's _Py_DebugOffsets at _PyRuntime, checked; the interpreter
 * read from the image (_PyRuntime's list head, or interp_head before 3.7)
 * and compared with fx->interp; the owner and tag rules of analyse.c; a
 * new code cache (py owns it). 0, PST_EPYVERSION (layout unknown or
 * rejected), PST_EBADDATA (another interpreter), -ENOMEM, -EFAULT. */
int pst_fixture_py(const struct pst_fixture *fx, struct pst__mem *mem,
                   struct pst__py *py);

#endif
