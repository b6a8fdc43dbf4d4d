/* cmd_record.c: `pystitch record`: sample targets at a steady rate, then
 * write a profile (flame graph, speedscope, pprof, folded, Chrome trace). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/always_on.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "consumer/record.h"
#include "output/writer.h"
#include "proc/proc.h"
#include "pystitch.h"
#include "sampler/sampler.h"
#include "sandbox/sandbox.h"
#include "util/log.h"

static const char record_usage[] =
    "usage: pystitch record [options] -p PID[,PID...]\n"
    "       pystitch record [options] -- COMMAND [ARGS...]\n"
    "\n"
    "Samples every thread of the target(s) until Ctrl-C, --duration or the\n"
    "targets' exit, then writes a profile.\n"
    "\n"
    "  -p, --pid PID[,PID]    processes to record\n"
    "  -r, --rate HZ          samples per second (default 100)\n"
    "  -d, --duration SEC     stop after SEC seconds of wall-clock time\n"
    "  -f, --format FMT       flamegraph (default), speedscope, pprof,\n"
    "                         folded, chrome\n"
    "  -o, --output PATH      output file (default from target and time)\n"
    "  -s, --subprocesses     also record child processes\n"
    "      --all              every Python process of the host (and its\n"
    "                         containers), new ones within a second, until\n"
    "                         Ctrl-C or --duration\n"
    "      --match REGEX      with --all: only command lines matching REGEX\n"
    "      --exclude REGEX    with --all: not those matching REGEX\n"
    "      --mode MODE        cpu (default): threads on a CPU, each sample\n"
    "                         worth the CPU time it used; wall: every\n"
    "                         thread, worth the time (default with\n"
    "                         --async); gil: the thread holding the GIL;\n"
    "                         exception: threads raising or handling an\n"
    "                         exception, worth the time\n"
    "      --idle, --gil      --mode wall, --mode gil\n"
    "      --no-gc            no <GC> frame above the Python frame that runs\n"
    "                         the garbage collector (CPython 3.7+)\n"
    "      --threads          a root frame per thread\n"
    "      --function         aggregate by function instead of line\n"
    "      --blocking         stop each thread while its stack is read\n"
    "      --nonblocking      never stop a thread (by default a stack that\n"
    "                         keeps moving while it is read is read again\n"
    "                         with only its thread stopped for a moment)\n"
    "      --native           native (C/C++) frames too, merged with Python's\n"
    "                         (each thread is stopped while it is read)\n"
    "      --native-all       the same, keeping the interpreter's call\n"
    "                         machinery frames\n"
    "      --full-names       C++ names whole (parameters, template\n"
    "                         arguments), not ns::Class::method\n"
    "      --async            asyncio tasks too (CPython 3.8+): each tick,\n"
    "                         every task's coroutines under the tasks\n"
    "                         awaiting it, as a thread \"asyncio tasks\"\n"
    "      --no-sandbox       keep every privilege (default: only those\n"
    "                         sampling needs, and with --all a system-call\n"
    "                         filter)\n"
    "      --realtime         the sampling thread under SCHED_FIFO (root):\n"
    "                         ticks on time even when every CPU is busy\n"
    "      --keep-running     with -- COMMAND: leave it running when the\n"
    "                         recording ends first (by default it gets\n"
    "                         SIGINT, then SIGTERM 3 s later)\n"
    "  -v, --verbose          more diagnostics on stderr\n"
    "\n"
    "Long runs:\n"
    "      --push URL         send a pprof profile per process and interval\n"
    "                         to a Pyroscope server (POST URL/ingest); no\n"
    "                         file is written unless -o is given\n"
    "      --push-interval S  seconds per profile (default 10)\n"
    "      --app NAME         application name (default: the script)\n"
    "      --label K=V        a label on every profile (repeatable)\n"
    "      --tenant ID        X-Scope-OrgID header (multi-tenant servers)\n"
    "      --push-token-file F  bearer token from a file (else from\n"
    "                         $PYSTITCH_PUSH_TOKEN)\n"
    "      --push-auth-file F USER:PASSWORD from a file (else from\n"
    "                         $PYSTITCH_PUSH_BASIC_AUTH)\n"
    "      --push-ca FILE     CA certificates for https (default: the\n"
    "                         system's bundle, where distributions keep it)\n"
    "      --push-queue N     profiles kept while the server is away\n"
    "                         (default 60; the oldest are dropped)\n"
    "      --push-timeout S   per request (default 10)\n"
    "      --rotate S         a whole file per S-second window; -o is a\n"
    "                         strftime pattern ('dir/%Y%m%dT%H%M%S.pprof')\n"
    "\n"
    "Examples:\n"
    "  pystitch record -p 1234 -d 30 -o profile.svg\n"
    "  pystitch record -f speedscope -- python3 app.py --workers 4\n"
    "  pystitch record --all --push http://pyroscope:4040 --label env=prod\n";

/* The output must be creatable before we spend time recording: its
 * directory exists and is writable, the path is not a directory, a
 * descriptor it names is open, a special file at it is not planted
 * (see output/writer.h for the rule). */
