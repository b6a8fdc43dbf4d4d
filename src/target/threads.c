/* threads.c: a target's OS threads: who they are across refreshes (tid and
 * start time), their thread pointers, their PyThreadStates, their names.
 *
 * A tid is tracked with its start time (from /proc); a tid whose start
 * time changed is a new thread, and its thread pointer is read again.
 * Thread pointers are read with ptrace once per thread lifetime (here, at
 * refresh); samples only read memory and each thread's open stat file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "native/module.h"
#include "native/origin.h"
#include "native/resolve.h"
#include "proc/proc.h"
#include "proc/ptrace.h"
#include "target/internal.h"
#include "util/array.h"
#include "util/clock.h"
#include "util/esc.h"
#include "util/log.h"

int pst__tthread_may_stop(char state) {
  return state != 'D' && state != 'T' && state != 't';
}

/* The thread pointer of tid (one ptrace stop), unless it may not be
 * stopped now, or the caller's deadline for stops passed
 * (pst_target_set_stop_deadline()): -EAGAIN, read at a later refresh. */
static int read_tp(struct pst_target *t, pid_t tid, char state, uint64_t *tp) {
  if (!pst__tthread_may_stop(state))
    return -EAGAIN;
  if (t->stop_deadline_ns && pst__now_ns() > t->stop_deadline_ns) {
    t->stops_deferred++;
    return -EAGAIN;
  }
  return pst__ptrace_thread_pointer(tid, tp);
}

void pst__tthread_init(struct pst_target *t, struct pst__tthread *x, pid_t tid,
                       char state, uint64_t starttime) {
  uint64_t run, wait;

  memset(x, 0, sizeof(*x));
  x->th.tid = tid;
  x->th.holds_gil = -1;
  x->th.exception = -1;
  x->starttime = starttime;
  pst__proc_task_comm(t->pid, tid, x->th.name, sizeof(x->th.name));
  snprintf(x->comm, sizeof(x->comm), "%s", x->th.name);
  x->statfd = pst__proc_task_stat_open(t->pid, tid);
  x->schedfd = pst__proc_task_schedstat_open(t->pid, tid);
  x->sysfd = -1;
  x->tp_err = read_tp(t, tid, state, &x->th.fsbase);
  x->held = x->tp_err ? 0 : state; /* stopped: the letter from before */
  /* Its CPU time counts from here (PST_SAMPLE_ON_CPU), or from its start
   * when that was since we opened the process: a short-lived thread
   * found by a refresh is not cut to what it runs after. */
  if (pst__proc_schedstat_fd(x->schedfd, &run, &wait) == 0 &&
      (!t->open_ticks || starttime < t->open_ticks))
    x->run_ns = run;
}

void pst__tthread_exit(struct pst__tthread *x) {
  if (x->statfd >= 0)
    close(x->statfd);
  if (x->schedfd >= 0)
    close(x->schedfd);
  if (x->sysfd >= 0)
    close(x->sysfd);
  x->statfd = x->schedfd = x->sysfd = -1;
  free(x->inner_hint);
  x->inner_hint = NULL;
}

/* ---- mapping a thread to its PyThreadState ---- */

/* A thread state's native_thread_id (3.8+, 0 before) may name thread tid:
 * in the target's pid namespace tids are not ours, so only there is any
 * value accepted. A state whose id names another thread is a stale one
 * (its thread ended; the new thread reuses its pthread struct, hence its
 * thread pointer and TSD slots, before it binds its own state). */
static int native_may_be(const struct pst_target *t, uint64_t native,
                         pid_t tid) {
  return !native || t->info.nspid != t->pid || native == (uint64_t)tid;
}

/* Fallback mapping: the thread-state list, matched by thread_id == the
 * thread pointer (glibc: pthread_self() == fsbase), else native tid. */
static uint64_t map_by_list(const struct pst_target *t, const uint64_t *ts,
                            const uint64_t *tid_of, const uint64_t *native,
                            int nts, pid_t tid, uint64_t tp,
                            enum pst_map_method *method) {
  for (int i = 0; tp && i < nts; i++)
    if (tid_of[i] == tp && native_may_be(t, native[i], tid)) {
      *method = PST_MAP_LIST;
      return ts[i];
    }
  for (int i = 0; i < nts; i++)
    if (native[i] && native[i] == (uint64_t)tid) {
      *method = PST_MAP_LIST_TID;
      return ts[i];
    }
  return 0;
}

