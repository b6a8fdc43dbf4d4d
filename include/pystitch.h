/* pystitch.h: public API of libpystitch, the library behind the pystitch CLI.
 *
 * A struct pst_target is one attached CPython process. Opening it analyses the
 * interpreter (version, structure layout, where the thread-state key lives)
 * and the libc (thread-specific-data layout) once; pst_target_snapshot() then
 * reads every OS thread's current Python stack without stopping the process.
 *
 * Errors: every function returns 0 (or a count) on success and a negative
 * errno or PST_E* code on failure (pystitch/errno.h); pst_strerror() names
 * either.
 *
 * Ownership: a target from pst_target_open() is freed by pst_target_close().
 * The thread array of a snapshot is owned by the target and valid until the
 * next snapshot; the frame strings are interned by the target and stay valid
 * until pst_target_close().
 */
#ifndef PYSTITCH_H
#define PYSTITCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* PST_API (what the library exports), PST_ERRNO_MAP, the PST_E* codes,
 * pst_strerror(), pst_errname(). */
#include "pystitch/errno.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Log verbosity for the library's stderr messages: 0 errors/warnings only,
 * 1 info, 2 debug. */
PST_API void pst_log_set_level(int level);

struct pst_target;

/* How a thread was mapped to its PyThreadState. */
enum pst_map_method {
  PST_MAP_NONE = 0, /* no Python thread state for this thread */
  PST_MAP_TSD,      /* pthread_getspecific(key) emulated on its fsbase */
  PST_MAP_LIST,     /* thread-states list: thread_id == fsbase */
  PST_MAP_LIST_TID, /* thread-states list: native_thread_id == tid */
  PST_MAP_TLS,      /* 3.15+: the thread-local read at its fsbase */
};

/* What a frame is. Without PST_SAMPLE_NATIVE every frame is Python. */
enum pst_frame_kind {
  PST_FRAME_PYTHON = 0, /* name, filename, line */
  PST_FRAME_NATIVE,     /* name (demangled, or "module+0xOFFSET" without a
                           symbol), filename: the module's base name, ip */
  PST_FRAME_MARKER,     /* name: a note, e.g. where Python and native
                           stacks could not be merged */
};

/* One frame, innermost first in a stack. */
struct pst_frame {
  const char *name; /* qualified name where the version has one */
  const char *filename;
  int line;            /* 0 when unknown (and for native frames) */
  unsigned char kind;  /* enum pst_frame_kind */
  unsigned char entry; /* Python: 1 when entered from C, i.e. the first
                           frame run by its eval-loop call */
  uint64_t ip;         /* native: instruction pointer (return address
                           for callers), else 0 */
};

/* One OS thread of the target as last seen. */
struct pst_thread {
  pid_t tid;
  char name[64];        /* threading.Thread.name, else /proc comm */
  int name_from_python; /* 1 when name came from threading */
  uint64_t fsbase;      /* thread pointer, 0 when it could not be read */
  uint64_t tstate;      /* PyThreadState address, 0 when none */
  enum pst_map_method method;
  int holds_gil;       /* 1, 0, or -1 when unknown */
  int idle;            /* 1 when the kernel says it sleeps, 0 running */
  char state;          /* kernel state letter from /proc (R, S, D, ...) */
  int error;           /* 0, or why its stack (or, without a Python state,
                           its thread pointer) could not be read */
  uint64_t error_addr; /* with error: the target address that could not
                           be read or did not hold what was expected, 0
                           when none applies */
  size_t nframes;
  struct pst_frame *frames; /* owned by the target, valid until next snapshot */
  int truncated;            /* 1 when the frame cap was hit */
  char origin[320];         /* no Python state: what started it ("started by
                           gomp_thread_start in libgomp.so.1"), else "" */
  int skipped;              /* 1 when the sample's flags left it unread
                           (PST_SAMPLE_ON_CPU, PST_SAMPLE_ACTIVE_ONLY,
                           PST_SAMPLE_GIL_ONLY) */
  uint64_t cpu_ns;          /* PST_SAMPLE_ON_CPU: the CPU time it used since
                           its last sample (the kernel's schedstat), the
                           time the sample stands for; else 0 */
  int exception;            /* PST_SAMPLE_EXCEPTION: 1 when it raises an
                           exception or handles one (what sys.exc_info()
                           gives in it), 0 when not, -1 unknown (no Python
                           state, a version or build whose layout does not
                           say, or flag not given) */
  char exception_type[64];  /* with exception 1: its type's name
                           ("ValueError"), else "" */
  int gc;                   /* PST_SAMPLE_GC: 1 when it runs the garbage
                           collector (its innermost Python frame has a
                           "<GC>" marker frame above it), else 0 */
  uint64_t stack_gen;       /* which reading of the frames this is: a new
                           value whenever they are read or changed; the
                           value of an earlier sample of the same thread
                           (and target) means the same frames, given again
                           without a read (a stack kept under the GIL);
                           0: none (not from a target's sample) */
};