static int check_output(const char *path) {
  char dir[4096];
  const char *slash = strrchr(path, '/');
  int kind = pst__writer_where(path);

  if (kind == -EISDIR) {
    fprintf(stderr,
            "pystitch: error: output path %s is a directory; give "
            "a file name\n",
            path);
    return PST_EXIT_USAGE;
  }
  if (!slash)
    snprintf(dir, sizeof(dir), ".");
  else
    snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path + (slash == path)),
             path);
  if (kind == -ENOENT || kind == -ENOTDIR) {
    fprintf(stderr,
            "pystitch: error: directory %s of the output does not "
            "exist; create it or choose another -o\n",
            dir);
    return PST_EXIT_USAGE;
  }
  if (kind < 0) {
    fprintf(stderr, "pystitch: error: output %s: %s\n", path,
            pst__cli_output_why(kind));
    return PST_EXIT_USAGE;
  }
  if (kind == PST_WRITER_FILE && access(dir, W_OK) != 0) {
    fprintf(stderr,
            "pystitch: error: directory %s of the output is not "
            "writable (%s); choose another -o\n",
            dir, strerror(errno));
    return PST_EXIT_USAGE;
  }
  return 0;
}

static void default_output(const struct pst__sampler_opts *o,
                           const struct pst__writer_ops *w, char *buf,
                           size_t len) {
  char name[64] = "python";
  struct pst__proc_status st;
  time_t now = time(NULL);
  char stamp[32];

  if (o->npids && pst__proc_status(o->pids[0], &st) == 0)
    snprintf(name, sizeof(name), "%s", st.name);
  else if (o->argv) {
    const char *b = strrchr(o->argv[0], '/');
    snprintf(name, sizeof(name), "%s", b ? b + 1 : o->argv[0]);
  }
  strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", localtime(&now));
  snprintf(buf, len, "pystitch-%s-%d-%s%s", name,
           o->npids ? (int)o->pids[0] : 0, stamp, w->ext);
}

/* "9 torn, 0 gone, 3 EFAULT: ...; 1 ENOSYS: ...": every kind named. */
static void error_kinds(const struct pst__sampler_stats *st, char *buf,
                        size_t len) {
  size_t off;

  off = (size_t)snprintf(buf, len, "%llu torn, %llu gone",
                         (unsigned long long)st->torn,
                         (unsigned long long)st->gone);
  for (int k = 0; k < PST_SAMPLER_ERRKINDS && off < len; k++) {
    int code = st->errkinds[k].code;
    const char *why = pst__cli_error_reason(code);
    if (!code || code == PST_ETORN || code == -ESRCH)
      continue;
    if (why)
      off += (size_t)snprintf(buf + off, len - off, ", %llu %s",
                              (unsigned long long)st->errkinds[k].count, why);
    else
      off += (size_t)snprintf(buf + off, len - off, ", %llu %s (%s)",
                              (unsigned long long)st->errkinds[k].count,
                              pst_errname(code), pst_strerror(code));
  }
}

/* The summary's first line: the file written at the end. */
static void summary_file(const char *path, const struct pst__writer_ops *w,
                         const struct pst__sampler_stats *st,
                         const struct pst__profile *prof) {
  fprintf(stderr,
          "pystitch: wrote %s (%s): %llu samples of %zu threads in %d "
          "process%s over %.1f s\n",
          path, w->name, (unsigned long long)pst__profile_samples(prof),
          pst__profile_nthreads(prof), st->processes,
          st->processes == 1 ? "" : "es", st->elapsed_s);
}

