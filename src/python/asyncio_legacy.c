/* asyncio_legacy.c: asyncio tasks of CPython 3.8-3.13, which have no
 * .AsyncioDebug: found through the sets asyncio.tasks keeps them in.
 *
 * asyncio.tasks (its C accelerator _asyncio registers every Task):
 *   _all_tasks (3.8-3.11) or _scheduled_tasks (3.12, 3.13)  a WeakSet,
 *       whose instance attribute `data` is a set of weak references to the
 *       tasks (PyWeakReference.wr_object; None once the task is gone);
 *   _eager_tasks (3.12+)  a set of the tasks running eagerly;
 *   _current_tasks        a dict {loop: the task it runs now};
 *   Task                  _asyncio.Task, whose TaskObj is private: its
 *       layout per version is below, checked against the type's
 *       tp_basicsize (a build whose size differs is refused, once, by
 *       name: never guessed).
 * A finished task stays in the WeakSet until it is freed (all_tasks()
 * skips it): only tasks whose fut_state is PENDING (0) are taken.
 * A task's thread is its loop's: BaseEventLoop.run_forever() sets the
 * loop's _thread_id to threading.get_ident(), the thread state's
 * thread_id. Who awaits a task is not kept in a task before 3.14; it is
 * what 3.14 records in awaited_by, rebuilt from: the task a task's
 * fut_waiter is (await task); the _children of a _GatheringFuture a task
 * awaits (gather); the _parent_task of the TaskGroup whose _on_task_done
 * is a task's first done callback (TaskGroup.create_task). On 3.14 these
 * three give exactly _asyncio_awaited_by for tests/targets/tasks.py.
 *
 * Before 3.11 a coroutine's frame is not in it but a PyFrameObject its
 * gi_frame points to (NULL once it returned), whose f_stacktop (3.8, 3.9;
 * NULL while it runs) or f_valuestack + f_stackdepth (3.10, with f_state)
 * is the top of its stack; it awaits when the instruction after f_lasti
 * is YIELD_FROM, as _PyGen_yf() checks (asyncio.c reads the chains).
 *
 * Sources: Modules/_asynciomodule.c, Lib/asyncio/{tasks,taskgroups,
 * base_events}.py, Include/internal/pycore_frame.h of 3.11-3.13,
 * Include/cpython/frameobject.h and Objects/genobject.c of 3.8-3.10;
 * offsets measured (ctypes, against id() of each field) on pyenv 3.8.18,
 * 3.9.18, 3.10.13, 3.11.7, 3.12.1, 3.13.0, Debian's 3.11.2 and a
 * 3.13.15t. Every count read is bounded.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "python/dict.h"
#include "python/python.h"
#include "util/log.h"

#define SET_SLOTS_MAX (1 << 20) /* slots of a set read at most (16 MiB) */
/* A set of more slots is real (10^6 tasks make a set of 2^21) and is read
 * in part; one past this one is no set of a real process. */
#define SET_SLOTS_CORRUPT (1 << 30)
#define CHILDREN_MAX 4096 /* of one gather */
#define TYPES_MAX 256     /* type names remembered */

/* TaskObj: FutureObj_HEAD (loop, callback0, ...) then the task's fields;
 * the coroutine's embedded frame (gi_iframe, with gi_frame_state 5 bytes
 * before it). Free-threaded: every offset 16 bytes further. Before 3.11
 * (gen_iframe 0): the coroutine's size, and in the PyFrameObject its
 * gi_frame (+16) points to, f_valuestack, f_stacktop or f_stackdepth,
 * f_executing (3.8, 3.9) or f_state (3.10), and the code object's
 * co_code. */
static const struct task_layout {
  int version, ft;
  uint32_t size, loop, cb0, state, waiter, coro, name, gen_iframe;
  uint32_t coro_size, f_valuestack, f_stack, f_executing, f_state, co_code;
} layouts[] = {
    {0x0308, 0, 144, 16, 24, 72, 104, 112, 120, 0, 104, 64, 72, 116, 0, 48},
    {0x0309, 0, 184, 16, 24, 80, 144, 152, 160, 0, 104, 64, 72, 116, 0, 48},
    {0x030a, 0, 192, 16, 24, 88, 152, 160, 168, 0, 96, 64, 80, 0, 108, 48},
    {0x030b, 0, 176, 16, 24, 88, 128, 136, 144, 80, 0, 0, 0, 0, 0, 0},
    {0x030c, 0, 176, 16, 24, 88, 128, 136, 144, 72, 0, 0, 0, 0, 0, 0},
    {0x030d, 0, 144, 16, 24, 96, 112, 120, 128, 72, 0, 0, 0, 0, 0, 0},
    {0x030d, 1, 160, 32, 40, 112, 128, 136, 144, 88, 0, 0, 0, 0, 0, 0},
};

