/* test-list-replay.h: the tests of test-frame-replay.c, for test-list.h. */
#ifndef PST_TEST_LIST_REPLAY_H
#define PST_TEST_LIST_REPLAY_H

/* X-macro lists, one test per line: kept as written. */
/* clang-format off */

#define PST_REPLAY_TESTS(X)                                                    \
  X(frame_replay_py27)                                                         \
  X(frame_replay_py310)                                                        \
  X(frame_replay_py312)                                                        \
  X(frame_replay_py314)                                                        \
  X(frame_replay_corrupt)

/* clang-format on */
#endif
