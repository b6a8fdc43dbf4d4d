/* dump_many.c: `pystitch dump` of several processes (-p A,B, -s, --all):
 * every process attached, then all read in one pass; the text output
 * shows each distinct stack once with the processes and threads that
 * have it (ranks, roles), the odd ones first; --json every process whole.
 *
 * Ownership: the process table and the targets are this file's, freed
 * before pst__dump_many() returns.
 */
#include <dirent.h>
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/dump.h"
#include "output/json.h"
#include "proc/probe.h"
#include "proc/proc.h"
#include "pystitch.h"
#include "util/clock.h"
#include "util/esc.h"
#include "util/log.h"

#define PROCS_MAX 1024
#define WHO_MAX 8 /* processes named in a group's line, then "N more" */

#define proc pst__dump_proc

/* One thread of one process, for the grouping. */
struct item {
  const struct proc *p;
  const struct pst_thread *x;
  /* --locals: the thread read again with its locals (own, with its
   * frames: copies, on the heap), each frame's locals as one text
   * (pst__dump_locals_text()) */
  struct pst_thread *own;
  char **loc;
  int order; /* as listed: process, then thread */
  int owned; /* own and loc are this item's to free */
};

static int add_pid(struct proc *ps, int *np, pid_t pid, int given) {
  for (int i = 0; i < *np; i++)
    if (ps[i].pid == pid)
      return 0;
  if (*np == PROCS_MAX || pid == getpid())
    return 0;
  memset(&ps[*np], 0, sizeof(ps[*np]));
  ps[*np].pid = pid;
  ps[*np].given = given;
  ps[*np].rank = ps[*np].local_rank = ps[*np].world_size = -1;
  (*np)++;
  return 1;
}

/* --all: the host's processes that look like Python and whose command
 * line --match takes and --exclude does not. */
static void scan_host(const struct pst__sampler_opts *e, struct proc *ps,
                      int *np) {
  struct dirent *de;
  DIR *d = opendir("/proc");

  while (d && (de = readdir(d))) {
    char *end, cmd[4096];
    long pid = strtol(de->d_name, &end, 10);
    if (*end || pid <= 0 || !pst__probe_looks_python((pid_t)pid))
      continue;
    pst__probe_cmdline((pid_t)pid, cmd, sizeof(cmd));
    if ((e->match && regexec(e->match, cmd, 0, NULL, 0)) ||
        (e->exclude && !regexec(e->exclude, cmd, 0, NULL, 0)))
      continue;
    add_pid(ps, np, (pid_t)pid, 0);
  }
  if (d)
    closedir(d);
}

/* The processes to dump: the -p list, each one's descendants with -s,
 * or the host's Python processes with --all. */
static int gather(const struct pst__cli_opts *o, struct proc *ps) {
  const struct pst__sampler_opts *e = &o->engine;
  pid_t kids[PROCS_MAX];
  int np = 0;

  for (int i = 0; i < e->npids; i++)
    add_pid(ps, &np, e->pids[i], 1);
  for (int i = 0; e->subprocesses && i < e->npids; i++) {
    int k = pst__proc_descendants(e->pids[i], kids, PROCS_MAX);
    for (int j = 0; j < k; j++)
      add_pid(ps, &np, kids[j], 0);
  }
  if (e->all)
    scan_host(e, ps, &np);
  return np;
}

/* Attaches p quietly (a process caught starting up gets a second). */
static void open_proc(struct proc *p) {
  p->err = pst_target_open(p->pid, &p->t);
  for (int i = 0; p->err == PST_ENOTREADY && i < 100; i++) {
    usleep(10000);
    p->err = pst_target_open(p->pid, &p->t);
  }
  if (p->err)
    p->t = NULL;
  pst__probe_cmdline(p->pid, p->cmd, sizeof(p->cmd));
}

/* Its labels: rank and world size from its environment (torchrun,
 * torch.distributed), its container, its multiprocessing role. */
void pst__dump_proc_label(struct proc *p, uint64_t ns, const char *host) {
  p->rank = p->local_rank = p->world_size = -1;
  pst__probe_env_int(p->pid, "RANK", &p->rank);
  pst__probe_env_int(p->pid, "LOCAL_RANK", &p->local_rank);
  pst__probe_env_int(p->pid, "WORLD_SIZE", &p->world_size);
  pst__probe_container(p->pid, ns, p->container, sizeof(p->container));
  if (!p->cmd[0])
    pst__probe_cmdline(p->pid, p->cmd, sizeof(p->cmd));
  snprintf(p->host, sizeof(p->host), "%s", host);
  if (p->t) {
    snprintf(p->role, sizeof(p->role), "%s", pst_target_role(p->t));
    snprintf(p->version, sizeof(p->version), "%s",
             pst_target_info(p->t)->version);
  }
}

