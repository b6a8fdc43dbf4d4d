/* helpers.h: what the unit tests and the test helper programs share: the
 * source and build directories, shell commands, the host's architecture
 * and scratch directories. (Starting a target process: spawn.h.) */
#ifndef PST_TEST_HELPERS_H
#define PST_TEST_HELPERS_H

#include <stddef.h>

#include "disasm/disasm.h"

/* The source tree ($PST_SRCDIR, tests/run.sh sets it) or ".". */
const char *test_srcdir(void);

/* The build directory ($PST_BUILDDIR) or ".". */
const char *test_builddir(void);

/* Runs cmd with system(3); its status (0 when it exited 0), a failure
 * printed as a "#" line naming cmd. */
int test_sh(const char *cmd);

/* The architecture this program runs on (that of a local target). */
enum pst__arch test_host_arch(void);

/* Makes a new directory /tmp/pst-TAG-XXXXXX, its path into dir (len bytes);
 * 0 or -errno. test_rmrf() removes it. */
int test_scratch(char *dir, size_t len, const char *tag);

/* Removes dir and everything under it; 0, or -errno with the failure
 * printed as a "#" line. */
int test_rmrf(const char *dir);

#endif