/* What pystitch found when it analysed the target (for `pystitch info`). */
struct pst_target_info {
  pid_t pid;
  pid_t nspid;           /* pid inside its own pid namespace */
  char exe[512];         /* interpreter executable, as the target sees it */
  char libpython[512];   /* shared libpython, "" when static */
  char libc[512];        /* libc the TSD layout was read from */
  char version[32];      /* "3.12.1" or "3.12" */
  int version_hex;       /* 0xMMmm */
  uint64_t runtime_addr; /* _PyRuntime, 0 before 3.7 */
  uint64_t interp_addr;  /* main interpreter */
  uint64_t key_addr;     /* address of the pthread key (int), 0 if none */
  int key;               /* its value, -1 when none */
  char key_method[160];  /* disassembly shape or fallback used */
  int64_t tsd_offset, tsd_multiplier;
  int tsd_indirect;
  int tsd_has_l2;
  int64_t tsd_l2_offset;
  char tsd_method[160];   /* disassembly, _thread_db, or default */
  char layout_method[96]; /* builtin table, or _Py_DebugOffsets */
  int free_threaded;      /* 3.13t+ (--disable-gil): there is no GIL */
  int exc_state;          /* 1 when its threads' exception states can be
                             read (PST_SAMPLE_EXCEPTION), else 0 */
  int gc_state;           /* 1 when its collector's state can be read
                             (PST_SAMPLE_GC: 3.7+), else 0 */
  double analysis_ms;     /* time spent analysing the binaries */
};

/* Opens and analyses process pid. Needs ptrace permission over it (fsbase).
 * Returns 0 and *out (free with pst_target_close), or -ESRCH (no such
 * process), -EPERM (not allowed), PST_ETRACED (gdb or strace holds it),
 * PST_ENOTPY, PST_EPYVERSION, PST_ESELF, PST_EZOMBIE, ... */
PST_API int pst_target_open(pid_t pid, struct pst_target **out);
PST_API void pst_target_close(struct pst_target *t);
PST_API const struct pst_target_info *
pst_target_info(const struct pst_target *t);

/* pst_target_refresh() then pst_target_sample(): re-lists the target's
 * threads, reads the fsbase of new ones (one ptrace stop each, then
 * detached), maps each to its PyThreadState and reads its Python stack.
 * Per-thread failures are recorded in pst_thread.error and
 * never fail the call. Returns the number of threads, or a negative error
 * when the process itself is gone (-ESRCH). The array is owned by the target
 * and valid until the next call. */
PST_API int pst_target_snapshot(struct pst_target *t,
                                const struct pst_thread **threads);

/* Re-lists the target's threads: new ones get their thread pointer read
 * (one ptrace stop each), gone ones are dropped, unmapped ones are mapped
 * to their PyThreadState again. Returns the thread count or -ESRCH when the
 * process is gone. Call it periodically (e.g. every 100 ms) while
 * sampling. */
PST_API int pst_target_refresh(struct pst_target *t);

/* One asyncio task of the target (CPython 3.8+). */
enum {
  PST_TASK_ENDED = 1,
  PST_TASK_LOOP_IDLE,
  PST_TASK_LOOP_UNKNOWN,
  PST_TASK_LOOP_UNREAD
};
#define PST_TASK_WAITERS 8
struct pst_task {
  uint64_t id;    /* the Task object's address */
  char name[128]; /* Task.get_name(), "" when unreadable */
  pid_t tid;      /* the thread whose task list holds it (its event
                     loop's), or 0: see no_thread */
  int no_thread;  /* with tid 0, why: PST_TASK_ENDED (its thread ended),
                     PST_TASK_LOOP_IDLE (no thread runs its loop now, 3.8
                     -3.13), PST_TASK_LOOP_UNKNOWN (its loop, of type
                     loop_type, does not say which thread runs it: uvloop
                     before 3.14), PST_TASK_LOOP_UNREAD (its loop could not
                     be read: it changed, or is not what it should be) */
  char loop_type[48];
  int torn;    /* its coroutines ran while they were read: no frames
                     (what was read could mix two moments) */
  int running; /* the task its thread is running now */
  int nframes; /* its coroutine chain, innermost first: the coroutine
                     it runs, then each coroutine awaiting the one before;
                     for the running task, its thread's stack as last
                     sampled, from the innermost frame to the task's
                     coroutine (valid until the next sample) */
  const struct pst_frame *frames;
  int nwaiters; /* tasks awaiting it (gather, TaskGroup, await): indexes
                   into the same array */
  int waiters[PST_TASK_WAITERS];
};

