/* target.c: one attached Python process: analysis at open, close, and
 * what the analysis found (the public API in pystitch.h; threads.c and
 * sample.c do the rest).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "native/module.h"
#include "native/resolve.h"
#include "proc/proc.h"
#include "target/internal.h"
#include "target/native.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/strtab.h"

static enum pst__arch host_arch(void) {
#if defined(__aarch64__)
  return PST_ARCH_AARCH64;
#else
  return PST_ARCH_X86_64;
#endif
}

static int check_process(pid_t pid, struct pst_target_info *info) {
  struct pst__proc_status st;
  int err;

  if (pid <= 0)
    return -ESRCH;
  if (pid == getpid())
    return PST_ESELF;
  err = pst__proc_status(pid, &st);
  if (err)
    return err;
  if (st.state == 'Z' || st.state == 'X')
    return PST_EZOMBIE;
  info->pid = pid;
  info->nspid = st.nspid;
  err = pst__proc_exe(pid, info->exe, sizeof(info->exe));
  return err == -EACCES ? -EPERM : err;
}

/* The Python half of the report, from the analysis (analyse.c): target.c
 * alone fills pst_target_info. */
static void python_info(struct pst_target_info *info, const struct pst__py *py,
                        const struct pst__py_found *f) {
  snprintf(info->libpython, sizeof(info->libpython), "%s", f->libpython);
  snprintf(info->version, sizeof(info->version), "%s", f->version);
  info->version_hex = py->version_hex;
  info->free_threaded = py->lay.free_threaded;
  info->exc_state =
      py->lay.ts_cur_exc != PST_NOFF &&
      (py->lay.ts_exc_info != PST_NOFF || py->lay.ts_exc_type != PST_NOFF) &&
      py->none;
  info->gc_state = py->lay.is_gc_collecting != PST_NOFF ||
                   py->lay.rt_gc_collecting != PST_NOFF;
  snprintf(info->layout_method, sizeof(info->layout_method), "%s",
           f->layout_method);
  info->runtime_addr = py->runtime;
  info->interp_addr = py->interp;
  info->key_addr = py->key_addr;
  info->key = py->key;
  snprintf(info->key_method, sizeof(info->key_method), "%s", f->key_method);
}

/* Reads the main thread's pointer at open. -EPERM when we may not trace
 * it, PST_ETRACED when a debugger already does; other failures are left
 * for the samples to report per thread. */
static int first_thread_pointer(struct pst_target *t) {
  struct pst__proc_status st;
  uint64_t starttime;
  char state;

  if (pst__proc_task_stat(t->pid, t->pid, &state, &starttime))
    return 0;
  t->threads = calloc(1, sizeof(*t->threads));
  if (!t->threads)
    return -ENOMEM;
  pst__tthread_init(t, &t->threads[0], t->pid, state, starttime);
  t->nthreads = 1;
  if (t->threads[0].tp_err == -EPERM || t->threads[0].tp_err == -EACCES) {
    if (pst__proc_status(t->pid, &st) == 0 && st.tracer != 0)
      return PST_ETRACED;
    return -EPERM;
  }
  return 0;
}

/* Now, in the clock ticks since boot that /proc gives start times in. */
static uint64_t boot_ticks(void) {
  struct timespec ts;
  long hz = sysconf(_SC_CLK_TCK);

  if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts))
    return 0;
  return (uint64_t)ts.tv_sec * (uint64_t)hz +
         (uint64_t)ts.tv_nsec / (1000000000ULL / (uint64_t)hz);
}

