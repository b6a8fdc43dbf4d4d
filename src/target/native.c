/* native.c: one thread's native and Python stacks read while it is
 * stopped, symbolised through a per-process cache and merged (native.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "native/cxxname.h"
#include "native/merge.h"
#include "native/unwind.h"
#include "proc/proc.h"
#include "proc/ptrace.h"
#include "python/python.h"
#include "target/native.h"
#include "util/dmcache.h"
#include "util/log.h"
#include "util/strtab.h"

#define NATIVE_MAX 256 /* native frames per thread */
#define PY_MAX 1024    /* Python frames per thread */
#define SYMCACHE_BITS 12

/* A symbolised instruction pointer, cached by address. */
struct symcache {
  uint64_t ip;
  const char *name, *module; /* interned in strings */
  unsigned flags;            /* PST_NF_* */
  int full;                  /* name is the whole C++ name */
};

struct pst__native_sampler {
  struct pst__unwinder *unw;
  struct pst__strtab *strings; /* native names and module names */
  struct pst__dmcache cache;   /* struct symcache, by ip */
  uint64_t reloads;            /* unwinder maps reloads seen */
  const char *interp_path;     /* libpython, or the python executable */
  uint64_t ips[NATIVE_MAX], sps[NATIVE_MAX];
  struct pst_frame nat[NATIVE_MAX];
  unsigned flags[NATIVE_MAX];
  struct pst_frame py[PY_MAX];
  struct pst_native_stats stats;
  /* Blocked threads read without a stop (read_blocked), and those whose
   * try gave way to the stop: they ran meanwhile, or a frame's rule asked
   * for a register that a blocked thread's file does not give. */
  uint64_t unstopped, moved, no_regs;
  uint64_t pending_names; /* frames named by offset: their module's
                             table was being built (background mode) */
  int always_stop;        /* PYSTITCH_NATIVE_ALWAYS_STOP=1: no read_blocked (the
                      tests compare both ways) */
};

int pst__native_sampler_new(pid_t pid, struct pst__mem *mem,
                            const char *interp_path,
                            struct pst__modcache *cache,
                            struct pst__native_sampler **out) {
  struct pst__native_sampler *ns = calloc(1, sizeof(*ns));
  const char *always;
  int err = -ENOMEM;

  if (!ns)
    return -ENOMEM;
  ns->strings = pst__strtab_new();
  if (!ns->strings ||
      pst__dmcache_init(&ns->cache, SYMCACHE_BITS, sizeof(struct symcache)))
    goto err;
  err = pst__unwinder_new(pid, mem, cache, &ns->unw);
  if (err)
    goto err;
  ns->interp_path = interp_path;
  always = getenv("PYSTITCH_NATIVE_ALWAYS_STOP");
  ns->always_stop = always && !strcmp(always, "1");
  *out = ns;
  return 0;
err:
  pst__native_sampler_free(ns);
  return err;
}

void pst__native_sampler_free(struct pst__native_sampler *ns) {
  if (!ns)
    return;
  if (ns->stats.samples)
    pst__debug("native: %llu of %llu thread-samples read without a stop "
               "(blocked threads); %llu tries gave way to a stop: %llu ran "
               "meanwhile, %llu needed a register",
               (unsigned long long)ns->unstopped,
               (unsigned long long)ns->stats.samples,
               (unsigned long long)(ns->moved + ns->no_regs),
               (unsigned long long)ns->moved, (unsigned long long)ns->no_regs);
  if (ns->pending_names)
    pst__debug("native: %llu frames named MODULE+0xOFFSET while their "
               "module's symbols were read",
               (unsigned long long)ns->pending_names);
  pst__unwinder_free(ns->unw);
  pst__strtab_free(ns->strings);
  pst__dmcache_exit(&ns->cache);
  free(ns);
}

void pst__native_sampler_stats(const struct pst__native_sampler *ns,
                               struct pst_native_stats *out) {
  *out = ns->stats;
}

static const char *base_name(const char *path) {
  const char *b = strrchr(path, '/');
  return b ? b + 1 : path;
}

/* Name, module and PST_NF_* flags of one native frame, through the
 * cache. ip is the address to look up (return addresses minus 1). */
