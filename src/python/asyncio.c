/* asyncio.c: asyncio tasks of a CPython 3.8+ target, read from outside
 * (3.8-3.13 find them through asyncio_legacy.c; the chains are read here).
 *
 * The _asyncio module keeps a _Py_AsyncioModuleDebugOffsets in an ELF
 * section named .AsyncioDebug (3.14: in the _asyncio extension module,
 * mapped once asyncio is imported; 3.15: built into the executable or
 * libpython): 13 words, the task object's size and fields, the
 * interpreter's task list head and the thread state's running loop,
 * running task and task list head. Every live Task is on a list
 * (llist_node at task_node, the thread state's head a sentinel); a thread
 * that ends moves its tasks to the interpreter's list.
 *
 * A task's coroutine chain: its coro (a coroutine object; its frame is
 * embedded at gi_iframe, with gi_frame_state beside it); a coroutine
 * suspended in `await` (SUSPENDED_YIELD_FROM) has what it awaits on the
 * top of its frame's stack (stackpointer[-1]): the next coroutine, or a
 * future, where the chain ends. Tasks that await a task are listed in
 * its awaited_by: one object, or a set of them when awaited_by_is_set.
 *
 * Sources: Include/internal/pycore_debug_offsets.h, Modules/
 * _asynciomodule.c and Modules/_remote_debugging (3.14, 3.15); checked
 * against Debian sid's 3.14.10 and 3.15.2 and their debug builds. Every
 * count and size read is bounded: the memory is the target's.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/elf.h"
#include "python/dict.h"
#include "python/python.h"
#include "util/log.h"

#define SECTION ".AsyncioDebug"
#define TASK_MAX_SIZE 1024 /* sizeof(TaskObj) is 168 in 3.14 and 3.15 */
#define CHAIN_MAX 64       /* coroutines in one task's chain */
#define SET_SLOTS_MAX 4096 /* awaited_by set table */

static int match_asyncio(const char *base) {
  return strncmp(base, "_asyncio.", 9) == 0;
}
static int match_libpython(const char *base) {
  return strncmp(base, "libpython", 9) == 0;
}
static int match_python(const char *base) {
  return strncmp(base, "python", 6) == 0;
}

/* The section's 13 words from the file behind mapping mp: 0, or
 * PST_ENOSYM when the file has no such section. */
int pst__py_aio_offsets(struct pst__py_aio *a, const uint64_t w[13],
                        const char *where) {
  for (size_t i = 0; i < 13; i++)
    if (w[i] > (1u << 24)) {
      pst__warn("%s of %s: word %zu is 0x%llx, not an offset", SECTION, where,
                i, (unsigned long long)w[i]);
      return PST_EBADDATA;
    }
  memcpy(a->words, w, sizeof(a->words));
  a->task_size = w[0];
  a->task_name = w[1];
  a->task_awaited_by = w[2];
  a->task_is_task = w[3];
  a->task_ab_is_set = w[4];
  a->task_coro = w[5];
  a->task_node = w[6];
  a->interp_tasks = w[8];
  a->ts_loop = w[10];
  a->ts_task = w[11];
  a->ts_tasks = w[12];
  a->chk_off[0] = a->task_name;
  a->chk_off[1] = a->task_coro;
  a->chk_off[2] = a->task_awaited_by;
  a->nchk = 3;
  /* Every field inside its struct, the structs of a sane size. */
  if (a->task_size == 0 || a->task_size > TASK_MAX_SIZE ||
      a->task_name + 8 > a->task_size || a->task_coro + 8 > a->task_size ||
      a->task_awaited_by + 8 > a->task_size ||
      a->task_ab_is_set >= a->task_size || a->task_is_task >= a->task_size ||
      a->task_node + 16 > a->task_size || a->interp_tasks + 8 > w[7] ||
      a->ts_tasks + 8 > w[9] || a->ts_task + 8 > w[9] ||
      a->ts_loop + 8 > w[9]) {
    pst__warn("%s of %s does not look like _Py_AsyncioModuleDebugOffsets",
              SECTION, where);
    return PST_EBADDATA;
  }
  return 0;
}

static int read_section(pid_t pid, const struct pst__map *mp,
                        struct pst__py_aio *a) {
  struct pst__elf *e = NULL;
  const uint8_t *b;
  uint64_t size = 0, w[13];
  int fd, err;

  fd = pst__maps_open(pid, mp);
  if (fd < 0)
    return fd;
  err = pst__elf_open(fd, &e); /* owns fd from here */
  if (err)
    return err;
  b = pst__elf_section_bytes(e, SECTION, &size);
  if (!b || size < sizeof(w)) {
    pst__elf_close(e);
    return PST_ENOSYM;
  }
  memcpy(w, b, sizeof(w));
  err = pst__elf_faulted(e) ? PST_EBADDATA : 0; /* truncated: zeros read */
  pst__elf_close(e);
  return err ? err : pst__py_aio_offsets(a, w, mp->path);
}

