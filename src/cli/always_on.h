/* always_on.h: `record`'s options for long runs: --push (profiles sent to a
 * Pyroscope-compatible server per interval) and --rotate (a file per
 * window): their values (the options themselves are rows of options.c's
 * table), the window consumers they add to the engine, and their lines of
 * the summary.
 *
 * Ownership: the struct is the caller's (zeroed, then filled through
 * pst__always_option() as pst__cli_parse() hands them on, and by
 * pst__always_take_env()); pst__always_start() creates
 * the consumers and the pusher, pst__always_finish() ends and frees them
 * and wipes the secrets.
 */
#ifndef PST_CLI_ALWAYS_ON_H
#define PST_CLI_ALWAYS_ON_H

#include <stdint.h>

#include "cli/options.h"
#include "consumer/record.h"
#include "consumer/window.h"
#include "output/writer.h"
#include "push/push.h"
#include "sampler/sampler.h"

struct pst__always {
  /* --push */
  const char *url;
  double interval_s, timeout_s;
  int queue;
  struct pst__push_opts po;
  const char *token_file, *auth_file;
  char *secret_token, *secret_basic; /* read at start, wiped at the end */
  char *env_token, *env_basic; /* taken from the environment, until used */
  struct pst__push *push;
  struct pst__window_consumer *push_wc;
  /* --rotate */
  double rotate_s;
  const char *pattern; /* -o, with strftime fields */
  const struct pst__writer_ops *w;
  struct pst__window_consumer *rot_wc;
  char last_path[4096];
  int same; /* windows named like the last one */
  uint64_t files, file_errors;
};

/* Takes record's option id (one of options.h's PST_CLI_O_PUSH ...
 * PST_CLI_O_ROTATE, as pst__cli_parse() hands it on) into *a: 0, or
 * PST_EXIT_USAGE on a bad value (the message printed). */
int pst__always_option(struct pst__always *a, enum pst__cli_opt id,
                       const char *arg);

/* Takes the push secrets out of the environment (PYSTITCH_PUSH_TOKEN,
 * PYSTITCH_PUSH_BASIC_AUTH), their bytes wiped in place, so that no
 * -- COMMAND and no reader of /proc/PID/environ sees them. Kept (as
 * secrets, util/secret.h: the process becomes non-dumpable) only when a
 * has --push and no file for that secret; a NULL a (commands without
 * --push) only wipes them. Call it once, after the options are parsed and
 * before any thread or child starts. 0, or PST_EXIT_ERROR with the
 * message printed. */
int pst__always_take_env(struct pst__always *a);

/* Whether a file is written at the end as usual (not with --rotate, nor
 * with --push unless -o was given). */
int pst__always_whole_file(const struct pst__always *a, const char *output);

/* Checks the options against each other and the output, reads the
 * secrets, starts the pusher, and appends the consumers to c[*n]. 0, or
 * an exit code with the message printed. */
int pst__always_start(struct pst__always *a, const struct pst__sampler_opts *o,
                      const struct pst__record_view *view, const char *output,
                      const struct pst__writer_ops *w, struct pst__consumer *c,
                      int *n);

/* After sampling: sends what the pusher holds (for a bounded time),
 * prints the summary lines (when report, not after a failed start),
 * frees. */
void pst__always_finish(struct pst__always *a, int report);

#endif