void pst__dump_proc_json_fields(const struct proc *p) {
  printf(", \"role\": ");
  pst__json_put_string(stdout, p->role);
  printf(", \"rank\": %d, \"local_rank\": %d, \"world_size\": %d, "
         "\"container\": ",
         p->rank, p->local_rank, p->world_size);
  pst__json_put_string(stdout, p->container);
  printf(", \"cmdline\": ");
  pst__json_put_string(stdout, p->cmd);
}

/* ---- the grouped view ---- */

static int cmp_str(const char *a, const char *b) {
  return strcmp(a ? a : "", b ? b : "");
}

/* The order of two threads' stacks: equal when they show the same. */
static int cmp_stack(const struct pst_thread *a, const struct pst_thread *b) {
  int c;

  if (a->nframes != b->nframes)
    return a->nframes < b->nframes ? -1 : 1;
  for (size_t k = 0; k < a->nframes; k++) {
    const struct pst_frame *f = &a->frames[k], *g = &b->frames[k];
    if (f->kind != g->kind)
      return f->kind < g->kind ? -1 : 1;
    if (f->line != g->line)
      return f->line < g->line ? -1 : 1;
    if ((c = cmp_str(f->name, g->name)) ||
        (c = cmp_str(f->filename, g->filename)))
      return c;
  }
  if (a->error != b->error)
    return a->error < b->error ? -1 : 1;
  if ((c = cmp_str(a->exception == 1 ? a->exception_type : "",
                   b->exception == 1 ? b->exception_type : "")))
    return c;
  /* Threads without a stack are told apart by what started them. */
  return a->nframes ? 0 : cmp_str(a->origin, b->origin);
}

static int by_stack(const void *pa, const void *pb) {
  const struct item *a = pa, *b = pb;
  int c = cmp_stack(a->x, b->x);

  return c ? c : a->order - b->order;
}

struct group {
  int first, n; /* items[first .. first + n) */
};

static int by_size(const void *pa, const void *pb, void *items) {
  const struct group *a = pa, *b = pb;
  const struct item *it = items;

  if (a->n != b->n)
    return a->n - b->n; /* the odd ones out first */
  return it[a->first].order - it[b->first].order;
}

/* "ranks 0-2,4", from the sorted distinct ranks r[0..n). */
static void rank_ranges(const int *r, int n, char *out, size_t len) {
  size_t at = (size_t)snprintf(out, len, "rank%s ", n > 1 ? "s" : "");

  for (int i = 0; i < n && at < len; i++) {
    int j = i;
    while (j + 1 < n && r[j + 1] == r[j] + 1)
      j++;
    at += (size_t)snprintf(out + at, len - at, "%s%d", i ? "," : "", r[i]);
    if (j > i && at < len)
      at += (size_t)snprintf(out + at, len - at, "-%d", r[j]);
    i = j;
  }
}

static int cmp_int(const void *a, const void *b) {
  return *(const int *)a - *(const int *)b;
}

/* The processes of items it[0..n): by rank when every one has its own
 * ("ranks 0-2,4"), else by pid, rank and role (a rank's DataLoader
 * workers inherit its RANK: "pid 812 (rank 0, DataLoader worker
 * (Process-1))"); into out. */
