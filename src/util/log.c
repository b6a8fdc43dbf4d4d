/* log.c: the stderr sink behind pst_err/pst_warn/pst_info/pst_debug. */
#include <stdarg.h>
#include <stdio.h>

#include "pystitch.h"
#include "util/log.h"

int pst_log_level = PST_LOG_WARN;

void pst_log_set_level(int level) { pst_log_level = level; }

void pst_log(int level, const char *fmt, ...) {
  static const char *const prefix[] = {"error", "warning", "info", "debug"};
  va_list ap;

  if (level > pst_log_level)
    return;
  fprintf(stderr, "pystitch: %s: ", prefix[level + 1]);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}