int pst__py_aio_find(struct pst__py *py, pid_t pid,
                     const struct pst__maps *maps, struct pst__mem *mem) {
  int (*const match[])(const char *) = {match_asyncio, match_libpython,
                                        match_python};
  struct pst__py_aio *a = &py->aio;

  if (a->found)
    return 0;
  if (py->version_hex >= 0x0308 && py->version_hex < 0x030e)
    return pst__py_aio_legacy_find(py, mem);
  if (py->version_hex < 0x030e || py->lay.gen_iframe == PST_NOFF)
    return PST_EPYVERSION;
  for (size_t i = 0; i < sizeof(match) / sizeof(match[0]); i++) {
    const struct pst__map *mp = pst__maps_find_file(maps, match[i]);
    int err;
    if (!mp)
      continue;
    err = read_section(pid, mp, a);
    if (err == PST_ENOSYM || err == -ENOENT || err == -EACCES)
      continue;
    if (err)
      return err;
    a->found = 1;
    pst__debug("asyncio: %s in %s: task size %llu, coro +%llu, node +%llu",
               SECTION, mp->path, (unsigned long long)a->task_size,
               (unsigned long long)a->task_coro,
               (unsigned long long)a->task_node);
    return 0;
  }
  return PST_ENOSYM;
}

/* A frame state with a frame worth reading, and one suspended in an
 * await (3.13, 3.14: CREATED -3 .. EXECUTING 0, SUSPENDED_YIELD_FROM -1;
 * 3.15: CREATED 0 .. EXECUTING 4, SUSPENDED_YIELD_FROM(_LOCKED) 2 and 3;
 * 3.11, 3.12: CREATED -2, SUSPENDED -1 (any yield: what is on the stack
 * is followed only when it is a coroutine or generator), EXECUTING 0). */
static int state_live(const struct pst__py *py, int st) {
  if (py->version_hex < 0x030d)
    return st >= -2 && st <= 0;
  return py->version_hex >= 0x030f ? st >= 0 && st <= 4 : st >= -3 && st <= 0;
}
static int state_awaits(const struct pst__py *py, int st) {
  return py->version_hex >= 0x030f ? st == 2 || st == 3 : st == -1;
}

#define NAME_READ                                                              \
  128 /* of a name object: an int, or a str's head and
                         up to NAME_READ - sizeof(PyASCIIObject) ASCII */

/* The task's name from the first NAME_READ bytes of its object (buf;
 * ok: they were read): a str, or an int n for the default "Task-n". */
static char *task_name(struct pst__py *py, struct pst__mem *mem, uint64_t obj,
                       const uint8_t *buf, int ok) {
  const struct pst__py_layout *l = &py->lay;
  uint64_t type, v;
  uint32_t state;
  int64_t len;
  char *s = NULL;

  if (!obj || !ok)
    return NULL;
  type = pst__py_u64_at(buf, (size_t)l->ob_type);
  if (py->long_type && type == py->long_type) {
    if (pst__py_int_parse(py, buf, PST_PY_INT_LEN(py), &v) == 0 &&
        asprintf(&s, "Task-%llu", (unsigned long long)v) < 0)
      s = NULL;
    return s;
  }
  if (py->str_type && type != py->str_type)
    return NULL;
  /* A compact ASCII str whose bytes were read with its head: here. */
  memcpy(&len, buf + l->str_length, 8);
  memcpy(&state, buf + l->str_state, 4);
  if (((state >> 5) & 3) == 3 && len >= 0 &&
      (size_t)l->str_ascii_data + (size_t)len < NAME_READ)
    return strndup((const char *)buf + l->str_ascii_data, (size_t)len);
  return pst__py_read_str(py, mem, obj, &s) == 0 ? s : NULL;
}

/* A coroutine's object (gen, its first glen bytes) decoded: its frame's
 * code in *code and, when it is suspended in an await, where the stack
 * pointer is in *sp (else 0). 0, or PST_EBADDATA when it is not a
 * readable coroutine (a future, a wrapper not followed, a finished one):
 * the chain ends. */
static int coro_type_ok(const struct pst__py *py, const uint8_t *gen) {
  uint64_t type = pst__py_u64_at(gen, (size_t)py->lay.ob_type);

  return !py->coro_type || type == py->coro_type ||
         (py->gen_type && type == py->gen_type);
}