/* Maps one thread to its PyThreadState through its thread pointer: the
 * TSD slot of the key (3.6-3.14) or the thread-local (3.15+), validated by
 * the state's own thread_id and interpreter. */
static uint64_t map_by_tp(struct pst_target *t, uint64_t tp, pid_t tid) {
  uint64_t cand = 0, thread_id, native, interp;

  if (!tp)
    return 0;
  if (t->py.tls) { /* 3.15+: the thread-local, at tp + its offset */
    if (pst__mem_read(&t->mem, tp + (uint64_t)t->py.tls_offset, &cand,
                      sizeof(cand)) ||
        !cand)
      return 0;
  } else if (t->py.key < 0 ||
             pst__tsd_get(&t->tsd, &t->mem, tp, (unsigned)t->py.key, &cand) ||
             !cand)
    return 0;
  if (pst__py_tstate_ids(&t->py, &t->mem, cand, &thread_id, &native, &interp))
    return 0;
  if (interp != t->py.interp || thread_id != tp ||
      !native_may_be(t, native, tid)) {
    pst__debug("TSD slot of tp 0x%llx holds 0x%llx, not its thread state",
               (unsigned long long)tp, (unsigned long long)cand);
    return 0;
  }
  return cand;
}

#define TSTATE_LIST_MAX 4096

/* The interpreter's thread states with their ids, for the list fallback. */
struct tstate_list {
  uint64_t ts[TSTATE_LIST_MAX], tid_of[TSTATE_LIST_MAX],
      native[TSTATE_LIST_MAX], interp[TSTATE_LIST_MAX];
  int n;
};

static struct tstate_list *read_tstate_list(struct pst_target *t) {
  struct tstate_list *l = malloc(sizeof(*l));
  uint64_t interp;

  if (!l)
    return NULL;
  l->n = pst__py_tstates(&t->py, &t->mem, l->ts, TSTATE_LIST_MAX);
  for (int k = 0; k < l->n; k++)
    if (pst__py_tstate_ids(&t->py, &t->mem, l->ts[k], &l->tid_of[k],
                           &l->native[k], &interp))
      l->tid_of[k] = l->native[k] = 0;
  return l;
}

/* ---- sub-interpreters ---- */

/* Every thread state of the interpreters other than the main one, with
 * their ids and interpreters (newest interpreter first), or NULL. */
static struct tstate_list *read_sub_tstates(struct pst_target *t,
                                            const uint64_t *interps, int ni) {
  struct tstate_list *l = calloc(1, sizeof(*l));

  for (int k = 0; l && k < ni; k++) {
    int m;
    if (interps[k] == t->py.interp)
      continue;
    m = pst__py_tstates_of(&t->py, &t->mem, interps[k], l->ts + l->n,
                           TSTATE_LIST_MAX - l->n);
    for (int j = l->n; m > 0 && j < l->n + m; j++)
      if (pst__py_tstate_ids(&t->py, &t->mem, l->ts[j], &l->tid_of[j],
                             &l->native[j], &l->interp[j]) ||
          l->interp[j] != interps[k])
        l->tid_of[j] = l->native[j] = 0; /* matches no thread */
    if (m > 0)
      l->n += m;
  }
  return l;
}

/* With sub-interpreters: a thread with no state in the main interpreter
 * is mapped to its state in another (a thread started there); one with a
 * state in the main interpreter gets its state in another as inner_tstate,
 * whose frames go on top of its own while it runs there (the newest
 * interpreter's when there are several). Looked at every refresh: a
 * sub-interpreter's run creates and deletes its thread state (3.12+). */
