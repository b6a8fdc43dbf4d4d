/* pythons.h: finding the interpreters installed on this machine, for tests. */
#ifndef PST_TEST_PYTHONS_H
#define PST_TEST_PYTHONS_H

#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Path of an installed CPython X.Y (pyenv first, then /usr/bin) into buf;
 * 0 when found, -1 when absent. */
static inline int find_python(int major, int minor, char *buf, size_t len) {
  char pat[128];
  glob_t g;

  snprintf(pat, sizeof(pat), "/root/.pyenv/versions/%d.%d.*/bin/python%d.%d",
           major, minor, major, minor);
  if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0) {
    snprintf(buf, len, "%s", g.gl_pathv[g.gl_pathc - 1]);
    globfree(&g);
    return 0;
  }
  snprintf(buf, len, "/usr/bin/python%d.%d", major, minor);
  return access(buf, X_OK) == 0 ? 0 : -1;
}

#endif
