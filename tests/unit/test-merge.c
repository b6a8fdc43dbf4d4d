/* test-merge.c: the native/Python merge on recorded stacks: frames in the
 * right order per eval-loop call (one frame up to 3.10, several from 3.11),
 * plumbing hidden or kept, and a count mismatch that keeps both halves
 * under a marker instead of failing. */
#include <string.h>

#include "native/merge.h"
#include "task.h"

#define NAT(n)                                                                 \
  { n, "libpython3.12.so", 0, PST_FRAME_NATIVE, 0, 0x1000 }
#define PY(n, entry)                                                           \
  { n, "app.py", 7, PST_FRAME_PYTHON, entry, 0 }

static const char *names(const struct pst_frame *f, size_t n, char *buf,
                         size_t len) {
  buf[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    strncat(buf, f[i].name, len - strlen(buf) - 1);
    if (i + 1 < n)
      strncat(buf, ",", len - strlen(buf) - 1);
  }
  return buf;
}

/* Innermost first, as a thread stopped in C code called by Python code
 * called back from C (qsort) would show it on 3.12. */
static const struct pst_frame nat[] = {
    NAT("work_in_c"), NAT("_PyEval_EvalFrameDefault"), NAT("_PyObject_Call"),
    NAT("qsort_r"),   NAT("_PyEval_EvalFrameDefault"), NAT("thread_run"),
};
static const struct pst_frame py[] = {
    PY("callback", 1),
    PY("sorter", 0),
    PY("run", 1),
};

static void classify(const struct pst_frame *f, size_t n, unsigned *flags) {
  for (size_t i = 0; i < n; i++)
    flags[i] = pst__native_classify(f[i].name, 0x030c);
}

TEST_IMPL(merge_order) {
  struct pst_frame out[32];
  unsigned flags[8];
  char buf[512];
  int mismatch = -1;
  size_t k;

  classify(nat, 6, flags);
  ASSERT_EQ(flags[1], PST_NF_EVAL);
  ASSERT_EQ(flags[2], PST_NF_PLUMBING);
  ASSERT_EQ(pst__merge_py_groups(py, 3), 2);
  k = pst__merge(nat, flags, 6, py, 3, 0, "[m]", out, 32, &mismatch);
  ASSERT_EQ(mismatch, 0);
  ASSERT_STR_EQ(names(out, k, buf, sizeof(buf)),
                "work_in_c,callback,qsort_r,sorter,run,thread_run");
  ASSERT_EQ(out[1].kind, PST_FRAME_PYTHON);
  ASSERT_EQ(out[2].kind, PST_FRAME_NATIVE);
  /* --native-all keeps the plumbing and the eval frames themselves. */
  k = pst__merge(nat, flags, 6, py, 3, 1, "[m]", out, 32, &mismatch);
  ASSERT_STR_EQ(names(out, k, buf, sizeof(buf)),
                "work_in_c,callback,_PyEval_EvalFrameDefault,_PyObject_Call,"
                "qsort_r,sorter,run,_PyEval_EvalFrameDefault,thread_run");
  /* 2.7: PyEval_EvalFrameEx is the loop, one frame per call. */
  ASSERT_EQ(pst__native_classify("PyEval_EvalFrameEx", 0x0207), PST_NF_EVAL);
  ASSERT_EQ(pst__native_classify("PyEval_EvalFrameEx", 0x030a),
            PST_NF_PLUMBING);
  ASSERT_EQ(pst__native_classify("_PyEval_EvalFrameDefault.cold", 0x030b),
            PST_NF_EVAL);
  ASSERT_EQ(pst__native_classify("builtin_sorted", 0x030b), 0);
  /* start-up, a compiler-renamed static of pythonrun.c */
  ASSERT_EQ(pst__native_classify("pyrun_file.lto_priv.0", 0x030b),
            PST_NF_PLUMBING);
  return 0;
}

TEST_IMPL(merge_mismatch) {
  struct pst_frame out[32];
  unsigned flags[8];
  char buf[512];
  int mismatch = 0;
  size_t k;

  /* The native stack lost its outer eval frame (e.g. an unwind that
   * stopped early): one eval frame for two Python calls. */
  classify(nat, 4, flags);
  k = pst__merge(nat, flags, 4, py, 3, 0, "[not merged]", out, 32, &mismatch);
  ASSERT_EQ(mismatch, 1);
  ASSERT_STR_EQ(names(out, k, buf, sizeof(buf)),
                "callback,sorter,run,[not merged],work_in_c,"
                "_PyEval_EvalFrameDefault,qsort_r");
  ASSERT_EQ(out[3].kind, PST_FRAME_MARKER);
  /* Output is capped, never overrun. */
  k = pst__merge(nat, flags, 4, py, 3, 0, "[not merged]", out, 2, &mismatch);
  ASSERT_EQ(k, 2);
  /* No Python frames and no eval frame: a native-only thread. */
  k = pst__merge(nat, flags, 1, py, 0, 0, "[m]", out, 32, &mismatch);
  ASSERT_EQ(mismatch, 0);
  ASSERT_EQ(k, 1);
  return 0;
}

/* A stripped interpreter (Debian's static python3.11): its call helpers
 * have no symbol, only "python3.11+0x..." names. Frames of the
 * interpreter's text between two eval-loop frames are machinery, hidden
 * named or not; interpreter frames next to C code of another module (a
 * builtin the innermost frame is in, the thread's start) stay. */
TEST_IMPL(merge_stripped_interp) {
  static const struct pst_frame snat[] = {
      NAT("python3.11+0x1a2b3c"),      /* a builtin, innermost: kept */
      NAT("_PyEval_EvalFrameDefault"), /* exported: named */
      NAT("python3.11+0x550c6d"),      /* call helper: hidden */
      NAT("python3.11+0x550d00"),      /* call helper: hidden */
      NAT("_PyEval_EvalFrameDefault"),
      NAT("python3.11+0x600000"), /* between eval and libc: kept */
      NAT("start_thread"),
  };
  static const struct pst_frame spy[] = {PY("inner", 1), PY("outer", 1)};
  unsigned flags[7];
  struct pst_frame out[32];
  char buf[512];
  int mismatch = -1;
  size_t k;

  for (size_t i = 0; i < 7; i++)
    flags[i] =
        i == 6 ? 0 : PST_NF_INTERP | pst__native_classify(snat[i].name, 0x030b);
  ASSERT_EQ(flags[1], PST_NF_INTERP | PST_NF_EVAL);
  k = pst__merge(snat, flags, 7, spy, 2, 0, "[m]", out, 32, &mismatch);
  ASSERT_EQ(mismatch, 0);
  ASSERT_STR_EQ(names(out, k, buf, sizeof(buf)),
                "python3.11+0x1a2b3c,inner,outer,python3.11+0x600000,"
                "start_thread");
  /* --native-all keeps them. */
  k = pst__merge(snat, flags, 7, spy, 2, 1, "[m]", out, 32, &mismatch);
  ASSERT_EQ(k, 9);
  return 0;
}