static void map_subinterpreters(struct pst_target *t,
                                struct pst__tthread *threads, size_t n) {
  uint64_t interps[PST_PY_INTERPS_MAX] = {0};
  struct tstate_list *l = NULL;
  int ni;

  ni = pst__py_interps(&t->py, &t->mem, interps, PST_PY_INTERPS_MAX);
  if (ni > 1 && !(l = read_sub_tstates(t, interps, ni)))
    ni = 0; /* -ENOMEM: none this refresh */
  for (size_t i = 0; i < n; i++) {
    struct pst__tthread *x = &threads[i];
    enum pst_map_method method;
    uint64_t tp = x->tp_err ? 0 : x->th.fsbase, ts = 0, interp = 0;

    if (ni > 1) {
      ts = map_by_list(t, l->ts, l->tid_of, l->native, l->n, x->th.tid, tp,
                       &method);
      for (int k = 0; ts && k < l->n; k++)
        if (l->ts[k] == ts)
          interp = l->interp[k];
    }
    if (!x->th.tstate && ts) { /* a thread of a sub-interpreter only */
      x->th.tstate = ts;
      x->th.method = method;
      x->interp = interp;
      x->hint.owner_interp = interp;
      ts = 0;
    } else if (x->interp) { /* mapped there already: nothing on top */
      ts = 0;
    }
    if (ts != x->inner_tstate && ts) {
      if (!x->inner_hint && !(x->inner_hint = malloc(sizeof(*x->inner_hint))))
        ts = 0;
      else
        *x->inner_hint =
            (struct pst__py_hint){.owner_interp = interp,
                                  .owner_thread_id = tp,
                                  .owner_native_id = x->hint.owner_native_id};
    }
    x->inner_tstate = ts;
  }
  free(l);
}

/* ---- names ---- */

void pst__tthread_set_name(struct pst_target *t, struct pst__tthread *x,
                           uint64_t thread_obj) {
  char *name = NULL;

  if (!x->pyname[0] && thread_obj) {
    int err = pst__py_thread_name(&t->py, &t->mem, thread_obj, &name);
    if (err == 0) {
      pst__utf8_copy(x->pyname, sizeof(x->pyname), name);
      free(name);
    } else {
      pst__debug("thread %d: Thread object 0x%llx: no name (%s)",
                 (int)x->th.tid, (unsigned long long)thread_obj,
                 pst_strerror(err));
    }
  }
  if (!x->pyname[0] && x->th.tid == t->pid)
    snprintf(x->pyname, sizeof(x->pyname), "MainThread");
  if (x->pyname[0]) {
    pst__utf8_copy(x->th.name, sizeof(x->th.name), x->pyname);
    x->th.name_from_python = 1;
  }
}

/* Names from the interpreter's thread registry (threading._active: ident
 * -> Thread), so that a name never depends on a stack read: read for the
 * threads whose name is not known yet, whose Thread object changed, or
 * whose name may have been renamed (one read for all). The Thread object
 * of _bootstrap_inner's frame (pst__tthread_set_name()) is the second
 * source, for when the registry cannot be read. */
#define REGISTRY_MAX 65536

static int by_ident(const void *a, const void *b) {
  uint64_t x = ((const struct pst__py_thread_ent *)a)->ident;
  uint64_t y = ((const struct pst__py_thread_ent *)b)->ident;
  return (x > y) - (x < y);
}

static void refresh_names(struct pst_target *t) {
  size_t nrefs = 0, max;
  int need = 0, n;

  if (pst__array_reserve((void **)&t->refs, &t->refs_cap, t->nthreads + 1,
                         sizeof(*t->refs)) ||
      pst__array_reserve((void **)&t->changed, &t->changed_cap, t->nthreads + 1,
                         1))
    return;
  for (size_t i = 0; i < t->nthreads; i++) {
    struct pst__tthread *x = &t->threads[i];
    if (x->name_ref.str)
      t->refs[nrefs++] = x->name_ref;
    need |= x->th.tstate && !x->pyname[0] && !x->tp_err;
  }
  memset(t->changed, 0, t->nthreads + 1);
  if (nrefs && pst__py_thread_names_changed(&t->py, &t->mem, t->refs,
                                            (int)nrefs, t->changed) == 0)
    for (size_t k = 0; k < nrefs; k++)
      need |= t->changed[k];
  /* Room for every thread and some that are leaving: a registry larger
   * than that leaves some names for the next refresh. */
  max = t->nthreads * 2 + 64;
  if (max > REGISTRY_MAX)
    max = REGISTRY_MAX;
  if (!need ||
      pst__array_reserve((void **)&t->reg, &t->reg_cap, max, sizeof(*t->reg)))
    return;
  n = pst__py_thread_registry(&t->py, &t->mem, t->reg, (int)max);
  if (n < 0) {
    pst__debug("process %d: thread registry: %s", (int)t->pid, pst_strerror(n));
    return;
  }
  /* Sorted by ident, each thread's entry is found by binary search. */
  qsort(t->reg, (size_t)n, sizeof(*t->reg), by_ident);
  nrefs = 0;
  for (size_t i = 0; i < t->nthreads; i++) {
    struct pst__tthread *x = &t->threads[i];
    int renamed = x->name_ref.str && t->changed[nrefs++];
    uint64_t obj = 0;
    char *name = NULL;

    if (!x->th.tstate || x->tp_err || !x->th.fsbase)
      continue;
    if (x->hint.owner_thread_id) {
      struct pst__py_thread_ent key = {x->hint.owner_thread_id, 0};
      const struct pst__py_thread_ent *hit =
          bsearch(&key, t->reg, (size_t)n, sizeof(*t->reg), by_ident);
      obj = hit ? hit->thread_obj : 0;
    }
    if (!obj || (obj == x->thread_obj && x->pyname[0] && !renamed))
      continue;
    if (pst__py_thread_name_ref(&t->py, &t->mem, obj, &name, &x->name_ref)) {
      x->name_ref.str = 0;
      continue;
    }
    x->thread_obj = obj;
    pst__utf8_copy(x->pyname, sizeof(x->pyname), name);
    pst__utf8_copy(x->th.name, sizeof(x->th.name), name);
    x->th.name_from_python = 1;
    free(name);
  }
}

