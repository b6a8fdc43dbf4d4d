/* target.c: one attached Python process: analysis at open, then snapshots of
 * every thread's Python stack (the public API in pystitch.h).
 *
 * Thread identity: a tid is cached with its start time (from /proc); a tid
 * whose start time changed is a new thread, and its thread pointer is read
 * again. Thread pointers are read with ptrace once per thread lifetime.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libc/tsd.h"
#include "proc/maps.h"
#include "proc/mem.h"
#include "proc/proc.h"
#include "proc/ptrace.h"
#include "pystitch.h"
#include "python/python.h"
#include "util/log.h"

#define FRAMES_MAX 1024 /* per thread; deeper stacks are truncated */

struct tid_cache {
  pid_t tid;
  uint64_t starttime;
  uint64_t tp;
  int tp_err;
  char pyname[64]; /* threading's name once read, "" until then */
};

struct pst_target {
  pid_t pid;
  enum pst_arch arch;
  struct pst_mem mem;
  struct pst_maps maps;
  struct pst_tsd tsd;
  struct pst_py py;
  struct pst_target_info info;
  struct tid_cache *cache;
  size_t ncache;
  struct pst_thread *threads;
  size_t nthreads;
  struct pst_frame *pool; /* frames of all threads of the last snapshot */
  size_t pool_cap;
};

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static enum pst_arch host_arch(void) {
#if defined(__aarch64__)
  return PST_ARCH_AARCH64;
#else
  return PST_ARCH_X86_64;
#endif
}

static int check_process(pid_t pid, struct pst_target_info *info) {
  struct pst_proc_status st;
  int err;

  if (pid <= 0)
    return -ESRCH;
  if (pid == getpid())
    return PST_ESELF;
  err = pst_proc_status(pid, &st);
  if (err)
    return err;
  if (st.state == 'Z' || st.state == 'X')
    return PST_EZOMBIE;
  info->pid = pid;
  info->nspid = st.nspid;
  err = pst_proc_exe(pid, info->exe, sizeof(info->exe));
  return err == -EACCES ? -EPERM : err;
}

/* Reads the main thread's pointer into the tid cache. -EPERM when we may
 * not trace it, PST_ETRACED when a debugger already does; other failures
 * are left for the snapshot to report per thread. */
static int first_thread_pointer(struct pst_target *t) {
  struct pst_proc_status st;
  struct tid_cache *c = calloc(1, sizeof(*c));
  char state;

  if (!c)
    return -ENOMEM;
  c->tid = t->pid;
  if (pst_proc_task_stat(t->pid, t->pid, &state, &c->starttime) ||
      state == 'D') {
    free(c); /* in uninterruptible sleep: ptrace would wait for it */
    return 0;
  }
  c->tp_err = pst_ptrace_thread_pointer(t->pid, &c->tp);
  if (c->tp_err == -EPERM || c->tp_err == -EACCES) {
    int err = -EPERM;
    if (pst_proc_status(t->pid, &st) == 0 && st.tracer != 0)
      err = PST_ETRACED;
    free(c);
    return err;
  }
  t->cache = c;
  t->ncache = 1;
  return 0;
}

int pst_target_open(pid_t pid, struct pst_target **out) {
  struct pst_target *t;
  double t0 = now_ms();
  int err;

  t = calloc(1, sizeof(*t));
  if (!t)
    return -ENOMEM;
  t->pid = pid;
  t->arch = host_arch();
  pst_mem_init(&t->mem, pid);
  pst_py_init(&t->py);
  err = check_process(pid, &t->info);
  if (err)
    goto err;
  err = pst_maps_load(pid, &t->maps);
  if (err)
    goto err_perm;
  err = pst_py_analyse(&t->py, pid, &t->maps, &t->mem, t->arch, &t->info);
  if (err)
    goto err_perm;
  err = pst_tsd_analyse(pid, &t->maps, t->arch, &t->tsd);
  if (err)
    goto err;
  snprintf(t->info.libc, sizeof(t->info.libc), "%s", t->tsd.libc_path);
  snprintf(t->info.tsd_method, sizeof(t->info.tsd_method), "%s",
           t->tsd.method);
  t->info.tsd_offset = t->tsd.layout.offset;
  t->info.tsd_multiplier = t->tsd.layout.multiplier;
  t->info.tsd_indirect = t->tsd.layout.indirect;
  t->info.tsd_has_l2 = t->tsd.layout.has_l2;
  t->info.tsd_l2_offset = t->tsd.layout.l2_offset;
  /* Fail early, with the right error, when we may not trace it; the
   * thread pointer read here is cached for the first snapshot. */
  err = first_thread_pointer(t);
  if (err)
    goto err;
  t->info.analysis_ms = now_ms() - t0;
  *out = t;
  return 0;
err_perm:
  if (err == -EACCES)
    err = -EPERM;
err:
  pst_target_close(t);
  return err;
}

