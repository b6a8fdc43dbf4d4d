/* test-list-output.h: the output writers' tests (test-output.c). */
#ifndef PST_TEST_LIST_OUTPUT_H
#define PST_TEST_LIST_OUTPUT_H

/* X-macro lists, one test per line: kept as written. */
/* clang-format off */

#define PST_OUTPUT_TESTS(X)                                                    \
  X(output_registry)                                                           \
  X(output_json_writer) X(output_json_strings) X(output_folded)                \
      X(output_speedscope) X(output_chrome) X(output_flamegraph)               \
          X(output_flamegraph_chromium) X(output_flamegraph_script)            \
              X(output_pprof) X(output_empty_profile) X(output_large_profile)  \
                  X(output_save_missing_dir) X(output_save_over_dir)           \
                      X(output_save_writer_fails) X(output_save_replaces)      \
                          X(output_save_special)

/* clang-format on */
#endif