static void procs_label(const struct item *it, int n, char *out, size_t len) {
  int ranks[PROCS_MAX], nr = 0, all_ranked = 1, nproc = 0;
  const struct proc *seen[PROCS_MAX];
  char e[PST_ESC_SIZE];
  size_t at = 0;

  out[0] = 0;
  for (int i = 0; i < n; i++) {
    const struct proc *p = it[i].p;
    int dup = 0;
    for (int k = 0; k < nproc && !dup; k++)
      dup = seen[k] == p;
    if (!dup && nproc < PROCS_MAX) {
      seen[nproc++] = p;
      if (p->rank < 0)
        all_ranked = 0;
      else
        ranks[nr++] = p->rank;
    }
  }
  if (all_ranked && nr) {
    qsort(ranks, (size_t)nr, sizeof(*ranks), cmp_int);
    for (int i = 1; i < nr && all_ranked; i++)
      all_ranked = ranks[i] != ranks[i - 1];
  }
  if (all_ranked && nr) {
    rank_ranges(ranks, nr, out, len);
    return;
  }
  for (int k = 0; k < nproc && k < WHO_MAX && at < len; k++) {
    const struct proc *p = seen[k];
    char h[PST_ESC_SIZE], rank[32] = "";
    /* a pid of a merge is named with its host */
    int at_host = p->from_merge, paren = p->rank >= 0 || p->role[0];
    if (p->rank >= 0)
      snprintf(rank, sizeof(rank), "rank %d%s", p->rank,
               p->role[0] ? ", " : "");
    at += (size_t)snprintf(out + at, len - at, "%s%d%s%s%s%s%s%s",
                           k ? ", " : "pid ", (int)p->pid, at_host ? "@" : "",
                           at_host ? pst__esc(h, sizeof(h), p->host) : "",
                           paren ? " (" : "", rank,
                           pst__esc(e, sizeof(e), p->role), paren ? ")" : "");
  }
  if (nproc > WHO_MAX && at < len)
    snprintf(out + at, len - at, " and %d more", nproc - WHO_MAX);
}

/* Who has a group's stack: its processes and its threads' names. */
static void who(const struct item *it, int n, char *out, size_t len) {
  char names[256] = "", e[PST_ESC_SIZE];
  size_t at, nat = 0;
  int nnames = 0;

  procs_label(it, n, out, len);
  at = strlen(out);
  /* The distinct thread names, three at most. */
  for (int i = 0; i < n; i++) {
    int dup = 0;
    for (int k = 0; k < i && !dup; k++)
      dup = !strcmp(it[k].x->name, it[i].x->name);
    if (dup)
      continue;
    if (++nnames <= 3 && nat < sizeof(names))
      nat += (size_t)snprintf(names + nat, sizeof(names) - nat, "%s%s",
                              nnames > 1 ? ", " : "",
                              pst__esc(e, sizeof(e), it[i].x->name));
  }
  if (at < len)
    snprintf(out + at, len - at, ": %d thread%s (%s%s)", n, n == 1 ? "" : "s",
             names, nnames > 3 ? ", ..." : "");
}

/* ---- --locals in the grouped view ----
 *
 * A frame's locals are kept per thread as one text, "name\x1fvalue\x1e"
 * for each (a value's own \x1e and \x1f made '?'), so that equal locals
 * are equal texts. A group's frame shows its locals once when every
 * thread has the same; else each variable once, with its values and who
 * has each ("step = 41 (ranks 0-2); 40 (rank 3)"). */

char *pst__dump_locals_text(const struct pst_frame_locals *fl) {
  size_t len = 1, k = 0;
  char *s;

  for (int v = 0; fl && v < fl->n; v++)
    len += strlen(fl->vars[v].name) + strlen(fl->vars[v].value) + 2;
  s = calloc(len, 1);
  if (!s)
    return NULL;
  for (int v = 0; fl && v < fl->n; v++) {
    for (const char *c = fl->vars[v].name; *c; c++)
      s[k++] = *c == 0x1e || *c == 0x1f ? '?' : *c;
    s[k++] = 0x1f;
    for (const char *c = fl->vars[v].value; *c; c++)
      s[k++] = *c == 0x1e || *c == 0x1f ? '?' : *c;
    s[k++] = 0x1e;
  }
  return s;
}

/* Variable name's value in a locals text, into out ("" when absent). */
static void var_value(const char *text, const char *name, char *out,
                      size_t len) {
  size_t nl = strlen(name);

  out[0] = 0;
  while (text && *text) {
    const char *sep = strchr(text, 0x1f), *end = strchr(text, 0x1e);
    if (!sep || !end)
      return;
    if ((size_t)(sep - text) == nl && !strncmp(text, name, nl)) {
      snprintf(out, len, "%.*s", (int)(end - sep - 1), sep + 1);
      return;
    }
    text = end + 1;
  }
}

/* Does variable name of frame f have value val in every one of it[0..n)? */
static int same_in_all(const struct item *it, int n, size_t f, const char *name,
                       const char *val) {
  char va[PST_ESC_SIZE];

  for (int a = 0; a < n; a++) {
    var_value(it[a].loc ? it[a].loc[f] : NULL, name, va, sizeof(va));
    if (strcmp(va, val))
      return 0;
  }
  return 1;
}

