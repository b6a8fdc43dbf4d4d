# PST_CHECK_CFLAG(FLAG, ACTION-IF-OK): run ACTION when the C compiler accepts
# FLAG without warnings (so -Werror builds stay clean on older compilers).
AC_DEFUN([PST_CHECK_CFLAG], [
  AC_MSG_CHECKING([whether $CC accepts $1])
  pst_save_CFLAGS="$CFLAGS"
  CFLAGS="$CFLAGS $1 -Werror"
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
    [AC_MSG_RESULT([yes]); $2], [AC_MSG_RESULT([no])])
  CFLAGS="$pst_save_CFLAGS"
])
