/* test-list-disasm.h: the tests of test-disasm.c, for the runner's list:
 * PST_DISASM_TESTS(TEST_DECLARE) and PST_DISASM_TESTS(TEST_ENTRY). */
#ifndef PST_TEST_LIST_DISASM_H
#define PST_TEST_LIST_DISASM_H

/* X-macro lists, one test per line: kept as written. */
/* clang-format off */

#define PST_DISASM_TESTS(X)                                                    \
  X(disasm_tls_315_static_local_exec)                                          \
  X(disasm_tls_shared_initial_exec)                                            \
  X(disasm_tls_aarch64_local_exec)                                             \
  X(disasm_tls_rejects_tss_getter)                                             \
  X(disasm_tss_310_gcc12_lto_static)                                           \
  X(disasm_tss_310_gcc12_noopt_static)                                         \
  X(disasm_tss_310_clang16_noopt_shared_membase)                               \
  X(disasm_tss_312_gcc12_noopt_shared)                                         \
  X(disasm_tss_310_clang18_lto_shared)                                         \
  X(disasm_tss_310_clang18_lto_static)                                         \
  X(disasm_tss_310_clang16_noopt_static)                                       \
  X(disasm_tss_312_clang16_noopt_static)                                       \
  X(disasm_tss_310_clang16_noopt_shared)                                       \
  X(disasm_tss_312_gcc12_noopt_static)                                         \
  X(disasm_tss_310_gcc12_lto_shared)                                           \
  X(disasm_tss_err_empty)                                                      \
  X(disasm_tss_err_no_branch)                                                  \
  X(disasm_tss_err_invalid)                                                    \
  X(disasm_tss_synthetic_lea32_call)                                           \
  X(disasm_tss_synthetic_lea32_jmp)                                            \
  X(disasm_tss_deb12_libpython311)                                             \
  X(disasm_tss_deb12_python311_static)                                         \
  X(disasm_tss_sid_python314)                                                  \
  X(disasm_tss_arm64_amzn37_release_lock)                                      \
  X(disasm_tss_arm64_amzn37)                                                   \
  X(disasm_tss_arm64_nix310)                                                   \
  X(disasm_tss_arm64_err_empty)                                                \
  X(disasm_tss_read64_fails)                                                   \
  X(disasm_tss_bad_arch)                                                       \
  X(disasm_tss_pyenv_36)                                                       \
  X(disasm_tss_pyenv_37)                                                       \
  X(disasm_tss_pyenv_38)                                                       \
  X(disasm_tss_pyenv_39)                                                       \
  X(disasm_tss_pyenv_310)                                                      \
  X(disasm_tss_pyenv_311)                                                      \
  X(disasm_tss_pyenv_312)                                                      \
  X(disasm_tss_pyenv_313)                                                      \
  X(disasm_tss_trixie_python313)                                               \
  X(disasm_getter_synthetic)                                                   \
  X(disasm_getter_synthetic_arm64)                                             \
  X(disasm_getter_not_a_load)                                                  \
  X(disasm_getter_deb12_python311)                                             \
  X(disasm_getter_deb12_libpython311)                                          \
  X(disasm_getter_pyenv_27)                                                    \
  X(disasm_getter_pyenv_36)                                                    \
  X(disasm_getter_pyenv_312)                                                   \
  X(disasm_tsd_musl_123_arm64)                                                 \
  X(disasm_tsd_glibc_235_arm64)                                                \
  X(disasm_tsd_glibc_233_arm64)                                                \
  X(disasm_tsd_musl_123)                                                       \
  X(disasm_tsd_musl_1124)                                                      \
  X(disasm_tsd_glibc_232)                                                      \
  X(disasm_tsd_glibc_235)                                                      \
  X(disasm_tsd_glibc_238_arm64)                                                \
  X(disasm_tsd_glibc_booking)                                                  \
  X(disasm_tsd_deepflow_musl)                                                  \
  X(disasm_tsd_deepflow_glibc_split)                                           \
  X(disasm_tsd_glibc_236)                                                      \
  X(disasm_tsd_deepflow_prefix)                                                \
  X(disasm_tsd_err_empty)                                                      \
  X(disasm_tsd_err_no_ret)                                                     \
  X(disasm_tsd_err_invalid)                                                    \
  X(disasm_tsd_err_not_tsd)                                                    \
  X(disasm_tsd_bad_arch)                                                       \
  X(disasm_tsd_musl_123_debian)                                                \
  X(disasm_tsd_glibc_241_trixie)                                               \
  X(disasm_tsd_glibc_243_sid)                                                  \
  X(disasm_tsd_model_glibc_clang_x86)                                          \
  X(disasm_tsd_model_glibc_clang_arm64)                                        \
  X(disasm_tsd_model_glibc_gcc_os)

/* clang-format on */
#endif
