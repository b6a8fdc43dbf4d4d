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
#include "native/merge.h"
#include "native/unwind.h"
#include "proc/maps.h"
#include "proc/mem.h"
#include "proc/proc.h"
#include "proc/ptrace.h"
#include "pystitch.h"
#include "python/python.h"
#include "util/log.h"
#include "util/strtab.h"

#define FRAMES_MAX 1024 /* per thread; deeper stacks are truncated */
#define NATIVE_MAX 256  /* native frames per thread */
#define SYMCACHE_SLOTS 4096

/* One OS thread as the target tracks it between refreshes. */
struct slot {
  struct pst_thread th;  /* fsbase, tstate, method, name: kept; the rest is
                            per sample */
  uint64_t starttime;    /* with the tid, identifies the thread */
  int tp_err;            /* why fsbase could not be read (retried) */
  int statfd;            /* /proc/PID/task/TID/stat, read per sample */
  char pyname[64];       /* threading's name once read, "" until then */
  struct pst_py_hint hint; /* what the last walk read, and whose thread
                              state it must still be (frame.c) */
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
  struct native *native;   /* --native state, made at the first use */
};

/* A symbolised instruction pointer, cached by address. */
struct symcache {
  uint64_t ip;
  const char *name, *module; /* interned in native->strings */
  unsigned flags;            /* PST_NF_* */
};

/* What native sampling needs, per target (pst_target_sample with
 * PST_SAMPLE_NATIVE). Owned by the target. */
