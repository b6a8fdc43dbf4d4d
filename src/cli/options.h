/* options.h: the command line's one option table and parser, shared by
 * every command (record, top, dump, info), with their usage-error, pid and
 * number helpers.
 *
 * Ownership: struct pst__cli_opts is the caller's (on its stack);
 * pst__cli_parse() fills it, its strings and argv pointing into the
 * command's argv, its regular expressions (--match, --exclude) static
 * (the engine borrows them for the whole run). Nothing to free.
 */
#ifndef PST_CLI_OPTIONS_H
#define PST_CLI_OPTIONS_H

#include <sys/types.h>

#include "sampler/sampler.h"

/* The commands that parse options, as the table's masks. */
enum pst__cli_cmd {
  PST_CLI_RECORD = 1 << 0,
  PST_CLI_TOP = 1 << 1,
  PST_CLI_DUMP = 1 << 2,
  PST_CLI_INFO = 1 << 3,
};

/* Every option, by its row of the table (options.c). */
enum pst__cli_opt {
  /* the targets and the engine: record, top (-p: dump, info too) */
  PST_CLI_O_PID,
  PST_CLI_O_RATE,
  PST_CLI_O_DURATION,
  PST_CLI_O_SUBPROCESSES,
  PST_CLI_O_ALL,
  PST_CLI_O_MATCH,
  PST_CLI_O_EXCLUDE,
  PST_CLI_O_NO_SANDBOX,
  PST_CLI_O_REALTIME,
  PST_CLI_O_KEEP_RUNNING,
  /* which threads are read, and how: the sampling policy */
  PST_CLI_O_MODE,
  PST_CLI_O_IDLE,
  PST_CLI_O_GIL,
  PST_CLI_O_BLOCKING,
  PST_CLI_O_NONBLOCKING,
  PST_CLI_O_NATIVE,
  PST_CLI_O_NATIVE_ALL,
  PST_CLI_O_FULL_NAMES,
  PST_CLI_O_NO_GC,
  PST_CLI_O_LOCALS,
  PST_CLI_O_MERGE,
  PST_CLI_O_ASYNC,
  /* output */
  PST_CLI_O_JSON,
  PST_CLI_O_FORMAT,
  PST_CLI_O_OUTPUT,
  PST_CLI_O_THREADS,
  PST_CLI_O_FUNCTION,
  /* top's table */
  PST_CLI_O_ROWS,
  PST_CLI_O_DELAY,
  PST_CLI_O_ONCE,
  PST_CLI_O_SORT,
  PST_CLI_O_LINES,
  PST_CLI_O_SINCE_START,
  PST_CLI_O_PLAIN,
  /* record's long runs: handed to the parser's caller (always_on.c) */
  PST_CLI_O_PUSH,
  PST_CLI_O_PUSH_INTERVAL,
  PST_CLI_O_APP,
  PST_CLI_O_LABEL,
  PST_CLI_O_TENANT,
  PST_CLI_O_PUSH_QUEUE,
  PST_CLI_O_PUSH_TIMEOUT,
  PST_CLI_O_TOKEN_FILE,
  PST_CLI_O_AUTH_FILE,
  PST_CLI_O_PUSH_CA,
  PST_CLI_O_ROTATE,
  /* every command */
  PST_CLI_O_VERBOSE,
  PST_CLI_O_HELP,
  PST_CLI_O_VERSION,
  PST_CLI_O_COUNT
};

/* The sampling policy the options ask for: which threads are read and
 * how. pst__cli_sampling() turns it into what the engine and dump take. */
struct pst__cli_policy {
  int mode;        /* --mode: 1 + enum pst_mode, 0: not given */
  int idle;        /* --idle: idle threads too */
  int gil;         /* --gil: only the thread holding the GIL */
  int blocking;    /* --blocking: stop each thread while it is read */
  int nonblocking; /* --nonblocking: never stop a thread */
  int native;      /* --native: 1, --native-all: 2 */
  int async;       /* --async: asyncio tasks too (3.8+) */
  int full_names;  /* --full-names: C++ names whole */
  int no_gc;       /* --no-gc: no "<GC>" frames */
};

struct pst__writer_ops;

/* What the command line says, for every command (each fills its part). */
struct pst__cli_opts {
  enum pst__cli_cmd cmd;
  const char *name; /* "record", "top", "dump", "info" */
  int verbose;      /* -v count */
  int help;         /* -h: print the command's usage (parsing stopped) */
  int version;      /* -V (dump, info): print the version (stopped) */
  pid_t pid;        /* dump, info: -p PID */
  /* record, top: the targets (pids, argv: -- COMMAND, all, match,
   * exclude), rate, duration, subprocesses, keep_running, no_sandbox;
   * the policy fields are left to pst__cli_sampling(). */
  struct pst__sampler_opts engine;
  struct pst__cli_policy policy;
  /* output */
  int json;           /* dump --json */
  int locals;         /* dump --locals */
  int merge;          /* dump --merge FILE... */
  char **merge_files; /* its files (argv's) */
  int nmerge;
  const struct pst__writer_ops *format; /* record -f, NULL: not given */
  const char *output;                   /* record -o, NULL: not given */
  int threads, function;                /* record --threads, --function */
  /* top */
  int rows;       /* -n (default 20) */
  double delay_s; /* --delay (default 1) */
  int once, lines, since_start, plain;
  int sort; /* --sort: an enum pst__top_sort */
};

/* The caller's options (record's --push and --rotate): 0, or an exit code
 * with the message printed. */
typedef int pst__cli_more_fn(void *ctx, enum pst__cli_opt id, const char *arg);

/* Parses argv[2..] (argv[1] names the command cmd) into *o, zeroed first
 * and given the command's defaults; options the table hands to the caller
 * go to more(ctx, ...). record and top stop at the first non-option: the
 * rest is -- COMMAND (o->engine.argv); dump and info want -p PID and
 * nothing else. Returns 0 (o->help or o->version set when parsing stopped
 * there), or PST_EXIT_USAGE with the message printed. */
int pst__cli_parse(int argc, char **argv, enum pst__cli_cmd cmd,
                   struct pst__cli_opts *o, pst__cli_more_fn *more, void *ctx);

/* --mode's name of m ("cpu", "wall", "gil"). */
const char *pst__cli_mode_name(enum pst_mode m);

/* The one place the options of command cmd become its sampling policy
 * (struct pst_policy, pystitch.h: the engine's for record and top, the
 * flags of dump's one read through pst_policy_flags()). */
void pst__cli_sampling(const struct pst__cli_policy *p, enum pst__cli_cmd cmd,
                       struct pst_policy *out);

/* -p PID, -- COMMAND or --all, exactly one, and --match, --exclude only
 * with --all (record, top): 0, or PST_EXIT_USAGE with the message
 * printed. */
int pst__cli_check_targets(const struct pst__cli_opts *o);

/* "pystitch: error: MESSAGE (see 'pystitch CMD --help')", CMD NULL for
 * 'pystitch --help', on stderr: returns PST_EXIT_USAGE. */
int pst__cli_usage(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A number in (lo, hi], the whole of s: 0 or -EINVAL. */
int pst__cli_parse_double(const char *s, double lo, double hi, double *out);
/* One process id, the whole of s, in [1, INT_MAX]: 0 or -EINVAL. */
int pst__cli_parse_pid(const char *s, pid_t *pid);
/* A comma-separated list of them (empty items skipped), appended to
 * pids[*n]: at most max and at least one in all (*n), else -EINVAL
 * (-ENOMEM: no memory); 0. */
int pst__cli_parse_pids(const char *s, pid_t *pids, int max, int *n);

#endif
