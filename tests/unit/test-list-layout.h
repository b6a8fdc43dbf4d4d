/* test-list-layout.h: the tests of test-layout.c, for test-list.h. */
#ifndef PST_TEST_LIST_LAYOUT_H
#define PST_TEST_LIST_LAYOUT_H

/* X-macro lists, one test per line: kept as written. */
/* clang-format off */

#define PST_LAYOUT_TESTS(X)                                                    \
  X(layout_builtin_versions)                                                   \
  X(layout_required_fields)                                                    \
  X(layout_field_bounds)                                                       \
  X(layout_known_values)                                                       \
  X(layout_reference_313)

/* clang-format on */
#endif