/* Reads the target's asyncio tasks now (after pst_target_snapshot() or
 * _refresh(), whose thread states it uses). Tasks whose coroutines ran
 * while they were read come back torn (no frames); with PST_SAMPLE_EXACT
 * or PST_SAMPLE_BLOCKING in flags they are read again with their loop's
 * thread stopped for a moment. Returns the number of tasks,
 * PST_ENOSYM when the process has not imported asyncio, PST_EPYVERSION
 * before CPython 3.8, PST_EBADDATA for a build whose task layout is not
 * known (3.8-3.13), or -errno. The array is owned by the target and
 * valid until the next call. */
PST_API int pst_target_tasks(struct pst_target *t, int flags,
                             const struct pst_task **tasks);

/* Task i of the last pst_target_tasks() as one stack, the way `record
 * --async` shows it: its coroutines, a "task NAME" marker frame, then each
 * task awaiting it (its coroutines, its marker), outwards (at most
 * PST_TASK_CHAIN_MAX tasks). *th is a thread that is not one: tid -TID of
 * its loop's thread (with none: -(1 << 22) - no_thread, below every -TID),
 * name "asyncio tasks of TID" (or "asyncio tasks (REASON)"), state 'S',
 * idle unless the task runs. Returns 0; PST_ETORN when a task of the
 * chain ran while it was read (the chain could mix two moments);
 * -ENOMEM. The frames are owned by the target and valid until the next
 * call, their strings until pst_target_close(). */
PST_API int pst_target_task_stack(struct pst_target *t, int i,
                                  struct pst_thread *th);

/* Why pst_target_tasks() returned n (<= 0) for t, as a phrase about the
 * process ("it has not imported asyncio", "it runs CPython 3.7: asyncio
 * tasks are read on 3.8+ only", "no event loop runs a task now", else the
 * error's pst_strerror()), into buf. Returns 1 when that is a failure
 * worth a warning, 0 for a note. */
PST_API int pst_target_tasks_why(const struct pst_target *t, int n, char *buf,
                                 size_t len);

/* Tasks one pst_target_tasks() reads at most. */
#define PST_TASKS_MAX 10000

/* 1 when the last pst_target_tasks() found more tasks than it reads
 * (PST_TASKS_MAX, or on 3.8-3.13 a task set too big to read whole, past
 * some 600,000 tasks): it returned only part of them; else 0. */
PST_API int pst_target_tasks_cut(const struct pst_target *t);

/* Why a task has no thread (its no_thread), in a few words: "thread
 * ended", "loop not running", "loop's thread not known", "loop not
 * readable"; "" for 0. */
PST_API const char *pst_task_no_thread_str(int no_thread);

/* Tasks shown above a task (its waiter, that one's, ...) at most. */
#define PST_TASK_CHAIN_MAX 32

/* The tasks awaiting task i of tasks, outwards: chain[0] = i, then its
 * first waiter, that one's first waiter, ... (a cycle ends it), at most
 * max. Returns the length. */
PST_API int pst_task_chain(const struct pst_task *tasks, int i, int *chain,
                           int max);

/* pst_target_sample() flags. */
#define PST_SAMPLE_BLOCKING 1 /* stop each thread while its stack is read */
#define PST_SAMPLE_NATIVE                                                      \
  4 /* native frames too, merged with Python's: each
                               thread is stopped while both are read */
#define PST_SAMPLE_NATIVE_ALL                                                  \
  8 /* with NATIVE: keep the interpreter's call
                                   machinery frames */
#define PST_SAMPLE_ACTIVE_ONLY                                                 \
  16 /* threads that sleep (kernel state not R)
                                    and do not hold the GIL are not read:
                                    idle 1, no frames */
#define PST_SAMPLE_NO_ACTIVITY                                                 \
  2 /* skip kernel state and GIL holder: state
                                    '?', idle 0, holds_gil -1 (saves a
                                    pread per thread) */
#define PST_SAMPLE_EXACT                                                       \
  64 /* a thread whose running read fails (torn
                               after the retries, or memory that moved
                               away) is read again with only it stopped,
                               so that every thread that can be stopped
                               has its stack (what `dump` does) */
