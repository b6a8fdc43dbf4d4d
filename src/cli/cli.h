/* cli.h: the pystitch command line: exit codes, the commands, and what
 * they share (open.c, run.c; the options: options.h).
 *
 * Only this layer prints to stdout and turns errors into messages and exit
 * codes; the library underneath never exits.
 */
#ifndef PST_CLI_H
#define PST_CLI_H

#include <stdio.h>
#include <sys/types.h>

/* Documented exit codes (README, man page). */
enum pst__exit {
  PST_EXIT_OK = 0,
  PST_EXIT_ERROR = 1,      /* any other runtime error */
  PST_EXIT_USAGE = 2,      /* bad command line */
  PST_EXIT_NO_PROCESS = 3, /* no such process, or a zombie */
  PST_EXIT_PERMISSION = 4, /* may not trace it (CAP_SYS_PTRACE) */
  PST_EXIT_NOT_PYTHON = 5, /* not a Python process */
  PST_EXIT_PY_VERSION = 6, /* unsupported CPython version */
  PST_EXIT_SELF = 7,       /* asked to profile pystitch itself */
  PST_EXIT_TRACED = 8,     /* another debugger (gdb, strace) traces it */
  PST_EXIT_SANDBOX = 9,    /* the sandbox refused a system call (a bug) */
};

/* The commands. record and top parse their own options (argv[1] names
 * the command); dump and info take main's (options.h). */
struct pst__cli_opts;
int pst__cmd_record(int argc, char **argv);
int pst__cmd_top(int argc, char **argv);
int pst__cmd_dump(const struct pst__cli_opts *o);
int pst__cmd_info(const struct pst__cli_opts *o);

/* open.c: attaching to a target. */
struct pst_target;
/* Prints the one-line message for an attach error of pid and returns its
 * exit code. */
int pst__cli_explain(pid_t pid, int err);
/* Opens pid, printing a one-line error that says what to do on failure.
 * Returns 0 or the exit code. */
int pst__cli_open(pid_t pid, struct pst_target **t);

/* run.c: what record and top share around the engine's run. */
struct pst__sampler_opts;
/* The engine's ready() of record and top: enters the sandbox
 * (src/sandbox/sandbox.h) once the given targets are attached and the
 * command started, unless --no-sandbox; the filter with --all. arg: the
 * output path (its directory decides CAP_DAC_OVERRIDE), or NULL. */
void pst__cli_sandbox(const struct pst__sampler_opts *o, void *arg);
/* pst__sampler_run()'s error err as a message and an exit code. */
int pst__cli_sampler_error(const struct pst__sampler_opts *o, int err);
/* A thread-sample error's short name, for top's header: "torn", "gone",
 * else its errno or PST_E* name without "PST_" ("EFAULT", "EBADDATA"). */
const char *pst__cli_error_name(int err);
/* The same with what it means, for record's summary ("EFAULT (memory
 * unreadable: ...)"), or NULL for an error it does not explain. */
const char *pst__cli_error_reason(int err);
/* Why the output could not be written, for pst__writer_where() or
 * pst__writer_save()'s err, with the fix when there is one (static text,
 * for "cannot write PATH: %s"). */
const char *pst__cli_output_why(int err);
/* Prints the version, the build (static or not) and each feature's library
 * with its version (version.c); returns PST_EXIT_OK. */
int pst__cli_version(void);

#endif
