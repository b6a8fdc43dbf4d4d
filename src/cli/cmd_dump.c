/* cmd_dump.c: `pystitch dump`: every thread's current Python stack, once. */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/dump.h"
#include "cli/options.h"
#include "output/json.h"
#include "proc/probe.h"
#include "pystitch.h"
#include "util/clock.h"
#include "util/esc.h"

static const char *method_name(enum pst_map_method m) {
  switch (m) {
  case PST_MAP_TSD:
    return "tsd";
  case PST_MAP_LIST:
    return "list";
  case PST_MAP_LIST_TID:
    return "list-tid";
  case PST_MAP_TLS:
    return "tls";
  default:
    return "none";
  }
}

/* One frame's line: every name in it escaped (the target chose them). */
void pst__dump_frame_text(const struct pst_frame *f) {
  fputs("    ", stdout);
  pst__esc_put(stdout, f->name);
  if (f->kind == PST_FRAME_MARKER) {
    putchar('\n');
    return;
  }
  fputs(" (", stdout);
  pst__esc_put(stdout, f->filename);
  if (f->kind == PST_FRAME_NATIVE)
    printf(")\n");
  else
    printf(":%d)\n", f->line);
}

const char *pst__dump_state_text(const struct pst_thread *x, char *buf) {
  char a[PST_ESC_SIZE], b[PST_ESC_SIZE];

  snprintf(buf, PST_ESC_SIZE, "%s%s%s%s%s%s%s", x->idle ? "idle" : "active",
           x->holds_gil == 1 ? ", holds GIL" : "", x->gc ? ", in GC" : "",
           x->exception == 1 ? ", exception " : "",
           pst__esc(a, sizeof(a), x->exception == 1 ? x->exception_type : ""),
           x->origin[0] ? ", native, " : "", pst__esc(b, sizeof(b), x->origin));
  return buf;
}

static void print_text(const struct pst_target_info *info,
                       const struct pst_thread *th, int n,
                       struct pst_target *locals_of) {
  char a[PST_ESC_SIZE], b[PST_ESC_SIZE];

  printf("Process %d: %s\n", (int)info->pid, pst__esc(a, sizeof(a), info->exe));
  printf("Python %s%s%s%s\n\n", pst__esc(a, sizeof(a), info->version),
         info->free_threaded ? " (free-threaded: no GIL)" : "",
         info->libpython[0] ? " " : "",
         pst__esc(b, sizeof(b), info->libpython));
  for (int i = 0; i < n; i++) {
    const struct pst_frame_locals *fl = NULL;
    const struct pst_thread *x =
        locals_of ? pst__dump_with_locals(locals_of, &th[i], &fl) : &th[i];
    printf("Thread %d \"%s\" (%s)\n", (int)x->tid,
           pst__esc(a, sizeof(a), x->name), pst__dump_state_text(x, b));
    if (!x->tstate && !x->nframes) {
      if (x->error && x->error != PST_ENOTHREADSTATE)
        printf("    (no Python thread state: %s)\n", pst_strerror(x->error));
      else
        printf("    (no Python thread state)\n");
      continue;
    }
    if (x->error)
      printf("    (stack unreadable: %s)\n", pst_strerror(x->error));
    for (size_t k = 0; k < x->nframes; k++) {
      pst__dump_frame_text(&x->frames[k]);
      pst__dump_frame_locals_text(fl ? &fl[k] : NULL);
    }
  }
}

/* A frame as JSON; with fl, its "locals" too. */
static void print_frame_json(const struct pst_frame *f, int first,
                             const struct pst_frame_locals *fl) {
  printf("%s{\"name\": ", first ? "" : ", ");
  pst__json_put_string(stdout, f->name);
  printf(", \"file\": ");
  pst__json_put_string(stdout, f->filename);
  printf(", \"line\": %d, \"kind\": \"%s\"", f->line,
         f->kind == PST_FRAME_NATIVE   ? "native"
         : f->kind == PST_FRAME_MARKER ? "marker"
                                       : "python");
  if (fl) {
    printf(", \"locals_total\": %d, \"locals\": [", fl->total);
    for (int v = 0; v < fl->n; v++) {
      printf("%s{\"name\": ", v ? ", " : "");
      pst__json_put_string(stdout, fl->vars[v].name);
      printf(", \"value\": ");
      pst__json_put_string(stdout, fl->vars[v].value);
      printf("}");
    }
    printf("]");
  }
  printf("}");
}

const struct pst_thread *
pst__dump_with_locals(struct pst_target *t, const struct pst_thread *x,
                      const struct pst_frame_locals **fl) {
  const struct pst_thread *lt;

  *fl = NULL;
  if (!t || !x->tstate || pst_target_locals(t, x->tid, &lt, fl) < 0) {
    *fl = NULL;
    return x;
  }
  return lt;
}