static int coro_decode(const struct pst__py *py, uint64_t coro,
                       const uint8_t *gen, uint64_t *code, uint64_t *sp) {
  const struct pst__py_layout *l = &py->lay;
  const uint8_t *fr = gen + l->gen_iframe;
  int st;

  if (!coro_type_ok(py, gen))
    return PST_EBADDATA;
  /* An int8: sign-extended by hand. */
  st = gen[l->gen_frame_state] < 128 ? gen[l->gen_frame_state]
                                     : gen[l->gen_frame_state] - 256;
  if (!state_live(py, st))
    return PST_EBADDATA;
  *code = pst__py_u64_at(fr, (size_t)l->if_code) & ~(uint64_t)7;
  *sp = 0;
  if (state_awaits(py, st) && l->if_stackpointer != PST_NOFF) {
    uint64_t p = pst__py_u64_at(fr, (size_t)l->if_stackpointer) & ~(uint64_t)3;
    if (p > coro + 16 && p < coro + (1u << 20)) /* inside the frame */
      *sp = p;
  } else if (state_awaits(py, st) && py->aio.legacy) {
    /* 3.11-3.13: int stacktop, in words from localsplus */
    int32_t top;
    memcpy(&top, fr + py->aio.if_stacktop, 4);
    if (top >= 1 && top < (1 << 16))
      *sp = coro + (uint64_t)l->gen_iframe + (uint64_t)l->if_localsplus +
            (uint64_t)top * 8;
  }
  return 0;
}

/* 3.8-3.10 (aio.frameobj): the state of the PyFrameObject whose first
 * bytes are fr, as 3.10's f_state gives it (CREATED -2, SUSPENDED -1,
 * EXECUTING 0, then done); 3.8 and 3.9 have no such field: a frame runs
 * when its f_executing is set (a trace function called from it sees its
 * f_stacktop set) or its f_stacktop is NULL; else it is suspended or not
 * started (-1, with f_lasti -1). A finished one is no longer the
 * coroutine's. */
static int fo_state(const struct pst__py *py, const uint8_t *fr) {
  const struct pst__py_aio *a = &py->aio;

  if (a->f_state != PST_NOFF)
    return (int8_t)fr[a->f_state];
  return fr[a->f_executing] || !pst__py_u64_at(fr, (size_t)a->f_stack) ? 0 : -1;
}

/* The PyFrameObject at frame (fr: its first PST_PY_AIO_FRAME_READ bytes)
 * decoded as coro_decode() does an embedded one: its code, its
 * instruction offset (the version's units) and, when it is suspended
 * after starting, its stack pointer (whether that is an await is told by
 * the instruction after f_lasti, read later). */
static int fo_decode(const struct pst__py *py, uint64_t frame,
                     const uint8_t *fr, uint64_t *code, uint64_t *sp,
                     int64_t *lasti) {
  const struct pst__py_aio *a = &py->aio;
  uint64_t vs = pst__py_u64_at(fr, (size_t)a->f_valuestack), top;
  int st = fo_state(py, fr);
  int32_t li, depth;

  if (st < -2 || st > 0)
    return PST_EBADDATA;
  memcpy(&li, fr + py->lay.f_lasti, 4);
  *code = pst__py_u64_at(fr, (size_t)py->lay.f_code);
  *lasti = li;
  *sp = 0;
  if (st != -1 || li < 0 || vs <= frame || vs >= frame + (1u << 20))
    return 0;
  if (a->f_state != PST_NOFF) { /* 3.10: int f_stackdepth */
    memcpy(&depth, fr + a->f_stack, 4);
    top = depth >= 1 && depth < (1 << 16) ? vs + (uint64_t)depth * 8 : 0;
  } else { /* f_stacktop */
    top = pst__py_u64_at(fr, (size_t)a->f_stack);
    top = top > vs && top - vs < (8u << 16) ? top : 0;
  }
  *sp = top;
  return 0;
}

/* The objects awaiting the task whose object is buf: one, or a set's. */
static void waiters(struct pst__py *py, struct pst__mem *mem,
                    const struct pst__py_aio *a, const uint8_t *buf,
                    struct pst__py_task *t) {
  const struct pst__py_layout *l = &py->lay;
  uint64_t ab = pst__py_u64_at(buf, a->task_awaited_by), mask_table[2], *table;
  int64_t mask;

  t->nwaiters = 0;
  if (!ab)
    return;
  if (!buf[a->task_ab_is_set]) {
    t->waiters[t->nwaiters++] = ab;
    return;
  }
  if (l->set_mask == PST_NOFF ||
      pst__mem_read_u64(mem, ab + (uint64_t)l->set_mask, &mask_table[0]) ||
      pst__mem_read_u64(mem, ab + (uint64_t)l->set_table, &mask_table[1]))
    return;
  mask = (int64_t)mask_table[0];
  if (mask < 0 || mask >= SET_SLOTS_MAX || ((mask + 1) & mask))
    return;
  table = malloc((size_t)(mask + 1) * 16);
  if (table &&
      pst__mem_read(mem, mask_table[1], table, (size_t)(mask + 1) * 16) == 0)
    for (int64_t i = 0; i <= mask && t->nwaiters < PST_PY_TASK_WAITERS; i++)
      /* {key, hash}: empty NULL, deleted the dummy key with hash -1 */
      if (table[2 * i] && table[2 * i + 1] != UINT64_MAX)
        t->waiters[t->nwaiters++] = table[2 * i];
  free(table);
}

