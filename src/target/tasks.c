/* tasks.c: pst_target_tasks(), the target's asyncio tasks (3.8+), read by
 * python/asyncio.c, with each task's thread and its waiters resolved. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc/ptrace.h"
#include "target/internal.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/strtab.h"

#define TASKS_MAX PST_TASKS_MAX /* tasks read at most */
#define FRAMES_MAX 65536        /* coroutine frames of them all */

static int alloc_once(struct pst_target *t) {
  if (t->tasks)
    return 0;
  t->tasks = calloc(TASKS_MAX, sizeof(*t->tasks));
  t->py_tasks = calloc(TASKS_MAX, sizeof(*t->py_tasks));
  t->task_frames = calloc(FRAMES_MAX, sizeof(*t->task_frames));
  if (!t->tasks || !t->py_tasks || !t->task_frames) {
    free(t->tasks);
    free(t->py_tasks);
    free(t->task_frames);
    t->tasks = NULL;
    t->py_tasks = NULL;
    t->task_frames = NULL;
    return -ENOMEM;
  }
  return 0;
}

/* The offsets: from the maps of attach time, else from fresh ones (the
 * _asyncio module of 3.14 is mapped when asyncio is first imported). */
static int find_offsets(struct pst_target *t) {
  struct pst__maps fresh;
  uint64_t now;
  int err;

  if (t->py.aio.found)
    return 0;
  /* Not found yet (asyncio not imported, or a bad section): looked for
   * again after 10 ms, then after twice as long each time up to once a
   * second, the last answer given in between: a short program launched
   * with --async has its tasks read from its first moments, and one that
   * never imports asyncio costs a look a second. */
  now = pst__now_ns();
  if (t->aio_looked_ns && now - t->aio_looked_ns < t->aio_wait_ns)
    return t->aio_err;
  t->aio_looked_ns = now;
  t->aio_wait_ns = t->aio_wait_ns ? t->aio_wait_ns * 2 : 10000000ULL;
  if (t->aio_wait_ns > 1000000000ULL)
    t->aio_wait_ns = 1000000000ULL;
  err = pst__py_aio_find(&t->py, t->pid, &t->maps, &t->mem);
  if (err != PST_ENOSYM || t->py.aio.legacy || t->py.version_hex < 0x030e) {
    t->aio_err = err;
    return err;
  }
  err = pst__maps_load(t->pid, &fresh);
  if (err)
    return err;
  err = pst__py_aio_find(&t->py, t->pid, &fresh, &t->mem);
  pst__maps_exit(&fresh);
  t->aio_err = err;
  return err;
}

/* Task addresses sorted, for the waiters' lookups. */
struct by_addr {
  uint64_t addr;
  int index;
};

static int cmp_addr(const void *a, const void *b) {
  uint64_t x = ((const struct by_addr *)a)->addr;
  uint64_t y = ((const struct by_addr *)b)->addr;
  return x < y ? -1 : x > y;
}

static int index_of(const struct by_addr *sorted, int n, uint64_t addr) {
  struct by_addr key = {addr, 0};
  const struct by_addr *hit =
      bsearch(&key, sorted, (size_t)n, sizeof(*sorted), cmp_addr);
  return hit ? hit->index : -1;
}

const char *pst_task_no_thread_str(int no_thread) {
  static const char *const why[] = {"", "thread ended", "loop not running",
                                    "loop's thread not known",
                                    "loop not readable"};

  return no_thread > 0 && no_thread <= PST_TASK_LOOP_UNREAD ? why[no_thread]
                                                            : "";
}

int pst_task_chain(const struct pst_task *tasks, int i, int *chain, int max) {
  int n = 0;

  while (n < max) {
    for (int k = 0; k < n; k++)
      if (chain[k] == i)
        return n;
    chain[n++] = i;
    if (!tasks[i].nwaiters)
      break;
    i = tasks[i].waiters[0];
  }
  return n;
}

/* Are a and b the same function (the same code: name and file)? */
static int same_function(const struct pst_frame *a, const struct pst_frame *b) {
  return a->name && b->name && a->filename && b->filename &&
         !strcmp(a->name, b->name) && !strcmp(a->filename, b->filename);
}

/* A running task's coroutines are on its thread's stack, not suspended:
 * read from the task, its chain stops at its outermost coroutine. Its
 * thread's stack as last sampled, from the innermost frame to that
 * coroutine's, is the whole chain (what it calls, and the coroutines it
 * awaits down to the one running). Kept when the stack does not hold it
 * (the thread moved on since its sample): then its thread goes into
 * t->task_stale, for pst_target_tasks() to read both again. */