enum { KIND_OTHER, KIND_TASK, KIND_GATHER, KIND_GROUP };

struct pst__py_aio_type {
  uint64_t type;
  int kind;
};

enum { MEMO_DATA, MEMO_THREAD_ID, MEMO_CHILDREN, MEMO_PARENT };

void pst__py_aio_legacy_exit(struct pst__py_aio *a) {
  free(a->types);
  a->types = NULL;
  a->ntypes = 0;
}

/* The module attribute name of asyncio.tasks' namespace d. */
static int attr(struct pst__py *py, struct pst__mem *mem, uint64_t d,
                const char *name, uint64_t *v) {
  return pst__py_dict_get_str(py, mem, d, 1 << 16, name, NULL, v, NULL);
}

/* The type object's tp_basicsize. */
static int type_size(struct pst__py *py, struct pst__mem *mem, uint64_t type,
                     int64_t *size) {
  return pst__mem_read(mem, type + (uint64_t)py->lay.type_basicsize, size, 8);
}

/* A set object's mask and table, after checking its type. */
static int set_head(const struct pst__py *py, const uint8_t *buf,
                    uint64_t *table, int64_t *mask) {
  const struct pst__py_layout *l = &py->lay;

  if (py->set_type && pst__py_u64_at(buf, (size_t)l->ob_type) != py->set_type)
    return PST_EBADDATA;
  memcpy(mask, buf + l->set_mask, 8);
  *table = pst__py_u64_at(buf, (size_t)l->set_table);
  if (*mask < 0 || *mask >= SET_SLOTS_CORRUPT || ((*mask + 1) & *mask) ||
      !*table)
    return PST_EBADDATA;
  return 0;
}

