/* options.c: every command's options from one table, parsed by one loop. */
/*
 * Ownership: the table and the --match/--exclude expressions are static;
 * everything else is the caller's struct pst__cli_opts (options.h).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "consumer/top.h"
#include "output/writer.h"
#include "pystitch.h"

#define RATE_MAX 20000.0            /* Hz: beyond, samples overlap */
#define DURATION_MAX (30.0 * 86400) /* seconds */
#define DELAY_MAX 3600.0
#define ROWS_MAX 1000

#define R PST_CLI_RECORD
#define T PST_CLI_TOP
#define D PST_CLI_DUMP
#define I PST_CLI_INFO

/* Where a flag option sets its int to 1. */
#define FLAG(field) offsetof(struct pst__cli_opts, field)

/* One row an option: its long name, short letter (0: none), argument
 * (no_argument, required_argument), the commands that take it and, for
 * a flag, its int in struct pst__cli_opts (0: the option has its own
 * case in take()). */
static const struct {
  const char *name;
  char letter;
  char arg;
  unsigned char cmds;
  size_t flag;
} table[PST_CLI_O_COUNT] = {
    [PST_CLI_O_PID] = {"pid", 'p', required_argument, R | T | D | I},
    [PST_CLI_O_RATE] = {"rate", 'r', required_argument, R | T},
    [PST_CLI_O_DURATION] = {"duration", 'd', required_argument, R | T},
    [PST_CLI_O_SUBPROCESSES] = {"subprocesses", 's', no_argument, R | T | D,
                                FLAG(engine.subprocesses)},
    [PST_CLI_O_ALL] = {"all", 0, no_argument, R | T | D, FLAG(engine.all)},
    [PST_CLI_O_MATCH] = {"match", 0, required_argument, R | T | D},
    [PST_CLI_O_EXCLUDE] = {"exclude", 0, required_argument, R | T | D},
    [PST_CLI_O_NO_SANDBOX] = {"no-sandbox", 0, no_argument, R | T,
                              FLAG(engine.no_sandbox)},
    [PST_CLI_O_REALTIME] = {"realtime", 0, no_argument, R | T,
                            FLAG(engine.realtime)},
    [PST_CLI_O_KEEP_RUNNING] = {"keep-running", 0, no_argument, R,
                                FLAG(engine.keep_running)},
    [PST_CLI_O_MODE] = {"mode", 0, required_argument, R | T},
    [PST_CLI_O_IDLE] = {"idle", 0, no_argument, R | T, FLAG(policy.idle)},
    [PST_CLI_O_GIL] = {"gil", 0, no_argument, R | T, FLAG(policy.gil)},
    [PST_CLI_O_BLOCKING] = {"blocking", 0, no_argument, R,
                            FLAG(policy.blocking)},
    [PST_CLI_O_NONBLOCKING] = {"nonblocking", 0, no_argument, R | T | D | I,
                               FLAG(policy.nonblocking)},
    [PST_CLI_O_NATIVE] = {"native", 0, no_argument, R | T | D | I},
    [PST_CLI_O_NATIVE_ALL] = {"native-all", 0, no_argument, R | D | I},
    [PST_CLI_O_FULL_NAMES] = {"full-names", 0, no_argument, R | T | D,
                              FLAG(policy.full_names)},
    [PST_CLI_O_NO_GC] = {"no-gc", 0, no_argument, R | T | D,
                         FLAG(policy.no_gc)},
    [PST_CLI_O_LOCALS] = {"locals", 0, no_argument, D, FLAG(locals)},
    [PST_CLI_O_MERGE] = {"merge", 0, no_argument, D, FLAG(merge)},
    [PST_CLI_O_ASYNC] = {"async", 0, no_argument, R | D | I,
                         FLAG(policy.async)},
    [PST_CLI_O_JSON] = {"json", 0, no_argument, D | I, FLAG(json)},
    [PST_CLI_O_FORMAT] = {"format", 'f', required_argument, R},
    [PST_CLI_O_OUTPUT] = {"output", 'o', required_argument, R},
    [PST_CLI_O_THREADS] = {"threads", 0, no_argument, R, FLAG(threads)},
    [PST_CLI_O_FUNCTION] = {"function", 0, no_argument, R, FLAG(function)},
    [PST_CLI_O_ROWS] = {"rows", 'n', required_argument, T},
    [PST_CLI_O_DELAY] = {"delay", 0, required_argument, T},
    [PST_CLI_O_ONCE] = {"once", 0, no_argument, T, FLAG(once)},
    [PST_CLI_O_SORT] = {"sort", 0, required_argument, T},
    [PST_CLI_O_LINES] = {"lines", 0, no_argument, T, FLAG(lines)},
    [PST_CLI_O_SINCE_START] = {"since-start", 0, no_argument, T,
                               FLAG(since_start)},
    [PST_CLI_O_PLAIN] = {"plain", 0, no_argument, T, FLAG(plain)},
    [PST_CLI_O_PUSH] = {"push", 0, required_argument, R},
    [PST_CLI_O_PUSH_INTERVAL] = {"push-interval", 0, required_argument, R},
    [PST_CLI_O_APP] = {"app", 0, required_argument, R},
    [PST_CLI_O_LABEL] = {"label", 0, required_argument, R},
    [PST_CLI_O_TENANT] = {"tenant", 0, required_argument, R},
    [PST_CLI_O_PUSH_QUEUE] = {"push-queue", 0, required_argument, R},
    [PST_CLI_O_PUSH_TIMEOUT] = {"push-timeout", 0, required_argument, R},
    [PST_CLI_O_TOKEN_FILE] = {"push-token-file", 0, required_argument, R},
    [PST_CLI_O_AUTH_FILE] = {"push-auth-file", 0, required_argument, R},
    [PST_CLI_O_PUSH_CA] = {"push-ca", 0, required_argument, R},
    [PST_CLI_O_ROTATE] = {"rotate", 0, required_argument, R},
    [PST_CLI_O_VERBOSE] = {"verbose", 'v', no_argument, R | T | D | I},
    [PST_CLI_O_HELP] = {"help", 'h', no_argument, R | T | D | I, FLAG(help)},
    [PST_CLI_O_VERSION] = {"version", 'V', no_argument, D | I, FLAG(version)},
};