/* Frame f's locals of a group's n threads. */
static void print_group_locals(struct item *it, int n, size_t f) {
  char e[PST_ESC_SIZE], b[PST_ESC_SIZE], who_[512];
  const char *first = it[0].loc ? it[0].loc[f] : NULL;
  int same = 1;

  for (int i = 1; i < n && same; i++)
    same = it[i].loc && first && it[i].loc[f] && !strcmp(first, it[i].loc[f]);
  /* Each variable of any of them, once, in the order first seen. */
  for (int i = 0; i < n; i++) {
    const char *text = it[i].loc ? it[i].loc[f] : NULL;
    while (text && *text) {
      const char *sep = strchr(text, 0x1f), *end = strchr(text, 0x1e);
      char name[128], val[PST_ESC_SIZE];
      int seen = 0;
      if (!sep || !end)
        break;
      snprintf(name, sizeof(name), "%.*s", (int)(sep - text), text);
      text = end + 1;
      for (int j = 0; j < i && !seen; j++) {
        var_value(it[j].loc ? it[j].loc[f] : NULL, name, val, sizeof(val));
        seen = val[0] != 0;
      }
      if (seen)
        continue;
      printf("        %s = ", pst__esc(e, sizeof(e), name));
      var_value(first, name, val, sizeof(val));
      if (same || same_in_all(it, n, f, name, val)) {
        printf("%s\n", pst__esc(b, sizeof(b), val));
        continue;
      }
      /* Its distinct values, each with who has it. */
      for (int a = 0, nv = 0; a < n; a++) {
        struct item sub[64];
        int k = 0, dup = 0;
        char va[PST_ESC_SIZE];
        var_value(it[a].loc ? it[a].loc[f] : NULL, name, val, sizeof(val));
        for (int c = 0; c < a && !dup; c++) {
          var_value(it[c].loc ? it[c].loc[f] : NULL, name, va, sizeof(va));
          dup = !strcmp(va, val);
        }
        if (dup)
          continue;
        for (int c = a; c < n && k < 64; c++) {
          var_value(it[c].loc ? it[c].loc[f] : NULL, name, va, sizeof(va));
          if (!strcmp(va, val))
            sub[k++] = it[c];
        }
        procs_label(sub, k, who_, sizeof(who_));
        printf("%s%s (%s)", nv++ ? "; " : "",
               val[0] ? pst__esc(b, sizeof(b), val) : "(not bound)", who_);
      }
      printf("\n");
    }
  }
}

static void print_group(struct item *it, int n, int k, int ng) {
  const struct pst_thread *x = it[0].x;
  char line[2048], e[PST_ESC_SIZE];

  who(it, n, line, sizeof(line));
  printf("\nStack %d of %d, %s\n", k, ng, line);
  if (x->exception == 1)
    printf("    (exception %s)\n", pst__esc(e, sizeof(e), x->exception_type));
  if (!x->nframes) {
    if (x->origin[0])
      printf("    (no Python thread state: native, %s)\n",
             pst__esc(e, sizeof(e), x->origin));
    else
      printf("    (%s)\n",
             x->error ? pst_strerror(x->error) : "no Python thread state");
    return;
  }
  if (x->error)
    printf("    (stack unreadable: %s)\n", pst_strerror(x->error));
  for (size_t f = 0; f < x->nframes; f++) {
    pst__dump_frame_text(&x->frames[f]);
    if (it[0].loc)
      print_group_locals(it, n, f);
  }
}

/* --locals: item it read again with its locals, kept (its frames and the
 * locals' texts copied: the target's are overwritten by the next read). */
static void keep_locals(struct item *it) {
  const struct pst_frame_locals *fl;
  const struct pst_thread *lt;
  struct pst_frame *frames;

  lt = pst__dump_with_locals(it->p->t, it->x, &fl);
  if (!fl || lt == it->x)
    return;
  frames = malloc((lt->nframes + 1) * sizeof(*frames));
  it->loc = calloc(lt->nframes + 1, sizeof(*it->loc));
  it->own = malloc(sizeof(*it->own));
  if (!frames || !it->loc || !it->own) {
    free(frames);
    free(it->loc);
    free(it->own);
    it->loc = NULL;
    it->own = NULL;
    return;
  }
  memcpy(frames, lt->frames, lt->nframes * sizeof(*frames));
  *it->own = *lt;
  it->own->frames = frames;
  for (size_t f = 0; f < lt->nframes; f++)
    it->loc[f] = pst__dump_locals_text(&fl[f]);
  it->x = it->own;
  it->owned = 1;
}

static void free_locals(struct item *it) {
  if (!it->owned)
    return;
  for (size_t f = 0; f < it->own->nframes; f++)
    free(it->loc[f]);
  free(it->loc);
  free(it->own->frames);
  free(it->own);
}