int pst__py_aio_legacy_find(struct pst__py *py, struct pst__mem *mem) {
  struct pst__py_aio *a = &py->aio;
  struct pst__py_layout *l = &py->lay;
  const struct task_layout *tl = NULL;
  uint64_t d, ws, set, v, task_type;
  int64_t tsize, csize;
  uint8_t head[128];
  uint32_t want;
  int err;

  for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
    if (layouts[i].version == py->version_hex &&
        layouts[i].ft == l->free_threaded)
      tl = &layouts[i];
  /* The frame's fields used: inside it (3.13's come from the target). */
  if (!tl || !py->coro_type)
    return PST_EPYVERSION;
  if (tl->gen_iframe &&
      (l->if_localsplus < 8 || l->if_localsplus > l->if_size ||
       l->if_size > 256 || l->if_code + 8 > l->if_size ||
       l->if_instr + 8 > l->if_size))
    return PST_EPYVERSION;
  if (!tl->gen_iframe &&
      (l->f_code < 0 || l->f_code + 8 > PST_PY_AIO_FRAME_READ ||
       l->f_lasti < 0 || l->f_lasti + 4 > PST_PY_AIO_FRAME_READ ||
       tl->f_valuestack + 8 > PST_PY_AIO_FRAME_READ ||
       tl->f_stack + 8 > PST_PY_AIO_FRAME_READ ||
       tl->f_state >= PST_PY_AIO_FRAME_READ ||
       tl->f_executing >= PST_PY_AIO_FRAME_READ ||
       (int32_t)tl->co_code + 8 > l->co_size))
    return PST_EPYVERSION;
  err = pst__py_module_dict(py, mem, "asyncio.tasks", NULL, &d);
  if (err)
    return err;
  err = attr(py, mem, d, "Task", &task_type);
  if (err == 0)
    err = type_size(py, mem, task_type, &tsize);
  if (err == 0)
    err = type_size(py, mem, py->coro_type, &csize);
  if (err)
    return err;
  /* The layout is this version's: Task's size, and the coroutine's: the
   * frame where 3.11+ embed it (tp_basicsize ends at localsplus). */
  want = tl->gen_iframe ? tl->gen_iframe + (uint32_t)l->if_localsplus
                        : tl->coro_size;
  if (tsize != (int64_t)tl->size || csize != (int64_t)want) {
    if (!a->warned)
      pst__warn("asyncio: _asyncio.Task is %lld bytes and a coroutine %lld, "
                "not %u and %u as in CPython %d.%d%s: an unknown build, "
                "--async left out",
                (long long)tsize, (long long)csize, tl->size, want,
                py->version_hex >> 8, py->version_hex & 0xff,
                l->free_threaded ? "t" : "");
    a->warned = 1;
    return PST_EBADDATA;
  }
  err = attr(py, mem, d, "_scheduled_tasks", &ws);
  if (err == PST_ENOSYM)
    err = attr(py, mem, d, "_all_tasks", &ws);
  if (err == 0)
    err = pst__py_instance_attr(py, mem, ws, "data", &a->memo[MEMO_DATA], &set,
                                NULL);
  if (err)
    return err;
  l->set_mask = l->ob_type + 24; /* after fill and used */
  l->set_table = l->ob_type + 32;
  err = pst__mem_read(mem, set, head, (size_t)l->set_table + 8);
  if (err == 0) {
    uint64_t table;
    int64_t mask;
    err = set_head(py, head, &table, &mask);
  }
  if (err)
    return err;
  memset(a, 0, offsetof(struct pst__py_aio, legacy));
  a->legacy = 1;
  a->task_size = tl->size;
  a->task_loop = tl->loop;
  a->task_cb0 = tl->cb0;
  a->task_state = tl->state;
  a->chk_off[0] = tl->name;
  a->chk_off[1] = tl->coro;
  a->chk_off[2] = tl->waiter;
  a->chk_off[3] = tl->cb0;
  a->nchk = 4;
  a->task_waiter = tl->waiter;
  a->task_coro = tl->coro;
  a->task_name = tl->name;
  a->task_type = task_type;
  a->scheduled = set;
  a->eager = attr(py, mem, d, "_eager_tasks", &v) == 0 ? v : 0;
  a->current = attr(py, mem, d, "_current_tasks", &v) == 0 ? v : 0;
  a->frameobj = !tl->gen_iframe;
  if (a->frameobj) {
    a->gi_frame = 16; /* after the object head, in every 3.x */
    a->f_valuestack = (int32_t)tl->f_valuestack;
    a->f_stack = (int32_t)tl->f_stack;
    a->f_state = tl->f_state ? (int32_t)tl->f_state : PST_NOFF;
    a->f_executing = tl->f_executing ? (int32_t)tl->f_executing : PST_NOFF;
    a->co_code = (int32_t)tl->co_code;
  } else {
    a->if_stacktop = l->if_localsplus - 8; /* int stacktop; char owner... */
    l->gen_iframe = (int32_t)tl->gen_iframe;
    l->gen_frame_state = (int32_t)tl->gen_iframe - 5;
  }
  a->found = 1;
  pst__debug("asyncio: %d.%d task layout, tasks in 0x%llx (eager 0x%llx), "
             "running in 0x%llx",
             py->version_hex >> 8, py->version_hex & 0xff,
             (unsigned long long)set, (unsigned long long)a->eager,
             (unsigned long long)a->current);
  return 0;
}

/* What the type object type is, from its tp_name (and tp_base for a
 * subclass of Task): remembered. */
static int kind_of(struct pst__py *py, struct pst__mem *mem, uint64_t type) {
  struct pst__py_aio *a = &py->aio;
  const struct pst__py_layout *l = &py->lay;
  uint64_t w[2] = {0, 0}, base = 0;
  char name[24] = "";
  int kind = KIND_OTHER;

  if (type == a->task_type)
    return KIND_TASK;
  for (int i = 0; i < a->ntypes; i++)
    if (a->types[i].type == type)
      return a->types[i].kind;
  /* tp_name (a char *); tp_base is 4 words before tp_dictoffset. */
  if (pst__mem_read(mem, type + (uint64_t)l->ob_type + 16, w, 8) ||
      pst__mem_read(mem, type + (uint64_t)l->type_dictoffset - 32, &base, 8))
    return KIND_OTHER; /* not remembered: read again next time */
  if (w[0] && pst__mem_read(mem, w[0], name, sizeof(name) - 1) == 0) {
    name[sizeof(name) - 1] = 0;
    if (!strcmp(name, "_GatheringFuture"))
      kind = KIND_GATHER;
    else if (!strcmp(name, "TaskGroup"))
      kind = KIND_GROUP;
  }
  if (base == a->task_type)
    kind = KIND_TASK;
  if (a->ntypes < TYPES_MAX) {
    struct pst__py_aio_type *t =
        realloc(a->types, (size_t)(a->ntypes + 1) * sizeof(*t));
    if (t) {
      a->types = t;
      a->types[a->ntypes++] = (struct pst__py_aio_type){type, kind};
    }
  }
  return kind;
}

