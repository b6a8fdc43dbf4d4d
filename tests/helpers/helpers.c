/* helpers.c: the source and build directories, shell commands, the host's
 * architecture and scratch directories, for the tests (helpers.h). */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

const char *test_srcdir(void) {
  const char *d = getenv("PST_SRCDIR");
  return d ? d : ".";
}

const char *test_builddir(void) {
  const char *d = getenv("PST_BUILDDIR");
  return d ? d : ".";
}

int test_sh(const char *cmd) {
  int rc = system(cmd);
  if (rc != 0)
    printf("# '%s' failed (%d)\n", cmd, rc);
  return rc;
}

enum pst__arch test_host_arch(void) {
#if defined(__aarch64__)
  return PST_ARCH_AARCH64;
#else
  return PST_ARCH_X86_64;
#endif
}

int test_scratch(char *dir, size_t len, const char *tag) {
  if ((size_t)snprintf(dir, len, "/tmp/pst-%s-XXXXXX", tag) >= len)
    return -ENAMETOOLONG;
  return mkdtemp(dir) ? 0 : -errno;
}

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

int test_rmrf(const char *dir) {
  if (nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0)
    return 0;
  printf("# could not remove %s: %s\n", dir, strerror(errno));
  return errno ? -errno : -EIO;
}