#undef R
#undef T
#undef D
#undef I

/* A long option's getopt code: its row, past every short letter. */
#define LONG_CODE(id) (256 + (int)(id))

int pst__cli_usage(const char *cmd, const char *fmt, ...) {
  va_list ap;

  va_start(ap, fmt);
  fputs("pystitch: error: ", stderr);
  vfprintf(stderr, fmt, ap);
  if (cmd)
    fprintf(stderr, " (see 'pystitch %s --help')\n", cmd);
  else
    fputs(" (see 'pystitch --help')\n", stderr);
  va_end(ap);
  return PST_EXIT_USAGE;
}

int pst__cli_parse_double(const char *s, double lo, double hi, double *out) {
  char *end;
  double v;

  errno = 0;
  v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v) || v <= lo || v > hi)
    return -EINVAL;
  *out = v;
  return 0;
}

int pst__cli_parse_pid(const char *s, pid_t *pid) {
  char *end;
  long v;

  errno = 0;
  v = strtol(s, &end, 10);
  if (errno || end == s || *end || v <= 0 || v > INT_MAX)
    return -EINVAL;
  *pid = (pid_t)v;
  return 0;
}

int pst__cli_parse_pids(const char *s, pid_t *pids, int max, int *n) {
  char *copy = strdup(s), *tok, *save = NULL;
  int err = 0;

  if (!copy)
    return -ENOMEM;
  for (tok = strtok_r(copy, ",", &save); tok && !err;
       tok = strtok_r(NULL, ",", &save)) {
    if (*n == max || pst__cli_parse_pid(tok, &pids[*n]))
      err = -EINVAL;
    else
      (*n)++;
  }
  free(copy);
  return err || *n == 0 ? -EINVAL : 0;
}

