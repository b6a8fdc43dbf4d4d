/* python.h: the CPython layer: what the interpreter of one target is, and
 * reading its thread states, frames and code objects.
 *
 * struct pst__py is embedded in the target (pst__py_init()/pst__py_exit()),
 * filled once by pst__py_analyse() at attach time and read-only afterwards
 * except for its code-object cache (code.c) and its thread-registry cache
 * (registry.c), which it owns.
 * All target memory is read through the struct pst__mem it is given.
 */
#ifndef PST_PYTHON_H
#define PST_PYTHON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "disasm/disasm.h"
#include "proc/maps.h"
#include "proc/mem.h"
#include "pystitch.h"
#include "python/layout.h"

struct pst__elf;

struct pst__code_cache;
struct pst__py;
struct pst__py_check;
struct pst__py_reg;

/* Buffers a walk needs, kept between walks so that sampling allocates
 * nothing (frame.c). */
struct pst__py_scratch {
  void *raw; /* frames found by the first pass */
  size_t raw_cap;
  struct pst__mem_iov *iov; /* the batched code-header read */
  size_t iov_cap;
  uint8_t *hdrs;
  size_t hdrs_cap;
  const uint8_t **hdr_of; /* where each frame's code header is */
  size_t hdr_of_cap;
  uint8_t *guess;              /* guessed frames and code headers */
  struct pst__py_visit *visit; /* every frame the last walk followed */
  size_t visit_cap, nvisit;
  struct pst__mem_iov *civ; /* the check's pieces */
  size_t civ_cap;
  uint8_t *cbytes; /* and their bytes */
  size_t cbytes_cap;
};

/* A frame a walk followed: its link to the next frame and its code word,
 * as read (the torn-read check reads them again). */
struct pst__py_visit {
  uint64_t frame, link, code;
};

/* What one thread's last walk read, guessed again by the next walk in its
 * first syscall (frame.c). Owned by the caller (one per thread), zeroed to
 * start; a stale hint costs time, never correctness. */
#define PST_PY_HINT_MAX 64
struct pst__py_hint {
  uint64_t cframe;    /* 3.11/3.12: the thread state's cframe */
  uint64_t chunk;     /* data-stack chunk start, 0 if none */
  uint32_t chunk_len; /* bytes to read from it */
  uint32_t nframes, ncodes;
  uint64_t frames[PST_PY_HINT_MAX]; /* frames read outside the chunk */
  uint64_t codes[PST_PY_HINT_MAX];  /* distinct code objects */
  /* Whose state it must be: a thread that ends frees its PyThreadState and
   * the next thread often gets the same memory (and, from glibc's stack
   * cache, the same thread pointer) before the old tid leaves /proc. The
   * walk fails with -ESRCH unless the state read still has this interp,
   * thread_id (when non-zero) and the native_thread_id seen first (3.8+;
   * learnt at the first walk: it is namespace-relative). */
  uint64_t owner_interp, owner_thread_id, owner_native_id;
  uint64_t top; /* the innermost frame the last walk found */
};

/* ---- one read per tick: batched first reads (frame.c) ----
 *
 * The first read of every thread to walk (its thread state and what its
 * hint guesses) goes into one batch that the caller reads in one
 * process_vm_readv for all of them; each thread's torn-read check rides
 * in the same call, after that thread's pieces (the kernel reads pieces in
 * order). pst__py_walk_prefetched() then walks from the copies, and
 * pst__py_check_batched() tells from the check pieces whether the stack
 * moved, or that the batch cannot tell (the walk had to read more, or the
 * top frame is outside what was re-read): then the caller reads a
 * pst__py_check. Owned by the caller (one per target), reused per tick. */
struct pst__py_plan_key {
  uint64_t addr, len;
  uint32_t group, pad;
};