/* Walks the list whose sentinel is at head (owner: the thread state, 0
 * for the interpreter's) into tasks[*n..max): one read per task (the
 * next link is in it); names and chains are read later, in batches. */
static int read_list(struct pst__py *py, struct pst__mem *mem, uint64_t head,
                     uint64_t owner, uint64_t running,
                     struct pst__py_task *tasks, int max, int *n) {
  const struct pst__py_aio *a = &py->aio;
  uint8_t buf[TASK_MAX_SIZE];
  uint64_t node, prev = head;
  int err, first = *n;

  err = pst__mem_read_u64(mem, head, &node);
  if (err)
    return err;
  while (node && node != head) {
    struct pst__py_task *t;
    uint64_t addr = node - a->task_node;
    if (*n == max) { /* more in the list than read */
      py->aio.cut = 1;
      break;
    }
    t = &tasks[*n];
    err = pst__mem_read(mem, addr, buf, a->task_size);
    /* Each node's prev is the node before: a list that changed under
     * the walk (or a cycle) is dropped whole. */
    if (err == 0 && pst__py_u64_at(buf, a->task_node + 8) != prev)
      err = PST_ETORN;
    if (err) {
      *n = first;
      return err;
    }
    prev = node;
    memset(t, 0, sizeof(*t));
    t->addr = addr;
    t->tstate = owner;
    t->running = addr == running;
    t->is_task = buf[a->task_is_task] != 0;
    for (int c = 0; c < a->nchk; c++)
      t->chk[c] = pst__py_u64_at(buf, a->chk_off[c]);
    t->name_obj = pst__py_u64_at(buf, a->task_name);
    t->coro = pst__py_u64_at(buf, a->task_coro) & ~(uint64_t)7;
    waiters(py, mem, a, buf, t);
    (*n)++;
    node = pst__py_u64_at(buf, a->task_node); /* llist_node.next */
  }
  return 0;
}

/* One call's batches: per task a piece of each. */
/* What a level of a chain was read from, to read again (verify_chains):
 * the coroutine, its frame's state, code, instruction and stack words,
 * and the top of its stack when it awaits. */
struct seen {
  uint64_t coro, frame, w[3], topaddr, top[2];
  uint8_t state, has_top;
};

struct batch {
  struct seen *seen; /* level L of task i at [L * n + i] */
  struct seen *cur;  /* per task: this level's, until its frame is kept */
  struct pst__mem_iov *iov;
  uint8_t *ok, *buf;    /* n pieces of stride bytes */
  int *who;             /* the task of each piece */
  int *was;             /* a copy of who, while who is filled again */
  uint64_t *code, *sp;  /* per task: its coroutine's, at this level */
  uint64_t *opat;       /* and where its next instruction is (op_check) */
  int64_t *lasti;       /* and its frame's instruction offset */
  struct pst_frame *lv; /* level L's frame of task i at [L * n + i] */
  int levels;
};

static void batch_free(struct batch *b) {
  free(b->seen);
  free(b->cur);
  free(b->iov);
  free(b->ok);
  free(b->buf);
  free(b->who);
  free(b->was);
  free(b->code);
  free(b->sp);
  free(b->opat);
  free(b->lasti);
  free(b->lv);
}

/* Names: one batch for all. */
static int read_names(struct pst__py *py, struct pst__mem *mem,
                      struct pst__py_task *tasks, int n, struct batch *b) {
  int k = 0, got;

  for (int i = 0; i < n; i++)
    if (tasks[i].name_obj) {
      b->iov[k] = (struct pst__mem_iov){
          tasks[i].name_obj, b->buf + (size_t)k * NAME_READ, NAME_READ};
      b->who[k++] = i;
    }
  got = k ? pst__mem_readv_each(mem, b->iov, (size_t)k, b->ok) : 0;
  if (got < 0)
    return got;
  for (int j = 0; j < k; j++)
    tasks[b->who[j]].name = task_name(py, mem, tasks[b->who[j]].name_obj,
                                      b->buf + (size_t)j * NAME_READ, b->ok[j]);
  return 0;
}

/* RESUME in 3.11 and 3.12, 3.11's quickened RESUME_QUICK and 3.12's
 * INSTRUMENTED_RESUME (Include/opcode.h of each); YIELD_FROM in 3.8-3.10
 * (Include/opcode.h). */
#define OP_RESUME 151
#define OP_RESUME_QUICK_311 150
#define OP_INSTRUMENTED_RESUME_312 240
#define OP_YIELD_FROM_38 72

/* Whether a suspended coroutine's await is told by its next instruction
 * (3.8-3.12) rather than by its frame state. */
