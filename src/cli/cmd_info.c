/* cmd_info.c: `pystitch info`: how pystitch sees a process, for bug reports. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "pystitch.h"
#include "util/esc.h"

static const char *method_text(enum pst_map_method m) {
  switch (m) {
  case PST_MAP_TSD:
    return "pthread_getspecific(key) on fsbase";
  case PST_MAP_LIST:
    return "thread-state list: thread_id == fsbase";
  case PST_MAP_LIST_TID:
    return "thread-state list: native_thread_id == tid";
  case PST_MAP_TLS:
    return "thread-local at fsbase";
  default:
    return "no Python thread state";
  }
}

/* The width of the name column: the widest escaped name in terminal
 * columns, from 16 (a comm's 15 characters) to NAME_MAX_WIDTH. */
#define NAME_MAX_WIDTH 40
static int name_width(const struct pst_thread *th, int n) {
  char e[PST_ESC_SIZE];
  int w = 16;

  for (int k = 0; k < n; k++) {
    int len = pst__utf8_columns(pst__esc(e, sizeof(e), th[k].name));
    if (len > w)
      w = len < NAME_MAX_WIDTH ? len : NAME_MAX_WIDTH;
  }
  return w;
}

int pst__cmd_info(const struct pst__cli_opts *o) {
  const struct pst_target_info *i;
  const struct pst_thread *th;
  struct pst_target *t;
  char e[PST_ESC_SIZE]; /* paths and names of the target, escaped */
  int n, rc, w;

  rc = pst__cli_open(o->pid, &t);
  if (rc)
    return rc;
  i = pst_target_info(t);
  n = pst_target_snapshot(t, &th);
  printf("pid:            %d (in its namespace: %d)\n", (int)i->pid,
         (int)i->nspid);
  printf("executable:     %s\n", pst__esc(e, sizeof(e), i->exe));
  printf("libpython:      %s\n", i->libpython[0]
                                     ? pst__esc(e, sizeof(e), i->libpython)
                                     : "(none: static)");
  printf("version:        %s%s\n", pst__esc(e, sizeof(e), i->version),
         i->free_threaded ? " (free-threaded build: no GIL)" : "");
  printf("layout:         %s\n", i->layout_method);
  printf("states read:    exceptions %s, collector %s\n",
         i->exc_state ? "yes" : "no (--mode exception records nothing)",
         i->gc_state ? "yes" : "no (no <GC> frames)");
  printf("_PyRuntime:     0x%llx\n", (unsigned long long)i->runtime_addr);
  printf("interpreter:    0x%llx\n", (unsigned long long)i->interp_addr);
  if (i->key >= 0)
    printf("tss key:        %d at 0x%llx\n", i->key,
           (unsigned long long)i->key_addr);
  else
    printf("tss key:        none\n");
  printf("  found by:     %s\n", pst__esc(e, sizeof(e), i->key_method));
  printf("libc:           %s\n", pst__esc(e, sizeof(e), i->libc));
  printf(
      "tsd layout:     {offset %s0x%llx, multiplier %lld, indirect %d}",
      i->tsd_offset < 0 ? "-" : "",
      (unsigned long long)(i->tsd_offset < 0 ? -i->tsd_offset : i->tsd_offset),
      (long long)i->tsd_multiplier, i->tsd_indirect);
  if (i->tsd_has_l2)
    printf(" + level 2 at 0x%llx", (unsigned long long)i->tsd_l2_offset);
  printf("\n  found by:     %s\n", pst__esc(e, sizeof(e), i->tsd_method));
  printf("analysis:       %.2f ms\n", i->analysis_ms);
  if (n < 0) {
    fprintf(stderr, "pystitch: error: cannot list threads: %s\n",
            pst_strerror(n));
    pst_target_close(t);
    return PST_EXIT_ERROR;
  }
  printf("threads:        %d\n", n);
  w = name_width(th, n);
  printf("  %-8s %-*s %-18s %-16s %s\n", "tid", w, "name", "fsbase",
         "PyThreadState", "mapped by");
  for (int k = 0; k < n; k++)
    printf("  %-8d %s 0x%-16llx 0x%-14llx %s\n", (int)th[k].tid,
           pst__esc_cell(e, sizeof(e), th[k].name, w),
           (unsigned long long)th[k].fsbase, (unsigned long long)th[k].tstate,
           method_text(th[k].method));
  pst_target_close(t);
  return PST_EXIT_OK;
}