struct pst__py_batch {
  struct pst__mem_iov *iov; /* pieces; buf set by pst__py_batch_read() */
  size_t *off;              /* each piece's offset in arena */
  uint8_t *ok;              /* each piece read whole */
  size_t n, cap;
  uint8_t *arena; /* every piece's bytes */
  size_t used, arena_cap;
  /* Pieces are read as ranges: the pieces of one group (a thread's first
   * read, or its check) that lie near each other are one range, so the
   * kernel pins each page once; groups are read in order. */
  uint32_t *group; /* each piece's group */
  uint32_t ngroups;
  size_t *order;             /* pieces sorted by (group, address) */
  struct pst__mem_iov *riov; /* the ranges */
  uint8_t *rok;
  size_t *rof; /* each piece's range */
  size_t nranges, rcap, order_cap, rof_cap, group_cap;
  uint8_t *stage; /* the ranges' bytes */
  size_t stage_cap;
  /* The last plan's pieces (address, length, group): a tick that asks
   * for the same pieces as the one before (a steady stack) reads the
   * same ranges, not sorted and merged again. */
  struct pst__py_plan_key *plan_key;
  size_t plan_n, plan_key_cap;
  uint64_t plans_reused; /* for the benchmarks */
  /* Code headers, shared: group 0 holds one piece per code object (the
   * threads' hints name the same ones), found through an open-addressing
   * table of piece indices; code_piece lists, per thread in turn, the
   * pieces of its hint's codes (pst__py_prefetch.i0c indexes it). */
  size_t *code_slot, code_slots, ncode_keys;
  size_t *code_piece, ncode, code_piece_cap;
  /* The GIL's words {last_holder, locked, switch_number} read before
   * every thread's pieces and again after them (pst__py_batch_gil). */
  size_t gil_pre, gil_post;
  uint64_t ranges_read; /* for the benchmarks: ranges read, */
  uint64_t pieces_read; /* and the pieces they held, */
  uint64_t bytes_read;  /* and the bytes of the ranges */
};

/* One thread's part of a batch (indices into it; PST_PY_NOPIECE when a
 * piece is absent). Filled by pst__py_prefetch_add(). */
#define PST_PY_NOPIECE ((size_t)-1)
struct pst__py_prefetch {
  uint64_t tstate;
  struct pst__py_hint *hint;   /* borrowed: the thread's hint */
  size_t it, ig, ic, i0f, i0c; /* state, cframe guess, chunk, frames
                                    (piece indices), code headers (into
                                    the batch's code_piece) */
  uint32_t nframes, ncodes, chunk_len;
  uint64_t cframe, chunk;                     /* the hint's, as planned */
  size_t ck_field, ck_guess, ck_chunk, ck_f0; /* the check after it: the
                                    frame field, the cframe's frame, the
                                    chunk and the guessed frames again */
  uint64_t reads; /* mem->reads when its walk began */
  int unchecked;  /* no check planned: pst__py_check_quiet() decides */
};

void pst__py_batch_init(struct pst__py_batch *b);
void pst__py_batch_exit(struct pst__py_batch *b);
/* Empties b for the next tick (keeps its memory). */
void pst__py_batch_reset(struct pst__py_batch *b);
/* Plans thread state tstate's first read and check into b. 0 or
 * -ENOMEM. */
int pst__py_prefetch_add(struct pst__py *py, struct pst__py_batch *b,
                         uint64_t tstate, struct pst__py_hint *hint,
                         struct pst__py_prefetch *pf);
/* The same without its check: for a thread that cannot move its stack
 * unless it takes the GIL (see pst__py_batch_gil). */
int pst__py_prefetch_add_unchecked(struct pst__py *py, struct pst__py_batch *b,
                                   uint64_t tstate, struct pst__py_hint *hint,
                                   struct pst__py_prefetch *pf);
/* Under a GIL only its holder can change its Python stack, and a thread
 * that takes the GIL from another increments switch_number (ceval_gil.c:
 * take_gil). So the GIL's {last_holder, locked, switch_number} read before
 * every thread's pieces and again after them, in the same syscall, prove
 * that no thread but last_holder changed its stack meanwhile when both
 * reads agree: the other threads need no check. Adds the two pieces (the
 * GIL's words at addr, from pst__py_gil_words()). */
void pst__py_batch_gil(struct pst__py_batch *b, uint64_t addr);
/* After the read: 1 and *holder (the last holder) when the two reads of
 * the GIL agree, else 0. */
int pst__py_batch_gil_quiet(const struct pst__py_batch *b, uint64_t *holder);
/* The address of the GIL's last_holder word, followed by locked and
 * switch_number (struct _gil_runtime_state: _PyRuntime.ceval.gil in
 * 3.7-3.11, the interpreter's from 3.12; the shape checked from the
 * layout), found once: 0, or -ENOSYS (no GIL: free-threaded; 2.7 and 3.6
 * keep it in statics), -errno. */
int pst__py_gil_words(struct pst__py *py, struct pst__mem *mem, uint64_t *addr);
/* For an unchecked thread after its walk: 1 when the batch proves its
 * stack still (quiet, tstate not the holder, and the walk read nothing
 * after the batch), else -1 (read a pst__py_check). */
