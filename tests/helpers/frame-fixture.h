/* frame-fixture.h: frame-walker replay fixtures (tests/fixtures/frames-*.txt).
 *
 * A fixture is what one walk of a live target's thread read (a memory
 * image: byte regions at target addresses), what struct pst_py needs to
 * walk it again (the version and the addresses analysis found), and the
 * frames the live walk returned. capture-image.c writes them from a live
 * process; tests/unit/test-frame-replay.c replays them through
 * pst_mem_init_image(). Shared by both.
 *
 * The file is text, so that a fixture diffs and reviews like source:
 *
 *   # comment lines
 *   pystitch-frame-image 1
 *   python 3.12.1                        (the target's version string)
 *   version 0x30c                        (struct pst_py.version_hex)
 *   runtime 0x...                        (and interp_head, interp,
 *   ...                                   tstate_current, code_type, none,
 *                                         tstate: 0 when none)
 *   frame<TAB>line<TAB>name<TAB>filename (live walk, innermost first)
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

struct pst_fixture_frame {
  int line;
  char name[256];
  char filename[512];
};

struct pst_fixture {
  char python[32];         /* "3.12.1" */
  int version_hex;         /* 0xMMmm, as pst_py.version_hex */
  uint64_t runtime;        /* &_PyRuntime (3.7+), else 0 */
  uint64_t interp_head;    /* &interp_head (2.7, 3.6), else 0 */
  uint64_t interp;         /* the main interpreter */
  uint64_t tstate_current; /* &_PyThreadState_Current (2.7, 3.6), else 0 */
  uint64_t code_type;      /* &PyCode_Type */
  uint64_t none;           /* &_Py_NoneStruct */
  uint64_t tstate;         /* the thread state walked */
  struct pst_fixture_frame frames[PST_FIXTURE_FRAMES_MAX];
  int nframes;
  struct pst_mem_region *regions; /* sorted, disjoint; bytes owned */
  size_t nregions;
};

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

/* Sets up py (fresh from pst_py_init()) to walk fx's image through mem (a
 * replay reader of fx->regions) as pst_py_analyse() does for a target of
 * fx's version: the layout from the built-in table, or (3.13+) parsed out
 * of the image's _Py_DebugOffsets at _PyRuntime, checked; the interpreter
 * read from the image (_PyRuntime's list head, or interp_head before 3.7)
 * and compared with fx->interp; the owner and tag rules of analyse.c; a
 * new code cache (py owns it). 0, PST_EPYVERSION (layout unknown or
 * rejected), PST_EBADDATA (another interpreter), -ENOMEM, -EFAULT. */
int pst_fixture_py(const struct pst_fixture *fx, struct pst_mem *mem,
                   struct pst_py *py);

#endif