void pst__dump_frame_locals_text(const struct pst_frame_locals *fl) {
  char a[PST_ESC_SIZE], b[PST_ESC_SIZE];

  for (int v = 0; fl && v < fl->n; v++)
    printf("        %s = %s\n", pst__esc(a, sizeof(a), fl->vars[v].name),
           pst__esc(b, sizeof(b), fl->vars[v].value));
  if (fl && fl->total > fl->n)
    printf("        (%d more not bound or not shown)\n", fl->total - fl->n);
}

void pst__dump_json_open(const struct pst_target_info *info,
                         const struct pst_thread *th, int n, double snap_ms,
                         struct pst_target *locals_of) {
  char host[64];

  pst__dump_hostname(host, sizeof(host));
  printf("{\"pid\": %d, \"host\": ", (int)info->pid);
  pst__json_put_string(stdout, host);
  printf(", \"analysis_ms\": %.3f, \"snapshot_ms\": %.3f, \"version\": ",
         info->analysis_ms, snap_ms);
  pst__json_put_string(stdout, info->version);
  printf(", \"free_threaded\": %s, \"threads\": [",
         info->free_threaded ? "true" : "false");
  for (int i = 0; i < n; i++) {
    const struct pst_frame_locals *fl = NULL;
    const struct pst_thread *x =
        locals_of ? pst__dump_with_locals(locals_of, &th[i], &fl) : &th[i];
    printf("%s\n  {\"tid\": %d, \"name\": ", i ? "," : "", (int)x->tid);
    pst__json_put_string(stdout, x->name);
    printf(", \"name_from_python\": %s, \"origin\": ",
           x->name_from_python ? "true" : "false");
    pst__json_put_string(stdout, x->origin);
    printf(", \"state\": \"%c\", \"idle\": %s, \"gil\": %s, "
           "\"python\": %s, \"method\": \"%s\", \"tstate\": \"0x%llx\", "
           "\"fsbase\": \"0x%llx\", \"error\": ",
           x->state, x->idle ? "true" : "false",
           x->holds_gil == 1   ? "true"
           : x->holds_gil == 0 ? "false"
                               : "null",
           x->tstate ? "true" : "false", method_name(x->method),
           (unsigned long long)x->tstate, (unsigned long long)x->fsbase);
    if (x->error && x->error != PST_ENOTHREADSTATE)
      pst__json_put_string(stdout, pst_errname(x->error));
    else
      printf("null");
    printf(", \"exception\": ");
    if (x->exception == 1)
      pst__json_put_string(stdout, x->exception_type);
    else
      printf("%s", x->exception == 0 ? "false" : "null");
    printf(", \"gc\": %s, \"truncated\": %s, \"frames\": [",
           x->gc ? "true" : "false", x->truncated ? "true" : "false");
    for (size_t k = 0; k < x->nframes; k++)
      print_frame_json(&x->frames[k], k == 0, fl ? &fl[k] : NULL);
    printf("]}");
  }
  printf("\n]");
}

/* A task's name for text, escaped into buf (PST_ESC_SIZE bytes). */
static const char *task_label(const struct pst_task *k, char *buf) {
  return k->name[0] ? pst__esc(buf, PST_ESC_SIZE, k->name) : "?";
}

/* Text: each task as a stack, innermost first: its coroutines, then a
 * "task NAME" root line, then the task awaiting it with its coroutines
 * and root, outwards (its first waiter each time; others are named). */
void pst__dump_tasks_text(const struct pst_task *tk, int n) {
  int chain[PST_TASK_CHAIN_MAX] = {0};
  char a[PST_ESC_SIZE];

  printf("\nasyncio tasks: %d\n", n);
  for (int i = 0; i < n; i++) {
    int len = pst_task_chain(tk, i, chain, PST_TASK_CHAIN_MAX);
    printf("\nTask \"%s\" (", task_label(&tk[i], a));
    if (tk[i].tid)
      printf("thread %d", (int)tk[i].tid);
    else if (tk[i].no_thread == PST_TASK_LOOP_UNKNOWN)
      printf("thread not known: its loop is a %s",
             pst__esc(a, sizeof(a), tk[i].loop_type));
    else
      printf("no thread: %s", pst_task_no_thread_str(tk[i].no_thread));
    printf(", %s", tk[i].running ? "running" : "waiting");
    if (tk[i].torn)
      printf(", changed while read");
    for (int w = 1; w < tk[i].nwaiters; w++)
      printf("%s\"%s\"", w == 1 ? ", also awaited by " : ", ",
             task_label(&tk[tk[i].waiters[w]], a));
    printf(")\n");
    for (int c = 0; c < len; c++) {
      const struct pst_task *k = &tk[chain[c]];
      for (int f = 0; f < k->nframes; f++)
        pst__dump_frame_text(&k->frames[f]);
      printf("    task %s\n", task_label(k, a));
    }
  }
}

