/* main.c: pystitch's entry point: parses the command line and dispatches. */
#include <stdio.h>
#include <string.h>

#include "cli/always_on.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "pystitch.h"

static const char usage_text[] =
    "usage: pystitch <command> [options]\n"
    "\n"
    "Commands:\n"
    "  record -p PID | -- CMD sample to a profile (see 'pystitch record "
    "--help')\n"
    "  top -p PID | -- CMD    a table of where the targets spend their time\n"
    "                         now, every second (see 'pystitch top --help')\n"
    "  dump -p PID[,PID] [-s | --all] [--json] [--native] [--async]\n"
    "                         print every thread's current stack; of\n"
    "                         several processes, each stack once with\n"
    "                         who has it (ranks, roles)\n"
    "  dump --merge FILE...   several hosts' 'dump --json' files as one view\n"
    "  info -p PID            show how pystitch sees the process\n"
    "\n"
    "Options:\n"
    "  -p, --pid PID[,PID]    the target process (dump: processes)\n"
    "  -s, --subprocesses     dump: their descendants too\n"
    "      --all              dump: every Python process of the host\n"
    "                         (--match, --exclude REGEX: by command line)\n"
    "      --json             machine-readable output\n"
    "      --native           native (C/C++) frames too, merged with Python's\n"
    "      --native-all       the same, keeping the interpreter's call\n"
    "                         machinery frames\n"
    "      --full-names       C++ names whole (parameters, template\n"
    "                         arguments), not ns::Class::method\n"
    "      --merge FILE...    dump: saved 'dump --json' outputs (several\n"
    "                         hosts) in one grouped view\n"
    "      --locals           dump: each Python frame's local variables\n"
    "                         (read with its thread stopped for a moment)\n"
    "      --no-gc            no <GC> frame on the thread running the\n"
    "                         garbage collector\n"
    "      --nonblocking      dump: never stop a thread (a stack that keeps\n"
    "                         changing while read is reported as torn)\n"
    "      --async            dump: asyncio tasks too (CPython 3.8+), each\n"
    "                         its coroutine chain under the tasks awaiting it\n"
    "  -v, --verbose          more diagnostics on stderr (repeatable)\n"
    "  -h, --help             this help\n"
    "  -V, --version          print the version, the build and its libraries\n"
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

static int help(void) {
  fputs(usage_text, stdout);
  return PST_EXIT_OK;
}

int main(int argc, char **argv) {
  struct pst__cli_opts o;
  const char *cmd;
  int rc;

  if (argc < 2)
    return pst__cli_usage(NULL, "missing command (record, top, dump, info)");
  cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help"))
    return help();
  if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version"))
    return pst__cli_version();
  if (!strcmp(cmd, "record"))
    return pst__cmd_record(argc, argv);
  /* Secrets are record's: never passed on to top's -- COMMAND. */
  if (pst__always_take_env(NULL))
    return PST_EXIT_ERROR;
  if (!strcmp(cmd, "top"))
    return pst__cmd_top(argc, argv);
  if (strcmp(cmd, "dump") && strcmp(cmd, "info"))
    return pst__cli_usage(NULL,
                          "unknown command '%s' (expected record, top, dump "
                          "or info)",
                          cmd);
  rc = pst__cli_parse(argc, argv,
                      !strcmp(cmd, "dump") ? PST_CLI_DUMP : PST_CLI_INFO, &o,
                      NULL, NULL);
  if (rc)
    return rc;
  if (o.help || o.version)
    return o.help ? help() : pst__cli_version();
  pst_log_set_level(o.verbose);
  return !strcmp(cmd, "dump") ? pst__cmd_dump(&o) : pst__cmd_info(&o);
}