static int op_check(const struct pst__py *py) {
  return py->aio.legacy && py->version_hex < 0x030d;
}

/* Whether the code unit op (opcode, oparg) after a suspended frame's last
 * instruction makes it an await, as _PyGen_yf() checks. */
static int op_awaits(const struct pst__py *py, const uint8_t *op) {
  if (py->aio.frameobj)
    return op[0] == OP_YIELD_FROM_38;
  return op[1] >= 2 &&
         (op[0] == OP_RESUME ||
          (py->version_hex == 0x030b && op[0] == OP_RESUME_QUICK_311) ||
          (py->version_hex == 0x030c && op[0] == OP_INSTRUMENTED_RESUME_312));
}

/* The words of a coroutine's object (gen) that change when it runs: its
 * frame's state, code, instruction and stack pointer (or stacktop). With
 * aio.frameobj, gen is the bytes of its PyFrameObject. */
static void stamp(const struct pst__py *py, const uint8_t *gen,
                  struct seen *s) {
  const struct pst__py_layout *l = &py->lay;
  const uint8_t *fr;
  int32_t stack, i32;

  if (py->aio.frameobj) {
    s->state = (uint8_t)fo_state(py, gen);
    s->w[0] = pst__py_u64_at(gen, (size_t)l->f_code);
    memcpy(&i32, gen + l->f_lasti, 4);
    s->w[1] = (uint32_t)i32;
    /* f_stacktop, or 3.10's int f_stackdepth */
    memcpy(&i32, gen + py->aio.f_stack, 4);
    s->w[2] = py->aio.f_state != PST_NOFF
                  ? (uint32_t)i32
                  : pst__py_u64_at(gen, (size_t)py->aio.f_stack);
    return;
  }
  fr = gen + l->gen_iframe;
  stack =
      l->if_stackpointer != PST_NOFF ? l->if_stackpointer : py->aio.if_stacktop;
  s->state = gen[l->gen_frame_state];
  s->w[0] = pst__py_u64_at(fr, (size_t)l->if_code);
  s->w[1] = pst__py_u64_at(fr, (size_t)l->if_instr);
  s->w[2] = stack > 0 ? pst__py_u64_at(fr, (size_t)stack) : 0;
}

/* Every level of every chain read again in one batch: a task any of
 * whose coroutines ran meanwhile (another state, instruction, stack or
 * top of stack: it may now await something else, and what was read below
 * it may be another task's coroutine at a freed one's address) is torn:
 * its frames are not given. Before 3.11 a level is two pieces, the
 * coroutine (its gi_frame must be the same) and its frame object. */
enum piece { P_TASK, P_CORO, P_FRAME, P_TOP };

static int verify_chains(const struct pst__py *py, struct pst__mem *mem,
                         struct pst__py_task *tasks, int n,
                         const struct batch *b, size_t glen) {
  const struct pst__py_aio *a = &py->aio;
  const size_t flen = PST_PY_AIO_FRAME_READ;
  struct pst__mem_iov *iov;
  uint8_t *ok, *buf, *what;
  int *who, *lvl;
  size_t pieces = 0, k = 0, at = 0, lo = SIZE_MAX, hi = 0, each;
  int got, err = 0;

  for (int i = 0; i < n; i++) /* the task, then per level 2 or 3 */
    pieces += tasks[i].torn
                  ? 0
                  : (size_t)tasks[i].nframes * (a->frameobj ? 3 : 2) + 1;
  if (!pieces || !b->seen)
    return 0;
  /* The task's own words: one piece from the first to the last. */
  for (int c = 0; c < a->nchk; c++) {
    lo = a->chk_off[c] < lo ? a->chk_off[c] : lo;
    hi = a->chk_off[c] + 8 > hi ? a->chk_off[c] + 8 : hi;
  }
  each = hi > lo && hi - lo > glen ? hi - lo : glen;
  each = a->frameobj && flen > each ? flen : each;
  iov = malloc(pieces * sizeof(*iov));
  ok = malloc(pieces);
  what = malloc(pieces);
  buf = malloc(pieces * each);
  who = malloc(pieces * sizeof(*who));
  lvl = malloc(pieces * sizeof(*lvl));
  if (!iov || !ok || !what || !buf || !who || !lvl) {
    err = -ENOMEM;
    goto out;
  }
#define PIECE(addr_, len_, kind_, level_)                                      \
  do {                                                                         \
    iov[k] = (struct pst__mem_iov){(addr_), buf + at, (len_)};                 \
    what[k] = (kind_);                                                         \
    who[k] = i;                                                                \
    lvl[k++] = (level_);                                                       \
    at += each;                                                                \
  } while (0)
  for (int i = 0; i < n; i++) {
    if (!tasks[i].torn && a->nchk)
      PIECE(tasks[i].addr + lo, hi - lo, P_TASK, 0);
    for (int L = 0; !tasks[i].torn && L < tasks[i].nframes; L++) {
      const struct seen *s = &b->seen[(size_t)L * (size_t)n + (size_t)i];
      PIECE(s->coro, glen, P_CORO, L);
      if (a->frameobj)
        PIECE(s->frame, flen, P_FRAME, L);
      if (s->has_top)
        PIECE(s->topaddr, 16, P_TOP, L);
    }
  }
#undef PIECE
  got = pst__mem_readv_each(mem, iov, k, ok);
  if (got < 0) {
    err = got;
    goto out;
  }
  for (size_t j = 0; j < k; j++) {
    const struct seen *s =
        &b->seen[(size_t)lvl[j] * (size_t)n + (size_t)who[j]];
    struct pst__py_task *t = &tasks[who[j]];
    const uint8_t *p = iov[j].buf;
    struct seen now = {0};
    if (!ok[j]) {
      t->torn = 1;
    } else if (what[j] == P_TASK) {
      /* Its name, coroutine and waiters' words: another task at a freed
       * one's address would have other ones. */
      for (int c = 0; c < a->nchk; c++)
        t->torn |= pst__py_u64_at(p, a->chk_off[c] - lo) != t->chk[c];
    } else if (what[j] == P_TOP) {
      t->torn |= memcmp(p, s->top, 16) != 0;
    } else if (what[j] == P_CORO && a->frameobj) {
      t->torn |= pst__py_u64_at(p, (size_t)a->gi_frame) != s->frame;
    } else {
      stamp(py, p, &now);
      /* A coroutine running now (its task's, innermost): its instruction
       * and stack move; nothing was followed from it, so the same state
       * and code are enough. */
      if (now.state == s->state && now.w[0] == s->w[0] &&
          (int8_t)s->state == (py->version_hex >= 0x030f ? 4 : 0))
        continue;
      t->torn |=
          now.state != s->state || memcmp(now.w, s->w, sizeof(now.w)) != 0;
    }
  }
out:
  free(iov);
  free(ok);
  free(what);
  free(buf);
  free(who);
  free(lvl);
  return err;
}

