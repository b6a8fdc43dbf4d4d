/* cmd_top.c: `pystitch top`: where the targets spend their time now, as a
 * table by function every --delay seconds, full-screen on a terminal
 * (cli/top_screen.c) or as plain text, from the same engine as record. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "cli/top_screen.h"
#include "consumer/top.h"
#include "pystitch.h"
#include "sampler/sampler.h"
#include "util/esc.h"

static const char top_usage[] =
    "usage: pystitch top [options] -p PID[,PID...]\n"
    "       pystitch top [options] -- COMMAND [ARGS...]\n"
    "\n"
    "Samples every thread of the target(s) and shows, every --delay\n"
    "seconds, a table of the functions they spent that interval in (own:\n"
    "on top of the stack; total: anywhere in it), then their threads. On a\n"
    "terminal: a full-screen view, with keys 1-4 (sort by own, total, own\n"
    "time, total time), w (last interval / since start), l (by line /\n"
    "function), t (thread pane), Up/Down or k/j (select a thread), Enter\n"
    "(the table of that thread; again: of all), p (of its process), d (its\n"
    "last stack), q (quit). Else (a pipe, a file, --plain):\n"
    "one plain table per interval. Ends at q, Ctrl-C, --duration or the\n"
    "targets' exit.\n"
    "\n"
    "  -p, --pid PID[,PID]    processes to watch\n"
    "  -r, --rate HZ          samples per second (default 100)\n"
    "      --delay SEC        seconds per table (default 1)\n"
    "      --once             print one table, after --delay, and exit\n"
    "      --plain            plain tables even on a terminal\n"
    "  -d, --duration SEC     stop after SEC seconds\n"
    "  -n, --rows N           rows of the table (default 20)\n"
    "      --sort KEY         own (default), total, own-time, total-time\n"
    "      --lines            by line instead of by function\n"
    "      --since-start      counts since the start, not per interval\n"
    "  -s, --subprocesses     also child processes\n"
    "      --all              every Python process of the host (--match,\n"
    "                         --exclude REGEX: by command line)\n"
    "      --mode MODE        cpu (default): threads on a CPU, worth the\n"
    "                         CPU time they used; wall: every thread;\n"
    "                         gil: the thread holding the GIL;\n"
    "                         exception: threads raising or handling one\n"
    "      --idle, --gil      --mode wall, --mode gil\n"
    "      --no-gc            no <GC> frames (the collector at work)\n"
    "      --native           native (C/C++) frames too\n"
    "      --full-names       C++ names whole, not ns::Class::method\n"
    "      --nonblocking      never stop a thread\n"
    "      --no-sandbox       keep every privilege\n"
    "      --realtime         the sampling thread under SCHED_FIFO (root)\n"
    "  -v, --verbose          more diagnostics on stderr\n"
    "\n"
    "Examples:\n"
    "  pystitch top -p 1234\n"
    "  pystitch top --once --delay 2 -p 1234 > table.txt\n";

struct printer {
  struct pst__top *top;  /* by function, or by line with --lines */
  struct pst__top *line; /* screen: by line too (the l key), else NULL */
  int screen;            /* full-screen view, else plain tables */
  struct pst__top_keys keys;
  char header[512];
  const struct pst__sampler_opts *o;
  double delay_s;
  int once, rows, since_start;
  enum pst__top_sort sort;
  uint64_t last_ns;                        /* when the last table was printed */
  uint64_t errors_at;                      /* st->errors then */
  uint64_t ticks_at;                       /* st->ticks then */
  uint64_t kinds_at[PST_SAMPLER_ERRKINDS]; /* st->errkinds[].count then */
  char procs[16384]; /* a line per process: pid, version, rank, threads,
                      command */
  double cpu_at;     /* our CPU seconds then */
  struct pst__top_row *buf;
  pid_t sel_pid, sel_tid;       /* the selected thread (screen) */
  pid_t filter_pid, filter_tid; /* what the table is of: 0, all */
  char filter[96];
  int fresh; /* the filter changed this interval: show the one in progress */
  uint64_t now_ns;
  struct pst__top_frame stack[PST_TOP_STACK_MAX];
};

