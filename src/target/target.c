/* target.c: one attached Python process: analysis at open, then snapshots of
 * every thread's Python stack (the public API in pystitch.h).
 *
 * Thread identity: a tid is tracked with its start time (from /proc); a
 * tid whose start time changed is a new thread, and its thread pointer is
 * read again. Thread pointers are read with ptrace once per thread
 * lifetime (pst_target_refresh); samples only read memory and each
 * thread's already open /proc stat file (pst_target_sample).
 */
#include <errno.h>
#include <fcntl.h>
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

/* One OS thread as the target tracks it between refreshes. */
struct slot {
  struct pst_thread th;  /* fsbase, tstate, method, name: kept; the rest is
                            per sample */
  uint64_t starttime;    /* with the tid, identifies the thread */
  int tp_err;            /* why fsbase could not be read (retried) */
  int statfd;            /* /proc/PID/task/TID/stat, read per sample */
  char pyname[64];       /* threading's name once read, "" until then */
  uint64_t native_id;    /* th.tstate's native_thread_id as first seen
                            (0 before 3.8): see still_owned() */
};

struct pst_target {
  pid_t pid;
  enum pst_arch arch;
  struct pst_mem mem;
  struct pst_maps maps;
  struct pst_tsd tsd;
  struct pst_py py;
  struct pst_target_info info;
  struct slot *slots;
  size_t nslots;
  struct pst_thread *view; /* what the last sample returned */
  struct pst_frame *pool; /* frames of all threads of the last sample */
  uint64_t torn_retries;   /* walks redone because the stack moved */
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

static void slot_exit(struct slot *sl) {
  if (sl->statfd >= 0)
    close(sl->statfd);
  sl->statfd = -1;
}

/* Starts tracking thread tid: its start time, /proc name, stat fd, and its
 * thread pointer (one ptrace stop; not for a thread in uninterruptible
 * sleep, which ptrace would wait for: retried at the next refresh). */
static void slot_init(struct pst_target *t, struct slot *sl, pid_t tid,
                      char state, uint64_t starttime) {
  char path[80];

  memset(sl, 0, sizeof(*sl));
  sl->th.tid = tid;
  sl->th.holds_gil = -1;
  sl->starttime = starttime;
  pst_proc_task_comm(t->pid, tid, sl->th.name, sizeof(sl->th.name));
  snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)t->pid,
           (int)tid);
  sl->statfd = open(path, O_RDONLY | O_CLOEXEC);
  sl->tp_err = state == 'D' ? -EAGAIN
                            : pst_ptrace_thread_pointer(tid, &sl->th.fsbase);
}

/* Reads the main thread's pointer at open. -EPERM when we may not trace
 * it, PST_ETRACED when a debugger already does; other failures are left
 * for the samples to report per thread. */
static int first_thread_pointer(struct pst_target *t) {
  struct pst_proc_status st;
  uint64_t starttime;
  char state;

  if (pst_proc_task_stat(t->pid, t->pid, &state, &starttime))
    return 0;
  t->slots = calloc(1, sizeof(*t->slots));
  if (!t->slots)
    return -ENOMEM;
  slot_init(t, &t->slots[0], t->pid, state, starttime);
  t->nslots = 1;
  if (t->slots[0].tp_err == -EPERM || t->slots[0].tp_err == -EACCES) {
    if (pst_proc_status(t->pid, &st) == 0 && st.tracer != 0)
      return PST_ETRACED;
    return -EPERM;
  }
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
  for (size_t i = 0; i < t->nslots; i++)
    slot_exit(&t->slots[i]);
  free(t->slots);
  free(t->view);
  free(t->pool);
  free(t);
}

const struct pst_target_info *pst_target_info(const struct pst_target *t) {
  return &t->info;
}

/* Fallback mapping: the thread-state list, matched by thread_id == the
 * thread pointer (glibc: pthread_self() == fsbase), else native tid. */