/* A thread with no Python state is named by what started it (its start
 * routine, from glibc's struct pthread, symbolised without the unwinder),
 * unless the program named it (its comm differs from the main thread's):
 * "libgomp worker", "pthreadpool worker", a std::thread's callable, or
 * "native thread TID". Looked at once per thread. */
static void name_native(struct pst_target *t) {
  const char *main_comm = NULL;

  for (size_t i = 0; i < t->nthreads; i++)
    if (t->threads[i].th.tid == t->pid)
      main_comm = t->threads[i].comm;
  for (size_t i = 0; i < t->nthreads; i++) {
    struct pst__tthread *x = &t->threads[i];
    struct pst__origin o;
    uint64_t fn = 0, arg = 0;
    unsigned pending;
    int err;

    if (x->th.tstate || x->origin_done || x->tp_err || !x->th.fsbase ||
        x->th.tid == t->pid)
      continue;
    x->origin_done = 1;
    if (pst__target_modcache(t))
      return;
    if (!t->resolver && pst__resolver_new(t->pid, t->modcache, &t->resolver))
      return;
    err = pst__tsd_start_routine(&t->tsd, &t->mem, x->th.fsbase, &fn, &arg);
    pending = pst__resolver_pending(t->resolver);
    if (err == 0)
      pst__origin_describe(t->resolver, &t->mem, fn, arg, &o);
    if (err == 0 && pst__resolver_pending(t->resolver) != pending) {
      x->origin_done = 0; /* a table it needs is being read: next refresh */
      x->name_pending = 1;
      continue;
    }
    x->name_pending = 0;
    if (err)
      pst__origin_unknown(
          err == -ENOSYS ? t->tsd.start_method : pst_strerror(err), &o);
    snprintf(x->th.origin, sizeof(x->th.origin), "%s", o.detail);
    pst__origin_thread_name(x->comm, main_comm, &o, x->th.tid, x->th.name,
                            sizeof(x->th.name));
  }
}

/* The process's role (multiprocessing's name) comes from its main
 * thread's stack: walked here while it is not known, so that it is known
 * before the first sample, even when that thread sleeps and samples never
 * walk it. */
static void probe_role(struct pst_target *t) {
  uint64_t top[2];
  int truncated;

  if (t->role[0] || t->py.process_obj)
    return;
  if (!t->probe &&
      !(t->probe = calloc(PST_TARGET_FRAMES_MAX, sizeof(*t->probe))))
    return;
  for (size_t i = 0; i < t->nthreads; i++) {
    struct pst__tthread *x = &t->threads[i];
    if (x->th.tid != t->pid || !x->th.tstate)
      continue;
    if (pst__py_walk(&t->py, &t->mem, x->th.tstate, NULL, NULL, t->probe,
                     PST_TARGET_FRAMES_MAX, &truncated, NULL, top) >= 0)
      pst__target_update_role(t);
  }
}

/* ---- refresh ---- */

