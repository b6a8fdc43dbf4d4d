/* asyncio.c: asyncio tasks of a CPython 3.14+ target, read from outside.
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
#include <fcntl.h>
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
#define LIST_MAX 100000    /* tasks on one list */
#define CHAIN_MAX 64       /* coroutines in one task's chain */
#define SET_SLOTS_MAX 4096 /* awaited_by set table */

static uint64_t u64_at(const uint8_t *p, size_t off) {
  uint64_t v;
  memcpy(&v, p + off, 8);
  return v;
}

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
static int read_section(pid_t pid, const struct pst_map *mp,
                        struct pst_py_aio *a) {
  struct pst_elf *e = NULL;
  const uint8_t *b;
  uint64_t size = 0, w[13];
  int fd, err;

  fd = pst_maps_open(pid, mp);
  if (fd < 0)
    return fd;
  err = pst_elf_open(fd, &e);
  close(fd);
  if (err)
    return err;
  b = pst_elf_section_bytes(e, SECTION, &size);
  if (!b || size < sizeof(w)) {
    pst_elf_close(e);
    return PST_ENOSYM;
  }
  memcpy(w, b, sizeof(w));
  pst_elf_close(e);
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
  /* Every field inside its struct, the structs of a sane size. */
  if (a->task_size == 0 || a->task_size > TASK_MAX_SIZE ||
      a->task_name + 8 > a->task_size || a->task_coro + 8 > a->task_size ||
      a->task_awaited_by + 8 > a->task_size ||
      a->task_ab_is_set >= a->task_size || a->task_is_task >= a->task_size ||
      a->task_node + 8 > a->task_size || a->interp_tasks + 8 > w[7] ||
      a->ts_tasks + 8 > w[9] || a->ts_task + 8 > w[9] ||
      a->ts_loop + 8 > w[9]) {
    pst_warn("%s of %s does not look like _Py_AsyncioModuleDebugOffsets",
             SECTION, mp->path);
    return PST_EBADDATA;
  }
  return 0;
}

int pst_py_aio_find(struct pst_py *py, pid_t pid, const struct pst_maps *maps) {
  int (*const match[])(const char *) = {match_asyncio, match_libpython,
                                        match_python};
  struct pst_py_aio *a = &py->aio;

  if (a->found)
    return 0;
  if (py->version_hex < 0x030e || py->lay.gen_iframe == PST_NOFF)
    return PST_EPYVERSION;
  for (size_t i = 0; i < sizeof(match) / sizeof(match[0]); i++) {
    const struct pst_map *mp = pst_maps_find_file(maps, match[i]);
    int err;
    if (!mp)
      continue;
    err = read_section(pid, mp, a);
    if (err == PST_ENOSYM || err == -ENOENT || err == -EACCES)
      continue;
    if (err)
      return err;
    a->found = 1;
    pst_debug("asyncio: %s in %s: task size %llu, coro +%llu, node +%llu",
              SECTION, mp->path, (unsigned long long)a->task_size,
              (unsigned long long)a->task_coro,
              (unsigned long long)a->task_node);
    return 0;
  }
  return PST_ENOSYM;
}

/* A frame state with a frame worth reading, and one suspended in an
 * await (3.14: CREATED -3 .. EXECUTING 0, SUSPENDED_YIELD_FROM -1; 3.15:
 * CREATED 0 .. EXECUTING 4, SUSPENDED_YIELD_FROM(_LOCKED) 2 and 3). */
static int state_live(const struct pst_py *py, int st) {
  return py->version_hex >= 0x030f ? st >= 0 && st <= 4 : st >= -3 && st <= 0;
}
static int state_awaits(const struct pst_py *py, int st) {
  return py->version_hex >= 0x030f ? st == 2 || st == 3 : st == -1;
}