int pst_target_open(pid_t pid, struct pst_target **out) {
  struct pst__py_found found;
  struct pst_target *t;
  double t0 = pst__now_ms();
  int err;

  t = calloc(1, sizeof(*t));
  if (!t)
    return -ENOMEM;
  t->pid = pid;
  t->arch = host_arch();
  t->open_ticks = boot_ticks();
  /* Its CPU clock, one read for all its threads' CPU time (the gate of
   * mode cpu, sample.c); without it every thread's is read. */
  t->cpu_clock_ok = clock_getcpuclockid(pid, &t->cpu_clock) == 0;
  pst__mem_init(&t->mem, pid);
  pst__py_batch_init(&t->batch);
  t->gil_verify = getenv("PYSTITCH_VERIFY_GIL_SKIP") != NULL;
  pst__py_init(&t->py);
  err = check_process(pid, &t->info);
  if (err)
    goto err;
  err = pst__maps_load(pid, &t->maps);
  if (err)
    goto err_perm;
  if (pst__tsd_loading(&t->maps)) {
    err = PST_ENOTREADY;
    goto err;
  }
  err = pst__py_analyse(&t->py, pid, &t->maps, &t->mem, t->arch, t->info.exe,
                        &found);
  if (err)
    goto err_perm;
  python_info(&t->info, &t->py, &found);
  err = pst__tsd_analyse(pid, &t->maps, t->arch, &t->tsd);
  if (err)
    goto err;
  snprintf(t->info.libc, sizeof(t->info.libc), "%s", t->tsd.libc_path);
  snprintf(t->info.tsd_method, sizeof(t->info.tsd_method), "%s", t->tsd.method);
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
  t->info.analysis_ms = pst__now_ms() - t0;
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
  if (t && t->stops_deferred)
    pst__debug("process %d: %llu stops of new threads put off to a later "
               "refresh (the stop deadline)",
               (int)t->pid, (unsigned long long)t->stops_deferred);
  if (!t)
    return;
  if (t->batch.pieces_read)
    pst__debug("process %d: %llu pieces read as %llu ranges (%llu bytes; "
               "%llu plans as the tick's before), %llu walks checked by "
               "their batch, %llu needing none (the GIL did not move)",
               (int)t->pid, (unsigned long long)t->batch.pieces_read,
               (unsigned long long)t->batch.ranges_read,
               (unsigned long long)t->batch.bytes_read,
               (unsigned long long)t->batch.plans_reused,
               (unsigned long long)t->batch_checks,
               (unsigned long long)t->gil_checks);
  if (t->stacks_kept)
    pst__debug("process %d: %llu stacks given again (the GIL did not change "
               "hands since they were read)",
               (int)t->pid, (unsigned long long)t->stacks_kept);
  if (t->gate_ticks)
    pst__debug("process %d: mode cpu read every thread's run time at %llu "
               "of %llu ticks (its CPU clock accounted for the others)",
               (int)t->pid, (unsigned long long)t->gate_full,
               (unsigned long long)t->gate_ticks);
  if (t->gil_verify)
    pst__info("process %d: GIL rule verified: %llu agreed with the check, "
              "%llu disagreed",
              (int)t->pid, (unsigned long long)t->gil_agreed,
              (unsigned long long)t->gil_disagreed);
  if (t->gil_verify)
    pst__info("process %d: kept stacks verified: %llu read again the same, "
              "%llu not",
              (int)t->pid, (unsigned long long)t->still_agreed,
              (unsigned long long)t->still_disagreed);
  pst__native_sampler_free(t->native); /* borrows t->mem */
  pst__resolver_free(t->resolver);
  pst__modcache_put(t->modcache);
  pst__py_exit(&t->py);
  pst__maps_exit(&t->maps);
  pst__mem_exit(&t->mem);
  for (size_t i = 0; i < t->nthreads; i++)
    pst__tthread_exit(&t->threads[i]);
  free(t->threads);
  free(t->view);
  free(t->pool);
  free(t->vpool);
  free(t->inner_frames);
  free(t->vn);
  pst__py_batch_exit(&t->batch);
  free(t->pf);
  free(t->excp);
  free(t->loc_frames);
  free(t->loc_per_frame);
  free(t->loc_vars);
  free(t->loc_text);
  free(t->acts);
  free(t->probe);
  free(t->tasks);
  free(t->py_tasks);
  free(t->task_frames);
  free(t->task_tstates);
  free(t->task_stack);
  pst__strtab_free(t->task_names);
  free(t->reg);
  free(t->refs);
  free(t->changed);
  free(t);
}

const struct pst_target_info *pst_target_info(const struct pst_target *t) {
  return &t->info;
}

int pst__target_modcache(struct pst_target *t) {
  if (t->modcache)
    return 0;
  if (pst__modcache_new(&t->modcache))
    return -ENOMEM;
  pst__modcache_set_background(t->modcache, t->bg_symbols);
  return 0;
}

void pst_target_background_symbols(struct pst_target *t, int on) {
  t->bg_symbols = on;
  if (t->modcache)
    pst__modcache_set_background(t->modcache, on);
}

int pst_target_share_modules(struct pst_target *t, struct pst_target *other) {
  if (t == other)
    return 0;
  if (t->modcache)
    return -EBUSY;
  if (pst__target_modcache(other))
    return -ENOMEM;
  t->modcache = pst__modcache_get(other->modcache);
  return 0;
}
