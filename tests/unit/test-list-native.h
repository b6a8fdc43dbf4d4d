/* test-list-native.h: unit tests of separate debug files and of native
 * thread origins and short C++ names (test-debuginfo.c, test-origin.c). */
#ifndef PST_TEST_LIST_NATIVE_H
#define PST_TEST_LIST_NATIVE_H

/* X-macro lists, one test per line: kept as written. */
/* clang-format off */

#define PST_DEBUGINFO_TESTS(X)                                                 \
  X(debuginfo_split_library)                                                   \
  X(debuginfo_target_root) X(debuginfo_module_symtab) X(debuginfo_libc6_dbg)   \
      X(debuginfo_python311_dbg)

#define PST_ORIGIN_TESTS(X)                                                    \
  X(cxx_short) X(origin_shorten)                                               \
  X(origin_thread_name) X(origin_c_target) X(origin_std_thread)                \
      X(origin_musl_unknown) X(origin_torch)

#define PST_NATIVE_ID_TESTS(X) PST_DEBUGINFO_TESTS(X) PST_ORIGIN_TESTS(X)

/* clang-format on */
#endif