static const struct symcache *symbolise(struct pst__native_sampler *ns,
                                        int version_hex, uint64_t ip,
                                        int full) {
  struct symcache *c = pst__dmcache_slot(&ns->cache, ip);
  const char *func, *path;
  uint64_t off;
  char buf[512];
  int err;

  if (c->ip == ip && c->name && c->full == full)
    return c;
  err = pst__unwinder_symbol(ns->unw, ip, 0, &func, &off, &path);
  /* The interpreter's table is built now: merging needs its names. */
  if (err == -EINPROGRESS && path && !strcmp(path, ns->interp_path))
    err = pst__unwinder_symbol(ns->unw, ip, 1, &func, &off, &path);
  c->ip = ip;
  c->flags = 0;
  c->module = pst__strtab_intern(ns->strings, path ? base_name(path) : "");
  if (path && !strcmp(path, ns->interp_path))
    c->flags = PST_NF_INTERP | pst__native_classify(func, version_hex);
  c->full = full;
  if (func) {
    c->name = pst__strtab_intern(
        ns->strings, full ? func : pst__cxx_short(func, buf, sizeof(buf)));
  } else {
    snprintf(buf, sizeof(buf), "%s+0x%llx", path ? base_name(path) : "?",
             (unsigned long long)off);
    c->name = pst__strtab_intern(ns->strings, buf);
  }
  if (!c->name || !c->module) {
    c->ip = 0;
    c->name = NULL;
    return NULL;
  }
  if (err == -EINPROGRESS) { /* named by offset this once, not cached */
    c->ip = 0;
    ns->pending_names++;
  }
  return c;
}

/* 3.12+: each eval-loop call keeps its entry shim frame on the C stack,
 * so the native frame whose stack area [sp, caller's sp) holds a shim is
 * that call, named or not (a stripped interpreter, a loop split into a
 * local function). When every shim is found this replaces the
 * name-based marking. */
static void eval_by_shims(struct pst__native_sampler *ns,
                          const struct pst__py *py, int nn) {
  unsigned char mark[NATIVE_MAX];
  int found = 0;

  if (py->version_hex < 0x030c || py->nshims == 0 || nn < 2)
    return;
  memset(mark, 0, (size_t)nn);
  for (int s = 0; s < py->nshims; s++)
    for (int i = 0; i + 1 < nn; i++)
      if (py->shims[s] >= ns->sps[i] && py->shims[s] < ns->sps[i + 1]) {
        found += !mark[i];
        mark[i] = 1;
        break;
      }
  if (found != py->nshims)
    return;
  for (int i = 0; i < nn; i++)
    ns->flags[i] =
        (ns->flags[i] & ~(unsigned)PST_NF_EVAL) | (mark[i] ? PST_NF_EVAL : 0);
}

/* A thread asleep (S) read without a stop (issue: each stop costs the
 * target a restarted system call and us 50-100 us): its sp and pc from
 * /proc/.../syscall, its native stack unwound from them, its Python frames
 * walked, all while it may wake. Kept only when it did not run meanwhile:
 * its syscall line the same after as before, and its run and wait times
 * too (a thread that woke and slept again at the same place has run).
 * Returns the native frame count (*np: the Python one, or its error), or
 * -EAGAIN: take the stop. */