int pst__py_check_quiet(const struct pst__mem *mem,
                        const struct pst__py_prefetch *pf, int quiet,
                        uint64_t holder);
/* Adds a piece of len bytes at addr to b, in a group of its own (a word
 * the caller wants read in the same syscall as the walks' first reads).
 * Its index, or PST_PY_NOPIECE (-ENOMEM). */
size_t pst__py_batch_word(struct pst__py_batch *b, uint64_t addr, size_t len);
/* After pst__py_batch_read(): piece i's first len bytes into out. 0, or
 * -EFAULT when it was not read (or there is no such piece). */
int pst__py_batch_copy(const struct pst__py_batch *b, size_t i, void *out,
                       size_t len);
/* Reads every piece of b (one syscall while all are readable; an
 * unreadable piece costs one more). Returns the pieces read or -ESRCH. */
int pst__py_batch_read(struct pst__mem *mem, struct pst__py_batch *b);
/* pst__py_walk() whose first read is pf's part of the read batch b. */
int pst__py_walk_prefetched(struct pst__py *py, struct pst__mem *mem,
                            const struct pst__py_batch *b,
                            struct pst__py_prefetch *pf,
                            struct pst_frame *frames, int max, int *truncated,
                            uint64_t *thread_obj, uint64_t top[2]);
/* After that walk (top[] as it returned): 1 when the stack did not move
 * while it was read, 0 when it did, -1 when the batch cannot tell (read a
 * pst__py_check instead). */
int pst__py_check_batched(const struct pst__py *py, const struct pst__mem *mem,
                          const struct pst__py_batch *b,
                          const struct pst__py_prefetch *pf,
                          const uint64_t top[2]);

/* Bytes of a frame, a code object header and a str header read into local
 * buffers: every layout offset used on them is checked against these by
 * pst__py_layout_check() before any read. */
#define PST_PY_FRAME_BUF 256
#define PST_PY_CODE_HEADER_MAX 512
#define PST_PY_STR_HEAD 64
/* Bytes of a type object read at most: every type_* and ht_* offset ends
 * within them (threadname.c reads them in one piece). */
#define PST_PY_TYPE_SPAN 2048

/* The 8-byte word at p + off of a local copy of target memory (unaligned,
 * host byte order). off is a layout offset (int32_t, never PST_NOFF here:
 * the callers check) or a computed one (size_t): both convert to size_t
 * unchanged, and every one is within the buffer (pst__py_layout_check() or
 * the caller's bound). */
static inline uint64_t pst__py_u64_at(const uint8_t *p, size_t off) {
  uint64_t v;

  memcpy(&v, p + off, 8);
  return v;
}

/* asyncio.c: the _asyncio module's offsets (3.14+), once found; or, for
 * 3.8-3.13 (legacy: asyncio_legacy.c), the task layout of the version and
 * where asyncio.tasks keeps its tasks. */
struct pst__py_aio {
  int found;
  uint64_t task_size, task_name, task_awaited_by, task_is_task, task_ab_is_set,
      task_coro, task_node;            /* in a Task object */
  uint64_t interp_tasks;               /* in PyInterpreterState */
  uint64_t ts_loop, ts_task, ts_tasks; /* in a thread state */
  uint64_t words[13];  /* the .AsyncioDebug section as read (3.14+) */
  uint64_t chk_off[4]; /* words of a task read again after its chain */
  int nchk;
  /* legacy only */
  int legacy, warned;
  uint64_t task_loop, task_cb0, task_waiter, task_state; /* in a Task */
  int32_t if_stacktop; /* int stacktop in _PyInterpreterFrame */
  /* 3.8-3.10 (frameobj): a coroutine's frame is a PyFrameObject that
   * gi_frame points to; in it f_valuestack, f_stacktop (3.8, 3.9) or int
   * f_stackdepth (3.10), char f_executing (3.8, 3.9) or f_state (3.10;
   * the other one PST_NOFF); the code object's co_code (bytes) */
  int frameobj;
  int32_t gi_frame, f_valuestack, f_stack, f_executing, f_state, co_code;
#define PST_PY_AIO_FRAME_READ 120 /* bytes of a PyFrameObject read */
  uint64_t task_type;             /* _asyncio.Task */
  uint64_t scheduled;             /* the set in the WeakSet of _scheduled_tasks
                            (3.12+) or _all_tasks (3.11): weak references */
  uint64_t eager;   /* _eager_tasks (3.12+): a set of tasks, or 0 */
  uint64_t current; /* _current_tasks: a dict {loop: running task} */
  uint64_t memo[4]; /* interned attribute names (pst__py_instance_attr) */
  struct pst__py_aio_type *types; /* type names seen (malloc'ed) */
  char loop_type[48];  /* a loop's whose thread is not known (uvloop) */
  uint64_t group_done; /* TaskGroup._on_task_done, once a TaskGroup seen */
  /* Attributes read before: (object, which attribute) -> value, and the
   * address holding it, read again to trust the value (asyncio_legacy.c:
   * a loop's _thread_id, a gather's _children, a TaskGroup's
   * _parent_task). */
#define PST_PY_AIO_ATTRS 64
  struct {
    uint64_t obj, slot, value;
    int which;
  } attrs[PST_PY_AIO_ATTRS];
  int attrs_next;
  int ntypes;
  int cut; /* the last pst__py_aio_tasks() found more tasks than it read
              (max, or a set of more than SET_SLOTS_MAX slots) */
};