/* Keys of the set whose head is at set (0: none) appended to *out: of
 * its first SET_SLOTS_MAX slots (more: py->aio.cut set). */
static int set_keys(struct pst__py *py, struct pst__mem *mem, uint64_t set,
                    uint64_t **out, int *n) {
  uint8_t head[128];
  uint64_t table, *ents, *o;
  int64_t mask;
  int err;

  if (!set)
    return 0;
  err = pst__mem_read(mem, set, head, (size_t)py->lay.set_table + 8);
  if (err == 0)
    err = set_head(py, head, &table, &mask);
  if (err)
    return err;
  if (mask >= SET_SLOTS_MAX) {
    mask = SET_SLOTS_MAX - 1;
    py->aio.cut = 1;
  }
  ents = malloc((size_t)(mask + 1) * 16);
  o = realloc(*out, ((size_t)*n + (size_t)mask + 1) * 8);
  if (!ents || !o) {
    free(ents);
    if (o)
      *out = o;
    return -ENOMEM;
  }
  *out = o;
  err = pst__mem_read(mem, table, ents, (size_t)(mask + 1) * 16);
  /* {key, hash}: empty NULL, deleted the dummy key with hash -1 */
  for (int64_t i = 0; err == 0 && i <= mask; i++)
    if (ents[2 * i] && ents[2 * i + 1] != UINT64_MAX)
      o[(*n)++] = ents[2 * i] & ~(uint64_t)7;
  free(ents);
  return err;
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

/* The tasks' addresses, sorted, and each one's index in tasks. */
struct sorted {
  uint64_t *addr;
  int *idx, n;
};

/* Index in tasks of the task at addr, or -1. */
static int find_task(const struct sorted *s, uint64_t addr) {
  int lo = 0, hi = s->n - 1;

  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (s->addr[mid] == addr)
      return s->idx[mid];
    if (s->addr[mid] < addr)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return -1;
}

static void add_waiter(struct pst__py_task *t, uint64_t w) {
  for (int i = 0; i < t->nwaiters; i++)
    if (t->waiters[i] == w)
      return;
  if (t->nwaiters < PST_PY_TASK_WAITERS)
    t->waiters[t->nwaiters++] = w;
}

/* Per task: its loop, first callback and what it waits on. */
struct extra {
  uint64_t loop, cb0, waiter;
};

/* The running tasks: _current_tasks' values. */
static void mark_running(struct pst__py *py, struct pst__mem *mem,
                         struct pst__py_task *tasks, const struct sorted *s) {
  struct pst__py_dict_table t;
  struct pst__py_dict_item items[64];
  int n;

  if (!py->aio.current ||
      pst__py_dict_open(py, mem, py->aio.current, 64, &t, NULL))
    return;
  n = pst__py_dict_items(py, mem, &t, items, 64);
  for (int i = 0; i < n; i++) {
    int k = find_task(s, items[i].value);
    if (k >= 0)
      tasks[k].running = 1;
  }
}

/* Attribute which (MEMO_*) of the object at obj: one read of where it was
 * the last time when the value there is the same (it is then taken to be
 * the same attribute: these are set once, _thread_id when the loop starts
 * or stops), else looked up and remembered. */
static int cached_attr(struct pst__py *py, struct pst__mem *mem, uint64_t obj,
                       int which, uint64_t *value) {
  static const char *const names[] = {"data", "_thread_id", "_children",
                                      "_parent_task"};
  struct pst__py_aio *a = &py->aio;
  uint64_t now, slot;
  int err, k;

  for (k = 0; k < PST_PY_AIO_ATTRS; k++)
    if (a->attrs[k].obj == obj && a->attrs[k].which == which)
      break;
  if (k < PST_PY_AIO_ATTRS &&
      pst__mem_read_u64(mem, a->attrs[k].slot, &now) == 0 &&
      now == a->attrs[k].value) {
    *value = now;
    return 0;
  }
  err = pst__py_instance_attr(py, mem, obj, names[which], &a->memo[which],
                              value, &slot);
  if (err || *value == py->none) /* None: a singleton, anywhere */
    return err;
  if (k == PST_PY_AIO_ATTRS) {
    k = a->attrs_next;
    a->attrs_next = (a->attrs_next + 1) % PST_PY_AIO_ATTRS;
  }
  a->attrs[k].obj = obj;
  a->attrs[k].which = which;
  a->attrs[k].slot = slot;
  a->attrs[k].value = *value;
  return 0;
}

/* The thread_id of each of tstates[0..nts) (0: unreadable), malloc'ed. */
static uint64_t *thread_ids(struct pst__py *py, struct pst__mem *mem,
                            const uint64_t *tstates, int nts) {
  struct pst__mem_iov *iov = calloc((size_t)nts + 1, sizeof(*iov));
  uint8_t *ok = calloc((size_t)nts + 1, 1);
  uint64_t *ids = calloc((size_t)nts + 1, sizeof(*ids));

  if (iov && ok && ids) {
    for (int j = 0; j < nts; j++)
      iov[j] = (struct pst__mem_iov){
          tstates[j] + (uint64_t)py->lay.ts_thread_id, &ids[j], 8};
    if (nts && pst__mem_readv_each(mem, iov, (size_t)nts, ok) < 0)
      memset(ok, 0, (size_t)nts);
    for (int j = 0; j < nts; j++)
      if (!ok[j] || !tstates[j])
        ids[j] = 0;
  }
  free(iov);
  free(ok);
  return ids;
}

/* Which thread runs loop: its _thread_id (set by run_forever, None when it
 * is not running) among the threads' ids. 0 and *tstate, or why not:
 * PST_TASK_LOOP_IDLE (None), PST_TASK_ENDED (a thread not among them),
 * PST_TASK_LOOP_UNKNOWN for a loop with no such attribute (uvloop's),
 * whose type is then named in loop_type, PST_TASK_LOOP_UNREAD when it
 * could not be read. */
static int loop_thread(struct pst__py *py, struct pst__mem *mem, uint64_t loop,
                       const uint64_t *ids, const uint64_t *tstates, int nts,
                       uint64_t *tstate) {
  uint8_t ib[PST_PY_INT_READ];
  uint64_t v, type, name;
  int err;

  *tstate = 0;
  err = cached_attr(py, mem, loop, MEMO_THREAD_ID, &v);
  if (err == 0 && v == py->none)
    return PST_TASK_LOOP_IDLE;
  if (err == 0 && (pst__mem_read(mem, v, ib, PST_PY_INT_LEN(py)) ||
                   pst__py_int_parse(py, ib, PST_PY_INT_LEN(py), &v)))
    err = PST_EBADDATA;
  if (err == 0) {
    for (int j = 0; ids && j < nts; j++)
      if (ids[j] && ids[j] == v) {
        *tstate = tstates[j];
        return 0;
      }
    return ids ? PST_TASK_ENDED : PST_TASK_LOOP_UNREAD;
  }
  if (err != PST_ENOSYM)
    return PST_TASK_LOOP_UNREAD;
  if (!py->aio.loop_type[0] &&
      pst__mem_read_u64(mem, loop + (uint64_t)py->lay.ob_type, &type) == 0 &&
      pst__mem_read_u64(mem, type + (uint64_t)py->lay.ob_type + 16, &name) ==
          0 &&
      pst__mem_read(mem, name, py->aio.loop_type,
                    sizeof(py->aio.loop_type) - 1) == 0)
    py->aio.loop_type[sizeof(py->aio.loop_type) - 1] = 0;
  else if (!py->aio.loop_type[0])
    strcpy(py->aio.loop_type, "?");
  return PST_TASK_LOOP_UNKNOWN;
}

/* Each task's thread state: its loop's thread (loops looked up once). */
static void assign_threads(struct pst__py *py, struct pst__mem *mem,
                           const uint64_t *tstates, int nts,
                           struct pst__py_task *tasks, const struct extra *x,
                           int n) {
  uint64_t *loops = malloc(((size_t)n + 1) * 16), *ts_of = loops + n + 1;
  uint64_t *ids = NULL;
  int *why = malloc(((size_t)n + 1) * sizeof(*why)), nloops = 0;

  for (int i = 0; loops && why && i < n; i++) {
    int k = 0;
    while (k < nloops && loops[k] != x[i].loop)
      k++;
    if (k == nloops) {
      if (!ids)
        ids = thread_ids(py, mem, tstates, nts);
      loops[k] = x[i].loop;
      why[k] = loop_thread(py, mem, x[i].loop, ids, tstates, nts, &ts_of[k]);
      nloops++;
    }
    tasks[i].tstate = ts_of[k];
    tasks[i].no_thread = why[k];
  }
  free(loops);
  free(why);
  free(ids);
}

/* The waiters: await task, gather, TaskGroup (see the top). Reads the
 * types of the futures awaited and of the first callbacks in one batch. */
static void find_waiters(struct pst__py *py, struct pst__mem *mem,
                         struct pst__py_task *tasks, const struct extra *x,
                         int n, const struct sorted *s) {
  const struct pst__py_layout *l = &py->lay;
  int m = n + 1, k = 0; /* + 1: never 0 bytes */
  struct pst__mem_iov *iov = malloc((size_t)m * 2 * sizeof(*iov));
  uint64_t(*w)[3] = calloc((size_t)m * 2, sizeof(*w));
  uint8_t *ok = malloc((size_t)m * 2);
  int *who = malloc((size_t)m * 2 * sizeof(*who));

  if (!iov || !w || !ok || !who)
    goto out;
  for (int i = 0; i < n; i++) {
    int at = x[i].waiter ? find_task(s, x[i].waiter) : -1;
    if (at >= 0) /* await task */
      add_waiter(&tasks[at], tasks[i].addr);
    else if (x[i].waiter && x[i].waiter != py->none) {
      iov[k] =
          (struct pst__mem_iov){x[i].waiter + (uint64_t)l->ob_type, w[k], 8};
      who[k++] = i;
    }
    if (x[i].cb0 && py->method_type) { /* ob_type, im_func, im_self */
      iov[k] = (struct pst__mem_iov){x[i].cb0 + (uint64_t)l->ob_type, w[k], 24};
      who[k++] = -1 - i;
    }
  }
  if (k == 0 || pst__mem_readv_each(mem, iov, (size_t)k, ok) < 0)
    goto out;
  for (int j = 0; j < k; j++) {
    uint64_t v, hdr[3], *items;
    int i = who[j] >= 0 ? who[j] : -1 - who[j];
    if (!ok[j])
      continue;
    if (who[j] >= 0) {
      /* gather: the _GatheringFuture's children await... with the task */
      if (kind_of(py, mem, w[j][0]) != KIND_GATHER ||
          cached_attr(py, mem, x[i].waiter, MEMO_CHILDREN, &v) ||
          pst__mem_read(mem, v + (uint64_t)l->ob_type, hdr, 24))
        continue;
      /* a list: ob_type, ob_size, ob_item */
      if ((int64_t)hdr[1] <= 0 || hdr[1] > CHILDREN_MAX || !hdr[2])
        continue;
      items = malloc(hdr[1] * 8);
      if (items && pst__mem_read(mem, hdr[2], items, hdr[1] * 8) == 0)
        for (uint64_t c = 0; c < hdr[1]; c++) {
          int at = find_task(s, items[c]);
          if (at >= 0)
            add_waiter(&tasks[at], tasks[i].addr);
        }
      free(items);
    } else if (w[j][0] == py->method_type && w[j][2]) {
      /* TaskGroup: its bound _on_task_done, self a TaskGroup */
      uint64_t self = w[j][2], type;
      int at;
      /* Its function is TaskGroup._on_task_done once one was seen: the
       * type need not be read again. */
      if (!(py->aio.group_done && w[j][1] == py->aio.group_done) &&
          (pst__mem_read_u64(mem, self + (uint64_t)l->ob_type, &type) ||
           kind_of(py, mem, type) != KIND_GROUP))
        continue;
      if (cached_attr(py, mem, self, MEMO_PARENT, &v))
        continue;
      if (!py->aio.group_done && find_task(s, v) >= 0)
        py->aio.group_done = w[j][1];
      at = find_task(s, v);
      if (at >= 0)
        add_waiter(&tasks[i], tasks[at].addr);
    }
  }
out:
  free(iov);
  free(w);
  free(ok);
  free(who);
}

int pst__py_aio_legacy_list(struct pst__py *py, struct pst__mem *mem,
                            const uint64_t *tstates, int nts,
                            struct pst__py_task *tasks, int max, int *n) {
  struct pst__py_aio *a = &py->aio;
  const struct pst__py_layout *l = &py->lay;
  uint64_t *refs = NULL, *cand = NULL;
  struct pst__mem_iov *iov = NULL;
  struct extra *x = NULL;
  struct sorted s = {0};
  uint8_t *ok = NULL, *buf = NULL;
  int nrefs = 0, ncand = 0, first = *n, err;

  /* The weak references, then what they refer to (None: gone). */
  err = set_keys(py, mem, a->scheduled, &refs, &nrefs);
  if (err)
    goto out;
  cand = malloc(((size_t)nrefs + 1) * 8);
  iov = malloc(((size_t)nrefs + 1) * sizeof(*iov));
  ok = malloc((size_t)nrefs + 1);
  if (!cand || !iov || !ok) {
    err = -ENOMEM;
    goto out;
  }
  for (int i = 0; i < nrefs; i++)
    iov[i] =
        (struct pst__mem_iov){refs[i] + (uint64_t)l->ob_type + 8, &cand[i], 8};
  if (nrefs && (err = pst__mem_readv_each(mem, iov, (size_t)nrefs, ok)) < 0)
    goto out;
  for (int i = 0; i < nrefs; i++)
    if (ok[i] && cand[i] && cand[i] != py->none)
      cand[ncand++] = cand[i] & ~(uint64_t)7;
  err = set_keys(py, mem, a->eager, &cand, &ncand);
  if (err)
    goto out;
  qsort(cand, (size_t)ncand, 8, cmp_u64);
  {
    int u = 0;
    for (int i = 0; i < ncand; i++)
      if (i == 0 || cand[i] != cand[u - 1])
        cand[u++] = cand[i];
    ncand = u;
  }
  if (ncand > max - *n) {
    ncand = max - *n;
    a->cut = 1;
  }
  /* The task objects, in one batch. */
  free(iov);
  free(ok);
  iov = malloc(((size_t)ncand + 1) * sizeof(*iov));
  ok = malloc((size_t)ncand + 1);
  buf = malloc(((size_t)ncand + 1) * a->task_size);
  x = calloc((size_t)ncand + 1, sizeof(*x));
  s.addr = malloc(((size_t)ncand + 1) * 8);
  s.idx = malloc(((size_t)ncand + 1) * sizeof(int));
  if (!iov || !ok || !buf || !x || !s.addr || !s.idx) {
    err = -ENOMEM;
    goto out;
  }
  for (int i = 0; i < ncand; i++)
    iov[i] = (struct pst__mem_iov){cand[i], buf + (size_t)i * a->task_size,
                                   a->task_size};
  if (ncand && (err = pst__mem_readv_each(mem, iov, (size_t)ncand, ok)) < 0)
    goto out;
  err = 0;
  for (int i = 0; i < ncand; i++) {
    const uint8_t *b = buf + (size_t)i * a->task_size;
    struct pst__py_task *t = &tasks[*n];
    /* A task of another type (a Python Task, a freed object read while
     * the set changed) is not read at these offsets. */
    uint32_t state;
    if (!ok[i] ||
        kind_of(py, mem, pst__py_u64_at(b, (size_t)l->ob_type)) != KIND_TASK)
      continue;
    memcpy(&state, b + a->task_state, 4);
    if (state != 0) /* done or cancelled */
      continue;
    memset(t, 0, sizeof(*t));
    t->addr = cand[i];
    t->is_task = 1;
    for (int c = 0; c < a->nchk; c++)
      t->chk[c] = pst__py_u64_at(b, a->chk_off[c]);
    t->name_obj = pst__py_u64_at(b, a->task_name);
    t->coro = pst__py_u64_at(b, a->task_coro) & ~(uint64_t)7;
    x[*n - first] = (struct extra){pst__py_u64_at(b, a->task_loop),
                                   pst__py_u64_at(b, a->task_cb0),
                                   pst__py_u64_at(b, a->task_waiter)};
    s.addr[s.n] = cand[i]; /* cand is sorted: so is s */
    s.idx[s.n++] = *n - first;
    (*n)++;
  }
  /* From here indexes are from first (x's, s's). */
  mark_running(py, mem, tasks + first, &s);
  assign_threads(py, mem, tstates, nts, tasks + first, x, *n - first);
  find_waiters(py, mem, tasks + first, x, *n - first, &s);
out:
  free(refs);
  free(cand);
  free(iov);
  free(ok);
  free(buf);
  free(x);
  free(s.addr);
  free(s.idx);
  return err;
}