/* A recording of nothing is not a success: says why, returns the exit
 * code (0 when there are samples). The profile was written anyway. */
static int nothing(const struct pst__sampler_opts *o,
                   const struct pst__sampler_stats *st) {
  if (!st->processes) {
    if (o->argv)
      fprintf(stderr, "pystitch: error: no Python process was recorded: "
                      "the command never ran Python (nor did what it "
                      "started)\n");
    else if (o->all)
      fprintf(stderr,
              "pystitch: error: no Python process was recorded: "
              "none was found%s\n",
              o->match || o->exclude ? " that --match/--exclude keep" : "");
    else
      fprintf(stderr,
              "pystitch: error: no Python process was recorded: "
              "none ran under the process%s given\n",
              o->npids > 1 ? "es" : "");
    return PST_EXIT_NOT_PYTHON;
  }
  if (st->samples || st->task_samples)
    return PST_EXIT_OK;
  if (o->policy.mode == PST_MODE_CPU)
    fprintf(stderr, "pystitch: warning: no samples: no thread ran on a CPU "
                    "while it was sampled (mode cpu); --mode wall records "
                    "threads that wait too\n");
  else if (o->policy.mode == PST_MODE_GIL)
    fprintf(stderr, "pystitch: warning: no samples: no thread held the GIL "
                    "while it was sampled (mode gil); --mode wall records "
                    "every thread\n");
  else if (o->policy.mode == PST_MODE_EXCEPTION)
    fprintf(stderr, "pystitch: warning: no samples: no thread raised or "
                    "handled an exception while it was sampled (mode "
                    "exception); --mode wall records every thread\n");
  else
    fprintf(stderr,
            "pystitch: error: no samples (mode %s): %llu thread "
            "samples could not be read (see the errors above)\n",
            pst__cli_mode_name(o->policy.mode), (unsigned long long)st->errors);
  return PST_EXIT_OK; /* the threads may just have waited */
}

/* The rate asked for, when it was not kept (5% short or more): by how
 * much, and why: pystitch's own work on its loop thread (each tick's
 * reads, and the refreshes of thread lists and children between them)
 * took about a period or more, or else the ticks came late (a busy
 * machine). A late tick is not caught up: its samples are worth the time
 * since the tick before (wall time) or the CPU time used (mode cpu). */
static void rate_kept(const struct pst__sampler_stats *st, double rate_hz) {
  double got, period_ms = 1000.0 / rate_hz, tick_ms, refresh_ms;

  if (st->elapsed_s < 0.5 || !st->ticks || rate_hz <= 0)
    return;
  got = (double)st->ticks / st->elapsed_s;
  pst__info("ticks: %llu of the %.0f asked, %.1f%% of them on time (at most "
            "a period late); sampling thread: %s",
            (unsigned long long)st->ticks, st->elapsed_s * rate_hz,
            100.0 * (double)(st->ticks - st->late_ticks) /
                (st->elapsed_s * rate_hz),
            st->sched ? st->sched : "default");
  if (got >= 0.95 * rate_hz)
    return;
  tick_ms = st->tick_ms_total / (double)st->ticks;
  refresh_ms = st->refresh_ms_total / (double)st->ticks;
  fprintf(stderr,
          "pystitch: warning: the rate was not kept: %.1f Hz of the %.0f Hz "
          "asked (%llu ticks in %.1f s): %s (per tick, its reads took %.2f "
          "ms on average, %.1f ms at most, and the refreshes of threads and "
          "children %.2f ms, for a period of %.2f ms)\n",
          got, rate_hz, (unsigned long long)st->ticks, st->elapsed_s,
          tick_ms + refresh_ms > 0.8 * period_ms
              ? "pystitch's own reads take about a period or more; a lower "
                "--rate, or fewer threads (--mode cpu reads only those that "
                "ran), keeps it"
          : st->sched_err || !st->sched || strncmp(st->sched, "SCHED_FIFO", 10)
              ? "the ticks came late: the machine was busy (or pystitch "
                "waited for a CPU; --realtime, as root, puts its ticks first)"
              : "the ticks came late: the machine was busy",
          tick_ms, st->tick_ms_max, refresh_ms, period_ms);
}