/* Do ps[0..np) come from more than one host (a merge)? */
static int several_hosts(const struct proc *ps, int np) {
  for (int i = 1; i < np; i++)
    if (strcmp(ps[i].host, ps[0].host))
      return 1;
  return 0;
}

static void print_procs_text(const struct proc *ps, int np, double ms) {
  char a[PST_ESC_SIZE], b[PST_ESC_SIZE];
  int nread = 0, nthreads = 0, hosts = several_hosts(ps, np);

  for (int i = 0; i < np; i++)
    if (ps[i].read) {
      nread++;
      nthreads += ps[i].n;
    }
  printf("%d process%s read (%d threads)", nread, nread == 1 ? "" : "es",
         nthreads);
  if (ms >= 0)
    printf(", their stacks within %.1f ms", ms);
  if (np > nread)
    printf(", %d not", np - nread);
  printf("\n");
  for (int i = 0; i < np; i++) {
    const struct proc *p = &ps[i];
    printf("  %d", (int)p->pid);
    if (hosts)
      printf("@%s", pst__esc(a, sizeof(a), p->host));
    if (p->rank >= 0)
      printf(" rank %d", p->rank);
    if (p->rank >= 0 && p->world_size > 0)
      printf(" of %d", p->world_size);
    if (p->role[0])
      printf(" %s", pst__esc(a, sizeof(a), p->role));
    if (p->container[0])
      printf(" [container %s]", pst__esc(a, sizeof(a), p->container));
    if (p->read)
      printf(": Python %s, %d thread%s", pst__esc(b, sizeof(b), p->version),
             p->n, p->n == 1 ? "" : "s");
    else
      printf(": not read (%s)",
             p->err == PST_ENOTPY ? "not Python" : pst_strerror(p->err));
    printf(": %s\n", pst__esc(a, sizeof(a), p->cmd));
  }
}

int pst__dump_print_many(struct proc *ps, int np, double ms, int locals) {
  struct item *it;
  struct group *g;
  int n = 0, ng = 0, nthreads = 0;

  print_procs_text(ps, np, ms);
  for (int i = 0; i < np; i++)
    nthreads += ps[i].read ? ps[i].n : 0;
  it = calloc((size_t)nthreads + 1, sizeof(*it));
  g = calloc((size_t)nthreads + 1, sizeof(*g));

  if (!it || !g) {
    free(it);
    free(g);
    return -ENOMEM;
  }
  for (int i = 0; i < np; i++)
    for (int k = 0; ps[i].read && k < ps[i].n; k++, n++) {
      it[n] = (struct item){.p = &ps[i], .x = &ps[i].th[k], .order = n};
      if (ps[i].loc)
        it[n].loc = ps[i].loc[k];
      else if (locals && ps[i].t)
        keep_locals(&it[n]);
    }
  qsort(it, (size_t)n, sizeof(*it), by_stack);
  for (int i = 0; i < n; i++) {
    if (ng && !cmp_stack(it[g[ng - 1].first].x, it[i].x)) {
      g[ng - 1].n++;
      continue;
    }
    g[ng++] = (struct group){i, 1};
  }
  qsort_r(g, (size_t)ng, sizeof(*g), by_size, it);
  printf("%d distinct stack%s, the rarest first (--json: every thread)\n", ng,
         ng == 1 ? "" : "s");
  for (int k = 0; k < ng; k++)
    print_group(it + g[k].first, g[k].n, k + 1, ng);
  for (int i = 0; i < n; i++)
    free_locals(&it[i]);
  free(it);
  free(g);
  return 0;
}

static void print_json(const struct proc *ps, int np, double ms, int async,
                       int locals) {
  int first = 1;

  printf("{\"snapshot_ms\": %.3f, \"processes\": [", ms);
  for (int i = 0; i < np; i++) {
    const struct proc *p = &ps[i];
    if (!p->t)
      continue;
    printf("%s\n", first ? "" : ",");
    first = 0;
    pst__dump_json_open(pst_target_info(p->t), p->th, p->n, ms,
                        locals ? p->t : NULL);
    pst__dump_proc_json_fields(p);
    if (async)
      pst__dump_tasks_json(p->tasks, p->ntasks);
    printf("}");
  }
  printf("\n], \"not_read\": [");
  first = 1;
  for (int i = 0; i < np; i++) {
    const struct proc *p = &ps[i];
    if (p->t)
      continue;
    printf("%s\n  {\"pid\": %d, \"error\": \"%s\", \"cmdline\": ",
           first ? "" : ",", (int)p->pid, pst_errname(p->err));
    pst__json_put_string(stdout, p->cmd);
    printf("}");
    first = 0;
  }
  printf("\n]}\n");
}