/* The task's name: a str, or an int n for the default "Task-n". */
static char *task_name(struct pst_py *py, struct pst_mem *mem, uint64_t obj) {
  uint8_t buf[PST_PY_INT_READ];
  uint64_t type, v;
  char *s = NULL;

  if (!obj || pst_mem_read(mem, obj, buf, PST_PY_INT_LEN(py)))
    return NULL;
  type = u64_at(buf, (size_t)py->lay.ob_type);
  if (py->long_type && type == py->long_type) {
    if (pst_py_int_parse(py, buf, PST_PY_INT_LEN(py), &v) == 0 &&
        asprintf(&s, "Task-%llu", (unsigned long long)v) < 0)
      s = NULL;
    return s;
  }
  if (py->str_type && type != py->str_type)
    return NULL;
  return pst_py_read_str(py, mem, obj, &s) == 0 ? s : NULL;
}

/* One coroutine frame into *f; its state in *state, what it awaits (if
 * suspended in an await) in *next. 0, or <0 when coro is not a readable
 * coroutine (the chain ends). */
static int coro_frame(struct pst_py *py, struct pst_mem *mem, uint64_t coro,
                      struct pst_frame *f, int *state, uint64_t *next) {
  const struct pst_py_layout *l = &py->lay;
  uint8_t gen[512], hdr[PST_PY_CODE_HEADER_MAX];
  const uint8_t *fr;
  uint64_t type, code, sp;
  size_t glen = (size_t)l->gen_iframe + (size_t)l->if_size;
  int64_t lasti;
  int err;

  *next = 0;
  if (glen > sizeof(gen) || (size_t)l->gen_frame_state >= glen)
    return PST_EBADDATA;
  err = pst_mem_read(mem, coro, gen, glen);
  if (err)
    return err;
  type = u64_at(gen, (size_t)l->ob_type);
  if (py->coro_type && type != py->coro_type &&
      (!py->gen_type || type != py->gen_type))
    return PST_EBADDATA; /* a future, or a wrapper not followed */
  /* An int8: sign-extended by hand. */
  *state = gen[l->gen_frame_state] < 128 ? gen[l->gen_frame_state]
                                         : gen[l->gen_frame_state] - 256;
  if (!state_live(py, *state))
    return PST_EBADDATA;
  fr = gen + l->gen_iframe;
  code = u64_at(fr, (size_t)l->if_code) & ~(uint64_t)7;
  lasti = pst_py_frame_lasti(py, fr, code);
  err = pst_mem_read(mem, code, hdr, pst_py_code_header_size(py));
  if (err == 0)
    err = pst_py_code_header(py, mem, code, hdr, lasti, &f->name, &f->filename,
                             &f->line);
  if (err)
    return err;
  f->kind = PST_FRAME_PYTHON;
  f->entry = 0;
  f->ip = 0;
  if (state_awaits(py, *state) && l->if_stackpointer != PST_NOFF) {
    /* The awaited object is the top of the stack (3.14); 3.15 keeps a
     * NULL reference above it (the value to send): the first non-NULL of
     * the top two. */
    uint64_t top[2];
    sp = u64_at(fr, (size_t)l->if_stackpointer) & ~(uint64_t)3;
    if (sp > coro + 16 && sp < coro + (1u << 20) && /* inside the frame */
        pst_mem_read(mem, sp - 16, top, sizeof(top)) == 0)
      *next = (top[1] & ~(uint64_t)7) ? top[1] & ~(uint64_t)7
                                      : top[0] & ~(uint64_t)7;
  }
  return 0;
}