static int read_blocked(struct pst__native_sampler *ns, struct pst__py *py,
                        struct pst__mem *mem, const struct pst__native_req *r,
                        int *np, int *truncated, uint64_t top[2]) {
  uint64_t run[2], wait[2], sp[2], pc[2];
  long nr[2];
  int nn;

  if (ns->always_stop || !r->sysfd || r->schedfd < 0 || r->state != 'S' ||
      *r->sysfd == -2)
    return -EAGAIN;
  if (*r->sysfd < 0) {
    int fd = pst__proc_task_syscall_open(r->pid, r->tid);
    *r->sysfd = fd < 0 ? -2 : fd; /* -2: not readable, never tried again */
    if (fd < 0)
      return -EAGAIN;
  }
  if (pst__proc_schedstat_fd(r->schedfd, &run[0], &wait[0]) ||
      pst__proc_syscall_fd(*r->sysfd, &nr[0], &sp[0], &pc[0]))
    return -EAGAIN;
  nn = pst__unwind_blocked(ns->unw, r->tid, sp[0], pc[0], ns->ips, ns->sps,
                           NATIVE_MAX);
  if (nn == -EAGAIN)
    ns->no_regs++;
  if (nn < 0)
    return -EAGAIN;
  *np = r->tstate ? pst__py_walk(py, mem, r->tstate, r->hint, NULL, ns->py,
                                 PY_MAX, truncated, r->thread_obj, top)
                  : 0;
  if (pst__proc_syscall_fd(*r->sysfd, &nr[1], &sp[1], &pc[1]) ||
      pst__proc_schedstat_fd(r->schedfd, &run[1], &wait[1]) || nr[1] != nr[0] ||
      sp[1] != sp[0] || pc[1] != pc[0] || run[1] != run[0] ||
      wait[1] != wait[0]) {
    ns->moved++;
    return -EAGAIN;
  }
  ns->unstopped++;
  return nn;
}

int pst__native_sample(struct pst__native_sampler *ns, struct pst__py *py,
                       struct pst__mem *mem, const struct pst__native_req *r,
                       struct pst_frame *out, int max, int *truncated) {
  struct pst__unwind_stats us;
  int nn, np = 0, mismatch = 0, err;
  uint64_t top[2];
  size_t k;

  *truncated = 0;
  /* Not a thread in uninterruptible sleep (ptrace would wait for it to
   * wake) or in a group-stop (our stop would take it out of it for a
   * moment): such samples are counted as errors. */
  if (r->state == 'D' || r->state == 'T' || r->state == 't')
    return -EAGAIN;
  nn = read_blocked(ns, py, mem, r, &np, truncated, top);
  if (nn == -EAGAIN) {
    np = 0;
    *truncated = 0;
    err = pst__ptrace_stop(r->tid);
    if (err)
      return err;
    nn = pst__unwind_thread(ns->unw, r->tid, ns->ips, ns->sps, NATIVE_MAX);
    if (r->tstate)
      np = pst__py_walk(py, mem, r->tstate, r->hint, NULL, ns->py, PY_MAX,
                        truncated, r->thread_obj, top);
    pst__ptrace_resume(r->tid);
  }
  if (nn < 0 && np <= 0)
    return nn;
  if (np < 0) {
    pst__debug("thread %d: Python walk failed under --native: %s", (int)r->tid,
               pst_strerror(np));
    ns->stats.python_errors++;
    np = 0;
  }
  if (nn < 0) {
    pst__debug("thread %d: native stack lost: %s", (int)r->tid,
               pst_strerror(nn));
    ns->stats.native_errors++;
    nn = 0;
  }
  pst__unwinder_stats(ns->unw, &us);
  if (us.maps_reloads != ns->reloads) { /* a module may have gone */
    pst__dmcache_clear(&ns->cache);
    ns->reloads = us.maps_reloads;
  }
  for (int i = 0; i < nn; i++) {
    /* A return address points after the call: look up the call. */
    const struct symcache *c = symbolise(
        ns, py->version_hex, i ? ns->ips[i] - 1 : ns->ips[i], r->full_names);
    ns->nat[i] = (struct pst_frame){
        c ? c->name : "?", c ? c->module : "", 0, PST_FRAME_NATIVE, 0,
        ns->ips[i]};
    ns->flags[i] = c ? c->flags : 0;
  }
  if (np > 0)
    eval_by_shims(ns, py, nn);
  k = pst__merge(ns->nat, ns->flags, (size_t)nn, ns->py, (size_t)np,
                 r->keep_machinery, "[python/native stacks not merged]", out,
                 (size_t)max, &mismatch);
  if (mismatch)
    pst__debug("thread %d: %d native frames, %d Python frames (%zu calls): "
               "not merged (tstate 0x%llx, state %c)",
               (int)r->tid, nn, np, pst__merge_py_groups(ns->py, (size_t)np),
               (unsigned long long)r->tstate, r->state);
  ns->stats.samples++;
  ns->stats.mismatches += (uint64_t)mismatch;
  return (int)k;
}