/* A tid and where it is in an array, sorted by tid: a refresh matches
 * thousands of threads against the last refresh's by binary search, not
 * by a scan per thread (5000 threads: 25M comparisons a refresh). */
struct tid_at {
  pid_t tid;
  int at;
};

static int by_tid(const void *a, const void *b) {
  pid_t x = ((const struct tid_at *)a)->tid,
        y = ((const struct tid_at *)b)->tid;
  return (x > y) - (x < y);
}

/* tids[0..n) as a sorted index (NULL when out of memory). */
static struct tid_at *tid_index(const pid_t *tids, size_t n) {
  struct tid_at *ix = malloc((n + 1) * sizeof(*ix));

  if (!ix)
    return NULL;
  for (size_t i = 0; i < n; i++)
    ix[i] = (struct tid_at){tids[i], (int)i};
  qsort(ix, n, sizeof(*ix), by_tid);
  return ix;
}

/* Where tid is in the array ix indexes, or -1. */
static int find_tid(const struct tid_at *ix, size_t n, pid_t tid) {
  struct tid_at key = {tid, 0};
  const struct tid_at *hit = bsearch(&key, ix, n, sizeof(*ix), by_tid);

  return hit ? hit->at : -1;
}

/* Known threads that the task listing left out but that still live (their
 * open stat file still reads, not a zombie): /proc/PID/task can skip the
 * thread after one that exits while the directory is read, and a live
 * thread missing from one refresh would lose its samples, name and state.
 * Appends them to *tids (n of them); returns the new count or -ENOMEM. */
static int add_missed(struct pst_target *t, pid_t **tids, int n,
                      const struct tid_at *listed) {
  int m = n;

  for (size_t k = 0; k < t->nthreads; k++) {
    const struct pst__tthread *x = &t->threads[k];
    char state = '?';
    uint64_t start = 0;
    pid_t *nv;

    if (find_tid(listed, (size_t)n, x->th.tid) >= 0 || x->statfd < 0 ||
        pst__proc_stat_fd(x->statfd, &state, &start) || state == 'Z' ||
        state == 'X' || start != x->starttime)
      continue;
    nv = realloc(*tids, ((size_t)m + 1) * sizeof(**tids));
    if (!nv)
      return -ENOMEM;
    *tids = nv;
    (*tids)[m++] = x->th.tid;
    t->missed_listing++;
  }
  return m;
}

#define CHECK_SLICE 1024 /* known threads whose liveness a refresh reads */