static uint64_t map_by_list(const uint64_t *ts, const uint64_t *tid_of,
                            const uint64_t *native, int nts, pid_t tid,
                            uint64_t tp, enum pst_map_method *method) {
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

/* The thread's name as threading knows it, read once per thread from its
 * Thread object; the main thread, which has no _bootstrap_inner frame, is
 * threading's "MainThread". Else /proc comm stays. */
static void set_name(struct pst_target *t, struct slot *sl,
                     uint64_t thread_obj) {
  char *name = NULL;

  if (!sl->pyname[0] && thread_obj) {
    int err = pst_py_thread_name(&t->py, &t->mem, thread_obj, &name);
    if (err == 0) {
      snprintf(sl->pyname, sizeof(sl->pyname), "%s", name);
      free(name);
    } else {
      pst_debug("thread %d: Thread object 0x%llx: no name (%s)",
                (int)sl->th.tid, (unsigned long long)thread_obj,
                pst_strerror(err));
    }
  }
  if (!sl->pyname[0] && sl->th.tid == t->pid)
    snprintf(sl->pyname, sizeof(sl->pyname), "MainThread");
  if (sl->pyname[0]) {
    snprintf(sl->th.name, sizeof(sl->th.name), "%s", sl->pyname);
    sl->th.name_from_python = 1;
  }
}

int pst_target_refresh(struct pst_target *t) {
  struct tstate_list *list = NULL;
  struct slot *slots;
  pid_t *tids = NULL;
  int n, err = 0, alive = 0;

  n = pst_proc_tasks(t->pid, &tids);
  if (n < 0)
    return n;
  slots = calloc((size_t)n + 1, sizeof(*slots));
  if (!slots) {
    free(tids);
    return -ENOMEM;
  }
  for (int i = 0; i < n; i++) {
    struct slot *sl = &slots[i];
    uint64_t starttime = 0;
    char state = '?';
    size_t k;

    pst_proc_task_stat(t->pid, tids[i], &state, &starttime);
    alive += state != 'Z' && state != 'X' && state != '?';
    for (k = 0; k < t->nslots; k++)
      if (t->slots[k].th.tid == tids[i] &&
          t->slots[k].starttime == starttime)
        break;
    if (k < t->nslots) { /* known: move it over */
      *sl = t->slots[k];
      t->slots[k].statfd = -1;
      if (sl->tp_err && state != 'D') /* retry a failed pointer read */
        sl->tp_err = pst_ptrace_thread_pointer(sl->th.tid, &sl->th.fsbase);
    } else {
      slot_init(t, sl, tids[i], state, starttime);
    }
    /* Unmapped threads are mapped again: a native thread may enter Python
     * later (PyGILState_Ensure). */
    if (sl->th.tstate)
      continue;
    sl->th.tstate = map_by_tsd(t, sl->tp_err ? 0 : sl->th.fsbase);
    if (sl->th.tstate) {
      sl->th.method = PST_MAP_TSD;
      continue;
    }
    if (!list && !(list = read_tstate_list(t))) {
      err = -ENOMEM;
      break;
    }
    sl->th.tstate = map_by_list(list->ts, list->tid_of, list->native,
                                list->n, sl->th.tid,
                                sl->tp_err ? 0 : sl->th.fsbase,
                                &sl->th.method);
  }
  for (size_t k = 0; k < t->nslots; k++)
    slot_exit(&t->slots[k]);
  free(t->slots);
  t->slots = slots;
  t->nslots = (size_t)n;
  free(list);
  free(tids);
  /* An exited process stays listed until its parent reaps it: with no
   * thread left but zombies, it is gone. */
  if (!err && !alive)
    err = -ESRCH;
  return err ? err : n;
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

/* The kernel state letter of a tracked thread, from its open stat file
 * (one pread), or '?'. */
static char read_state(const struct slot *sl) {
  char buf[512], *p;
  ssize_t n;

  if (sl->statfd < 0)
    return '?';
  n = pread(sl->statfd, buf, sizeof(buf) - 1, 0);
  if (n <= 0)
    return '?';
  buf[n] = '\0';
  p = strrchr(buf, ')');
  return p && p[1] == ' ' ? p[2] : '?';
}

/* Is sl's thread state still its thread's? A thread that ends frees its
 * PyThreadState, and the next thread often gets the same memory (and, from
 * glibc's stack cache, the same thread pointer) before the old tid leaves
 * /proc: read under the old tid, its stack would be given to the wrong
 * thread. So after each walk the state must still name this thread: its
 * interpreter, thread_id == the thread pointer, and native_thread_id
 * (3.8+) the one seen first. One small read. */
static int still_owned(struct pst_target *t, struct slot *sl) {
  uint64_t thread_id, native, interp;

  if (pst_py_tstate_ids(&t->py, &t->mem, sl->th.tstate, &thread_id, &native,
                        &interp))
    return 0;
  if (interp != t->py.interp || (!sl->tp_err && thread_id != sl->th.fsbase))
    return 0;
  if (!sl->native_id)
    sl->native_id = native;
  return native == sl->native_id;
}

/* Torn reads: the stack is walked while the thread runs. The thread's
 * current frame (and its code) as the walk began and as read after it must
 * agree, else the walk is retried; after TORN_RETRIES the sample is
 * PST_ETORN. */
#define TORN_RETRIES 2

static int walk_thread(struct pst_target *t, struct slot *sl, int flags,
                       struct pst_frame *frames, uint64_t *thread_obj) {
  struct pst_thread *x = &sl->th;
  int n = -EAGAIN, stopped = 0;

  /* A thread in a group-stop (T: the process got SIGSTOP) or in
   * uninterruptible sleep (D) runs no Python code: its stack holds still
   * without our stop. Stopping it anyway would make it leave its group-stop
   * for a moment (seen as R) and, for D, wait as long as the sleep lasts. */
  if ((flags & PST_SAMPLE_BLOCKING) && x->state != 'T' && x->state != 'D') {
    n = pst_ptrace_stop(x->tid);
    if (n)
      return n;
    stopped = 1;
  }
  for (int attempt = 0; attempt <= TORN_RETRIES; attempt++) {
    uint64_t before[2], after[2];
    n = pst_py_walk(&t->py, &t->mem, x->tstate, frames, FRAMES_MAX,
                    &x->truncated, sl->pyname[0] ? NULL : thread_obj,
                    before);
    if (stopped)
      break; /* nothing moves */
    if (pst_py_top_frame(&t->py, &t->mem, x->tstate, before, after) == 0 &&
        after[0] == before[0] && after[1] == before[1])
      break;
    t->torn_retries++;
    n = PST_ETORN;
  }
  if (stopped)
    pst_ptrace_resume(x->tid);
  return n;
}

int pst_target_sample(struct pst_target *t, int flags,
                      const struct pst_thread **threads) {
  struct pst_thread *view;
  size_t used = 0;
  uint64_t gil = 0;
  int err, gil_err;

  view = realloc(t->view, (t->nslots + 1) * sizeof(*view));
  if (!view)
    return -ENOMEM;
  t->view = view;
  err = grow_pool(t, t->nslots * FRAMES_MAX);
  if (err)
    return err;
  gil_err = pst_py_gil_holder(&t->py, &t->mem, &gil);
  for (size_t i = 0; i < t->nslots; i++) {
    struct slot *sl = &t->slots[i];
    struct pst_thread *x = &sl->th;
    uint64_t thread_obj = 0;

    x->state = read_state(sl);
    x->idle = x->state != 'R';
    x->holds_gil = gil_err ? -1 : x->tstate && gil == x->tstate;
    x->error = 0;
    x->nframes = 0;
    x->truncated = 0;
    x->frames = t->pool + used;
    if (!x->tstate) {
      x->error = sl->tp_err ? sl->tp_err : PST_ENOTHREADSTATE;
    } else if (x->state == '?' || x->state == 'Z' || x->state == 'X') {
      /* Its stat file reads nothing (or a dead task): the thread has
       * ended, and its thread state may be another thread's by now. */
      x->error = -ESRCH;
    } else {
      int n = walk_thread(t, sl, flags, t->pool + used, &thread_obj);
      if (n >= 0 && !still_owned(t, sl)) {
        n = -ESRCH;
        thread_obj = 0; /* not this thread's Thread object either */
      }
      if (n < 0) {
        x->error = n;
      } else {
        x->nframes = (size_t)n;
        used += (size_t)n;
      }
      set_name(t, sl, thread_obj);
    }
    view[i] = *x;
  }
  *threads = view;
  return (int)t->nslots;
}

int pst_target_snapshot(struct pst_target *t,
                        const struct pst_thread **threads) {
  int err = pst_target_refresh(t);

  return err < 0 ? err : pst_target_sample(t, 0, threads);
}

uint64_t pst_target_torn_retries(const struct pst_target *t) {
  return t->torn_retries;
}