static void summary(const struct pst__sampler_stats *st, enum pst_mode mode) {
  uint64_t all = st->samples + st->errors;
  char kinds[1024];

  error_kinds(st, kinds, sizeof(kinds));
  fprintf(stderr,
          "pystitch: %llu errors (%.2f%%: %s), %llu %s samples left out, "
          "%llu late ticks, max lag %.1f ms\n",
          (unsigned long long)st->errors,
          all ? 100.0 * (double)st->errors / (double)all : 0.0, kinds,
          (unsigned long long)st->idle_skipped,
          mode == PST_MODE_GIL         ? "non-GIL"
          : mode == PST_MODE_EXCEPTION ? "no-exception"
                                       : "idle",
          (unsigned long long)st->late_ticks, st->max_lag_ms);
  if (st->native_only_samples)
    fprintf(stderr,
            "pystitch: %llu samples of threads without Python "
            "state, shown as [native thread] (--native shows "
            "their C/C++ stacks)\n",
            (unsigned long long)st->native_only_samples);
  if (st->consumer_errors)
    fprintf(stderr,
            "pystitch: %llu samples could not be added to the "
            "profile (out of memory)\n",
            (unsigned long long)st->consumer_errors);
  if (st->task_torn > st->task_samples / 10)
    fprintf(stderr,
            "pystitch: --async: the tasks' loop kept running them while they "
            "were read; --blocking reads them with its thread stopped for a "
            "moment\n");
  if (st->task_samples || st->task_errors || st->task_torn) {
    uint64_t tasks = st->task_samples + st->task_torn;
    fprintf(stderr,
            "pystitch: --async: %llu task samples, %llu left out (a task "
            "ran while read: %.2f%%), %llu ticks whose tasks could not be "
            "read\n",
            (unsigned long long)st->task_samples,
            (unsigned long long)st->task_torn,
            tasks ? 100.0 * (double)st->task_torn / (double)tasks : 0.0,
            (unsigned long long)st->task_errors);
  }
  if (st->line_tables_cut)
    fprintf(stderr,
            "pystitch: %llu functions have a line table too big to read "
            "(over 1 MiB): their frames show the function's first line\n",
            (unsigned long long)st->line_tables_cut);
  if (st->torn_retries)
    fprintf(stderr,
            "pystitch: %llu walks redone because the stack moved "
            "while it was read\n",
            (unsigned long long)st->torn_retries);
  if (st->scans)
    fprintf(stderr,
            "pystitch: --all: %llu scans of /proc (%.2f ms each, at most "
            "%.2f ms), %llu processes looked at, %llu taken as Python\n",
            (unsigned long long)st->scans,
            (double)st->scan_ns / 1e6 / (double)st->scans,
            (double)st->scan_ns_max / 1e6, (unsigned long long)st->scan_checked,
            (unsigned long long)st->scan_found);
  if (st->native_samples)
    fprintf(stderr,
            "pystitch: native: %llu of %llu thread-samples merged "
            "(%.3f%%), %llu kept unmerged under a marker\n",
            (unsigned long long)(st->native_samples - st->native_mismatches),
            (unsigned long long)st->native_samples,
            100.0 * (double)(st->native_samples - st->native_mismatches) /
                (double)st->native_samples,
            (unsigned long long)st->native_mismatches);
  if (st->native_errors)
    fprintf(stderr,
            "pystitch: native: %llu thread-samples kept their Python frames "
            "only: a module's file was truncated while it was read\n",
            (unsigned long long)st->native_errors);
}

/* record's --push and --rotate options, for the parser. */
static int always_option(void *ctx, enum pst__cli_opt id, const char *arg) {
  return pst__always_option(ctx, id, arg);
}