#define PST_SAMPLE_GIL_ONLY                                                    \
  32 /* only the thread holding the GIL is read;
                                  the others: skipped 1, no frames */

#define PST_SAMPLE_MARK_NATIVE                                                 \
  128 /* without NATIVE: a thread with no Python
                                  state is a one-frame stack
                                  "[native thread]", not an error */

#define PST_SAMPLE_FULL_NAMES                                                  \
  512 /* with NATIVE: C++ function names whole
                                  (parameters, template arguments), not
                                  "ns::Class::method" */

#define PST_SAMPLE_ON_CPU                                                      \
  256 /* only threads that ran on a CPU since
                                  their last sample (their run time grew),
                                  each with that CPU time (cpu_ns); the
                                  others: skipped 1, idle 1, no frames */

#define PST_SAMPLE_EXCEPTION                                                   \
  1024 /* read each thread's exception state
                                  (pst_thread.exception, exception_type) */
#define PST_SAMPLE_EXC_ONLY                                                    \
  2048 /* with EXCEPTION: only threads raising or
                                  handling an exception are read; the
                                  others: skipped 1, no frames */
#define PST_SAMPLE_GC                                                          \
  4096 /* while the garbage collector runs, the
                                  thread running it gets a "<GC>" frame
                                  above its innermost Python frame (the
                                  GIL holder; free-threaded: a thread
                                  attached and on a CPU, the others being
                                  stopped for most of the collection).
                                  No read of its own: the flag rides in
                                  the sample's first read. CPython 3.7+ */

/* Which threads a sample reads, as the peers name it (--mode). */
enum pst_mode {
  PST_MODE_CPU = 0,   /* threads that ran since the last tick, each sample
                       worth the CPU time used (cpu nanoseconds): record's
                       and top's default */
  PST_MODE_WALL,      /* every thread, each sample worth the time since the
                       last tick (--idle; dump) */
  PST_MODE_GIL,       /* only the thread holding the GIL (--gil; on a
                       free-threaded build, which has none: CPU) */
  PST_MODE_EXCEPTION, /* only threads raising or handling an exception,
                         each sample worth the time since the last tick
                         (where the time goes in error paths) */
};

/* What a sample reads and shows, in one place: record, top and dump build
 * it from their options with one function (the CLI's), and
 * pst_policy_flags() makes it pst_target_sample()'s flags. */
struct pst_policy {
  enum pst_mode mode;
  int states;      /* PST_MODE_WALL: read each thread's kernel state and the
                      GIL holder anyway (dump shows them; record --idle
                      saves a pread per thread) */
  int blocking;    /* stop each thread while it is read */
  int nonblocking; /* never stop a thread: a stack that keeps moving is
                      an error (default: read again with only its thread
                      stopped, PST_SAMPLE_EXACT) */
  int native;      /* 1: native frames merged, 2: and the machinery */
  int async;       /* asyncio tasks too (pst_target_task_stack()) */
  int mark_native; /* a thread with no Python state is shown, as
                      "[native thread]" (record, top), not an error */
  int full_names;  /* with native: C++ frames named as the demangler
                      writes them (parameters, template arguments), not in
                      their short form */
  int exceptions;  /* read each thread's exception state (dump shows it;
                      PST_MODE_EXCEPTION implies it) */
  int no_gc;       /* no "<GC>" frames (--no-gc) */
};

/* The pst_target_sample() flags of policy p. */
PST_API int pst_policy_flags(const struct pst_policy *p);

/* PST_SAMPLE_ON_CPU: the CPU time one sample stands for (the sampling
 * period). A thread is read once it has used that much since its last
 * sample, and then stands for the whole periods it used (cpu_ns), so that
 * a thread on half a CPU is read every other tick and the samples add up
 * to its CPU time. 0 (the default): whenever it ran at all. */
PST_API void pst_target_set_period(struct pst_target *t, uint64_t period_ns);

/* A refresh stops each new thread once (a few microseconds on an idle
 * machine; milliseconds when the thread waits for a busy CPU) to read its
 * thread pointer. With a deadline (CLOCK_MONOTONIC, ns), a refresh starts
 * no such stop after it and leaves those threads to a later refresh: a
 * thread not stopped yet is mapped through the thread-state list where
 * its version allows (3.8+), else sampled once a refresh reads its
 * pointer. For a caller that samples other targets meanwhile: one
 * deadline bounds the refreshes of all its targets. 0 (the default): no
 * deadline. */
PST_API void pst_target_set_stop_deadline(struct pst_target *t,
                                          uint64_t deadline_ns);

