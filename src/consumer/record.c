/* record.c: the record consumer: each thread-sample's frames, outermost
 * first and under its process and thread roots, into the profile. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "consumer/record.h"
#include "util/array.h"
#include "util/dmcache.h"
#include "util/hash.h"

#define STACK_MAX 1100 /* frames per sample incl. synthetic roots */

/* Target string -> the profile's copy of it. The target's strings are
 * interned and live as long as the target, so a pointer identifies its
 * text; the memo is dropped with the target (proc_end). */
#define MEMO_BITS 10
struct memo {
  const char *src, *dst;
};

/* A thread of a process: its profile index and root frame. */
struct tmap {
  pid_t tid;
  int prof_thread;
  char name[64];
  const char *root; /* "thread TID \"name\"", interned in the profile */
  /* Its last sample's pst_thread.stack_gen and the profile's stack id it
   * was added as (the roots included): a sample of the same generation
   * (a stack kept under the GIL) is added by that id alone. 0: none. */
  uint64_t last_gen;
  uint32_t last_sid;
};

/* Per process, from proc_begin to proc_end. */
struct rproc {
  int prof_proc;
  unsigned role_gen; /* the process's role_gen the root was made with */
  const char *root;  /* "process PID ...", interned in the profile */
  struct tmap *tm;
  size_t ntm, tm_cap;
  struct pst__hash tm_ids;  /* tm's entries by tid (5000 threads: a scan
                               per sample was half of pystitch's time) */
  struct pst__dmcache memo; /* struct memo, by source pointer */
};

struct pst__record_consumer {
  struct pst__profile *prof;
  struct pst__record_view view;
  const char *empty; /* "" interned in prof */
  struct pst__prof_frame frames[STACK_MAX];
};

int pst__record_consumer_new(struct pst__profile *prof,
                             const struct pst__record_view *view,
                             struct pst__record_consumer **out) {
  struct pst__record_consumer *c = calloc(1, sizeof(*c));

  if (!c)
    return -ENOMEM;
  c->prof = prof;
  c->view = *view;
  c->empty = pst__profile_intern(prof, "");
  if (!c->empty) {
    free(c);
    return -ENOMEM;
  }
  *out = c;
  return 0;
}

void pst__record_consumer_free(struct pst__record_consumer *c) { free(c); }

/* "process PID [rank R/W, ROLE, parent PPID] cmdline": the root frame of
 * a process's samples, made again when its role becomes known. */
static int make_root(struct pst__record_consumer *c, struct rproc *rp,
                     const struct pst__sample_proc *p) {
  char root[400], tags[160] = "";
  size_t off = 0;

  if (p->rank >= 0)
    off += (size_t)snprintf(tags + off, sizeof(tags) - off, "rank %d/%d",
                            p->rank, p->world_size);
  if (p->role && p->role[0] && off < sizeof(tags))
    off += (size_t)snprintf(tags + off, sizeof(tags) - off, "%s%.60s",
                            off ? ", " : "", p->role);
  if (p->container && p->container[0] && off < sizeof(tags))
    off += (size_t)snprintf(tags + off, sizeof(tags) - off, "%scontainer %.60s",
                            off ? ", " : "", p->container);
  if (p->ppid > 0 && off < sizeof(tags))
    snprintf(tags + off, sizeof(tags) - off, "%sparent %d", off ? ", " : "",
             (int)p->ppid);
  if (tags[0])
    snprintf(root, sizeof(root), "process %d [%s] %.200s", (int)p->pid, tags,
             p->cmdline);
  else
    snprintf(root, sizeof(root), "process %d %.240s", (int)p->pid, p->cmdline);
  rp->root = pst__profile_intern(c->prof, root);
  for (size_t i = 0; i < rp->ntm; i++) /* the stacks' root changed */
    rp->tm[i].last_gen = 0;
  rp->role_gen = p->role_gen;
  if (!rp->root || pst__profile_process_role(c->prof, (uint32_t)rp->prof_proc,
                                             p->role, (int)p->ppid))
    return -ENOMEM;
  return 0;
}

static int proc_begin(void *ctx, const struct pst__sample_proc *p,
                      void **data) {
  struct pst__record_consumer *c = ctx;
  struct rproc *rp = calloc(1, sizeof(*rp));

  if (!rp)
    return -ENOMEM;
  if (pst__dmcache_init(&rp->memo, MEMO_BITS, sizeof(struct memo))) {
    free(rp);
    return -ENOMEM;
  }
  rp->prof_proc = pst__profile_process(c->prof, p->pid, p->cmdline, p->rank,
                                       p->local_rank, p->world_size);
  if (rp->prof_proc < 0 || make_root(c, rp, p)) {
    pst__dmcache_exit(&rp->memo);
    free(rp);
    return -ENOMEM;
  }
  *data = rp;
  return 0;
}