/* Before 3.11: the frame objects of the m coroutines b->who[0..m) (at
 * b->cur[i].frame), one batch, decoded into b->code, b->sp, b->lasti and
 * stamped; a coroutine whose frame is unreadable, or finished, ends its
 * chain. The number kept (packed at the front of b->who), or -errno. */
static int read_frames(const struct pst__py *py, struct pst__mem *mem,
                       struct pst__py_task *tasks, struct batch *b, int m) {
  const size_t flen = PST_PY_AIO_FRAME_READ;
  int kept = 0, got;

  for (int j = 0; j < m; j++)
    b->iov[j] = (struct pst__mem_iov){b->cur[b->who[j]].frame,
                                      b->buf + (size_t)j * flen, flen};
  got = m ? pst__mem_readv_each(mem, b->iov, (size_t)m, b->ok) : 0;
  if (got < 0)
    return got;
  for (int j = 0; j < m; j++) {
    int i = b->who[j];
    const uint8_t *fr = b->buf + (size_t)j * flen;
    if (!b->ok[j] || fo_decode(py, b->cur[i].frame, fr, &b->code[i], &b->sp[i],
                               &b->lasti[i])) {
      tasks[i].coro = 0;
      continue;
    }
    stamp(py, fr, &b->cur[i]);
    b->who[kept++] = i;
  }
  return kept;
}

/* Chains, a level at a time for all tasks: the coroutines (one batch),
 * their code objects' headers (one), the tops of the awaiting ones'
 * stacks (one), which are the next level. Frames go to b->lv. */