/* The objects awaiting the task whose object is buf: one, or a set's. */
static void waiters(struct pst_py *py, struct pst_mem *mem,
                    const struct pst_py_aio *a, const uint8_t *buf,
                    struct pst_py_task *t) {
  const struct pst_py_layout *l = &py->lay;
  uint64_t ab = u64_at(buf, a->task_awaited_by), head[3], *table = NULL;
  int64_t mask;

  t->nwaiters = 0;
  if (!ab)
    return;
  if (!buf[a->task_ab_is_set]) {
    t->waiters[t->nwaiters++] = ab;
    return;
  }
  if (l->set_mask == PST_NOFF ||
      pst_mem_read_u64(mem, ab + l->set_mask, &head[0]) ||
      pst_mem_read_u64(mem, ab + l->set_table, &head[1]))
    return;
  mask = (int64_t)head[0];
  if (mask < 0 || mask >= SET_SLOTS_MAX || ((mask + 1) & mask))
    return;
  table = malloc((size_t)(mask + 1) * 16);
  if (table && pst_mem_read(mem, head[1], table, (size_t)(mask + 1) * 16) == 0)
    for (int64_t i = 0; i <= mask && t->nwaiters < PST_PY_TASK_WAITERS; i++)
      if (table[2 * i]) /* the key; the hash beside it */
        t->waiters[t->nwaiters++] = table[2 * i];
  free(table);
}

/* Reads the tasks of the list whose sentinel is at head (owner: the
 * thread state, 0 for the interpreter's) into tasks[*n..max) and their
 * chains into frames[*nf..fmax). */
static int read_list(struct pst_py *py, struct pst_mem *mem, uint64_t head,
                     uint64_t owner, uint64_t running,
                     struct pst_py_task *tasks, int max, int *n,
                     struct pst_frame *frames, int fmax, int *nf) {
  const struct pst_py_aio *a = &py->aio;
  uint8_t buf[TASK_MAX_SIZE];
  uint64_t node;
  int err, steps = 0;

  err = pst_mem_read_u64(mem, head, &node);
  if (err)
    return err;
  while (node && node != head && *n < max) {
    struct pst_py_task *t = &tasks[*n];
    uint64_t addr = node - a->task_node, coro;
    if (++steps > LIST_MAX)
      return PST_EBADDATA;
    err = pst_mem_read(mem, addr, buf, a->task_size);
    if (err)
      return err;
    memset(t, 0, sizeof(*t));
    t->addr = addr;
    t->tstate = owner;
    t->running = addr == running;
    t->is_task = buf[a->task_is_task] != 0;
    t->name = task_name(py, mem, u64_at(buf, a->task_name));
    waiters(py, mem, a, buf, t);
    t->frame0 = *nf;
    coro = u64_at(buf, a->task_coro) & ~(uint64_t)7;
    for (int k = 0; coro && k < CHAIN_MAX && *nf < fmax; k++) {
      int state;
      uint64_t next;
      if (coro_frame(py, mem, coro, &frames[*nf], &state, &next))
        break;
      (*nf)++;
      t->nframes++;
      coro = next;
    }
    /* Outermost coroutine first as read: make it innermost first. */
    for (int i = 0, j = t->nframes - 1; i < j; i++, j--) {
      struct pst_frame x = frames[t->frame0 + i];
      frames[t->frame0 + i] = frames[t->frame0 + j];
      frames[t->frame0 + j] = x;
    }
    (*n)++;
    node = u64_at(buf, a->task_node); /* llist_node.next */
  }
  return 0;
}

int pst_py_aio_tasks(struct pst_py *py, struct pst_mem *mem,
                     const uint64_t *tstates, int nts,
                     struct pst_py_task *tasks, int max,
                     struct pst_frame *frames, int fmax) {
  const struct pst_py_aio *a = &py->aio;
  int n = 0, nf = 0, err = 0;

  if (!a->found)
    return PST_ENOSYM;
  for (int i = 0; i < nts && err == 0; i++) {
    uint64_t running = 0;
    if (!tstates[i])
      continue;
    if (pst_mem_read_u64(mem, tstates[i] + a->ts_task, &running))
      running = 0;
    err = read_list(py, mem, tstates[i] + a->ts_tasks, tstates[i], running,
                    tasks, max, &n, frames, fmax, &nf);
  }
  if (err == 0 && py->interp)
    err = read_list(py, mem, py->interp + a->interp_tasks, 0, 0, tasks, max, &n,
                    frames, fmax, &nf);
  if (err) {
    for (int i = 0; i < n; i++)
      free(tasks[i].name);
    return err;
  }
  return n;
}