const char *pst__cli_mode_name(enum pst_mode m) {
  return m == PST_MODE_CPU         ? "cpu"
         : m == PST_MODE_GIL       ? "gil"
         : m == PST_MODE_EXCEPTION ? "exception"
                                   : "wall";
}

void pst__cli_sampling(const struct pst__cli_policy *p, enum pst__cli_cmd cmd,
                       struct pst_policy *out) {
  memset(out, 0, sizeof(*out));
  /* Exact by default: a stack that keeps moving while it is read is read
   * again with only its thread stopped (--nonblocking: never). */
  out->nonblocking = p->nonblocking;
  out->native = p->native;
  out->async = p->async;
  out->full_names = p->full_names;
  out->no_gc = p->no_gc;
  if (cmd == PST_CLI_DUMP) {
    /* Every thread, its state and exception shown; a thread with no
     * Python state is named by its start routine. */
    out->mode = PST_MODE_WALL;
    out->states = 1;
    out->exceptions = 1;
    return;
  }
  /* --mode; --gil and --idle are its old names (--gil first); with
   * --async alone, wall: where the tasks wait, all of them */
  out->mode = p->mode               ? (enum pst_mode)(p->mode - 1)
              : p->gil              ? PST_MODE_GIL
              : p->idle || p->async ? PST_MODE_WALL
                                    : PST_MODE_CPU;
  out->blocking = p->blocking;
  /* top's pane shows each thread's state, and its counts which ran */
  out->states = cmd == PST_CLI_TOP;
  out->mark_native = 1; /* a native-only thread's CPU shows, marked */
}

int pst__cli_check_targets(const struct pst__cli_opts *o) {
  const struct pst__sampler_opts *e = &o->engine;

  if ((e->match || e->exclude) && !e->all)
    return pst__cli_usage(o->name, "--match and --exclude go with --all");
  if (e->all && (e->npids || e->argv))
    return pst__cli_usage(o->name, "--all takes every Python process: no -p "
                                   "or -- COMMAND with it");
  if (e->all)
    return 0;
  if (!e->npids && !e->argv)
    return pst__cli_usage(o->name, "%s needs -p PID, -- COMMAND or --all",
                          o->name);
  if (e->argv && e->npids)
    return pst__cli_usage(o->name, "give -p PID or -- COMMAND, not both");
  return 0;
}

/* --match, --exclude: one extended regular expression each. Static: the
 * engine borrows them for the whole run. */
static int take_regex(struct pst__cli_opts *o, enum pst__cli_opt id,
                      const char *arg) {
  static regex_t match_re, exclude_re;
  int match = id == PST_CLI_O_MATCH;
  regex_t *re = match ? &match_re : &exclude_re;

  if ((match ? o->engine.match : o->engine.exclude) ||
      regcomp(re, arg, REG_EXTENDED | REG_NOSUB))
    return pst__cli_usage(o->name,
                          "--%s: want one extended regular expression, got "
                          "'%s'",
                          table[id].name, arg);
  if (match)
    o->engine.match = re;
  else
    o->engine.exclude = re;
  return 0;
}

static int take_sort(struct pst__cli_opts *o, const char *arg) {
  static const char *const sorts[] = {
      [PST_TOP_OWN] = "own",
      [PST_TOP_TOTAL] = "total",
      [PST_TOP_OWN_TIME] = "own-time",
      [PST_TOP_TOTAL_TIME] = "total-time",
  };

  for (int k = 0; k < (int)(sizeof(sorts) / sizeof(*sorts)); k++)
    if (!strcmp(arg, sorts[k])) {
      o->sort = k;
      return 0;
    }
  return pst__cli_usage(o->name,
                        "--sort: want own, total, own-time or total-time, "
                        "got '%s'",
                        arg);
}