static int read_chains(struct pst__py *py, struct pst__mem *mem,
                       struct pst__py_task *tasks, int n, struct batch *b,
                       size_t glen, size_t hsize) {
  for (int L = 0; L < CHAIN_MAX; L++) {
    struct pst_frame *lv;
    struct seen *seen;
    int k = 0, m = 0, got;

    for (int i = 0; i < n; i++)
      if (tasks[i].coro) {
        b->iov[k] = (struct pst__mem_iov){tasks[i].coro,
                                          b->buf + (size_t)k * glen, glen};
        b->who[k++] = i;
      }
    if (!k)
      return 0;
    lv = realloc(b->lv, (size_t)(L + 1) * (size_t)n * sizeof(*lv));
    if (!lv)
      return -ENOMEM;
    b->lv = lv;
    seen = realloc(b->seen, (size_t)(L + 1) * (size_t)n * sizeof(*seen));
    if (!seen)
      return -ENOMEM;
    b->seen = seen;
    memset(seen + (size_t)L * (size_t)n, 0, (size_t)n * sizeof(*seen));
    b->levels = L + 1;
    got = pst__mem_readv_each(mem, b->iov, (size_t)k, b->ok);
    if (got < 0)
      return got;
    /* The coroutines read: their code objects' headers, in the next
     * batch (pieces m..: packed at the front, after what they came from
     * was decoded). */
    for (int j = 0; j < k; j++) {
      int i = b->who[j];
      const uint8_t *gen = b->buf + (size_t)j * glen;
      b->code[i] = b->sp[i] = b->opat[i] = 0;
      b->cur[i] = (struct seen){0};
      b->cur[i].coro = tasks[i].coro;
      if (b->ok[j] && py->aio.frameobj && coro_type_ok(py, gen) &&
          (b->cur[i].frame = pst__py_u64_at(gen, (size_t)py->aio.gi_frame))) {
        b->who[m++] = i; /* its frame object: read next */
        continue;
      }
      if (!b->ok[j] || py->aio.frameobj ||
          coro_decode(py, tasks[i].coro, gen, &b->code[i], &b->sp[i])) {
        tasks[i].coro = 0; /* the chain ends */
        continue;
      }
      /* The frame's instruction offset now (gen's bytes are reused). */
      b->lasti[i] =
          pst__py_frame_lasti(py, gen + py->lay.gen_iframe, b->code[i]);
      stamp(py, gen, &b->cur[i]);
      b->who[m++] = i;
    }
    if (py->aio.frameobj) /* before 3.11: the frame objects */
      m = read_frames(py, mem, tasks, b, m);
    if (m < 0)
      return m;
    for (int j = 0; j < m; j++)
      b->iov[j] = (struct pst__mem_iov){b->code[b->who[j]],
                                        b->buf + (size_t)j * hsize, hsize};
    got = m ? pst__mem_readv_each(mem, b->iov, (size_t)m, b->ok) : 0;
    if (got < 0)
      return got;
    for (int j = 0; j < m; j++) {
      int i = b->who[j];
      struct pst_frame *f = &b->lv[(size_t)L * (size_t)n + (size_t)i];
      if (!b->ok[j] ||
          pst__py_code_header(py, mem, b->code[i], b->buf + (size_t)j * hsize,
                              b->lasti[i], &f->name, &f->filename, &f->line)) {
        tasks[i].coro = 0;
        continue;
      }
      f->kind = PST_FRAME_PYTHON;
      f->entry = 0;
      f->ip = 0;
      if (py->aio.frameobj && b->sp[i]) /* co_code's byte after f_lasti */
        b->opat[i] =
            pst__py_u64_at(b->buf + (size_t)j * hsize,
                           (size_t)py->aio.co_code) +
            (uint64_t)py->lay.bytes_data +
            (uint64_t)(py->version_hex >= 0x030a ? (b->lasti[i] + 1) * 2
                                                 : b->lasti[i] + 2);
      else if (op_check(py))
        b->opat[i] = b->cur[i].w[1] + 2; /* 3.11, 3.12: prev_instr + 1 */
      b->seen[(size_t)L * (size_t)n + (size_t)i] = b->cur[i];
      tasks[i].nframes++; /* one per level, from level 0 on */
    }
    /* What each awaiting coroutine awaits: the top of its stack; 3.15
     * keeps a NULL reference above it (the value to send), so the first
     * non-NULL of the top two (before 3.14 the top only). 3.8-3.12 have
     * one suspended state for every yield: the code unit after the
     * frame's last instruction (piece k + 1) must be YIELD_FROM (3.8-3.10)
     * or the RESUME of an await or yield from (oparg 2 or 3: 3.11, 3.12),
     * as CPython's _PyGen_yf() checks. */
    k = 0;
    memcpy(b->was, b->who, (size_t)m * sizeof(*b->was)); /* who is reused */
    for (int j = 0; j < m; j++) {
      int i = b->was[j];
      if (tasks[i].coro && tasks[i].nframes == L + 1 && b->sp[i] &&
          (b->opat[i] || !op_check(py))) {
        uint8_t *at = b->buf + (size_t)j * 32;
        b->iov[k] = (struct pst__mem_iov){b->sp[i] - 16, at, 16};
        b->who[k++] = i;
        if (op_check(py))
          b->iov[k++] = (struct pst__mem_iov){b->opat[i], at + 16, 2};
      } else {
        tasks[i].coro = 0;
      }
    }
    got = k ? pst__mem_readv_each(mem, b->iov, (size_t)k, b->ok) : 0;
    if (got < 0)
      return got;
    for (int j = 0; j < k; j += op_check(py) ? 2 : 1) {
      struct seen *sn = &b->seen[(size_t)L * (size_t)n + (size_t)b->who[j]];
      const uint8_t *at = b->iov[j].buf;
      uint64_t top[2];
      int awaits = b->ok[j];
      memcpy(top, at, 16);
      memcpy(sn->top, top, 16);
      sn->topaddr = b->iov[j].addr;
      sn->has_top = b->ok[j];
      if (op_check(py))
        awaits &= b->ok[j + 1] && op_awaits(py, at + 16);
      top[0] &= ~(uint64_t)7;
      top[1] &= ~(uint64_t)7;
      tasks[b->who[j]].coro = !awaits                    ? 0
                              : top[1] || py->aio.legacy ? top[1]
                                                         : top[0];
    }
  }
  return 0;
}