#define PST_PY_TASK_WAITERS PST_TASK_WAITERS

/* One asyncio task as read by pst__py_aio_tasks(). */
struct pst__py_task {
  uint64_t addr;   /* the Task object */
  char *name;      /* malloc'ed, NULL when unreadable */
  uint64_t tstate; /* the thread state whose list holds it; 0: the
                      interpreter's (its thread ended) */
  int no_thread;   /* with tstate 0: PST_TASK_* (0: PST_TASK_ENDED) */
  int torn;        /* its chain changed while read: no frames given */
  uint64_t chk[4]; /* its words at aio.chk_off, as first read */
  int running;     /* its thread's running task */
  int is_task;     /* a Task, not a plain Future */
  uint64_t waiters[PST_PY_TASK_WAITERS]; /* objects awaiting it */
  int nwaiters;
  int frame0, nframes;     /* its coroutine chain in the frames given,
                          innermost first */
  uint64_t name_obj, coro; /* internal: read from the task object */
};

struct pst__py {
  struct pst__py_layout lay; /* copied from the table or _Py_DebugOffsets */
  int version_hex;           /* 0xMMmm */
  int unicode_width;         /* 2.7: bytes of a Py_UNICODE (2 or 4), 0:
                                unknown (its unicode values not shown) */
  uint64_t runtime;          /* &_PyRuntime (3.7+), else 0 */
  uint64_t runtime_size;     /* sizeof(_PyRuntimeState) when known */
  uint64_t interp;           /* the main PyInterpreterState */
  uint64_t interp_head_addr; /* &interpreters.head (3.7+), &interp_head */
  uint64_t tstate_current;   /* &_PyThreadState_Current (2.7, 3.6), else 0 */
  uint64_t code_type;        /* &PyCode_Type, to validate code objects */
  uint64_t key_addr;         /* &Py_tss_t._key or &autoTLSkey, 0 if none */
  int key;                   /* pthread key holding the tstate, -1 if none */
  int tls;            /* 3.15+: the tstate is a C11 thread-local instead */
  int64_t tls_offset; /* with tls: at thread pointer + this */
  uint64_t none;      /* &_Py_NoneStruct */
  /* Type objects, to check what the registry reader reads (0: unknown,
   * unchecked): PyDict_Type, PyLong_Type, PyInt_Type (2.7), the str type
   * (PyUnicode_Type, 2.7's PyString_Type), PyModule_Type. */
  uint64_t dict_type, long_type, int_type, str_type, module_type;
  uint64_t coro_type, gen_type;   /* PyCoro_Type, PyGen_Type (asyncio.c) */
  uint64_t method_type, set_type; /* PyMethod_Type, PySet_Type */
  struct pst__py_aio aio;
  int long_shift;     /* bits per int digit: 30 (or 15) */
  int owner_shim;     /* frame owners >= this are shims (3.12+) */
  unsigned tag_mask;  /* low bits to clear in f_executable (3.14) */
  uint64_t name_key;  /* the interned "_name" str once seen */
  uint8_t *chunk_buf; /* copy of a thread's data-stack chunk */
  uint64_t gil_words; /* pst__py_gil_words(), once found; 0: not yet */
#define PST_PY_SHIMS_MAX 64
  uint64_t shims[PST_PY_SHIMS_MAX]; /* the last walk's C-stack entry frames
                                       (3.12+), innermost first */
  int nshims;
  uint64_t process_obj; /* multiprocessing's Process object, once a
                                walk met BaseProcess._bootstrap(self) (a
                                worker's main thread), else 0 */
  int dataloader;       /* that walk met torch's DataLoader _worker_loop:
                           the process is a DataLoader worker */
  uint64_t err_addr;    /* what the last failed walk could not read
                                or decode (a code object, a frame), for
                                diagnostics; 0 when unknown */
  struct pst__py_scratch scratch;
  struct pst__code_cache *codes;
  struct pst__py_reg *reg; /* the thread registry's cache (registry.c),
                                NULL until first used */
};

