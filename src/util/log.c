/* log.c: the stderr sink behind pst__err/pst__warn/pst__info/pst__debug. */
#include <stdarg.h>
#include <stdio.h>

#include "pystitch.h"
#include "util/esc.h"
#include "util/log.h"

int pst__log_level = PST_LOG_WARN;

void pst_log_set_level(int level) { pst__log_level = level; }

void pst__log(int level, const char *fmt, ...) {
  static const char *const prefix[] = {"error", "warning", "info", "debug"};
  char msg[2 * PST_ESC_SIZE];
  va_list ap;

  if (level > pst__log_level)
    return;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  /* Messages name threads, files and modules of the target: one line on
   * stderr, its control characters escaped (a longer one is cut). */
  fprintf(stderr, "pystitch: %s: ", prefix[level + 1]);
  pst__esc_put(stderr, msg);
  fputc('\n', stderr);
}