int pst__py_aio_tasks(struct pst__py *py, struct pst__mem *mem,
                      const uint64_t *tstates, int nts,
                      struct pst__py_task *tasks, int max,
                      struct pst_frame *frames, int fmax) {
  const struct pst__py_layout *l = &py->lay;
  const struct pst__py_aio *a = &py->aio;
  struct batch b = {0};
  size_t hsize = pst__py_code_header_size(py), glen, stride;
  int n = 0, nf = 0, err = 0;

  py->aio.cut = 0;
  if (!a->found)
    return PST_ENOSYM;
  /* The coroutine's bytes read: up to its gi_frame before 3.11, through
   * its embedded frame after. */
  glen = a->frameobj ? (size_t)a->gi_frame + 8
                     : (size_t)l->gen_iframe + (size_t)l->if_size;
  if (glen > 512 || (!a->frameobj && (size_t)l->gen_frame_state >= glen))
    return PST_EBADDATA;
  if (a->legacy) {
    err = pst__py_aio_legacy_list(py, mem, tstates, nts, tasks, max, &n);
    if (err == PST_EBADDATA)
      py->aio.found = 0; /* a set replaced: found again */
    if (err)
      return err;
  }
  /* A list that cannot be read (its thread ending, a list changing) is
   * left out; the others are kept. The last such error is returned when
   * no list could be read. */
  for (int i = 0; !a->legacy && i <= nts; i++) {
    uint64_t running = 0, head;
    int e;
    if (i < nts) {
      if (!tstates[i])
        continue;
      if (pst__mem_read_u64(mem, tstates[i] + a->ts_task, &running))
        running = 0;
      head = tstates[i] + a->ts_tasks;
    } else {
      if (!py->interp)
        break;
      head = py->interp + a->interp_tasks;
    }
    e = read_list(py, mem, head, i < nts ? tstates[i] : 0, running, tasks, max,
                  &n);
    if (e == -ESRCH)
      return e;
    if (e)
      err = e;
  }
  if (n == 0)
    return err;
  err = 0;
  stride = glen > hsize ? glen : hsize;
  stride = stride > NAME_READ ? stride : NAME_READ;
  stride = stride > PST_PY_AIO_FRAME_READ ? stride : PST_PY_AIO_FRAME_READ;
  b.iov = malloc((size_t)n * 2 * sizeof(*b.iov)); /* 2 per task at most */
  b.ok = malloc((size_t)n * 2);
  b.buf = malloc((size_t)n * stride);
  b.who = malloc((size_t)n * 2 * sizeof(*b.who));
  b.was = malloc((size_t)n * sizeof(*b.was));
  b.code = calloc((size_t)n, sizeof(*b.code));
  b.sp = calloc((size_t)n, sizeof(*b.sp));
  b.opat = calloc((size_t)n, sizeof(*b.opat));
  b.lasti = calloc((size_t)n, sizeof(*b.lasti));
  b.cur = calloc((size_t)n, sizeof(*b.cur));
  if (!b.iov || !b.ok || !b.buf || !b.who || !b.was || !b.code || !b.sp ||
      !b.opat || !b.lasti || !b.cur)
    err = -ENOMEM;
  if (err == 0)
    err = read_names(py, mem, tasks, n, &b);
  if (err == 0)
    err = read_chains(py, mem, tasks, n, &b, glen, hsize);
  /* Three times: a task that ran a whole cycle back to the same
   * coroutines at the same addresses between a level's two reads, but not
   * between the next level's, would have to do it each time (one pass let
   * 1 impossible chain through in 150000 task-samples of a storm; two
   * passes 3 in 4500 under ASan, whose slower reads leave the loop more
   * cycles between them). Each pass reads only the tasks still whole. */
  for (int pass = 0; err == 0 && pass < 3; pass++)
    err = verify_chains(py, mem, tasks, n, &b, glen);
  /* Each task's frames, innermost (its deepest level) first. */
  for (int i = 0; err == 0 && i < n; i++) {
    int depth = tasks[i].torn ? 0 : tasks[i].nframes;
    tasks[i].frame0 = nf;
    tasks[i].nframes = 0;
    for (int L = depth - 1; b.lv && L >= 0 && nf < fmax; L--) {
      frames[nf++] = b.lv[(size_t)L * (size_t)n + (size_t)i];
      tasks[i].nframes++;
    }
  }
  batch_free(&b);
  if (err) {
    for (int i = 0; i < n; i++) {
      free(tasks[i].name);
      tasks[i].name = NULL;
    }
    return err;
  }
  return n;
}