void pst__py_init(struct pst__py *py);
void pst__py_exit(struct pst__py *py);

/* What pst__py_analyse() found that struct pst__py does not keep: names
 * and how things were found, for the report. The target copies them, with
 * struct pst__py's addresses, into its pst_target_info (target.c alone
 * fills that). Sizes as there. */
struct pst__py_found {
  char libpython[512];    /* shared libpython, "" when static */
  char version[32];       /* "3.12.1" or "3.12" */
  char key_method[160];   /* disassembly shape or fallback used */
  char layout_method[96]; /* builtin table, or _Py_DebugOffsets */
};

/* Analyses the target's interpreter: finds libpython or the executable
 * (exe: its path as the target sees it, from /proc/PID/exe), the version,
 * the structure layout, _PyRuntime, the main interpreter and the
 * thread-state key, into *py and *found. Returns 0, PST_ENOTPY,
 * PST_EPYVERSION, or -errno. */
int pst__py_analyse(struct pst__py *py, pid_t pid, const struct pst__maps *maps,
                    struct pst__mem *mem, enum pst__arch arch, const char *exe,
                    struct pst__py_found *found);

/* The part of pst__py_analyse() after the file is open: e is the mapped
 * libpython or executable (mp: its first mapping, mp->path its name as
 * mapped), read, not kept (the caller closes it). found->libpython is the
 * caller's. Same returns. */
int pst__py_analyse_elf(struct pst__py *py, const struct pst__elf *e,
                        const struct pst__map *mp, struct pst__mem *mem,
                        enum pst__arch arch, struct pst__py_found *found);

/* Checks that every offset pst__py_walk() and the code and string readers
 * use on a local buffer fits in it (a corrupt or hostile _Py_DebugOffsets
 * must not make pystitch read out of bounds). 0 or PST_EPYVERSION, with
 * the offending field in why. */
int pst__py_layout_check(const struct pst__py_layout *l, char *why,
                         size_t why_len);

/* Fills lay from the _Py_DebugOffsets at the start of _PyRuntime (3.13+).
 * Returns 0, or PST_EPYVERSION when the cookie or version is not known. */
int pst__py_debug_offsets(struct pst__mem *mem, uint64_t runtime,
                          struct pst__py_layout *lay, uint64_t *runtime_size,
                          int *version_hex);

#define PST_PY_INTERPS_MAX 64 /* interpreters looked at in one process */

/* Reads the list of interpreters, newest first (the main one last), into
 * interps (at most max). Returns the count or -errno (-ELOOP: a cycle). */
int pst__py_interps(struct pst__py *py, struct pst__mem *mem, uint64_t *interps,
                    int max);

/* Reads the interpreter's thread-state list into tstates (at most max).
 * Returns the count or -errno. */
int pst__py_tstates(struct pst__py *py, struct pst__mem *mem, uint64_t *tstates,
                    int max);
/* The same for the interpreter at interp (a sub-interpreter). */
int pst__py_tstates_of(struct pst__py *py, struct pst__mem *mem,
                       uint64_t interp, uint64_t *tstates, int max);

/* The PyThreadState holding the GIL, 0 if none, or -errno. */
int pst__py_gil_holder(struct pst__py *py, struct pst__mem *mem,
                       uint64_t *tstate);

/* Reads thread_id (pthread_self) and native_thread_id (0 before 3.8) and
 * interp of a thread state. 0 or -errno. */
int pst__py_tstate_ids(struct pst__py *py, struct pst__mem *mem,
                       uint64_t tstate, uint64_t *thread_id,
                       uint64_t *native_id, uint64_t *interp);

/* Walks the frames of thread state tstate, innermost first, into frames
 * (at most max). hint (may be NULL) is the thread's last walk, updated.
 * carry (may be NULL): another thread's check, read in the first syscall. When a frame is threading's Thread._bootstrap_inner, its
 * `self` is stored in *thread_obj (else 0; thread_obj may be NULL when the
 * caller already knows the name: one read less). Strings point into the
 * code cache (owned by py). Returns
 * the number of frames, sets *truncated when max was reached, and top[]
 * (frame, code) as the walk began, for pst__py_check_prepare(); negative on
 * error (-EFAULT: unreadable memory, PST_EBADDATA: not a frame/code). */
