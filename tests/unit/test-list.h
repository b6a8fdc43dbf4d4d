/* test-list.h: every unit test, by module. Add a test here and in its file. */
#ifndef PST_TEST_LIST_H
#define PST_TEST_LIST_H

/* X-macro lists, one test per line: kept as written. */
/* clang-format off */

#include "task.h"
#include "test-list-disasm.h"
#include "test-list-layout.h"
#include "test-list-native.h"
#include "test-list-output.h"
#include "test-list-registry.h"
#include "test-list-replay.h"

#define PST_LINES_TESTS(X)                                                     \
  X(lines_lnotab_27) X(lines_lnotab_36) X(lines_310) X(lines_311)

#define PST_UTIL_TESTS(X)                                                      \
  X(strtab_intern)                                                             \
  X(profile_runs_and_dedup) X(profile_add_by_stack_id) X(hash_functions) X(hash_table) X(dmcache_slots)  \
  X(esc_controls) X(esc_bounds) X(esc_no_raw_controls) X(esc_cell_columns)                       \
  X(proc_cgroup_name) X(proc_maps_refused) X(proc_env_and_children)         \
  X(worker_jobs)

/* The consumers (src/consumer/: top, window). */
#define PST_CONSUMER_TESTS(X)                                                  \
  X(top_filter_and_stack) X(window_per_process) X(window_shared)

#define PST_PY_TESTS(X) X(debug_offsets_313) X(layout_check_bounds)

/* A target opened and snapshotted (src/target/). */
#define PST_TARGET_TESTS(X)                                                    \
  X(target_never_left_traced) X(target_exits_hide_no_thread)

#define PST_ROOTFS_TESTS(X)                                                    \
  X(rootfs_stays_inside) X(rootfs_walk_agrees) X(elf_truncated_guard)        \
  X(sandbox_filter_refuses)

#define PST_TSD_TESTS(X) X(tsd_glibc_threads) X(tsd_musl_threads)

#define PST_ELF_REAL_TESTS(X) X(real_libc_getspecific) X(real_python_tss_key)

#define PST_UNWIND_TESTS(X)                                                    \
  X(unwind_spinning_thread)                                                    \
  X(unwind_blocked_thread) X(unwind_not_stopped) X(unwind_max_frames)          \
      X(unwind_dlopen_later) X(unwind_python312_shared)                        \
          X(unwind_python311_static)
#define PST_MERGE_TESTS(X)                                                     \
  X(merge_order) X(merge_mismatch) X(merge_stripped_interp)
#define PST_SYMTAB_TESTS(X)                                                    \
  X(symtab_libc)                                                               \
  X(symtab_python) X(symtab_cxx) X(symtab_minidebuginfo) X(symtab_corrupt)

#define PST_TEST_LIST(X)                                                       \
  PST_DISASM_TESTS(X)                                                          \
  PST_LAYOUT_TESTS(X)                                                          \
  PST_LINES_TESTS(X)                                                           \
  PST_UTIL_TESTS(X)                                                            \
  PST_CONSUMER_TESTS(X)                                                        \
  PST_PY_TESTS(X)                                                              \
  PST_TARGET_TESTS(X)                                                          \
  PST_REPLAY_TESTS(X)                                                          \
  PST_REGISTRY_TESTS(X)                                                        \
  PST_ROOTFS_TESTS(X)                                                          \
  PST_TSD_TESTS(X)                                                             \
  PST_ELF_REAL_TESTS(X)                                                        \
  PST_OUTPUT_TESTS(X)                                                          \
  PST_UNWIND_TESTS(X)                                                          \
  PST_MERGE_TESTS(X)                                                           \
  PST_SYMTAB_TESTS(X)                                                          \
  PST_NATIVE_ID_TESTS(X)

#define PST_TEST_DECL(name) TEST_DECLARE(name)
PST_TEST_LIST(PST_TEST_DECL)

/* clang-format on */
#endif