/* Reads the Python stack of every thread known since the last refresh,
 * without ptrace (unless PST_SAMPLE_BLOCKING) and without listing /proc.
 * A stack that moved while it was read is read again, then reported as
 * PST_ETORN. Per-thread failures go to pst_thread.error. Returns the
 * thread count; the array is valid until the next sample or refresh. */
PST_API int pst_target_sample(struct pst_target *t, int flags,
                              const struct pst_thread **threads);

/* Warms t up for sampling with flags: a refresh and two reads of every
 * Python stack whose results are dropped (the first learns where each
 * thread's frames are, the second reads them all in one batch, which is
 * what later reads keep stacks from), so that the first sample is not a
 * cold one (5000 threads: ~220 ms). Native threads are not named (the
 * next refresh does, once the caller shared its module cache) and the
 * figures the target reports count nothing of it. 0 or -errno (the
 * refresh's). */
PST_API int pst_target_warm(struct pst_target *t, int flags);

/* Makes t use other's cache of opened modules (ELF files, their unwind
 * and symbol tables): a library mapped by many processes (libtorch in
 * every rank of a job) is then opened and its symbols read once for all.
 * Both must be used from one thread. 0, -EBUSY when t has opened modules
 * of its own already (call it right after pst_target_open()), -ENOMEM. */
PST_API int pst_target_share_modules(struct pst_target *t,
                                     struct pst_target *other);

/* Symbol tables of t's native modules (for --native frames and the names
 * of native threads) built on a thread of their own, so that the caller
 * never waits for a large library's (libtorch_cpu's: 70 ms). Meanwhile a
 * frame of that module is named MODULE+0xOFFSET and a native thread keeps
 * its kernel name; the interpreter's own table, which merging needs, is
 * waited for. Off by default (dump wants every name at once); the
 * sampling engine turns it on. Applies to the cache t shares
 * (pst_target_share_modules()). */
PST_API void pst_target_background_symbols(struct pst_target *t, int on);

/* One local variable of a frame (pst_target_locals()). */
struct pst_local {
  const char *name;
  const char *value; /* a short text made from the object's bytes alone
                        (no code of the target runs): 42, -7, 0.5,
                        True, None, 'abc' (cut at 64 bytes), b'a\x00',
                        list (len 3), dict (len 2), <Foo object> */
};

/* The locals of one frame of the stack pst_target_locals() read. */
struct pst_frame_locals {
  int n;                        /* shown: the bound ones, at most 64 */
  int total;                    /* names the frame's code has */
  const struct pst_local *vars; /* n of them */
};

/* Thread tid's Python stack read again with the thread stopped for the
 * moment of the read (the values and the stack of one instant), with each
 * frame's local variables: *th is that new read (tid, name, frames),
 * (*locals)[k] the locals of th->frames[k]. Only Python frames (no
 * native ones). Returns the frame count, -ENOENT when there is no such
 * thread with a Python state, -ENOSYS when the version's layout does not
 * say where locals are, or -errno. Both are owned by the target and valid
 * until the next call or sample. */
PST_API int pst_target_locals(struct pst_target *t, pid_t tid,
                              const struct pst_thread **th,
                              const struct pst_frame_locals **locals);

/* Native sampling counters (PST_SAMPLE_NATIVE). */
struct pst_native_stats {
  uint64_t samples;       /* thread-samples taken with native frames */
  uint64_t mismatches;    /* of which Python and native could not be merged
                             (both kept, under a marker frame) */
  uint64_t python_errors; /* of which the Python walk failed (native only) */
  uint64_t native_errors; /* of which the native stack was lost (Python
                             only): a module's file truncated meanwhile */
};
/* 0, or -ENOENT before the first native sample. */
PST_API int pst_target_native_stats(const struct pst_target *t,
                                    struct pst_native_stats *out);

/* The process's role where the target knows it: multiprocessing's name
 * of the process ("Process-1", "SpawnPoolWorker-3", a DataLoader
 * worker), read once its main thread's stack shows the worker's
 * bootstrap; "" until then or when it has none. Valid until the next
 * sample or pst_target_close(). */
PST_API const char *pst_target_role(const struct pst_target *t);

/* Stack walks redone because the stack moved during the read. */
PST_API uint64_t pst_target_torn_retries(const struct pst_target *t);

/* Functions (code objects, at each decode) whose line table was too big to
 * read (over 1 MiB: a generated function of some 200,000 lines and more):
 * their frames show the function's first line. */
PST_API uint64_t pst_target_line_tables_cut(const struct pst_target *t);

#ifdef __cplusplus
}
#endif
#endif