/* Takes option id with its argument arg into *o: 0, or an exit code with
 * the message printed. help: the command whose --help the messages name
 * (NULL: pystitch's own). */
static int take(struct pst__cli_opts *o, enum pst__cli_opt id, const char *arg,
                const char *help, pst__cli_more_fn *more, void *ctx) {
  struct pst__sampler_opts *e = &o->engine;
  double v;

  if (table[id].flag) {
    *(int *)(void *)((char *)o + table[id].flag) = 1;
    return 0;
  }
  switch (id) {
  case PST_CLI_O_PID:
    if (o->cmd == PST_CLI_INFO) {
      if (pst__cli_parse_pid(arg, &o->pid))
        return pst__cli_usage(help, "--pid: '%s' is not a process id", arg);
    } else if (pst__cli_parse_pids(arg, e->pids, PST_SAMPLER_PIDS_MAX,
                                   &e->npids))
      return pst__cli_usage(help, "--pid: not a list of process ids: '%s'",
                            arg);
    else
      o->pid = e->pids[0];
    return 0;
  case PST_CLI_O_RATE:
    if (pst__cli_parse_double(arg, 0, RATE_MAX, &e->rate_hz))
      return pst__cli_usage(
          help, "--rate: want a number of Hz in (0, 20000], got '%s'", arg);
    return 0;
  case PST_CLI_O_DURATION:
    if (pst__cli_parse_double(arg, 0, DURATION_MAX, &e->duration_s))
      return pst__cli_usage(
          help, "--duration: want seconds in (0, 30 days], got '%s'", arg);
    return 0;
  case PST_CLI_O_MATCH:
  case PST_CLI_O_EXCLUDE:
    return take_regex(o, id, arg);
  case PST_CLI_O_NATIVE:
    o->policy.native = o->policy.native ? o->policy.native : 1;
    return 0;
  case PST_CLI_O_NATIVE_ALL:
    o->policy.native = 2;
    return 0;
  case PST_CLI_O_FORMAT:
    o->format = pst__writer_find(arg);
    if (!o->format)
      return pst__cli_usage(help,
                            "--format: unknown format (flamegraph, "
                            "speedscope, pprof, folded, chrome) '%s'",
                            arg);
    return 0;
  case PST_CLI_O_OUTPUT:
    o->output = arg;
    return 0;
  case PST_CLI_O_ROWS:
    if (pst__cli_parse_double(arg, 0, ROWS_MAX, &v) || v != (int)v)
      return pst__cli_usage(
          help, "--rows: want a whole number in [1, 1000], got '%s'", arg);
    o->rows = (int)v;
    return 0;
  case PST_CLI_O_DELAY:
    if (pst__cli_parse_double(arg, 0, DELAY_MAX, &o->delay_s) ||
        o->delay_s < 0.05)
      return pst__cli_usage(
          help, "--delay: want seconds in [0.05, 3600], got '%s'", arg);
    return 0;
  case PST_CLI_O_SORT:
    return take_sort(o, arg);
  case PST_CLI_O_MODE:
    for (int m = PST_MODE_CPU; m <= PST_MODE_EXCEPTION; m++)
      if (!strcmp(arg, pst__cli_mode_name((enum pst_mode)m))) {
        o->policy.mode = 1 + m;
        return 0;
      }
    return pst__cli_usage(
        help, "--mode: want cpu, wall, gil or exception, got '%s'", arg);
  case PST_CLI_O_VERBOSE:
    o->verbose++;
    return 0;
  default: /* --push, --rotate and theirs */
    return more ? more(ctx, id, arg) : 0;
  }
}

/* getopt's tables of the options cmd takes: each long one coded by its
 * row, each letter with ':' when it takes an argument; '+' first when the
 * options end at the first non-option (stop: record, top). */