void pst_target_close(struct pst_target *t) {
  if (!t)
    return;
  pst_py_exit(&t->py);
  pst_maps_exit(&t->maps);
  pst_mem_exit(&t->mem);
  free(t->cache);
  free(t->threads);
  free(t->pool);
  free(t);
}

const struct pst_target_info *pst_target_info(const struct pst_target *t) {
  return &t->info;
}

/* The cached thread pointer of tid, read with ptrace when the tid is new or
 * was reused (start time changed). A thread in uninterruptible sleep (D) is
 * not stopped (ptrace would wait until it wakes): -EAGAIN, retried at the
 * next snapshot. */
static int thread_pointer(const struct tid_cache *old, size_t nold,
                          struct tid_cache *c, char state) {
  for (size_t i = 0; i < nold; i++) {
    if (old[i].tid == c->tid && old[i].starttime == c->starttime &&
        !old[i].tp_err) {
      c->tp = old[i].tp;
      memcpy(c->pyname, old[i].pyname, sizeof(c->pyname));
      return 0;
    }
  }
  c->tp_err = state == 'D' ? -EAGAIN
                           : pst_ptrace_thread_pointer(c->tid, &c->tp);
  return c->tp_err;
}

/* Fallback mapping: the thread-state list, matched by thread_id == the
 * thread pointer (glibc: pthread_self() == fsbase), else native tid. */