static void proc_end(void *ctx, const struct pst__sample_proc *p, void *data) {
  struct rproc *rp = data;

  (void)ctx;
  (void)p;
  if (rp) {
    free(rp->tm);
    pst__hash_exit(&rp->tm_ids);
    pst__dmcache_exit(&rp->memo);
  }
  free(rp);
}

static int tm_eq(const void *ctx, uint32_t id, const void *key) {
  const struct rproc *rp = ctx;

  return rp->tm[id].tid == *(const pid_t *)key;
}

/* The profile thread of x (registered again when its name changed). */
static struct tmap *prof_thread(struct pst__record_consumer *c,
                                struct rproc *rp, const struct pst_thread *x) {
  struct tmap *m = NULL;
  const char *root;
  char troot[128];
  uint64_t h = pst__hash_u64((uint64_t)x->tid);
  int64_t id = pst__hash_find(&rp->tm_ids, h, tm_eq, rp, &x->tid);
  int pt;

  if (id >= 0)
    m = &rp->tm[id];
  if (m && !strcmp(m->name, x->name))
    return m;
  snprintf(troot, sizeof(troot), "thread %d \"%s\"", (int)x->tid, x->name);
  root = pst__profile_intern(c->prof, troot);
  pt = pst__profile_thread(c->prof, (uint32_t)rp->prof_proc, x->tid, x->name);
  if (!root || pt < 0)
    return NULL;
  if (!m) {
    if (pst__array_reserve((void **)&rp->tm, &rp->tm_cap, rp->ntm + 1,
                           sizeof(*rp->tm)))
      return NULL;
    if (pst__hash_insert(&rp->tm_ids, h, (uint32_t)rp->ntm))
      return NULL;
    m = &rp->tm[rp->ntm++];
    m->tid = x->tid;
  }
  snprintf(m->name, sizeof(m->name), "%s", x->name);
  m->root = root;
  m->last_gen = 0; /* its root changed */
  m->prof_thread = pt;
  return m;
}

/* The profile's copy of target string s, through the process's memo. */
static const char *memo_intern(struct pst__record_consumer *c, struct rproc *rp,
                               const char *s) {
  struct memo *m = pst__dmcache_slot(&rp->memo, (uintptr_t)s >> 3);
  if (m->src != s) {
    const char *d = pst__profile_intern(c->prof, s);
    if (!d)
      return NULL;
    m->src = s;
    m->dst = d;
  }
  return m->dst;
}

static int sample(void *ctx, const struct pst__sample *s) {
  struct pst__record_consumer *c = ctx;
  struct rproc *rp = s->proc_data;
  const struct pst_thread *x = s->thread;
  struct pst__prof_frame *frames = c->frames;
  struct tmap *m;
  size_t k = 0;
  int64_t sid;

  if (s->kind != PST_SK_STACK)
    return 0;
  if (rp->role_gen != s->proc->role_gen && make_root(c, rp, s->proc))
    return -ENOMEM;
  if (!(m = prof_thread(c, rp, x)))
    return -ENOMEM;
  if (x->stack_gen && x->stack_gen == m->last_gen)
    return pst__profile_add_stack(c->prof, (uint32_t)m->prof_thread,
                                  m->last_sid, s->t_ns, s->weight_ns);
  if (c->view.process_roots)
    frames[k++] = (struct pst__prof_frame){rp->root, c->empty, 0};
  if (c->view.thread_roots)
    frames[k++] = (struct pst__prof_frame){m->root, c->empty, 0};
  for (size_t f = x->nframes; f > 0 && k < STACK_MAX; f--) {
    const struct pst_frame *pf = &x->frames[f - 1];
    const char *name = memo_intern(c, rp, pf->name ? pf->name : "?");
    const char *file = memo_intern(c, rp, pf->filename ? pf->filename : "");
    if (!name || !file)
      return -ENOMEM;
    frames[k++] = (struct pst__prof_frame){name, file,
                                           c->view.by_function ? 0 : pf->line};
  }
  sid = pst__profile_add_interned_id(c->prof, (uint32_t)m->prof_thread, frames,
                                     k, s->t_ns, s->weight_ns);
  if (sid < 0)
    return (int)sid;
  m->last_gen = x->stack_gen;
  m->last_sid = (uint32_t)sid;
  return 0;
}

const struct pst__consumer_ops pst__record_consumer_ops = {
    .name = "record",
    .proc_begin = proc_begin,
    .proc_end = proc_end,
    .sample = sample,
};
