/* main.c: pystitch's entry point: parses the command line and dispatches. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/always_on.h"
#include "cli/cli.h"
#include "pystitch.h"

static const char usage_text[] =
    "usage: pystitch <command> [options]\n"
    "\n"
    "Commands:\n"
    "  record -p PID | -- CMD sample to a profile (see 'pystitch record "
    "--help')\n"
    "  top -p PID | -- CMD    a table of where the targets spend their time\n"
    "                         now, every second (see 'pystitch top --help')\n"
    "  dump -p PID [--json] [--native] [--nonblocking] [--async]\n"
    "                         print every thread's current stack\n"
    "  info -p PID            show how pystitch sees the process\n"
    "\n"
    "Options:\n"
    "  -p, --pid PID          the target process\n"
    "      --json             machine-readable output\n"
    "      --native           native (C/C++) frames too, merged with Python's\n"
    "      --native-all       the same, keeping the interpreter's call\n"
    "                         machinery frames\n"
    "      --nonblocking      dump: never stop a thread (a stack that keeps\n"
    "                         changing while read is reported as torn)\n"
    "      --async            dump: asyncio tasks too (CPython 3.8+), each\n"
    "                         its coroutine chain under the tasks awaiting it\n"
    "  -v, --verbose          more diagnostics on stderr (repeatable)\n"
    "  -h, --help             this help\n"
    "  -V, --version          print the version\n"
    "\n"
    "Examples:\n"
    "  pystitch record -p 1234 -d 30 -o profile.svg\n"
    "  pystitch dump -p 1234\n"
    "  pystitch info -p $(pgrep -f myapp.py)\n"
    "\n"
    "Exit codes: 0 ok, 1 error, 2 usage (options, output path), 3 no such\n"
    "process or command, 4 permission denied, 5 not a Python process,\n"
    "6 unsupported CPython version, 7 target is pystitch itself, 8 target\n"
    "traced by another debugger.\n";

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "pystitch: error: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, " (see 'pystitch --help')\n");
  return PST_EXIT_USAGE;
}

static int parse_pid(const char *s, pid_t *pid) {
  char *end;
  long v;

  errno = 0;
  v = strtol(s, &end, 10);
  if (errno || end == s || *end || v <= 0 || v > INT_MAX)
    return -1;
  *pid = (pid_t)v;
  return 0;
}

int main(int argc, char **argv) {
  static const struct option longopts[] = {
      {"pid", required_argument, NULL, 'p'},
      {"json", no_argument, NULL, 'j'},
      {"native", no_argument, NULL, 'n'},
      {"native-all", no_argument, NULL, 'N'},
      {"nonblocking", no_argument, NULL, 'B'},
      {"async", no_argument, NULL, 'A'},
      {"verbose", no_argument, NULL, 'v'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0}};
  struct pst_opts o = {.pid = 0};
  const char *cmd;
  int c;

  if (argc < 2)
    return usage_error("%s", "missing command (record, top, dump, info)");
  cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
    fputs(usage_text, stdout);
    return PST_EXIT_OK;
  }
  if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) {
    printf("pystitch %s\n", PACKAGE_VERSION);
    return PST_EXIT_OK;
  }
  if (!strcmp(cmd, "record"))
    return pst_cmd_record(argc, argv);
  /* Secrets are record's: never passed on to top's -- COMMAND. */
  if (pst_always_take_env(NULL))
    return PST_EXIT_ERROR;
  if (!strcmp(cmd, "top"))
    return pst_cmd_top(argc, argv);
  if (strcmp(cmd, "dump") && strcmp(cmd, "info"))
    return usage_error("unknown command '%s' (expected record, top, dump "
                       "or info)",
                       cmd);
  optind = 2;
  opterr = 0; /* our own one-line messages */
  while ((c = getopt_long(argc, argv, "p:vhV", longopts, NULL)) != -1) {
    switch (c) {
    case 'p':
      if (parse_pid(optarg, &o.pid))
        return usage_error("--pid: '%s' is not a process id", optarg);
      break;
    case 'j':
      o.json = 1;
      break;
    case 'n':
      o.native = o.native ? o.native : 1;
      break;
    case 'N':
      o.native = 2;
      break;
    case 'B':
      o.nonblocking = 1;
      break;
    case 'A':
      o.async = 1;
      break;
    case 'v':
      o.verbose++;
      break;
    case 'h':
      fputs(usage_text, stdout);
      return PST_EXIT_OK;
    case 'V':
      printf("pystitch %s\n", PACKAGE_VERSION);
      return PST_EXIT_OK;
    default:
      return usage_error("unknown or incomplete option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return usage_error("unexpected argument '%s'", argv[optind]);
  if (!o.pid)
    return usage_error("%s", "missing --pid PID");
  pst_log_set_level(o.verbose);
  return !strcmp(cmd, "dump") ? pst_cmd_dump(&o) : pst_cmd_info(&o);
}