static uint64_t map_by_list(const uint64_t *ts,
                            const uint64_t *tid_of, const uint64_t *native,
                            int nts, pid_t tid, uint64_t tp,
                            enum pst_map_method *method) {
  for (int i = 0; tp && i < nts; i++)
    if (tid_of[i] == tp) {
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

/* Maps one thread to its PyThreadState through the TSD slot, validated by
 * the state's own thread_id and interpreter. */
static uint64_t map_by_tsd(struct pst_target *t, uint64_t tp) {
  uint64_t cand = 0, thread_id, native, interp;

  if (t->py.key < 0 || !tp)
    return 0;
  if (pst_tsd_get(&t->tsd, &t->mem, tp, (unsigned)t->py.key, &cand) || !cand)
    return 0;
  if (pst_py_tstate_ids(&t->py, &t->mem, cand, &thread_id, &native, &interp))
    return 0;
  if (interp != t->py.interp || thread_id != tp) {
    pst_debug("TSD slot of tp 0x%llx holds 0x%llx, not its thread state",
              (unsigned long long)tp, (unsigned long long)cand);
    return 0;
  }
  return cand;
}

static int grow_pool(struct pst_target *t, size_t need) {
  struct pst_frame *p;
  size_t cap = t->pool_cap ? t->pool_cap : 1024;

  if (need <= t->pool_cap)
    return 0;
  while (cap < need)
    cap *= 2;
  p = realloc(t->pool, cap * sizeof(*p));
  if (!p)
    return -ENOMEM;
  t->pool = p;
  t->pool_cap = cap;
  return 0;
}

/* The thread's name as threading knows it, read once per thread from its
 * Thread object; the main thread, which has no _bootstrap_inner frame, is
 * threading's "MainThread". Else /proc comm stays. */
static void set_name(struct pst_target *t, struct pst_thread *x,
                     struct tid_cache *c, uint64_t thread_obj) {
  char *name = NULL;

  if (!c->pyname[0] && thread_obj) {
    int err = pst_py_thread_name(&t->py, &t->mem, thread_obj, &name);
    if (err == 0) {
      snprintf(c->pyname, sizeof(c->pyname), "%s", name);
      free(name);
    } else {
      pst_debug("thread %d: Thread object 0x%llx: no name (%s)", (int)x->tid,
                (unsigned long long)thread_obj, pst_strerror(err));
    }
  }
  if (!c->pyname[0] && x->tid == t->pid)
    snprintf(c->pyname, sizeof(c->pyname), "MainThread");
  if (c->pyname[0]) {
    snprintf(x->name, sizeof(x->name), "%s", c->pyname);
    x->name_from_python = 1;
  }
}

#define TSTATE_LIST_MAX 4096

/* The interpreter's thread states with their ids, for the list fallback. */
struct tstate_list {
  uint64_t ts[TSTATE_LIST_MAX], tid_of[TSTATE_LIST_MAX],
      native[TSTATE_LIST_MAX];
  int n;
};

static struct tstate_list *read_tstate_list(struct pst_target *t) {
  struct tstate_list *l = malloc(sizeof(*l));
  uint64_t interp;

  if (!l)
    return NULL;
  l->n = pst_py_tstates(&t->py, &t->mem, l->ts, TSTATE_LIST_MAX);
  for (int k = 0; k < l->n; k++)
    if (pst_py_tstate_ids(&t->py, &t->mem, l->ts[k], &l->tid_of[k],
                          &l->native[k], &interp))
      l->tid_of[k] = l->native[k] = 0;
  return l;
}

int pst_target_snapshot(struct pst_target *t,
                        const struct pst_thread **threads) {
  struct tstate_list *list = NULL;
  struct tid_cache *cache = NULL;
  struct pst_thread *th = NULL;
  pid_t *tids = NULL;
  size_t used = 0;
  uint64_t gil = 0, thread_obj;
  int n, err, gil_err;

  n = pst_proc_tasks(t->pid, &tids);
  if (n < 0)
    return n;
  cache = calloc((size_t)n + 1, sizeof(*cache));
  th = calloc((size_t)n + 1, sizeof(*th));
  if (!cache || !th) {
    err = -ENOMEM;
    goto out;
  }
  gil_err = pst_py_gil_holder(&t->py, &t->mem, &gil);
  for (int i = 0; i < n; i++) {
    struct pst_thread *x = &th[i];
    struct tid_cache *c = &cache[i];

    x->tid = c->tid = tids[i];
    x->holds_gil = -1;
    if (pst_proc_task_stat(t->pid, x->tid, &x->state, &c->starttime))
      x->state = '?';
    x->idle = x->state != 'R';
    pst_proc_task_comm(t->pid, x->tid, x->name, sizeof(x->name));
    if (thread_pointer(t->cache, t->ncache, c, x->state) == 0)
      x->fsbase = c->tp;
    x->tstate = map_by_tsd(t, x->fsbase);
    if (x->tstate) {
      x->method = PST_MAP_TSD;
    } else {
      if (!list && !(list = read_tstate_list(t))) {
        err = -ENOMEM;
        goto out;
      }
      x->tstate = map_by_list(list->ts, list->tid_of, list->native, list->n,
                              x->tid, x->fsbase, &x->method);
    }
    if (!x->tstate) {
      x->error = c->tp_err ? c->tp_err : PST_ENOTHREADSTATE;
      continue;
    }
    if (!gil_err)
      x->holds_gil = gil == x->tstate;
    err = grow_pool(t, used + FRAMES_MAX);
    if (err)
      goto out;
    /* Frames are placed at pool offsets; pointers fixed up below, after
     * the pool stops moving. */
    x->frames = (struct pst_frame *)(uintptr_t)used;
    err = pst_py_walk(&t->py, &t->mem, x->tstate, t->pool + used, FRAMES_MAX,
                      &x->truncated, &thread_obj);
    set_name(t, x, c, thread_obj);
    if (err < 0) {
      x->error = err;
      x->nframes = 0;
    } else {
      x->nframes = (size_t)err;
      used += (size_t)err;
    }
  }
  for (int i = 0; i < n; i++)
    th[i].frames = th[i].tstate ? t->pool + (uintptr_t)th[i].frames : NULL;
  free(t->cache);
  free(t->threads);
  t->cache = cache;
  t->ncache = (size_t)n;
  t->threads = th;
  t->nthreads = (size_t)n;
  cache = NULL;
  th = NULL;
  *threads = t->threads;
  err = n;
out:
  free(list);
  free(cache);
  free(th);
  free(tids);
  return err;
}
