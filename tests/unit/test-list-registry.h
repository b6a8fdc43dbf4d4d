/* test-list-registry.h: the tests of test-registry.c, for test-list.h. */
#ifndef PST_TEST_LIST_REGISTRY_H
#define PST_TEST_LIST_REGISTRY_H

/* X-macro lists, one test per line: kept as written. */
/* clang-format off */

#define PST_REGISTRY_TESTS(X)                                                  \
  X(registry_py27)                                                             \
  X(registry_py36)                                                             \
  X(registry_py37)                                                             \
  X(registry_py38)                                                             \
  X(registry_py39)                                                             \
  X(registry_py310)                                                            \
  X(registry_py311)                                                            \
  X(registry_py312)                                                            \
  X(registry_py313)                                                            \
  X(registry_debian_static_311)                                                \
  X(registry_sid_314)                                                          \
  X(registry_trixie_313)                                                       \
  X(registry_replay)                                                           \
  X(registry_late_import)

/* clang-format on */
#endif