void pst__dump_tasks_json(const struct pst_task *tk, int n) {
  printf(",\n\"tasks\": [");
  for (int i = 0; i < n; i++) {
    printf("%s\n  {\"id\": \"0x%llx\", \"name\": ", i ? "," : "",
           (unsigned long long)tk[i].id);
    pst__json_put_string(stdout, tk[i].name);
    printf(", \"tid\": %d, ", (int)tk[i].tid);
    if (!tk[i].tid) {
      printf("\"no_thread\": \"%s\", ",
             pst_task_no_thread_str(tk[i].no_thread));
    }
    if (tk[i].no_thread == PST_TASK_LOOP_UNKNOWN) {
      printf("\"loop_type\": ");
      pst__json_put_string(stdout, tk[i].loop_type);
      printf(", ");
    }
    printf("\"running\": %s, \"torn\": %s, \"frames\": [",
           tk[i].running ? "true" : "false", tk[i].torn ? "true" : "false");
    for (int f = 0; f < tk[i].nframes; f++)
      print_frame_json(&tk[i].frames[f], f == 0, NULL);
    printf("], \"awaited_by\": [");
    for (int w = 0; w < tk[i].nwaiters; w++) {
      printf("%s", w ? ", " : "");
      pst__json_put_string(stdout, tk[tk[i].waiters[w]].name);
    }
    printf("]}");
  }
  printf("\n]");
}

int pst__dump_read_tasks(struct pst_target *t, pid_t pid, int flags,
                         const struct pst_task **tk) {
  int n = pst_target_tasks(t, flags, tk);
  char type[PST_ESC_SIZE], why[160];

  if (n <= 0) {
    int warn = pst_target_tasks_why(t, n, why, sizeof(why));
    fprintf(stderr, "pystitch: %s: process %d has no asyncio tasks: %s%s\n",
            warn ? "warning" : "note", (int)pid,
            pst__esc(type, sizeof(type), why),
            n == PST_EPYVERSION ? "; the thread stacks show the running tasks"
                                : "");
  }
  if (n >= 0 && pst_target_tasks_cut(t))
    fprintf(stderr,
            "pystitch: warning: process %d has more asyncio tasks than are "
            "read (%d at most): only %d of them are shown\n",
            (int)pid, PST_TASKS_MAX, n);
  for (int i = 0; i < n; i++)
    if ((*tk)[i].no_thread == PST_TASK_LOOP_UNKNOWN) {
      fprintf(stderr,
              "pystitch: note: process %d runs asyncio tasks on an event "
              "loop of type %s, which does not say which thread runs it "
              "(uvloop's does not): they are shown without their thread "
              "(CPython 3.14+ knows it)\n",
              (int)pid, pst__esc(type, sizeof(type), (*tk)[i].loop_type));
      break;
    }
  return n < 0 ? 0 : n;
}

int pst__cmd_dump(const struct pst__cli_opts *o) {
  const struct pst_thread *th;
  struct pst_target *t;
  const struct pst_task *tasks = NULL;
  double t0, snap_ms;
  int n, rc, flags, ntasks = 0;
  struct pst_policy policy;

  if (o->merge)
    return pst__dump_merge(o);
  if (o->engine.npids > 1 || o->engine.subprocesses || o->engine.all)
    return pst__dump_many(o);
  rc = pst__cli_open(o->pid, &t);
  if (rc)
    return rc;
  t0 = pst__now_ms();
  n = pst_target_refresh(t);
  pst__cli_sampling(&o->policy, PST_CLI_DUMP, &policy);
  flags = pst_policy_flags(&policy);
  if (n >= 0)
    n = pst_target_sample(t, flags, &th);
  snap_ms = pst__now_ms() - t0;
  if (n < 0) {
    fprintf(stderr, "pystitch: error: cannot read process %d: %s\n",
            (int)o->pid, pst_strerror(n));
    pst_target_close(t);
    return PST_EXIT_ERROR;
  }
  if (pst_target_line_tables_cut(t))
    fprintf(stderr,
            "pystitch: note: %llu functions of process %d have a line table "
            "too big to read (over 1 MiB): their frames show the function's "
            "first line\n",
            (unsigned long long)pst_target_line_tables_cut(t), (int)o->pid);
  if (o->policy.async)
    ntasks = pst__dump_read_tasks(t, o->pid, flags, &tasks);
  if (o->json) {
    struct pst__dump_proc me = {.pid = o->pid, .t = t};
    char host[64];
    pst__dump_hostname(host, sizeof(host));
    pst__dump_proc_label(&me, pst__probe_pidns(0), host);
    pst__dump_json_open(pst_target_info(t), th, n, snap_ms,
                        o->locals ? t : NULL);
    pst__dump_proc_json_fields(&me);
    if (o->policy.async)
      pst__dump_tasks_json(tasks, ntasks);
    printf("}\n");
  } else {
    print_text(pst_target_info(t), th, n, o->locals ? t : NULL);
    if (ntasks)
      pst__dump_tasks_text(tasks, ntasks);
  }
  pst_target_close(t);
  return PST_EXIT_OK;
}