int pst__dump_many(const struct pst__cli_opts *o) {
  struct proc *ps = calloc(PROCS_MAX, sizeof(*ps));
  struct pst_policy policy;
  uint64_t ns = pst__probe_pidns(0);
  char host[64] = "";
  int np, nread = 0, rc = PST_EXIT_OK, first_rc = 0, flags;
  double t0, ms, ta = pst__now_ms(), tn;

  if (!ps) {
    fprintf(stderr, "pystitch: error: out of memory\n");
    return PST_EXIT_ERROR;
  }
  pst__dump_hostname(host, sizeof(host));
  np = gather(o, ps);
  pst__cli_sampling(&o->policy, PST_CLI_DUMP, &policy);
  flags = pst_policy_flags(&policy);
  /* Attach every one first (analysis, thread pointers). */
  for (int i = 0; i < np; i++) {
    open_proc(&ps[i]);
    /* One module cache for all: libtorch's symbols read once, not per
     * rank. */
    if (ps[i].t && ps[0].t != ps[i].t)
      for (int k = 0; k < i; k++)
        if (ps[k].t) {
          pst_target_share_modules(ps[i].t, ps[k].t);
          break;
        }
    /* A process that cannot be read is told, but one that is not Python
     * (a shell, a launcher) given with -s or found under one or by --all
     * is only listed. */
    if (ps[i].err &&
        ((ps[i].given && !o->engine.subprocesses) || ps[i].err != PST_ENOTPY)) {
      int code = pst__cli_explain(ps[i].pid, ps[i].err);
      first_rc = first_rc ? first_rc : code;
    }
  }
  tn = pst__now_ms();
  /* Their threads listed and named first (a new thread's pointer, a
   * native thread's start routine), then every stack read in one pass:
   * the stacks are of one moment, as near as can be. */
  for (int i = 0; i < np; i++) {
    int r = ps[i].t ? pst_target_refresh(ps[i].t) : 0;
    if (r < 0)
      ps[i].n = r;
  }
  t0 = pst__now_ms();
  pst__info("dump: %d processes attached in %.1f ms, their threads listed "
            "and named in %.1f ms",
            np, tn - ta, t0 - tn);
  for (int i = 0; i < np; i++)
    if (ps[i].t && ps[i].n >= 0)
      ps[i].n = pst_target_sample(ps[i].t, flags, &ps[i].th);
  ms = pst__now_ms() - t0;
  for (int i = 0; i < np; i++) {
    struct proc *p = &ps[i];
    if (p->t && p->n < 0) {
      fprintf(stderr, "pystitch: error: cannot read process %d: %s\n",
              (int)p->pid, pst_strerror(p->n));
      p->err = p->n;
      pst_target_close(p->t);
      p->t = NULL;
      first_rc = first_rc ? first_rc : PST_EXIT_ERROR;
    }
    pst__dump_proc_label(p, ns, host);
    if (!p->t)
      continue;
    p->read = 1;
    nread++;
    if (o->policy.async)
      p->ntasks = pst__dump_read_tasks(p->t, p->pid, flags, &p->tasks);
  }
  if (!nread) {
    if (!first_rc)
      fprintf(stderr, "pystitch: error: no Python process to dump%s\n",
              o->engine.all ? ": none found (--match, --exclude?)"
                            : " among the processes given and under them");
    rc = first_rc ? first_rc : PST_EXIT_NOT_PYTHON;
  } else if (o->json) {
    print_json(ps, np, ms, o->policy.async, o->locals);
  } else {
    if (pst__dump_print_many(ps, np, ms, o->locals))
      rc = PST_EXIT_ERROR;
    for (int i = 0; i < np; i++)
      if (ps[i].t && ps[i].ntasks) {
        printf("\nProcess %d:", (int)ps[i].pid);
        pst__dump_tasks_text(ps[i].tasks, ps[i].ntasks);
      }
  }
  for (int i = 0; i < np; i++)
    if (ps[i].t)
      pst_target_close(ps[i].t);
  free(ps);
  return rc;
}

void pst__dump_hostname(char *out, size_t len) {
  if (gethostname(out, len) != 0)
    out[0] = 0;
  out[len - 1] = 0;
}