static void running_chain(struct pst_target *t, struct pst_task *k) {
  const struct pst_frame *outer;

  if (!k->tid || !k->nframes || !t->view)
    return;
  outer = &k->frames[k->nframes - 1];
  for (size_t j = 0; j < t->nthreads; j++) {
    const struct pst_thread *th = &t->view[j];
    if (th->tid != k->tid || th->error || !th->nframes)
      continue;
    for (size_t f = 0; f < th->nframes; f++)
      if (th->frames[f].kind == PST_FRAME_PYTHON &&
          same_function(&th->frames[f], outer)) {
        if (f + 1 > (size_t)k->nframes) {
          k->frames = th->frames;
          k->nframes = (int)f + 1;
        }
        return;
      }
    if (t->ntask_stale < (int)(sizeof(t->task_stale) / sizeof(pid_t)))
      t->task_stale[t->ntask_stale++] = k->tid;
    return;
  }
}

static int read_tasks(struct pst_target *t, const struct pst_task **out) {
  struct pst__py_task *pt;
  struct by_addr *sorted;
  uint64_t *ts;
  int n, err;

  *out = NULL;
  err = find_offsets(t);
  if (err == 0)
    err = alloc_once(t);
  if (err)
    return err;
  ts = realloc(t->task_tstates, (t->nthreads + 1) * sizeof(*ts));
  if (!ts)
    return -ENOMEM;
  t->task_tstates = ts;
  for (size_t i = 0; i < t->nthreads; i++)
    ts[i] = t->threads[i].th.tstate;
  pt = t->py_tasks;
  t->ntask_stale = 0;
  n = pst__py_aio_tasks(&t->py, &t->mem, ts, (int)t->nthreads, pt, TASKS_MAX,
                        t->task_frames, FRAMES_MAX);
  if (n < 0)
    return n;
  sorted = malloc((size_t)(n + 1) * sizeof(*sorted));
  if (!sorted) {
    for (int i = 0; i < n; i++)
      free(pt[i].name);
    return -ENOMEM;
  }
  for (int i = 0; i < n; i++)
    sorted[i] = (struct by_addr){pt[i].addr, i};
  qsort(sorted, (size_t)n, sizeof(*sorted), cmp_addr);
  for (int i = 0; i < n; i++) {
    struct pst_task *k = &t->tasks[i];
    memset(k, 0, sizeof(*k));
    k->id = pt[i].addr;
    if (pt[i].name)
      snprintf(k->name, sizeof(k->name), "%s", pt[i].name);
    for (size_t j = 0; j < t->nthreads && pt[i].tstate; j++)
      if (t->threads[j].th.tstate == pt[i].tstate)
        k->tid = t->threads[j].th.tid;
    if (!k->tid)
      k->no_thread = pt[i].no_thread ? pt[i].no_thread : PST_TASK_ENDED;
    if (k->no_thread == PST_TASK_LOOP_UNKNOWN)
      snprintf(k->loop_type, sizeof(k->loop_type), "%s", t->py.aio.loop_type);
    k->running = pt[i].running;
    k->torn = pt[i].torn;
    k->nframes = pt[i].nframes;
    k->frames = t->task_frames + pt[i].frame0;
    if (k->running)
      running_chain(t, k);
    /* Waiters that are tasks; a plain future awaiting is left out. */
    for (int w = 0; w < pt[i].nwaiters; w++) {
      int at = index_of(sorted, n, pt[i].waiters[w]);
      if (at >= 0 && k->nwaiters < PST_TASK_WAITERS)
        k->waiters[k->nwaiters++] = at;
    }
    free(pt[i].name);
    pt[i].name = NULL;
  }
  free(sorted);
  *out = t->tasks;
  return n;
}

/* Adds tid to tids (n of them, at most max) unless there already or its
 * thread may not be stopped now; the new count. */
static int add_stoppable(struct pst_target *t, pid_t tid, pid_t *tids, int n,
                         int max) {
  for (int j = 0; j < n; j++)
    if (tids[j] == tid)
      return n;
  for (size_t j = 0; j < t->nthreads && n < max; j++)
    if (t->threads[j].th.tid == tid &&
        pst__tthread_may_stop(pst__tthread_state(&t->threads[j], NULL))) {
      tids[n++] = tid;
      break;
    }
  return n;
}

/* The threads to read again stopped (at most max, distinct, that may be
 * stopped now), into tids: those of torn tasks, and, first, those whose
 * running task their sample missed (nstale of them). */
static int reread_threads(struct pst_target *t, const struct pst_task *tk,
                          int n, pid_t *tids, int max, int *nstale) {
  int k = 0;

  for (int i = 0; i < t->ntask_stale; i++)
    k = add_stoppable(t, t->task_stale[i], tids, k, max);
  *nstale = k;
  for (int i = 0; i < n && k < max; i++)
    if (tk[i].torn && tk[i].tid)
      k = add_stoppable(t, tk[i].tid, tids, k, max);
  return k;
}

