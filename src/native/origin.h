/* origin.h: what started a thread that has no Python state, named from its
 * start routine (pst__tsd_start_routine) through the module symbol tables
 * (resolve.h), so that `dump` and the profiles can call an OpenMP or
 * pthreadpool worker by what it is rather than by the process's comm.
 *
 * Recognised start routines, by function name and, where the library is
 * stripped and no debug file is installed, by module:
 *   - CPython's thread entry (pythread_wrapper, t_bootstrap on 2.7,
 *     thread_run), or any address in the interpreter (python3.X,
 *     libpython3.X.so): a thread started by `threading`/`_thread`, seen
 *     before its thread state exists or after it is gone: "Python thread";
 *   - GNU OpenMP (gomp_thread_start, libgomp.so): "libgomp worker"; LLVM
 *     and Intel OpenMP (__kmp_launch_worker, libomp.so, libiomp5.so):
 *     "libomp worker";
 *   - pthreadpool (thread_main in libpthreadpool.so, used by PyTorch's
 *     XNNPACK/NNPACK kernels): "pthreadpool worker";
 *   - a C++ std::thread (libstdc++'s static execute_native_thread_routine,
 *     or any address in libstdc++.so, which starts threads for nothing
 *     else): its callable, from the dynamic type of the start argument, a
 *     std::thread::_State_impl<_Invoker<tuple<CALLABLE, ...>>>: the type's
 *     name from its RTTI (present in stripped libraries), else the name of
 *     the vtable's _M_run; shortened: PyTorch's
 *     c10::ThreadPool::ThreadPool(...)::{lambda()#1} gives
 *     "c10::ThreadPool worker", a member function pointer
 *     void (ns::C::*)() its class "ns::C", another callable its shortened
 *     name, a plain function pointer (whose type names no function)
 *     "std::thread";
 *   - any other named function: that function's name, shortened (no
 *     parameters, template arguments or lambda suffix): "worker_main";
 *   - an address in a module without a symbol there: "<module> thread"
 *     ("libfoo thread", module = file name up to ".so").
 *
 * Thread names (pst__origin_thread_name): a comm the program set with
 * prctl(PR_SET_NAME)/pthread_setname_np (one that differs from the main
 * thread's comm) wins, except on OpenMP and pthreadpool workers, which
 * never name themselves: their comm is inherited from whichever thread
 * started the pool (PyTorch's libgomp workers started from an inter-op
 * thread are all "PTThreadPool"); else the origin's label; else "native
 * thread TID".
 * In `pystitch dump` a native-only thread would read:
 *   Thread 1090 "libgomp worker" (native, started by gomp_thread_start in
 *   libgomp.so.1.0.0)
 *   Thread 1038 "pthreadpool worker" (native, started at
 *   libpthreadpool.so.0+0xd790)
 * with the parenthesis from struct pst__origin's detail.
 */
#ifndef PST_NATIVE_ORIGIN_H
#define PST_NATIVE_ORIGIN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct pst__mem;
struct pst__resolved;
struct pst__resolver;

/* Names target address addr as pst__resolver_lookup() does (opaque is the
 * caller's): 0 with *out filled, else an error code. */
typedef int (*pst__origin_lookup_cb)(void *opaque, uint64_t addr,
                                     struct pst__resolved *out);

enum pst__origin_kind {
  PST_ORIGIN_UNKNOWN = 0, /* no start routine known, or it is in no file */
  PST_ORIGIN_MAIN,        /* start routine 0: the main thread (or a thread
                             not made by pthread_create) */
  PST_ORIGIN_PYTHON,      /* CPython's thread entry */
  PST_ORIGIN_OPENMP,      /* an OpenMP runtime's worker */
  PST_ORIGIN_PTHREADPOOL, /* a pthreadpool worker */
  PST_ORIGIN_STD_THREAD,  /* a C++ std::thread */
  PST_ORIGIN_OTHER,       /* another function or module */
};

#define PST_ORIGIN_LABEL_MAX 64

struct pst__origin {
  enum pst__origin_kind kind;
  uint64_t fn;                      /* the start routine, 0 if none */
  char label[PST_ORIGIN_LABEL_MAX]; /* short thread name, e.g. "libgomp
                                       worker"; "" when nothing is known
                                       (UNKNOWN, MAIN) */
  char func[256];   /* the start routine's name (for a std::thread, its
                       callable's), demangled; "" when unnamed */
  char module[128]; /* base name of the file holding the start routine
                       ("libgomp.so.1.0.0"); "" when in none */
  char detail[320]; /* for `dump`/`info`: "started by gomp_thread_start in
                       libgomp.so.1.0.0", "started at
                       libpthreadpool.so.0+0xd790", "std::thread running
                       c10::ThreadPool::...{lambda()#1} in libc10.so" */
};

/* Describes the thread whose start routine is fn with argument arg (both
 * from pst__tsd_start_routine). The names come from r; mem reads the
 * start argument of a std::thread (its _State's vtable), and may be NULL
 * to skip that. Never fails: what cannot be named is left out (kind
 * UNKNOWN, label ""). out is overwritten. */
void pst__origin_describe(struct pst__resolver *r, struct pst__mem *mem,
                          uint64_t fn, uint64_t arg, struct pst__origin *out);

/* pst__origin_describe() with the names from lookup(opaque, ...) instead
 * of a resolver: for replaying names and memory captured elsewhere (and
 * the fuzz harness). The strings lookup returns need only live until
 * this returns. */
void pst__origin_describe_with(pst__origin_lookup_cb lookup, void *opaque,
                               struct pst__mem *mem, uint64_t fn, uint64_t arg,
                               struct pst__origin *out);

/* The origin of a start-routine layout that is unknown (pst__tsd's
 * -ENOSYS) or a read that failed: kind UNKNOWN, detail "start routine
 * unknown: why". */
void pst__origin_unknown(const char *why, struct pst__origin *out);

/* The name to show for thread tid, which has no Python state, into buf
 * (len bytes, truncated, NUL-terminated): comm when it differs from
 * main_comm (the program named the thread) and o is not an OpenMP or
 * pthreadpool worker, else o's label (o may be NULL), else "native thread
 * TID". comm or main_comm NULL: not compared. Returns buf. */
char *pst__origin_thread_name(const char *comm, const char *main_comm,
                              const struct pst__origin *o, pid_t tid, char *buf,
                              size_t len);

/* Shortens a demangled function name to what fits a label: no parameter
 * list, template arguments, lambda or clone suffix, and a constructor
 * "ns::C::C" as its class "ns::C". Writes at most len bytes into buf
 * (NUL-terminated); returns buf. */
char *pst__origin_shorten(const char *func, char *buf, size_t len);

#endif
