/* scan.c: --all: the host's Python processes, found by a /proc scan each
 * second on libuv's thread pool (so that sampling never waits for /proc)
 * and handed to the engine as entries to attach (internal.h). */
#include <dirent.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/probe.h"
#include "proc/proc.h"
#include "sampler/internal.h"
#include "util/clock.h"
#include "util/log.h"

static struct pst__seen *seen_slot(struct pst__rec *r, pid_t pid) {
  struct pst__seen *ns;

  for (size_t i = 0; i < r->nseen; i++)
    if (r->seen[i].pid == pid)
      return &r->seen[i];
  if (r->nseen == r->seen_cap) {
    size_t cap = r->seen_cap ? 2 * r->seen_cap : 256;
    ns = realloc(r->seen, cap * sizeof(*ns));
    if (!ns)
      return NULL;
    r->seen = ns;
    r->seen_cap = cap;
  }
  r->seen[r->nseen] = (struct pst__seen){.pid = pid};
  return &r->seen[r->nseen++];
}

/* Off the loop thread (libuv's pool): the scan's reads of /proc. It alone
 * touches r->seen while it runs (scan_busy); the options are read-only. A
 * process new since the last scan (or with a new program) that looks like
 * Python and passes --match/--exclude goes into the job's candidates. */
static void scan_work(uv_work_t *req) {
  struct pst__rec *r = req->data;
  struct pst__scan_job *j = &r->job;
  uint64_t t0 = pst__now_ns();
  pid_t self = getpid();
  struct dirent *de;
  DIR *d = opendir("/proc");
  size_t k = 0;

  j->n = 0;
  j->checked = 0;
  if (!d)
    return;
  r->gen++;
  while ((de = readdir(d))) {
    struct pst__proc_image im;
    struct pst__seen *s;
    char *end, cmd[4096];
    long pid = strtol(de->d_name, &end, 10);
    if (*end || pid <= 0 || pid == self)
      continue;
    if (pst__proc_image((pid_t)pid, &im) || im.state == 'Z' || im.state == 'X')
      continue;
    s = seen_slot(r, (pid_t)pid);
    if (!s)
      break;
    if (s->gen && s->starttime == im.starttime && s->startcode == im.addr[0]) {
      s->gen = r->gen;
      continue;
    }
    *s = (struct pst__seen){(pid_t)pid, im.starttime, im.addr[0], r->gen};
    /* Mid-exec, or not ours to read: looked at again next time (a
     * kernel thread, with no address space at all, is not). */
    if (!im.addr[0] && im.vsize)
      s->gen = 0;
    j->checked++;
    if (!pst__probe_looks_python((pid_t)pid))
      continue;
    pst__probe_cmdline((pid_t)pid, cmd, sizeof(cmd));
    if ((r->o->match && regexec(r->o->match, cmd, 0, NULL, 0)) ||
        (r->o->exclude && !regexec(r->o->exclude, cmd, 0, NULL, 0)))
      continue;
    if (j->n == PST__SCAN_TAKE_MAX)
      break;
    j->pids[j->n++] = (pid_t)pid;
  }
  closedir(d);
  for (size_t i = 0; i < r->nseen; i++)
    if (r->seen[i].gen == r->gen)
      r->seen[k++] = r->seen[i];
  r->nseen = k;
  j->ns = pst__now_ns() - t0;
}

/* Back on the loop thread: the candidates become entries, attached now. */
static void scan_done(uv_work_t *req, int status) {
  struct pst__rec *r = req->data;
  struct pst__scan_job *j = &r->job;

  r->scan_busy = 0;
  if (status || r->stopping)
    return;
  r->st->scans++;
  r->st->scan_ns += j->ns;
  if (j->ns > r->st->scan_ns_max)
    r->st->scan_ns_max = j->ns;
  r->st->scan_checked += j->checked;
  pst__compact_entries(r);
  for (size_t i = 0; i < j->n; i++) {
    struct pst__entry *e = pst__add_entry(r, j->pids[i]);
    if (!e) {
      pst__warn_once("--all: more than %d processes; the others are not "
                     "recorded",
                     PST__TARGETS_MAX);
      break;
    }
    if (e->t)
      continue; /* recorded already (check_image tells a new program) */
    if (e->done && !e->opening) { /* a pid used again: a new process */
      memset(e, 0, sizeof(*e));
      e->pid = j->pids[i];
    }
    r->st->scan_found++;
    pst__debug("process %d: a Python candidate", (int)e->pid);
  }
  pst__try_attach_pending(r);
  if (!uv_is_active((uv_handle_t *)&r->attach))
    uv_timer_start(&r->attach, pst__on_attach, PST__ATTACH_RETRY_MS,
                   PST__ATTACH_RETRY_MS);
}

void pst__compact_entries(struct pst__rec *r) {
  size_t k = 0;

  for (size_t i = 0; i < r->n; i++) {
    if (!r->e[i]->t && r->e[i]->done && !r->e[i]->opening)
      free(r->e[i]); /* its task names went with its consumers */
    else
      r->e[k++] = r->e[i];
  }
  r->n = k;
}

void pst__on_scan(uv_timer_t *h) {
  struct pst__rec *r = h->data;

  if (r->scan_busy || r->stopping)
    return;
  r->job.req.data = r;
  if (uv_queue_work(&r->loop, &r->job.req, scan_work, scan_done) == 0)
    r->scan_busy = 1;
}