int pst__cmd_record(int argc, char **argv) {
  struct pst__cli_opts cli;
  struct pst__sampler_opts *o = &cli.engine;
  struct pst__record_view view = {0, 0, 0};
  struct pst__record_consumer *rc_consumer = NULL;
  struct pst__consumer consumers[PST_SAMPLER_CONSUMERS_MAX];
  struct pst__always always;
  int nc = 0, whole;
  const struct pst__writer_ops *w;
  struct pst__sampler_stats st;
  struct pst__profile *prof = NULL;
  const char *output;
  char defpath[512];
  char first[4096] = "";
  int err, rc;

  memset(&always, 0, sizeof(always));
  rc = pst__cli_parse(argc, argv, PST_CLI_RECORD, &cli, always_option, &always);
  if (rc)
    return rc;
  if (cli.help) {
    fputs(record_usage, stdout);
    return PST_EXIT_OK;
  }
  pst__cli_sampling(&cli.policy, PST_CLI_RECORD, &o->policy);
  w = cli.format ? cli.format : pst__writer_find("flamegraph");
  output = cli.output;
  view.thread_roots = cli.threads;
  view.by_function = cli.function;
  rc = pst__always_take_env(&always);
  if (rc)
    return rc;
  rc = pst__cli_check_targets(&cli);
  if (rc)
    return rc;
  pst_log_set_level(cli.verbose);
  whole = pst__always_whole_file(&always, output);
  if (whole && !output) {
    default_output(o, w, defpath, sizeof(defpath));
    output = defpath;
  }
  if (output) {
    /* --rotate: the first window's name shows where they go. */
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    if (whole || !strftime(first, sizeof(first), output, &tm))
      snprintf(first, sizeof(first), "%s", output);
    rc = check_output(first);
    if (rc)
      return rc;
  }
  o->progress = isatty(2);
  view.process_roots = o->npids > 1 || o->subprocesses || o->all;
  if (whole) {
    prof = pst__profile_new((uint64_t)(1e9 / o->rate_hz));
    if (prof)
      pst__profile_set_cpu(prof, o->policy.mode == PST_MODE_CPU);
    if (!prof || pst__record_consumer_new(prof, &view, &rc_consumer)) {
      pst__profile_free(prof);
      fprintf(stderr, "pystitch: error: out of memory\n");
      return PST_EXIT_ERROR;
    }
    consumers[nc++] =
        (struct pst__consumer){&pst__record_consumer_ops, rc_consumer};
  }
  rc = pst__always_start(&always, o, &view, output, w, consumers, &nc);
  if (rc) {
    pst__always_finish(&always, 0);
    pst__record_consumer_free(rc_consumer);
    pst__profile_free(prof);
    return rc;
  }
  o->ready = pst__cli_sandbox;
  o->ready_arg = first;
  err = pst__sampler_run(o, consumers, nc, &st);
  pst__record_consumer_free(rc_consumer);
  pst__always_finish(&always, !err);
  if (err) {
    pst__profile_free(prof);
    return pst__cli_sampler_error(o, err);
  }
  if (st.child_stopped && st.child_exited)
    fprintf(stderr,
            "pystitch: the recording ended first: the command was "
            "stopped (SIGINT) and exited with status %d\n",
            st.child_status);
  else if (st.child_exited && st.child_status != 0)
    fprintf(stderr, "pystitch: the command exited with status %d\n",
            st.child_status);
  if (st.child_left_running)
    fprintf(stderr, "pystitch: the command is still running\n");
  if (!whole) {
    fprintf(stderr,
            "pystitch: recorded %llu samples in %d process%s over %.1f s\n",
            (unsigned long long)st.samples, st.processes,
            st.processes == 1 ? "" : "es", st.elapsed_s);
    summary(&st, o->policy.mode);
    rate_kept(&st, o->rate_hz);
    rc = nothing(o, &st);
    return pst__sandbox_violations() ? PST_EXIT_SANDBOX : rc;
  }
  err = pst__writer_save(w, prof, output);
  if (err) {
    fprintf(stderr, "pystitch: error: cannot write %s: %s\n", output,
            pst__cli_output_why(err));
    pst__profile_free(prof);
    return PST_EXIT_ERROR;
  }
  summary_file(output, w, &st, prof);
  summary(&st, o->policy.mode);
  rate_kept(&st, o->rate_hz);
  pst__profile_free(prof);
  rc = nothing(o, &st);
  return pst__sandbox_violations() ? PST_EXIT_SANDBOX : rc;
}