int pst_target_refresh(struct pst_target *t) {
  struct tstate_list *list = NULL;
  struct pst__tthread *threads = NULL;
  struct tid_at *listed = NULL, *known = NULL;
  pid_t *tids = NULL, *old = NULL;
  int n, err = 0, alive = 0;
  size_t slices;

  n = pst__proc_tasks(t->pid, &tids);
  if (n < 0)
    return n;
  slices = (t->nthreads + CHECK_SLICE - 1) / CHECK_SLICE;
  if (!slices)
    slices = 1;
  t->refreshes++;
  old = malloc((t->nthreads + 1) * sizeof(*old));
  listed = tid_index(tids, (size_t)n);
  if (!old || !listed)
    goto nomem;
  if ((n = add_missed(t, &tids, n, listed)) < 0)
    goto nomem;
  for (size_t k = 0; k < t->nthreads; k++)
    old[k] = t->threads[k].th.tid;
  known = tid_index(old, t->nthreads);
  threads = calloc((size_t)n + 1, sizeof(*threads));
  if (!known || !threads)
    goto nomem;
  for (int i = 0; i < n; i++) {
    struct pst__tthread *x = &threads[i];
    uint64_t starttime = 0, run, wait;
    char state = '?';
    int at = find_tid(known, t->nthreads, tids[i]);
    size_t k = at < 0 ? t->nthreads : (size_t)at;

    /* A known thread's open stat file names the same thread for as long
     * as it lives (it fails once the thread is gone, even if the tid is
     * reused): no open/close per thread and refresh. Its schedstat tells
     * the same for a fifth of the cost, enough for a thread that is not
     * the leader (the only one that stays listed as a zombie) and whose
     * state letter is not needed (its thread pointer was read): 5000
     * threads, 15 -> 4 ms a refresh. A thread that ended is no longer
     * listed; the read is for a tid reused by a new thread, and with
     * more than CHECK_SLICE threads a refresh reads a slice of them in
     * turn (5000 threads: each every 5th refresh, ~1 s; the read was 20 ms
     * of a 25 ms refresh, which made the next tick late). */
    if (k < t->nthreads && tids[i] != t->pid && !t->threads[k].tp_err &&
        t->threads[k].schedfd >= 0 &&
        ((k / CHECK_SLICE % slices != t->refreshes % slices &&
          !t->threads[k].recheck) ||
         pst__proc_schedstat_fd(t->threads[k].schedfd, &run, &wait) == 0)) {
      state = t->threads[k].last_state ? t->threads[k].last_state : 'S';
      starttime = t->threads[k].starttime;
    } else if (k == t->nthreads ||
               pst__proc_stat_fd(t->threads[k].statfd, &state, &starttime)) {
      pst__proc_task_stat(t->pid, tids[i], &state, &starttime);
    }
    alive += state != 'Z' && state != 'X' && state != '?';
    if (k < t->nthreads && t->threads[k].starttime != starttime)
      k = t->nthreads;
    if (k < t->nthreads) { /* known: move it over */
      *x = t->threads[k];
      x->recheck = 0; /* read above */
      t->threads[k].statfd = t->threads[k].schedfd = t->threads[k].sysfd = -1;
      t->threads[k].inner_hint = NULL;                 /* moved over too */
      if (x->tp_err && pst__tthread_may_stop(state)) { /* retry a failed read */
        x->tp_err = read_tp(t, x->th.tid, state, &x->th.fsbase);
        x->held = x->tp_err ? 0 : state;
      }
    } else {
      pst__tthread_init(t, x, tids[i], state, starttime);
    }
    if (!x->th.tstate)
      x->interp = 0;
    /* Whose thread state a walk must find (pst__py_hint.owner_*). */
    x->hint.owner_interp = x->interp ? x->interp : t->py.interp;
    x->hint.owner_thread_id = x->tp_err ? 0 : x->th.fsbase;
    if (t->info.nspid == t->pid) /* else learnt at the first walk */
      x->hint.owner_native_id = (uint64_t)x->th.tid;
    /* Unmapped threads are mapped again: a native thread may enter Python
     * later (PyGILState_Ensure). */
    if (x->th.tstate)
      continue;
    x->th.tstate = map_by_tp(t, x->tp_err ? 0 : x->th.fsbase, x->th.tid);
    if (x->th.tstate) {
      x->th.method = t->py.tls ? PST_MAP_TLS : PST_MAP_TSD;
      continue;
    }
    if (!list && !(list = read_tstate_list(t))) {
      err = -ENOMEM;
      n = i + 1; /* the rest were never initialised */
      break;
    }
    x->th.tstate =
        map_by_list(t, list->ts, list->tid_of, list->native, list->n, x->th.tid,
                    x->tp_err ? 0 : x->th.fsbase, &x->th.method);
  }
  if (!err)
    map_subinterpreters(t, threads, (size_t)n);
  /* Kept stacks (sample.c) live in the threads' slots: they outlive a
   * refresh that found the same threads, in the same order, with the same
   * thread states. */
  if (err || (size_t)n != t->nthreads)
    t->still_ok = 0;
  for (size_t k = 0; t->still_ok && k < t->nthreads; k++)
    if (threads[k].th.tid != t->threads[k].th.tid ||
        threads[k].starttime != t->threads[k].starttime ||
        threads[k].th.tstate != t->threads[k].th.tstate ||
        threads[k].inner_tstate != t->threads[k].inner_tstate ||
        threads[k].interp != t->threads[k].interp)
      t->still_ok = 0;
  for (size_t k = 0; k < t->nthreads; k++)
    pst__tthread_exit(&t->threads[k]);
  free(t->threads);
  t->threads = threads;
  t->nthreads = (size_t)n;
  free(list);
  free(tids);
  free(old);
  free(listed);
  free(known);
  if (!err) {
    refresh_names(t);
    if (!t->warming)
      name_native(t);
    probe_role(t);
  }
  /* An exited process stays listed until its parent reaps it: with no
   * thread left but zombies, it is gone. */
  if (!err && !alive)
    err = -ESRCH;
  return err ? err : n;
nomem:
  t->still_ok = 0;
  free(tids);
  free(old);
  free(listed);
  free(known);
  free(threads);
  return -ENOMEM;
}
