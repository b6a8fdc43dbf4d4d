/* log.h: levelled logging to stderr for the library and the CLI.
 *
 * pst__err/pst__warn always print; pst__info needs -v, pst__debug -vv.
 * pst__warn_once prints a given call site's message only the first time.
 */
#ifndef PST_LOG_H
#define PST_LOG_H

enum pst__log_level {
  PST_LOG_ERR = -1,
  PST_LOG_WARN = 0,
  PST_LOG_INFO = 1,
  PST_LOG_DEBUG = 2
};

extern int pst__log_level;

void pst__log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define pst__err(...) pst__log(PST_LOG_ERR, __VA_ARGS__)
#define pst__warn(...) pst__log(PST_LOG_WARN, __VA_ARGS__)
#define pst__info(...)                                                         \
  do {                                                                         \
    if (pst__log_level >= PST_LOG_INFO)                                        \
      pst__log(PST_LOG_INFO, __VA_ARGS__);                                     \
  } while (0)
#define pst__debug(...)                                                        \
  do {                                                                         \
    if (pst__log_level >= PST_LOG_DEBUG)                                       \
      pst__log(PST_LOG_DEBUG, __VA_ARGS__);                                    \
  } while (0)
#define pst__warn_once(...)                                                    \
  do {                                                                         \
    static int warned_;                                                        \
    if (!warned_) {                                                            \
      warned_ = 1;                                                             \
      pst__log(PST_LOG_WARN, __VA_ARGS__);                                     \
    }                                                                          \
  } while (0)

#endif
