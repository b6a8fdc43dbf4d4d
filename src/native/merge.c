/* merge.c: stitching a thread's native and Python frames into one stack. */
#include <string.h>

#include "native/merge.h"

/* Call machinery between eval-loop calls: hidden by default. Matched as
 * prefixes, so that ".cold", ".part.N" and "Tstate" variants go too. */
static const char *const plumbing[] = {
    "_PyEval_EvalCode",
    "PyEval_EvalCode",
    "_PyEval_Vector",
    "_PyEval_EvalFrame", /* the inline wrapper when not inlined (not the
                            eval loop itself, checked first) */
    "PyEval_EvalFrame",  /* 3.x wrapper PyEval_EvalFrameEx */
    "_PyFunction_",
    "function_code_fastcall",
    "_PyObject_Call",
    "PyObject_Call",
    "_PyObject_Vectorcall",
    "PyObject_Vectorcall",
    "_PyObject_FastCall",
    "_PyObject_MakeTpCall",
    "_PyVectorcall_",
    "PyVectorcall_",
    "method_vectorcall",
    "cfunction_vectorcall",
    "cfunction_call",
    "_PyCFunction_",
    "PyCFunction_Call",
    "call_function",
    "do_call_core",
    "slot_tp_call",
    "object_vacall",
    "vectorcall_",
    "_PyMethodDescr_",
    "method_call",
    "function_call",
    "call_unbound",
    "fast_function",
    "ext_do_call",
    "PyEval_CallObject",
    "_Py_CheckFunctionResult",
    /* start-up: between main() and the first Python frame */
    "run_eval_code_obj",
    "run_mod",
    "run_pyc_file",
    "_PyRun_",
    "PyRun_",
    "pyrun_", /* pythonrun.c's static helpers: pyrun_file.lto_priv.0 */
    "pymain_",
    "Py_RunMain",
    "Py_BytesMain",
    "Py_Main",
};

static int starts_with(const char *s, const char *p) {
  return strncmp(s, p, strlen(p)) == 0;
}

/* name is the eval loop, or one of its compiler-split parts. */
static int is_eval(const char *name, const char *loop) {
  size_t n = strlen(loop);
  return strncmp(name, loop, n) == 0 && (name[n] == '\0' || name[n] == '.');
}

unsigned pst__native_classify(const char *func, int version_hex) {
  if (!func)
    return 0;
  if (is_eval(func, version_hex < 0x0300 ? "PyEval_EvalFrameEx"
                                         : "_PyEval_EvalFrameDefault"))
    return PST_NF_EVAL;
  for (size_t i = 0; i < sizeof(plumbing) / sizeof(plumbing[0]); i++)
    if (starts_with(func, plumbing[i]))
      return PST_NF_PLUMBING;
  return 0;
}

size_t pst__merge_py_groups(const struct pst_frame *py, size_t np) {
  size_t groups = 0;

  for (size_t i = 0; i < np; i++)
    groups += py[i].entry != 0;
  if (np && !py[np - 1].entry)
    groups++; /* the outermost frames' call was not seen as an entry */
  return groups;
}

/* Is the interpreter frame i (not the eval loop) one of a run of such
 * frames with eval-loop frames on both sides? Then it is how one Python
 * function called the next (named or, stripped, not): machinery. */
static int between_evals(const unsigned *flags, size_t nn, size_t i) {
  const unsigned run = PST_NF_INTERP | PST_NF_EVAL;
  size_t a = i, b = i;

  if ((flags[i] & run) != PST_NF_INTERP)
    return 0;
  while (a > 0 && (flags[a - 1] & run) == PST_NF_INTERP)
    a--;
  while (b + 1 < nn && (flags[b + 1] & run) == PST_NF_INTERP)
    b++;
  return a > 0 && (flags[a - 1] & PST_NF_EVAL) && b + 1 < nn &&
         (flags[b + 1] & PST_NF_EVAL);
}

static int hidden(const unsigned *flags, size_t nn, size_t i,
                  int show_plumbing) {
  return !show_plumbing &&
         ((flags[i] & PST_NF_PLUMBING) || between_evals(flags, nn, i));
}

size_t pst__merge(const struct pst_frame *nat, const unsigned *flags, size_t nn,
                  const struct pst_frame *py, size_t np, int show_plumbing,
                  const char *marker, struct pst_frame *out, size_t max,
                  int *mismatch) {
  size_t evals = 0, k = 0, p = 0;

  for (size_t i = 0; i < nn; i++)
    evals += (flags[i] & PST_NF_EVAL) != 0;
  *mismatch = evals != pst__merge_py_groups(py, np);
  if (*mismatch) {
    for (size_t i = 0; i < np && k < max; i++)
      out[k++] = py[i];
    if (k < max)
      out[k++] = (struct pst_frame){marker, "", 0, PST_FRAME_MARKER, 0, 0};
    for (size_t i = 0; i < nn && k < max; i++)
      if (!hidden(flags, nn, i, show_plumbing))
        out[k++] = nat[i];
    return k;
  }
  for (size_t i = 0; i < nn && k < max; i++) {
    if (flags[i] & PST_NF_EVAL) {
      /* This call's Python frames: down to and including its entry. */
      while (p < np && k < max) {
        int entry = py[p].entry;
        out[k++] = py[p++];
        if (entry)
          break;
      }
      if (show_plumbing && k < max)
        out[k++] = nat[i];
      continue;
    }
    if (!hidden(flags, nn, i, show_plumbing))
      out[k++] = nat[i];
  }
  return k;
}
