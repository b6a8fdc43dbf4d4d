/* cmd_dump.c: `pystitch dump`: every thread's current Python stack, once. */
#include <stdio.h>

#include "cli/cli.h"
#include "output/json.h"
#include "pystitch.h"
#include "util/clock.h"

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

static void print_text(const struct pst_target_info *info,
                       const struct pst_thread *th, int n) {
  printf("Process %d: %s\n", (int)info->pid, info->exe);
  printf("Python %s%s%s%s\n\n", info->version,
         info->free_threaded ? " (free-threaded: no GIL)" : "",
         info->libpython[0] ? " " : "", info->libpython);
  for (int i = 0; i < n; i++) {
    const struct pst_thread *x = &th[i];
    printf("Thread %d \"%s\" (%s%s%s%s)\n", (int)x->tid, x->name,
           x->idle ? "idle" : "active", x->holds_gil == 1 ? ", holds GIL" : "",
           x->origin[0] ? ", native, " : "", x->origin);
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
      const struct pst_frame *f = &x->frames[k];
      if (f->kind == PST_FRAME_NATIVE)
        printf("    %s (%s)\n", f->name, f->filename);
      else if (f->kind == PST_FRAME_MARKER)
        printf("    %s\n", f->name);
      else
        printf("    %s (%s:%d)\n", f->name, f->filename, f->line);
    }
    if (x->truncated)
      printf("    ... (truncated)\n");
  }
}

static void print_json(const struct pst_target_info *info,
                       const struct pst_thread *th, int n, double snap_ms) {
  printf("{\"pid\": %d, \"analysis_ms\": %.3f, \"snapshot_ms\": %.3f, "
         "\"version\": ",
         (int)info->pid, info->analysis_ms, snap_ms);
  pst_json_put_string(stdout, info->version);
  printf(", \"free_threaded\": %s, \"threads\": [",
         info->free_threaded ? "true" : "false");
  for (int i = 0; i < n; i++) {
    const struct pst_thread *x = &th[i];
    printf("%s\n  {\"tid\": %d, \"name\": ", i ? "," : "", (int)x->tid);
    pst_json_put_string(stdout, x->name);
    printf(", \"name_from_python\": %s, \"origin\": ",
           x->name_from_python ? "true" : "false");
    pst_json_put_string(stdout, x->origin);
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
      pst_json_put_string(stdout, pst_errname(x->error));
    else
      printf("null");
    printf(", \"truncated\": %s, \"frames\": [",
           x->truncated ? "true" : "false");
    for (size_t k = 0; k < x->nframes; k++) {
      printf("%s{\"name\": ", k ? ", " : "");
      pst_json_put_string(stdout, x->frames[k].name);
      printf(", \"file\": ");
      pst_json_put_string(stdout, x->frames[k].filename);
      printf(", \"line\": %d, \"kind\": \"%s\"}", x->frames[k].line,
             x->frames[k].kind == PST_FRAME_NATIVE   ? "native"
             : x->frames[k].kind == PST_FRAME_MARKER ? "marker"
                                                     : "python");
    }
    printf("]}");
  }
  printf("\n]}\n");
}

int pst_cmd_dump(const struct pst_opts *o) {
  const struct pst_thread *th;
  struct pst_target *t;
  double t0, snap_ms;
  int n, rc, flags;

  rc = pst_cli_open(o, &t);
  if (rc)
    return rc;
  t0 = pst_now_ms();
  n = pst_target_refresh(t);
  /* Exact by default: a stack that keeps moving while it is read is read
   * again with only its thread stopped (--nonblocking: never stop). */
  flags = o->nonblocking ? 0 : PST_SAMPLE_EXACT;
  if (o->native)
    flags |= PST_SAMPLE_NATIVE | (o->native > 1 ? PST_SAMPLE_NATIVE_ALL : 0);
  if (n >= 0)
    n = pst_target_sample(t, flags, &th);
  snap_ms = pst_now_ms() - t0;
  if (n < 0) {
    fprintf(stderr, "pystitch: error: cannot read process %d: %s\n",
            (int)o->pid, pst_strerror(n));
    pst_target_close(t);
    return PST_EXIT_ERROR;
  }
  if (o->json)
    print_json(pst_target_info(t), th, n, snap_ms);
  else
    print_text(pst_target_info(t), th, n);
  pst_target_close(t);
  return PST_EXIT_OK;
}
