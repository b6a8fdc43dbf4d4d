/* spawn.h: starting a test's target process (a Python script, a helper
 * program) with its stdout, and its stdin when asked, on pipes. */
#ifndef PST_TEST_SPAWN_H
#define PST_TEST_SPAWN_H

#include <stdio.h>
#include <sys/types.h>

/* Starts argv (argv[0] a path, or a name looked up in PATH). With out, its
 * stdout is a pipe read through *out (else it shares ours); with in, its
 * stdin is a pipe written through *in. Returns its pid, or -errno (no
 * stream is left open then). A failed exec ends the child with status
 * 127. */
pid_t test_spawn(char *const argv[], FILE **out, FILE **in);

#endif
