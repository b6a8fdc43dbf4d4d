/* frame_image.h: the input format of the frame-walker harness (fuzz_frame.c)
 * and of its seed generator (gen_frame_seeds.c).
 *
 * An input is a 24-byte header followed by a memory image. The image is
 * what the target would hold at IMAGE_BASE and up: one region, so any
 * pointer outside it reads as unmapped (-EFAULT), like a wild pointer in a
 * real target. Header offsets are relative to IMAGE_BASE.
 */
#ifndef PST_FUZZ_FRAME_IMAGE_H
#define PST_FUZZ_FRAME_IMAGE_H

#include <stdint.h>

/* A plausible mmap/heap address of a 64-bit process (not 0, not low). */
#define IMAGE_BASE 0x7f3a5c200000ULL

/* Layouts, by header.version % NVERSIONS: 2.7, 3.6-3.12 (generated tables),
 * 3.13 (the table generated from 3.13.0's headers), and last: read the
 * layout from a _Py_DebugOffsets at IMAGE_BASE + runtime_off, as attaching
 * to a 3.13+ target does (a hostile or corrupt one included). */
static const int versions[] = {0x0207, 0x0306, 0x0307, 0x0308, 0x0309,
                               0x030a, 0x030b, 0x030c, 0x030d, 0};
#define NVERSIONS (sizeof(versions) / sizeof(versions[0]))

struct frame_header {
  uint8_t version; /* index into versions[], modulo NVERSIONS */
  uint8_t flags;   /* FLAG_* */
  uint8_t max;     /* frames at most: 1 + max % 64 */
  uint8_t pad;
  uint32_t tstate;    /* the thread state walked */
  uint32_t interp;    /* PyInterpreterState (thread list, GIL) */
  uint32_t code_type; /* &PyCode_Type, 0: not checked */
  uint32_t none;      /* &_Py_NoneStruct (3.13+), or _PyThreadState_Current */
  uint32_t runtime;   /* _PyRuntime */
};

#define FLAG_THREAD_OBJ 0x1 /* ask the walk for threading's Thread object */
#define FLAG_TAG_MASK 0x2   /* clear 3.14's tag bits in f_executable */

#endif