int pst__py_walk(struct pst__py *py, struct pst__mem *mem, uint64_t tstate,
                 struct pst__py_hint *hint, struct pst__py_check *carry,
                 struct pst_frame *frames, int max, int *truncated,
                 uint64_t *thread_obj, uint64_t top[2]);

/* Torn-read check: after a walk, the thread's current frame and, for
 * every frame the walk followed, its link and its code word are read again
 * in one batched read and compared with what the walk used. A stack read
 * while frames were freed and reused always has some link that changed
 * (checking only the top frame would pass a stack torn below a top frame
 * that came back to the same place), and so is the thread state's owner.
 * The pieces live in py's scratch: a
 * prepared check is valid until the next walk on py, which reads and
 * evaluates a check given to it as carry first. */
struct pst__py_check {
  uint64_t before[2]; /* what the walk saw: frame, code */
  uint64_t tstate;
  uint64_t cframe; /* 3.11/3.12: the hint's cframe, guessed */
  /* The hint's owner (0: not checked): read again too, for a thread that
   * ended during the walk and whose thread state and frames a new thread
   * took, at the same addresses, has a stack that did not move. */
  uint64_t thread_id, native_id;
  int result; /* -1 until read, then 0 or 1 */
};
void pst__py_check_prepare(struct pst__py *py, uint64_t tstate,
                           const struct pst__py_hint *hint,
                           const uint64_t before[2], struct pst__py_check *c);
/* Reads what was not read yet and compares: 1 when the stack did not move,
 * 0 when it did (or could not be read again). */
int pst__py_check_done(struct pst__py *py, struct pst__mem *mem,
                       struct pst__py_check *c);

/* The instruction offset (code units) of the _PyInterpreterFrame (3.11+)
 * whose bytes are fr, running code object code: -1 when its instr_ptr is
 * not in the code's own bytecode (3.14t+: a thread's copy). */
int64_t pst__py_frame_lasti(const struct pst__py *py, const uint8_t *fr,
                            uint64_t code);

/* asyncio.c (3.8+). Finds the _asyncio module's .AsyncioDebug offsets in
 * the mapped _asyncio module, libpython or executable (3.14+), or what
 * pst__py_aio_legacy_find() finds (3.8-3.13), once; asyncio may be
 * imported later: call again. 0, PST_ENOSYM (asyncio not imported),
 * PST_EPYVERSION (before 3.8), PST_EBADDATA, -errno. */
int pst__py_aio_find(struct pst__py *py, pid_t pid,
                     const struct pst__maps *maps, struct pst__mem *mem);

/* Takes the 13 words of an .AsyncioDebug section (3.14+:
 * _Py_AsyncioModuleDebugOffsets) into a, checked; where names their file
 * in messages. 0 or PST_EBADDATA. */
int pst__py_aio_offsets(struct pst__py_aio *a, const uint64_t w[13],
                        const char *where);

/* asyncio_legacy.c (3.8-3.13), called by asyncio.c. _find: where
 * asyncio.tasks keeps its tasks and whether _asyncio.Task has the layout
 * of this version: 0, PST_ENOSYM (asyncio.tasks not imported),
 * PST_EBADDATA (an unknown layout: said once), -errno. _list: the tasks of
 * those sets into tasks[*n..max) as read_list() does for 3.14+ (thread
 * state from the task's loop's _thread_id among tstates[0..nts), the
 * running ones from _current_tasks, the waiters from each task's
 * fut_waiter, a _GatheringFuture's _children and a TaskGroup's
 * _parent_task). _exit frees what _find allocated. */
int pst__py_aio_legacy_find(struct pst__py *py, struct pst__mem *mem);
int pst__py_aio_legacy_list(struct pst__py *py, struct pst__mem *mem,
                            const uint64_t *tstates, int nts,
                            struct pst__py_task *tasks, int max, int *n);
void pst__py_aio_legacy_exit(struct pst__py_aio *a);

/* Reads the tasks on the lists of thread states tstates[0..nts), then the
 * interpreter's, into tasks (at most max; names malloc'ed, the caller
 * frees them) and their coroutine frames into frames (at most fmax;
 * strings owned by the code cache). Returns the number of tasks,
 * PST_ENOSYM (offsets not found), or -errno / PST_EBADDATA. */
