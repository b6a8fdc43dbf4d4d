/* log.h: levelled logging to stderr for the library and the CLI.
 *
 * pst_err/pst_warn always print; pst_info needs -v, pst_debug -vv.
 * pst_warn_once prints a given call site's message only the first time.
 */
#ifndef PST_LOG_H
#define PST_LOG_H

enum pst_log_level {
  PST_LOG_ERR = -1,
  PST_LOG_WARN = 0,
  PST_LOG_INFO = 1,
  PST_LOG_DEBUG = 2
};

extern int pst_log_level;

void pst_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define pst_err(...) pst_log(PST_LOG_ERR, __VA_ARGS__)
#define pst_warn(...) pst_log(PST_LOG_WARN, __VA_ARGS__)
#define pst_info(...)                                                          \
  do {                                                                         \
    if (pst_log_level >= PST_LOG_INFO)                                         \
      pst_log(PST_LOG_INFO, __VA_ARGS__);                                      \
  } while (0)
#define pst_debug(...)                                                         \
  do {                                                                         \
    if (pst_log_level >= PST_LOG_DEBUG)                                        \
      pst_log(PST_LOG_DEBUG, __VA_ARGS__);                                     \
  } while (0)
#define pst_warn_once(...)                                                     \
  do {                                                                         \
    static int warned_;                                                        \
    if (!warned_) {                                                            \
      warned_ = 1;                                                             \
      pst_log(PST_LOG_WARN, __VA_ARGS__);                                      \
    }                                                                          \
  } while (0)

#endif
