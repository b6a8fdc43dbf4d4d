/* merge.h: one stack out of a thread's native frames and its Python frames.
 *
 * The interpreter runs Python code in its eval-loop function
 * (_PyEval_EvalFrameDefault, with its .cold part; PyEval_EvalFrameEx on
 * 2.7). Each native frame of that function is replaced by the Python
 * frames it runs: one frame up to 3.10, from 3.11 the frames from the
 * current one down to the frame the call was entered with (pst_frame.entry).
 * The merge is done only when the counts agree; otherwise both stacks are
 * kept whole, the Python frames above a marker frame, and the caller counts
 * the mismatch. Interpreter plumbing (call dispatch, vectorcall helpers) is
 * hidden unless asked for.
 *
 * Pure functions on caller-owned arrays: no allocation, no I/O.
 */
#ifndef PST_NATIVE_MERGE_H
#define PST_NATIVE_MERGE_H

#include <stddef.h>

#include "pystitch.h"

/* Flags of a native frame, set by the caller with pst__native_classify(). */
#define PST_NF_EVAL 1     /* an eval-loop frame of the interpreter */
#define PST_NF_PLUMBING 2 /* interpreter call machinery */
#define PST_NF_INTERP                                                          \
  4 /* in the interpreter's own text (libpython or
                              the python executable), named or not: such
                              frames between two eval-loop frames are call
                              machinery too, hidden like PST_NF_PLUMBING */

/* Classifies a native function name found in the interpreter's own module
 * (libpython or a static python): PST_NF_* flags. py_major_minor is 0xMMmm. */
unsigned pst__native_classify(const char *func, int version_hex);

/* Merges nat[0..nn) (native, innermost first, kind PST_FRAME_NATIVE) with
 * py[0..np) (Python, innermost first, with entry flags) into out (at most
 * max frames, innermost first). flags[i] are nat[i]'s PST_NF_* flags.
 * show_plumbing keeps the plumbing frames (PST_NF_PLUMBING, and
 * PST_NF_INTERP frames with eval-loop frames on both sides: a stripped
 * interpreter's nameless call helpers). *mismatch is set to 1 when the
 * eval-frame count and the Python entry count differ (then out holds the
 * Python frames, a marker frame and the native frames). Returns the number
 * of frames written. marker is the marker frame's text (caller-owned). */
size_t pst__merge(const struct pst_frame *nat, const unsigned *flags, size_t nn,
                  const struct pst_frame *py, size_t np, int show_plumbing,
                  const char *marker, struct pst_frame *out, size_t max,
                  int *mismatch);

/* How many eval-loop calls the Python frames need: their entry frames (a
 * trailing partial group counts as one). */
size_t pst__merge_py_groups(const struct pst_frame *py, size_t np);

#endif