static double cpu_seconds(void) {
  struct rusage ru;

  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* The interval's errors by kind ("2 torn, 1 EFAULT"), into buf. */
static void error_kinds(struct printer *p, const struct pst__sampler_stats *st,
                        char *buf, size_t len) {
  size_t off = 0;

  buf[0] = '\0';
  for (int k = 0; k < PST_SAMPLER_ERRKINDS && off < len; k++) {
    int code = st->errkinds[k].code;
    uint64_t n = st->errkinds[k].count - p->kinds_at[k];
    p->kinds_at[k] = st->errkinds[k].count;
    if (!code || !n)
      continue;
    off +=
        (size_t)snprintf(buf + off, len - off, "%s%llu %s", off ? ", " : ": ",
                         (unsigned long long)n, pst__cli_error_name(code));
  }
}

/* Counts thread x into *active (it ran at one of the interval's samples)
 * or *idle (sampled, only asleep); a thread not sampled counts in neither. */
static void count_thread(const struct pst__top_thread *x, size_t *active,
                         size_t *idle) {
  *active += x->running > 0;
  *idle += !x->running && (x->active || x->idle);
}

/* The header line of the interval ending at t_ns, into p->header. */
static void make_header(struct printer *p, uint64_t t_ns,
                        const struct pst__sampler_stats *st) {
  size_t nth, active = 0, idle = 0;
  const struct pst__top_thread *th = pst__top_threads(p->top, &nth);
  double wall = (double)(t_ns - p->last_ns) / 1e9, cpu = cpu_seconds();
  uint64_t samples, errors = st->errors - p->errors_at;
  uint64_t ticks = st->ticks - p->ticks_at;
  size_t np, live = 0, nogil = 0, off = 0;
  int any_live = 0;
  const struct pst__top_proc *pr = pst__top_procs(p->top, &np);
  char gil[32] = "", kinds[160], ver[32], cmd[61];

  pst__top_table(p->top, PST_TOP_INTERVAL, p->sort, p->buf, 0, &samples);
  /* The threads the table is of (all, a process's, one). */
  for (size_t i = 0; i < nth; i++) {
    if ((p->filter_pid && th[i].pid != p->filter_pid) ||
        (p->filter_tid && th[i].tid != p->filter_tid))
      continue;
    count_thread(&th[i], &active, &idle);
  }
  /* A line per process, with its threads' counts; "ended" while others
   * go on (the last table, after the end, has them all ended). */
  for (size_t i = 0; i < np; i++)
    any_live |= !pr[i].ended;
  p->procs[0] = '\0';
  for (size_t i = 0; i < np; i++) {
    char rank[48] = "";
    size_t pa = 0, pi = 0;
    live += !pr[i].ended;
    nogil += !pr[i].ended && pr[i].free_threaded;
    for (size_t j = 0; j < nth; j++)
      if (th[j].pid == pr[i].pid)
        count_thread(&th[j], &pa, &pi);
    if (pr[i].rank >= 0)
      snprintf(rank, sizeof(rank), " rank %d/%d local %d", pr[i].rank,
               pr[i].world_size, pr[i].local_rank);
    if (off < sizeof(p->procs))
      off += (size_t)snprintf(
          p->procs + off, sizeof(p->procs) - off,
          "%spid %d CPython %s%s, %zu active %zu idle%s: %s", off ? "\n" : "",
          (int)pr[i].pid, pst__esc(ver, sizeof(ver), pr[i].version), rank, pa,
          pi, any_live && pr[i].ended ? ", ended" : "",
          pst__esc(cmd, sizeof(cmd), pr[i].cmdline));
  }
  /* A process has at most one GIL holder a tick. */
  if (!live) { /* the last table, after the end: they were all there */
    live = np;
    for (size_t i = 0; i < np; i++)
      nogil += pr[i].free_threaded;
  }
  live -= nogil; /* free-threaded: no GIL to hold */
  if (nogil && !live)
    snprintf(gil, sizeof(gil), ", no GIL (free-threaded)");
  else if (ticks && live && p->o->policy.mode != PST_MODE_GIL)
    snprintf(gil, sizeof(gil), ", GIL held %.0f%%",
             100.0 * (double)pst__top_gil_samples(p->top) /
                 ((double)ticks * (double)live));
  error_kinds(p, st, kinds, sizeof(kinds));
  snprintf(
      p->header, sizeof(p->header),
      "pystitch top: %.1f s, %.0f Hz, mode %s, %.0f thread-samples/s, "
      "threads %zu active %zu idle%s, errors %llu (%.2f%%%s), CPU %.1f%%",
      (double)t_ns / 1e9, p->o->rate_hz, pst__cli_mode_name(p->o->policy.mode),
      wall > 0 ? (double)samples / wall : 0.0, active, idle, gil,
      (unsigned long long)errors,
      (samples + errors) ? 100.0 * (double)errors / (double)(samples + errors)
                         : 0.0,
      kinds, wall > 0 ? 100.0 * (cpu - p->cpu_at) / wall : 0.0);
  p->last_ns = t_ns;
  p->errors_at = st->errors;
  p->ticks_at = st->ticks;
  p->cpu_at = cpu;
}

/* Applies the selection keys: moves, Enter (a thread's table), p (a
 * process's). Returns the selected thread's index (0 when there is no
 * thread). */
static size_t select_keys(struct printer *p, const struct pst__top_thread *th,
                          size_t nth) {
  size_t i = 0;
  pid_t pid, tid;
  char name[64];

  while (i < nth && (th[i].pid != p->sel_pid || th[i].tid != p->sel_tid))
    i++;
  if (i == nth) /* none yet, or it ended: the first */
    i = 0;
  if (p->keys.moves < 0)
    i = (size_t)-p->keys.moves > i ? 0 : i - (size_t)-p->keys.moves;
  else if (p->keys.moves > 0)
    i = i + (size_t)p->keys.moves >= nth ? (nth ? nth - 1 : 0)
                                         : i + (size_t)p->keys.moves;
  p->keys.moves = 0;
  if (!nth) {
    p->keys.select = p->keys.proc = 0;
    return 0;
  }
  p->sel_pid = th[i].pid;
  p->sel_tid = th[i].tid;
  if (p->keys.select || p->keys.proc) {
    pid = p->sel_pid;
    tid = p->keys.select ? p->sel_tid : 0;
    if (pid == p->filter_pid && tid == p->filter_tid)
      pid = tid = 0; /* again: back to every thread */
    p->filter_pid = pid;
    p->filter_tid = tid;
    if (tid)
      snprintf(p->filter, sizeof(p->filter), "thread %d %s", (int)tid,
               pst__esc(name, sizeof(name), th[i].name));
    else if (pid)
      snprintf(p->filter, sizeof(p->filter), "process %d", (int)pid);
    pst__top_set_filter(p->top, pid, tid);
    if (p->line)
      pst__top_set_filter(p->line, pid, tid);
    p->fresh = 1;
    p->keys.select = p->keys.proc = 0;
  }
  return i;
}

/* Draws the screen from the last whole interval (or since the start; the
 * one in progress right after the filter changed), or the stack view. */
static void draw(struct printer *p) {
  struct pst__top *t = p->keys.by_line && p->line ? p->line : p->top;
  size_t nth, n, sel;
  const struct pst__top_thread *th = pst__top_threads(p->top, &nth);
  uint64_t samples;
  struct pst__top_view v;

  sel = select_keys(p, th, nth);
  if (p->keys.dump && sel < nth) {
    const struct pst__top_thread *x = &th[sel];
    size_t all = pst__top_stack(p->top, x, p->stack, PST_TOP_STACK_MAX);
    pst__top_screen_draw_stack(
        p->header, x, p->stack,
        all < PST_TOP_STACK_MAX ? all : PST_TOP_STACK_MAX, all,
        x->stack_ns ? (double)(p->now_ns - x->stack_ns) / 1e9 : -1.0);
    return;
  }
  p->keys.dump = 0;
  n = pst__top_table(t,
                     p->keys.since_start ? PST_TOP_ALL
                     : p->fresh          ? PST_TOP_INTERVAL
                                         : PST_TOP_LAST,
                     p->keys.sort, p->buf, (size_t)p->rows, &samples);
  v = (struct pst__top_view){sel, p->filter_pid ? p->filter : NULL};
  pst__top_screen_draw(p->header, p->procs, p->buf,
                       n < (size_t)p->rows ? n : (size_t)p->rows, samples, th,
                       nth, &p->keys, &v, p->delay_s);
}

static void print_table(struct printer *p, uint64_t t_ns,
                        const struct pst__sampler_stats *st) {
  size_t n, nth, shown;
  const struct pst__top_thread *th = pst__top_threads(p->top, &nth);
  uint64_t samples;
  char a[PST_ESC_SIZE], b[PST_ESC_SIZE]; /* the target's names, escaped */

  make_header(p, t_ns, st);
  n = pst__top_table(p->top, p->since_start ? PST_TOP_ALL : PST_TOP_INTERVAL,
                     p->sort, p->buf, (size_t)p->rows, &samples);
  printf("%s\n%s\n", p->header, p->procs);
  printf("%7s %7s %9s %9s  %s\n", "%Own", "%Total", "OwnTime", "TotalTime",
         "Function (file:line)");
  shown = n < (size_t)p->rows ? n : (size_t)p->rows;
  for (size_t i = 0; i < shown; i++) {
    const struct pst__top_row *r = &p->buf[i];
    double d = samples ? 100.0 / (double)samples : 0;
    if (r->line)
      printf("%6.1f%% %6.1f%% %8.2fs %8.2fs  %s (%s:%d)\n", d * (double)r->own,
             d * (double)r->total, (double)r->own_ns / 1e9,
             (double)r->total_ns / 1e9, pst__esc(a, sizeof(a), r->name),
             pst__esc(b, sizeof(b), r->file), r->line);
    else
      printf("%6.1f%% %6.1f%% %8.2fs %8.2fs  %s (%s)\n", d * (double)r->own,
             d * (double)r->total, (double)r->own_ns / 1e9,
             (double)r->total_ns / 1e9, pst__esc(a, sizeof(a), r->name),
             pst__esc(b, sizeof(b), r->file));
  }
  printf("%7s %7s %-5s %-4s %-24s %s\n", "PID", "TID", "STATE", "GIL", "THREAD",
         "TOP");
  for (size_t i = 0; i < nth; i++)
    printf("%7d %7d %-5c %-4s %s %s\n", (int)th[i].pid, (int)th[i].tid,
           th[i].state ? th[i].state : '?',
           th[i].holds_gil == 1   ? "yes"
           : th[i].holds_gil == 0 ? "no"
                                  : "?",
           pst__esc_cell(a, sizeof(a), th[i].name, 24),
           th[i].active && th[i].top ? pst__esc(b, sizeof(b), th[i].top)
                                     : "(idle)");
  printf("\n");
  fflush(stdout);
  pst__top_roll(p->top);
}

static int printer_tick(void *ctx, uint64_t t_ns,
                        const struct pst__sampler_stats *st) {
  struct printer *p = ctx;
  int dirty;

  if (!p->screen) {
    if (!p->once && (double)(t_ns - p->last_ns) >= p->delay_s * 1e9)
      print_table(p, t_ns, st);
    return 0;
  }
  dirty = pst__top_screen_keys(&p->keys);
  p->now_ns = t_ns;
  if (p->keys.quit)
    return 1; /* the engine stops at this tick */
  if ((double)(t_ns - p->last_ns) >= p->delay_s * 1e9) {
    make_header(p, t_ns, st);
    pst__top_roll(p->top);
    if (p->line)
      pst__top_roll(p->line);
    p->fresh = 0;
    dirty = 1;
  }
  if (dirty)
    draw(p);
  return 0;
}

/* The targets are gone (or sampling ended): the last figures stay on the
 * screen until q. */
static volatile sig_atomic_t wait_signal;

static void on_wait_signal(int sig) { wait_signal = sig; }

static void screen_wait(struct printer *p,
                        const struct pst__sampler_stats *st) {
  size_t len = strlen(p->header);
  struct sigaction sa;
  int ended = !p->o->duration_s || st->elapsed_s < p->o->duration_s - 0.05;

  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_wait_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  snprintf(p->header + len, sizeof(p->header) - len, "%s",
           ended ? "  [the targets ended; q leaves]"
                 : "  [--duration reached; q leaves]");
  draw(p);
  while (!p->keys.quit && !wait_signal) {
    usleep(50000);
    if (pst__top_screen_keys(&p->keys))
      draw(p);
  }
}

static const struct pst__consumer_ops printer_ops = {
    .name = "top printer",
    .tick = printer_tick,
};

int pst__cmd_top(int argc, char **argv) {
  struct pst__cli_opts cli;
  struct pst__sampler_opts *o = &cli.engine;
  struct printer p = {.o = o};
  struct pst__consumer consumers[3];
  struct pst__sampler_stats st;
  int nconsumers = 2, err;

  err = pst__cli_parse(argc, argv, PST_CLI_TOP, &cli, NULL, NULL);
  if (err)
    return err;
  if (cli.help) {
    fputs(top_usage, stdout);
    return PST_EXIT_OK;
  }
  pst__cli_sampling(&cli.policy, PST_CLI_TOP, &o->policy);
  p.delay_s = cli.delay_s;
  p.rows = cli.rows;
  p.once = cli.once;
  p.since_start = cli.since_start;
  p.sort = (enum pst__top_sort)cli.sort;
  err = pst__cli_check_targets(&cli);
  if (err)
    return err;
  if (p.once && (!o->duration_s || o->duration_s > p.delay_s))
    o->duration_s = p.delay_s;
  pst_log_set_level(cli.verbose);
  p.buf = calloc((size_t)p.rows, sizeof(*p.buf));
  if (!p.buf || pst__top_new(cli.lines, &p.top)) {
    free(p.buf);
    fprintf(stderr, "pystitch: error: out of memory\n");
    return PST_EXIT_ERROR;
  }
  p.cpu_at = cpu_seconds();
  consumers[0] = (struct pst__consumer){&pst__top_consumer_ops, p.top};
  consumers[1] = (struct pst__consumer){&printer_ops, &p};
  if (!cli.plain && !p.once && isatty(1)) {
    p.keys.sort = p.sort;
    p.keys.since_start = p.since_start;
    p.keys.threads = 1;
    /* The l key: both aggregations are kept. */
    if (!cli.lines && pst__top_new(1, &p.line) == 0) {
      consumers[2] = (struct pst__consumer){&pst__top_consumer_ops, p.line};
      nconsumers = 3;
    }
    p.keys.by_line = cli.lines;
    p.screen = pst__top_screen_open() == 0;
    snprintf(p.header, sizeof(p.header), "pystitch top: sampling...");
    if (p.screen)
      draw(&p);
  }
  o->ready = pst__cli_sandbox;
  o->ready_arg = NULL;
  err = pst__sampler_run(o, consumers, nconsumers, &st);
  if (p.screen) {
    if (!err && !p.keys.quit && !st.interrupted)
      screen_wait(&p, &st);
    pst__top_screen_close();
  } else if (!err) {
    uint64_t left;
    /* The last (partial) interval, or the one table of --once. */
    pst__top_table(p.top, PST_TOP_INTERVAL, p.sort, p.buf, 0, &left);
    if (left || p.once)
      print_table(&p, (uint64_t)(st.elapsed_s * 1e9), &st);
    if (st.child_exited && st.child_status != 0)
      fprintf(stderr, "pystitch: the command exited with status %d\n",
              st.child_status);
  }
  pst__top_free(p.top);
  pst__top_free(p.line);
  free(p.buf);
  return err ? pst__cli_sampler_error(o, err) : PST_EXIT_OK;
}
