/* task.h: assertion and registration macros for the unit test runner.
 *
 * A test is `TEST_IMPL(name) { ...; return 0; }`, declared and listed in
 * test-list.h. Each runs in its own forked process with a timeout (runner.c).
 * ASSERT* print both values and the location and survive NDEBUG.
 * A test returns 0 (pass), or calls SKIP("reason") to be reported skipped.
 */
#ifndef PST_TEST_TASK_H
#define PST_TEST_TASK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_IMPL(name) int run_test_##name(void)
#define TEST_DECLARE(name) int run_test_##name(void);
#define TEST_ENTRY(name) {#name, run_test_##name},

/* Exit status of a skipped test's process (automake's convention). */
#define TEST_SKIP_CODE 77

#define SKIP(...)                                                              \
  do {                                                                         \
    fprintf(stdout, "# SKIP ");                                                \
    fprintf(stdout, __VA_ARGS__);                                              \
    fprintf(stdout, "\n");                                                     \
    fflush(stdout);                                                            \
    exit(TEST_SKIP_CODE);                                                      \
  } while (0)

#define TEST_FAIL(...)                                                         \
  do {                                                                         \
    fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                            \
    fprintf(stderr, __VA_ARGS__);                                              \
    fprintf(stderr, "\n");                                                     \
    fflush(stderr);                                                            \
    abort();                                                                   \
  } while (0)

#define ASSERT(expr)                                                           \
  do {                                                                         \
    if (!(expr))                                                               \
      TEST_FAIL("assertion failed: %s", #expr);                                \
  } while (0)

#define ASSERT_INT_OP(a, op, b)                                                \
  do {                                                                         \
    int64_t a_ = (int64_t)(a), b_ = (int64_t)(b);                              \
    if (!(a_ op b_))                                                           \
      TEST_FAIL("%s %s %s: %" PRId64 " (0x%" PRIx64 ") vs %" PRId64            \
                " (0x%" PRIx64 ")",                                            \
                #a, #op, #b, a_, (uint64_t)a_, b_, (uint64_t)b_);              \
  } while (0)

#define ASSERT_EQ(a, b) ASSERT_INT_OP(a, ==, b)
#define ASSERT_NE(a, b) ASSERT_INT_OP(a, !=, b)
#define ASSERT_GE(a, b) ASSERT_INT_OP(a, >=, b)
#define ASSERT_GT(a, b) ASSERT_INT_OP(a, >, b)
#define ASSERT_LE(a, b) ASSERT_INT_OP(a, <=, b)
#define ASSERT_LT(a, b) ASSERT_INT_OP(a, <, b)

#define ASSERT_STR_EQ(a, b)                                                    \
  do {                                                                         \
    const char *a_ = (a), *b_ = (b);                                           \
    if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0)                       \
      TEST_FAIL("%s == %s: \"%s\" vs \"%s\"", #a, #b, a_ ? a_ : "(null)",      \
                b_ ? b_ : "(null)");                                           \
  } while (0)

#endif