static void getopt_tables(enum pst__cli_cmd cmd, int stop,
                          struct option *longopts, char *shortopts) {
  int nlong = 0, nshort = 0;

  if (stop)
    shortopts[nshort++] = '+';
  for (int id = 0; id < PST_CLI_O_COUNT; id++) {
    if (!(table[id].cmds & cmd))
      continue;
    longopts[nlong++] =
        (struct option){table[id].name, table[id].arg, NULL, LONG_CODE(id)};
    if (table[id].letter) {
      shortopts[nshort++] = table[id].letter;
      if (table[id].arg == required_argument)
        shortopts[nshort++] = ':';
    }
  }
  longopts[nlong] = (struct option){NULL, 0, NULL, 0};
  shortopts[nshort] = '\0';
}

/* The row of getopt's answer c for cmd; PST_CLI_O_COUNT for '?' (an
 * unknown option, or one without its argument). */
static int row_of(int c, enum pst__cli_cmd cmd) {
  if (c >= LONG_CODE(0))
    return c - LONG_CODE(0);
  for (int id = 0; c != '?' && id < PST_CLI_O_COUNT; id++)
    if (table[id].letter == c && (table[id].cmds & cmd))
      return id;
  return PST_CLI_O_COUNT;
}

int pst__cli_parse(int argc, char **argv, enum pst__cli_cmd cmd,
                   struct pst__cli_opts *o, pst__cli_more_fn *more, void *ctx) {
  /* record and top: options, then -- COMMAND; dump and info name
   * pystitch's own --help. */
  int engine = !!(cmd & (PST_CLI_RECORD | PST_CLI_TOP));
  struct option longopts[PST_CLI_O_COUNT + 1];
  char shortopts[2 * PST_CLI_O_COUNT + 2];
  const char *help = engine ? argv[1] : NULL;
  int c, id, rc;

  memset(o, 0, sizeof(*o));
  o->cmd = cmd;
  o->name = argv[1];
  o->engine.rate_hz = 100;
  o->rows = 20;
  o->delay_s = 1;
  getopt_tables(cmd, engine, longopts, shortopts);
  optind = 2;
  opterr = 0; /* our own one-line messages */
  while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
    id = row_of(c, cmd);
    if (id == PST_CLI_O_COUNT)
      return pst__cli_usage(help, "unknown or incomplete option '%s'",
                            argv[optind - 1]);
    rc = take(o, (enum pst__cli_opt)id, optarg, help, more, ctx);
    if (rc)
      return rc;
    if (o->help || o->version)
      return 0;
  }
  if (engine) {
    if (optind < argc)
      o->engine.argv = argv + optind;
    return 0;
  }
  if (cmd == PST_CLI_DUMP && o->merge) { /* the files to merge */
    if (optind == argc || o->engine.npids || o->engine.all)
      return pst__cli_usage(NULL, "--merge takes the files of 'dump --json' "
                                  "runs, and no -p or --all");
    o->merge_files = argv + optind;
    o->nmerge = argc - optind;
    return 0;
  }
  if (optind < argc)
    return pst__cli_usage(NULL, "unexpected argument '%s'", argv[optind]);
  if (cmd == PST_CLI_DUMP && (o->engine.match || o->engine.exclude) &&
      !o->engine.all)
    return pst__cli_usage(NULL, "--match and --exclude go with --all");
  if (cmd == PST_CLI_DUMP && o->locals && o->policy.native)
    return pst__cli_usage(NULL, "--locals reads Python frames only: not with "
                                "--native");
  if (cmd == PST_CLI_DUMP && o->engine.all && o->engine.npids)
    return pst__cli_usage(NULL, "give -p PID or --all, not both");
  if (!o->pid && !(cmd == PST_CLI_DUMP && o->engine.all))
    return pst__cli_usage(NULL, "missing --pid PID");
  return 0;
}