int pst_target_tasks(struct pst_target *t, int flags,
                     const struct pst_task **out) {
  pid_t tids[16];
  int n = read_tasks(t, out), k, nstale, stopped = 0;

  if (n <= 0 || !*out || !(flags & (PST_SAMPLE_EXACT | PST_SAMPLE_BLOCKING)))
    return n;
  k = reread_threads(t, *out, n, tids, 16, &nstale);
  if (!k)
    return n;
  /* Read again with those loops' threads stopped: their tasks hold still
   * (the rest of the process runs), and a thread whose running task its
   * sample missed (its loop switched tasks since) is walked again first,
   * unless its sample held native frames too. Each is resumed whatever
   * happens. */
  for (int j = 0; j < k; j++)
    if (pst__ptrace_stop(tids[j]) == 0) {
      if (j < nstale && !(flags & PST_SAMPLE_NATIVE))
        pst__target_rewalk(t, tids[j]);
      tids[stopped++] = tids[j];
    }
  if (stopped) {
    t->task_rereads++;
    n = read_tasks(t, out);
  }
  for (int j = 0; j < stopped; j++)
    pst__ptrace_resume(tids[j]);
  return n;
}

int pst_target_tasks_cut(const struct pst_target *t) { return t->py.aio.cut; }

int pst_target_tasks_why(const struct pst_target *t, int n, char *buf,
                         size_t len) {
  if (n == PST_EPYVERSION) {
    snprintf(buf, len,
             "it runs CPython %s: asyncio tasks are read on 3.8+ only",
             t->info.version);
    return 0;
  }
  if (n == PST_ENOSYM) {
    snprintf(buf, len, "it has not imported asyncio");
    return 0;
  }
  if (n == 0) {
    snprintf(buf, len, "no event loop runs a task now");
    return 0;
  }
  snprintf(buf, len, "%s", pst_strerror(n));
  return 1;
}

/* Is name one asyncio made up ("Task-123": the task was not named)? */
static int auto_named(const char *name) {
  size_t n = strlen(name);

  if (strncmp(name, "Task-", 5) || n == 5)
    return 0;
  for (size_t i = 5; i < n; i++)
    if (name[i] < '0' || name[i] > '9')
      return 0;
  return 1;
}

/* What a task's stack is, as one string, interned: "task NAME", or for a
 * task asyncio named itself "task Task-* (CORO)" after the coroutine it
 * wraps, so that a server's thousand request tasks are one stack, not a
 * thousand roots of one sample each. */
static const char *task_marker(struct pst_target *t, const struct pst_task *k) {
  char root[192];

  if (!t->task_names && !(t->task_names = pst__strtab_new()))
    return NULL;
  if (auto_named(k->name))
    snprintf(root, sizeof(root), "task Task-* (%s)",
             k->nframes && k->frames[k->nframes - 1].name
                 ? k->frames[k->nframes - 1].name
                 : "?");
  else
    snprintf(root, sizeof(root), "task %s", k->name[0] ? k->name : "?");
  return pst__strtab_intern(t->task_names, root);
}

int pst_target_task_stack(struct pst_target *t, int i, struct pst_thread *th) {
  const struct pst_task *tk = t->tasks, *k;
  int chain[PST_TASK_CHAIN_MAX], len, torn = 0;
  size_t nf = 0;

  if (!tk || i < 0 || i >= TASKS_MAX)
    return -EINVAL;
  if (!t->task_stack &&
      !(t->task_stack = calloc(PST_TARGET_FRAMES_MAX, sizeof(*t->task_stack))))
    return -ENOMEM;
  len = pst_task_chain(tk, i, chain, PST_TASK_CHAIN_MAX);
  for (int c = 0; c < len; c++)
    torn |= tk[chain[c]].torn;
  if (torn)
    return PST_ETORN;
  k = &tk[i];
  memset(th, 0, sizeof(*th));
  /* A thread of its own (consumers key threads by tid): minus the loop
   * thread's tid, or, with none, below every -TID (tids are below 2^22):
   * one per reason. */
  th->tid = k->tid ? -k->tid : -(1 << 22) - k->no_thread;
  if (k->tid)
    snprintf(th->name, sizeof(th->name), "asyncio tasks of %d", (int)k->tid);
  else
    snprintf(th->name, sizeof(th->name), "asyncio tasks (%s)",
             pst_task_no_thread_str(k->no_thread));
  th->state = 'S';
  th->holds_gil = -1;
  th->exception = -1;
  th->idle = !k->running;
  th->frames = t->task_stack;
  for (int c = 0; c < len && nf < PST_TARGET_FRAMES_MAX; c++) {
    const struct pst_task *w = &tk[chain[c]];
    for (int f = 0; f < w->nframes && nf < PST_TARGET_FRAMES_MAX; f++)
      th->frames[nf++] = w->frames[f];
    if (nf == PST_TARGET_FRAMES_MAX)
      break;
    th->frames[nf] = (struct pst_frame){.kind = PST_FRAME_MARKER};
    th->frames[nf].name = task_marker(t, w);
    th->frames[nf].filename = "";
    if (!th->frames[nf].name)
      return -ENOMEM;
    nf++;
  }
  th->nframes = nf;
  th->truncated = nf == PST_TARGET_FRAMES_MAX;
  return 0;
}