struct native {
  struct pst_unwinder *unw;
  struct pst_strtab *strings;     /* native names and module names */
  struct symcache *cache;         /* SYMCACHE_SLOTS */
  uint64_t reloads;               /* unwinder maps reloads seen */
  const char *interp_path;        /* libpython, or the python executable */
  uint64_t ips[NATIVE_MAX], sps[NATIVE_MAX];
  struct pst_frame nat[NATIVE_MAX];
  unsigned flags[NATIVE_MAX];
  struct pst_frame py[FRAMES_MAX];
  struct pst_native_stats stats;
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

/* May a thread in this kernel state be ptrace-stopped for a moment? Not
 * in uninterruptible sleep (D: ptrace would wait for it to wake), nor in a
 * group-stop or another tracer's stop (T, t: our stop would take it out of
 * it for a moment, visible as R). Such threads are retried later. */
static int may_stop(char state) {
  return state != 'D' && state != 'T' && state != 't';
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
  sl->tp_err = !may_stop(state) ? -EAGAIN
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
  if (t->native) {
    pst_unwinder_free(t->native->unw);
    pst_strtab_free(t->native->strings);
    free(t->native->cache);
    free(t->native);
  }
  free(t);
}

const struct pst_target_info *pst_target_info(const struct pst_target *t) {
  return &t->info;
}

/* Fallback mapping: the thread-state list, matched by thread_id == the
 * thread pointer (glibc: pthread_self() == fsbase), else native tid. */
/* A thread state's native_thread_id (3.8+, 0 before) may name thread tid:
 * in the target's pid namespace tids are not ours, so only there is any
 * value accepted. A state whose id names another thread is a stale one
 * (its thread ended; the new thread reuses its pthread struct, hence its
 * thread pointer and TSD slots, before it binds its own state). */
static int native_may_be(const struct pst_target *t, uint64_t native,
                         pid_t tid) {
  return !native || t->info.nspid != t->pid || native == (uint64_t)tid;
}

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

/* Maps one thread to its PyThreadState through the TSD slot, validated by
 * the state's own thread_id and interpreter. */
static uint64_t map_by_tsd(struct pst_target *t, uint64_t tp, pid_t tid) {
  uint64_t cand = 0, thread_id, native, interp;

  if (t->py.key < 0 || !tp)
    return 0;
  if (pst_tsd_get(&t->tsd, &t->mem, tp, (unsigned)t->py.key, &cand) || !cand)
    return 0;
  if (pst_py_tstate_ids(&t->py, &t->mem, cand, &thread_id, &native, &interp))
    return 0;
  if (interp != t->py.interp || thread_id != tp ||
      !native_may_be(t, native, tid)) {
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

/* State and start time from a tracked thread's open stat file. */
static int stat_of(const struct slot *sl, char *state, uint64_t *starttime) {
  char buf[1024];
  ssize_t n;

  if (sl->statfd < 0)
    return -EBADF;
  n = pread(sl->statfd, buf, sizeof(buf) - 1, 0);
  if (n <= 0)
    return n < 0 ? -errno : -ESRCH;
  buf[n] = '\0';
  return pst_proc_parse_stat(buf, state, starttime);
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

    for (k = 0; k < t->nslots; k++)
      if (t->slots[k].th.tid == tids[i])
        break;
    /* A known thread's open stat file names the same thread for as long
     * as it lives (it fails once the thread is gone, even if the tid is
     * reused): no open/close per thread and refresh. */
    if (k == t->nslots || stat_of(&t->slots[k], &state, &starttime))
      pst_proc_task_stat(t->pid, tids[i], &state, &starttime);
    alive += state != 'Z' && state != 'X' && state != '?';
    if (k < t->nslots && t->slots[k].starttime != starttime)
      k = t->nslots;
    if (k < t->nslots) { /* known: move it over */
      *sl = t->slots[k];
      t->slots[k].statfd = -1;
      if (sl->tp_err && may_stop(state)) /* retry a failed pointer read */
        sl->tp_err = pst_ptrace_thread_pointer(sl->th.tid, &sl->th.fsbase);
    } else {
      slot_init(t, sl, tids[i], state, starttime);
    }
    /* Whose thread state a walk must find (pst_py_hint.owner_*). */
    sl->hint.owner_interp = t->py.interp;
    sl->hint.owner_thread_id = sl->tp_err ? 0 : sl->th.fsbase;
    if (t->info.nspid == t->pid) /* else learnt at the first walk */
      sl->hint.owner_native_id = (uint64_t)sl->th.tid;
    /* Unmapped threads are mapped again: a native thread may enter Python
     * later (PyGILState_Ensure). */
    if (sl->th.tstate)
      continue;
    sl->th.tstate = map_by_tsd(t, sl->tp_err ? 0 : sl->th.fsbase, sl->th.tid);
    if (sl->th.tstate) {
      sl->th.method = PST_MAP_TSD;
      continue;
    }
    if (!list && !(list = read_tstate_list(t))) {
      err = -ENOMEM;
      break;
    }
    sl->th.tstate = map_by_list(t, list->ts, list->tid_of, list->native,
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


/* Torn reads: the stack is walked while the thread runs. The thread's
 * current frame (and its code) as the walk began and as read after it must
 * agree, else the walk is retried; after TORN_RETRIES the sample is
 * PST_ETORN. The check after thread i's walk is read in the same syscall
 * as thread i+1's first read (pst_py_check), so a stable stack costs one
 * syscall; the check of the last thread is read on its own. */
#define TORN_RETRIES 2

/* Walks thread sl up to attempts times, checking each walk on its own (the
 * retry path), or once with the thread stopped (PST_SAMPLE_BLOCKING). */
static int walk_thread(struct pst_target *t, struct slot *sl, int flags,
                       int attempts, uint64_t *thread_obj) {
  struct pst_thread *x = &sl->th;
  int n = PST_ETORN, stopped = 0;

  /* A thread in a group-stop (T: the process got SIGSTOP) or in
   * uninterruptible sleep (D) runs no Python code: its stack holds still
   * without our stop. Stopping it anyway would make it leave its group-stop
   * for a moment (seen as R) and, for D, wait as long as the sleep lasts. */
  if ((flags & PST_SAMPLE_BLOCKING) && may_stop(x->state)) {
    n = pst_ptrace_stop(x->tid);
    if (n)
      return n;
    stopped = 1;
  }
  for (int attempt = 0; attempt < attempts; attempt++) {
    struct pst_py_check c;
    uint64_t before[2];
    n = pst_py_walk(&t->py, &t->mem, x->tstate, &sl->hint, NULL, x->frames,
                    FRAMES_MAX, &x->truncated,
                    sl->pyname[0] ? NULL : thread_obj, before);
    if (stopped || n < 0)
      break; /* nothing moves, or nothing to check */
    pst_py_check_prepare(&t->py, x->tstate, &sl->hint, before, &c);
    if (pst_py_check_done(&t->py, &t->mem, &c) == 1)
      break;
    t->torn_retries++;
    n = PST_ETORN;
  }
  if (stopped)
    pst_ptrace_resume(x->tid);
  return n;
}

/* A walk whose check is still to be read. */
struct pending {
  struct slot *sl;
  size_t i;
  int n;
  uint64_t thread_obj;
  struct pst_py_check c;
};

/* Ends thread i's sample with walk result n (frames or error). */
static void settle(struct pst_target *t, size_t i, int n,
                   uint64_t thread_obj) {
  struct slot *sl = &t->slots[i];
  struct pst_thread *x = &sl->th;

  if (n < 0) {
    x->error = n;
  } else {
    x->nframes = (size_t)n;
    set_name(t, sl, thread_obj);
  }
  t->view[i] = *x;
}

/* The pending walk's check (read already, or now): a moved stack is
 * walked again on the retry path. */
static void settle_pending(struct pst_target *t, struct pending *p) {
  int n = p->n;

  if (pst_py_check_done(&t->py, &t->mem, &p->c) != 1) {
    t->torn_retries++;
    p->thread_obj = 0;
    n = walk_thread(t, p->sl, 0, TORN_RETRIES, &p->thread_obj);
  }
  settle(t, p->i, n, p->thread_obj);
  p->sl = NULL;
}

/* ---- native stacks (PST_SAMPLE_NATIVE) ---- */

static int native_init(struct pst_target *t) {
  struct native *nt;
  int err;

  if (t->native)
    return 0;
  nt = calloc(1, sizeof(*nt));
  if (!nt)
    return -ENOMEM;
  nt->strings = pst_strtab_new();
  nt->cache = calloc(SYMCACHE_SLOTS, sizeof(*nt->cache));
  err = nt->strings && nt->cache ? 0 : -ENOMEM;
  if (!err)
    err = pst_unwinder_new(t->pid, &t->mem, NULL, &nt->unw);
  if (err) {
    pst_strtab_free(nt->strings);
    free(nt->cache);
    free(nt);
    return err;
  }
  nt->interp_path = t->info.libpython[0] ? t->info.libpython : t->info.exe;
  t->native = nt;
  return 0;
}

static const char *base_name(const char *path) {
  const char *b = strrchr(path, '/');
  return b ? b + 1 : path;
}

/* Name, module and PST_NF_* flags of one native frame, through the
 * cache. ip is the address to look up (return addresses minus 1). */
static const struct symcache *symbolise(struct pst_target *t, uint64_t ip) {
  struct native *nt = t->native;
  struct symcache *c =
      &nt->cache[(ip * 0x9e3779b97f4a7c15ULL) >> (64 - 12)]; /* 4096 */
  const char *func, *path;
  uint64_t off;
  char buf[512];

  if (c->ip == ip && c->name)
    return c;
  pst_unwinder_symbol(nt->unw, ip, &func, &off, &path);
  c->ip = ip;
  c->flags = 0;
  c->module = pst_strtab_intern(nt->strings, path ? base_name(path) : "");
  if (func) {
    c->name = pst_strtab_intern(nt->strings, func);
    if (path && !strcmp(path, nt->interp_path))
      c->flags = pst_native_classify(func, t->py.version_hex);
  } else {
    snprintf(buf, sizeof(buf), "%s+0x%llx", path ? base_name(path) : "?",
             (unsigned long long)off);
    c->name = pst_strtab_intern(nt->strings, buf);
  }
  if (!c->name || !c->module) {
    c->ip = 0;
    c->name = NULL;
    return NULL;
  }
  return c;
}

/* 3.12+: each eval-loop call keeps its entry shim frame on the C stack,
 * so the native frame whose stack area [sp, caller's sp) holds a shim is
 * that call, named or not (a stripped interpreter, a loop split into a
 * local function). When every shim is found this replaces the
 * name-based marking. */
static void eval_by_shims(struct pst_target *t, int nn) {
  struct native *nt = t->native;
  unsigned char mark[NATIVE_MAX];
  int found = 0;

  if (t->py.version_hex < 0x030c || t->py.nshims == 0 || nn < 2)
    return;
  memset(mark, 0, (size_t)nn);
  for (int s = 0; s < t->py.nshims; s++)
    for (int i = 0; i + 1 < nn; i++)
      if (t->py.shims[s] >= nt->sps[i] && t->py.shims[s] < nt->sps[i + 1]) {
        found += !mark[i];
        mark[i] = 1;
        break;
      }
  if (found != t->py.nshims)
    return;
  for (int i = 0; i < nn; i++)
    nt->flags[i] = (nt->flags[i] & ~(unsigned)PST_NF_EVAL) |
                   (mark[i] ? PST_NF_EVAL : 0);
}

/* One thread with --native: stopped while its registers, native stack and
 * Python frames are read (so that both halves are of the same instant),
 * then merged into x->frames. Returns the frame count or -errno. */
static int sample_native(struct pst_target *t, struct slot *sl, int flags,
                         uint64_t *thread_obj) {
  struct native *nt = t->native;
  struct pst_thread *x = &sl->th;
  struct pst_unwind_stats us;
  int nn, np = 0, truncated = 0, mismatch = 0, err;
  uint64_t top[2];
  size_t k;

  /* Not a thread in uninterruptible sleep (ptrace would wait for it to
   * wake) or in a group-stop (our stop would take it out of it for a
   * moment): such samples are counted as errors. */
  if (!may_stop(x->state))
    return -EAGAIN;
  err = pst_ptrace_stop(x->tid);
  if (err)
    return err;
  nn = pst_unwind_thread(nt->unw, x->tid, nt->ips, nt->sps, NATIVE_MAX);
  if (x->tstate)
    np = pst_py_walk(&t->py, &t->mem, x->tstate, &sl->hint, NULL, nt->py,
                     FRAMES_MAX, &truncated, sl->pyname[0] ? NULL : thread_obj,
                     top);
  pst_ptrace_resume(x->tid);
  if (nn < 0 && np <= 0)
    return nn;
  if (np < 0) {
    pst_debug("thread %d: Python walk failed under --native: %s",
              (int)x->tid, pst_strerror(np));
    nt->stats.python_errors++;
    np = 0;
  }
  nn = nn < 0 ? 0 : nn;
  pst_unwinder_stats(nt->unw, &us);
  if (us.maps_reloads != nt->reloads) { /* a module may have gone */
    memset(nt->cache, 0, SYMCACHE_SLOTS * sizeof(*nt->cache));
    nt->reloads = us.maps_reloads;
  }
  for (int i = 0; i < nn; i++) {
    /* A return address points after the call: look up the call. */
    const struct symcache *c = symbolise(t, i ? nt->ips[i] - 1 : nt->ips[i]);
    nt->nat[i] = (struct pst_frame){c ? c->name : "?", c ? c->module : "",
                                    0, PST_FRAME_NATIVE, 0, nt->ips[i]};
    nt->flags[i] = c ? c->flags : 0;
  }
  if (np > 0)
    eval_by_shims(t, nn);
  k = pst_merge(nt->nat, nt->flags, (size_t)nn, nt->py, (size_t)np,
                flags & PST_SAMPLE_NATIVE_ALL ? 1 : 0,
                "[python/native stacks not merged]", x->frames, FRAMES_MAX,
                &mismatch);
  x->truncated = truncated;
  if (mismatch)
    pst_debug("thread %d: %d native frames, %d Python frames (%zu calls): "
              "not merged (tstate 0x%llx, state %c)", (int)x->tid, nn, np,
              pst_merge_py_groups(nt->py, (size_t)np),
              (unsigned long long)x->tstate, x->state);
  nt->stats.samples++;
  nt->stats.mismatches += (uint64_t)mismatch;
  return (int)k;
}

int pst_target_native_stats(const struct pst_target *t,
                            struct pst_native_stats *out) {
  if (!t->native)
    return -ENOENT;
  *out = t->native->stats;
  return 0;
}

int pst_target_sample(struct pst_target *t, int flags,
                      const struct pst_thread **threads) {
  struct pst_thread *view;
  struct pending pend;
  uint64_t gil = 0;
  int err, gil_err, state_read;

  memset(&pend, 0, sizeof(pend));
  view = realloc(t->view, (t->nslots + 1) * sizeof(*view));
  if (!view)
    return -ENOMEM;
  t->view = view;
  err = grow_pool(t, t->nslots * FRAMES_MAX);
  if (err)
    return err;
  if (flags & PST_SAMPLE_NATIVE) {
    err = native_init(t);
    if (err)
      return err;
    flags &= ~PST_SAMPLE_NO_ACTIVITY; /* D-state threads must be skipped */
  }
  /* Without native_thread_id (before 3.8) only the thread's own stat
   * file tells that it ended (its state may then be a new thread's). */
  if (t->py.lay.ts_native_thread_id == PST_NOFF ||
      (flags & PST_SAMPLE_BLOCKING)) /* blocking: must see T and D */
    flags &= ~PST_SAMPLE_NO_ACTIVITY;
  state_read = !(flags & PST_SAMPLE_NO_ACTIVITY);
  gil_err = flags & PST_SAMPLE_NO_ACTIVITY
                ? -ENOSYS
                : pst_py_gil_holder(&t->py, &t->mem, &gil);
  for (size_t i = 0; i < t->nslots; i++) {
    struct slot *sl = &t->slots[i];
    struct pst_thread *x = &sl->th;
    uint64_t thread_obj = 0, before[2];
    int n;

    x->state = flags & PST_SAMPLE_NO_ACTIVITY ? '?' : read_state(sl);
    x->idle = !(flags & PST_SAMPLE_NO_ACTIVITY) && x->state != 'R';
    x->holds_gil = gil_err ? -1 : x->tstate && gil == x->tstate;
    x->error = 0;
    x->nframes = 0;
    x->truncated = 0;
    x->frames = t->pool + i * FRAMES_MAX;
    if ((flags & PST_SAMPLE_ACTIVE_ONLY) && state_read && x->idle &&
        x->holds_gil != 1) {
      settle(t, i, 0, 0); /* left out by the caller: not read at all */
      continue;
    }
    if (x->tstate && state_read &&
        (x->state == '?' || x->state == 'Z' || x->state == 'X')) {
      /* Its stat file reads nothing (or a dead task): the thread has
       * ended, and its thread state may be another thread's by now. */
      settle(t, i, -ESRCH, 0);
      continue;
    }
    if (flags & PST_SAMPLE_NATIVE) {
      n = sample_native(t, sl, flags, &thread_obj);
      settle(t, i, n, thread_obj);
      continue;
    }
    if (!x->tstate) {
      settle(t, i, sl->tp_err ? sl->tp_err : PST_ENOTHREADSTATE, 0);
      continue;
    }
    if (flags & PST_SAMPLE_BLOCKING) {
      n = walk_thread(t, sl, flags, 1, &thread_obj);
      settle(t, i, n, thread_obj);
      continue;
    }
    n = pst_py_walk(&t->py, &t->mem, x->tstate, &sl->hint,
                    pend.sl ? &pend.c : NULL, x->frames, FRAMES_MAX,
                    &x->truncated, sl->pyname[0] ? NULL : &thread_obj,
                    before);
    if (pend.sl)
      settle_pending(t, &pend);
    if (n < 0) {
      settle(t, i, n, 0);
      continue;
    }
    pend.sl = sl;
    pend.i = i;
    pend.n = n;
    pend.thread_obj = thread_obj;
    pst_py_check_prepare(&t->py, x->tstate, &sl->hint, before, &pend.c);
  }
  if (pend.sl)
    settle_pending(t, &pend);
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