int pst__py_aio_tasks(struct pst__py *py, struct pst__mem *mem,
                      const uint64_t *tstates, int nts,
                      struct pst__py_task *tasks, int max,
                      struct pst_frame *frames, int fmax);

/* code.c: the code-object cache. */
struct pst__code_cache *pst__code_cache_new(void);
void pst__code_cache_free(struct pst__code_cache *c);
/* Drops every entry and every interned name, as if new (the names frames
 * point to die). For a reader whose memory was replaced: the fuzz harness
 * reuses one cache between inputs, for a fresh one costs a 400 KiB
 * calloc. 0 or -ENOMEM (then c is unchanged). */
int pst__code_cache_flush(struct pst__code_cache *c);

/* Code objects decoded without their line table, which was over the size
 * read (1 MiB): their frames show the function's first line. Counted at
 * each decode (an entry evicted and decoded again counts again). */
uint64_t pst__py_code_tables_cut(const struct pst__py *py);

/* Decodes the code object whose header (pst__py_code_header_size() bytes,
 * read by the caller so that a walk reads all its code objects in one
 * batch) is at addr: cached, validated against the header, with the line
 * for instruction offset lasti (units as the version's frame stores them:
 * see frame.c). Fills name and filename (interned, owned by the cache) and
 * *line. 0 or -errno/PST_EBADDATA (not a code object). */
size_t pst__py_code_header_size(const struct pst__py *py);
int pst__py_code_header(struct pst__py *py, struct pst__mem *mem, uint64_t addr,
                        const uint8_t *hdr, int64_t lasti, const char **name,
                        const char **filename, int *line);

/* Line number for a code-unit/byte offset, from the version's line table
 * (exposed for the unit tests). Return -1 when the table says none, and
 * when a corrupt table or first line adds up to a line outside int. */
int pst__py_line_lnotab(const uint8_t *tab, size_t len, int first, int addr,
                        int signed_deltas);
int pst__py_line_310(const uint8_t *tab, size_t len, int first, int addr);
int pst__py_line_311(const uint8_t *tab, size_t len, int first, int unit);

/* threading.Thread.name of the Thread object thread_obj (threadname.c),
 * malloc'ed into *name (the caller frees it). 0, PST_ENOSYM (no such
 * attribute), PST_EBADDATA (not an instance of this version's layout), or
 * -errno. About 7 reads. */
int pst__py_thread_name(struct pst__py *py, struct pst__mem *mem,
                        uint64_t thread_obj, char **name);

/* Where a Thread's name was read: the word at slot (its instance dict's
 * entry or values slot for `_name`) held the str object str. A rename
 * stores another str there. */
struct pst__py_name_ref {
  uint64_t slot, str;
};

/* pst__py_thread_name() that also fills *ref (may be NULL) for
 * pst__py_thread_names_changed(). */
int pst__py_thread_name_ref(struct pst__py *py, struct pst__mem *mem,
                            uint64_t thread_obj, char **name,
                            struct pst__py_name_ref *ref);

/* Whether each of n names may have changed since it was read (a Thread
 * renamed, or its instance dict rebuilt): changed[i] = 1 when the word at
 * refs[i].slot no longer holds refs[i].str or cannot be read. One read for
 * all. Returns how many changed, or -errno (-ESRCH: the process is gone,
 * -ENOMEM). A 0 is reliable as long as the slot stays the name's; a 1 may
 * be a false alarm (the name is then read again for nothing). */
int pst__py_thread_names_changed(struct pst__py *py, struct pst__mem *mem,
                                 const struct pst__py_name_ref *refs, int n,
                                 uint8_t *changed);

/* Writes code point cp (at most U+10FFFF) as UTF-8 at o: 1 to 4 bytes,
 * their count returned. */
size_t pst__py_put_utf8(char *o, uint32_t cp);

/* Reads a str object into UTF-8 (malloc'ed into *out). 0 or -errno. */
int pst__py_read_str(struct pst__py *py, struct pst__mem *mem, uint64_t addr,
                     char **out);

/* registry.c: the interpreter's thread registry, threading._active. */
struct pst__py_thread_ent {
  uint64_t ident;      /* threading.get_ident(): pthread_self(), equal to
                          the thread state's thread_id (and to fsbase with
                          glibc or musl on x86_64) */
  uint64_t thread_obj; /* its Thread (_MainThread, _DummyThread, or a
                          subclass): pst__py_thread_name() names it */
};

