/* cli.h: the pystitch command line: options, subcommands, exit codes.
 *
 * Only this layer prints to stdout and turns errors into messages and exit
 * codes; the library underneath never exits.
 */
#ifndef PST_CLI_H
#define PST_CLI_H

#include <stdio.h>
#include <sys/types.h>

/* Documented exit codes (README, man page). */
enum pst_exit {
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

struct pst_opts {
  pid_t pid;
  int json;        /* --json */
  int native;      /* --native: 1, --native-all: 2 */
  int nonblocking; /* dump --nonblocking: never stop a thread */
  int async;       /* dump --async: asyncio tasks too (3.8+) */
  int verbose;     /* -v count */
};

int pst_cmd_dump(const struct pst_opts *o);
/* top parses its own options: argv[1] is "top". */
int pst_cmd_top(int argc, char **argv);

/* Shared by record and top (cmd_record.c). -1 on a bad value. */
struct pst_sampler_opts;
struct pst_sampler_stats;

/* The sampling engine's options, the same in record and top: their long
 * option codes (a command's own start at PST_OPT_OWN), their getopt
 * table entries and their short letters. */
enum {
  PST_OPT_IDLE = 256,
  PST_OPT_GIL,
  PST_OPT_NATIVE,
  PST_OPT_NONBLOCKING,
  PST_OPT_ALL,
  PST_OPT_MATCH,
  PST_OPT_EXCLUDE,
  PST_OPT_NO_SANDBOX,
  PST_OPT_OWN
};
#define PST_CLI_SAMPLER_LONGOPTS                                               \
  {"pid", required_argument, NULL, 'p'},                                       \
      {"rate", required_argument, NULL, 'r'},                                  \
      {"duration", required_argument, NULL, 'd'},                              \
      {"subprocesses", no_argument, NULL, 's'},                                \
      {"idle", no_argument, NULL, PST_OPT_IDLE},                               \
      {"gil", no_argument, NULL, PST_OPT_GIL},                                 \
      {"native", no_argument, NULL, PST_OPT_NATIVE},                           \
      {"nonblocking", no_argument, NULL, PST_OPT_NONBLOCKING},                 \
      {"all", no_argument, NULL, PST_OPT_ALL},                                 \
      {"match", required_argument, NULL, PST_OPT_MATCH},                       \
      {"exclude", required_argument, NULL, PST_OPT_EXCLUDE},                   \
      {"no-sandbox", no_argument, NULL, PST_OPT_NO_SANDBOX},                   \
      {"verbose", no_argument, NULL, 'v'}, {                                   \
    "help", no_argument, NULL, 'h'                                             \
  }
#define PST_CLI_SAMPLER_SHORTOPTS "p:r:d:svh"
/* Takes getopt's option c (with arg) into *o (-v into *verbose) when it
 * is one of the engine's: 1 when it was, 0 when it is the command's own
 * (or -h), PST_EXIT_USAGE on a bad value, the message printed (cmd names
 * the command for its --help). */
int pst_cli_sampler_option(int c, const char *arg, const char *cmd,
                           struct pst_sampler_opts *o, int *verbose);
/* "pystitch: error: WHAT 'ARG' (see 'pystitch CMD --help')": returns
 * PST_EXIT_USAGE. */
int pst_cli_usage_error(const char *cmd, const char *what, const char *arg);
/* Why the output could not be written, for pst_writer_where() or
 * pst_writer_save()'s err, with the fix when there is one (static text,
 * for "cannot write PATH: %s"). */
const char *pst_cli_output_why(int err);
int pst_cli_parse_double(const char *s, double lo, double hi, double *out);
int pst_cli_parse_pids(const char *s, struct pst_sampler_opts *o);
/* -p PID or -- COMMAND, exactly one (cmd names the command in the
 * message): 0 or PST_EXIT_USAGE, the message printed. */
int pst_cli_check_targets(const struct pst_sampler_opts *o, const char *cmd);
/* The engine's ready() of record and top: enters the sandbox
 * (src/sandbox/sandbox.h) once the given targets are attached and the
 * command started, unless --no-sandbox; the filter with --all. arg: the
 * output path (its directory decides CAP_DAC_OVERRIDE), or NULL. */
void pst_cli_sandbox(const struct pst_sampler_opts *o, void *arg);
/* pst_sampler_run()'s error err as a message and an exit code. */
int pst_cli_sampler_error(const struct pst_sampler_opts *o, int err);
/* "9 torn, 0 gone, 3 EFAULT: ...": every error kind of st named. */
void pst_cli_error_kinds(const struct pst_sampler_stats *st, char *buf,
                         size_t len);
/* record parses its own options: argv[1] is "record". */
int pst_cmd_record(int argc, char **argv);

/* Prints the one-line message for an attach error of pid and returns its
 * exit code. */
int pst_cli_explain(pid_t pid, int err);
int pst_cmd_info(const struct pst_opts *o);

/* Opens the target named by o->pid, printing a one-line error that says
 * what to do on failure. Returns 0 or the exit code. */
struct pst_target;
int pst_cli_open(const struct pst_opts *o, struct pst_target **t);

#endif