/* Reads threading._active of the main interpreter into out (at most max
 * entries, in the dict's order; more are left out). Returns the number
 * stored, or PST_ENOSYM (threading is not imported, or the interpreter has
 * no sys.modules yet), -EFAULT, -ESRCH (process gone), -ENOMEM, or
 * PST_EBADDATA (what was read is not the registry's layout).
 * What is stable is cached in py (the path to _active, its keys object and
 * its int keys), checked at every call: a stable registry costs 1
 * process_vm_readv, a changed one (a thread came or went) 2-4, the first
 * call (or one after the cache stopped holding) about 10 plus one per 256
 * sys.modules entries. A negative answer is cached too: until sys.modules
 * changes, PST_ENOSYM costs 3 reads. Not thread-safe. */
int pst__py_thread_registry(struct pst__py *py, struct pst__mem *mem,
                            struct pst__py_thread_ent *out, int max);

/* How many times the registry's path was resolved from sys.modules (for
 * tests and benchmarks). */
uint64_t pst__py_registry_resolves(const struct pst__py *py);

/* Frees the cache (pst__py_exit() does). NULL is fine. */
void pst__py_registry_free(struct pst__py_reg *r);

/* ---- exception and collector states (exc.c) ---- */

/* One thread state's exception, for pst__py_exceptions(). */
struct pst__py_exc {
  uint64_t tstate;   /* in */
  uint64_t obj;      /* out: the exception being raised (current_exception,
                      curexc_type) or else the one handled (what
                      sys.exc_info() would give in that thread); 0: none */
  int inst;          /* out: obj is an instance (else a type object) */
  int err;           /* out: 0, or why it could not be read (-EFAULT) */
  uint64_t cur, top; /* scratch */
};

/* Reads the exceptions of the thread states e[0..n) together: two
 * syscalls per 64 thread states, one more for each level of generators
 * nested inside an except block. Returns 0 (each entry's err says how it
 * went), -ENOSYS when the version's layout does not say where these are,
 * or -ESRCH. */
int pst__py_exceptions(struct pst__py *py, struct pst__mem *mem,
                       struct pst__py_exc **e, size_t n);

/* The name of type object type (its tp_name, UTF-8, into name, len > 0).
 * 0 or -EFAULT. Two reads. */
int pst__py_type_name(struct pst__py *py, struct pst__mem *mem, uint64_t type,
                      char *name, size_t len);

/* The name of exception obj (an instance when inst, else a type): its
 * type's tp_name ("ValueError"), "?" when unreadable, into type (len >
 * 0). 2-3 reads. */
void pst__py_exception_name(struct pst__py *py, struct pst__mem *mem,
                            uint64_t obj, int inst, char *type, size_t len);

/* ---- local variables (locals.c) ---- */

#define PST_PY_LOCALS_MAX 64 /* locals of one frame read at most */

/* One local variable, as dump --locals shows it. */
struct pst__py_local {
  char name[64];   /* UTF-8, as in the code object */
  char value[128]; /* a short text: 42, -7, 0.5, True, None, 'abc',
                      b'ab\x00', list (len 3), <Foo object> */
};

/* The bound local variables of frame (a PyFrameObject <= 3.10, a
 * _PyInterpreterFrame 3.11+) running code, into out (at most max, <=
 * PST_PY_LOCALS_MAX); *total: how many names the code has (more than
 * shown when over max). Values are read, never computed: no code of the
 * target runs. Returns how many, -ENOSYS when the version's layout does
 * not say where names are, or -errno / PST_EBADDATA. */
int pst__py_frame_locals(struct pst__py *py, struct pst__mem *mem,
                         uint64_t frame, uint64_t code,
                         struct pst__py_local *out, int max, int *total);

/* After a walk that returned n frames: frame i's address and its code
 * object (0 and -EINVAL when i is not one of them). Valid until the next
 * walk on py. */
int pst__py_walked_frame(const struct pst__py *py, int i, int n,
                         uint64_t *frame, uint64_t *code);

/* Where the main interpreter's collector keeps its flag
 * (_gc_runtime_state.collecting, an int): 0 and *addr, or -ENOSYS for 2.7
 * and 3.6 (a static variable there) or a layout without it. */
int pst__py_gc_flag_addr(const struct pst__py *py, uint64_t *addr);
/* 1 while that collector runs, 0 when not, -ENOSYS as above, -errno. One
 * read. */
int pst__py_gc_collecting(struct pst__py *py, struct pst__mem *mem);

#endif
