/* test-origin.c: native thread origins: glibc's start routines
 * (pst__tsd_start_routine, src/libc/tsd.c) named through the lazy resolver
 * (src/native/resolve.c) into labels (src/native/origin.c), on live
 * targets: tests/helpers/origin-target (a static start routine, a thread
 * that names itself, a stripped library's static routine named by its
 * debug file), a stripped C++ program's std::threads, musl (unknown), and
 * /usr/bin/python3.11 with PyTorch (libgomp, pthreadpool, c10::ThreadPool
 * and a threading.Thread). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "libc/tsd.h"
#include "native/cxxname.h"
#include "native/origin.h"
#include "native/resolve.h"
#include "proc/ptrace.h"
#include "pystitch.h"
#include "spawn.h"
#include "task.h"

#define MAX_THREADS 64

struct thread {
  int tid;
  char role[32];
  char comm[32];
  int has_origin;
  struct pst__origin o;
  char name[PST_ORIGIN_LABEL_MAX];
};

struct target {
  pid_t pid;
  FILE *out;
  struct thread v[MAX_THREADS];
  int n;
  struct pst__maps maps;
  struct pst__tsd tsd;
  struct pst__mem mem;
  struct pst__resolver *r;
};

static char dir[64];

static void make_dir(void) {
  ASSERT_EQ(test_scratch(dir, sizeof(dir), "origin"), 0);
}

static void cleanup(void) { test_rmrf(dir); }

static void read_comm(pid_t pid, int tid, char *buf, size_t len) {
  char path[64];
  FILE *f;

  snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, tid);
  buf[0] = '\0';
  f = fopen(path, "r");
  if (f) {
    if (fgets(buf, (int)len, f))
      buf[strcspn(buf, "\n")] = '\0';
    fclose(f);
  }
}

/* Starts argv with its stdout on a pipe and reads its "thread TID ROLE"
 * lines up to "ready". Returns 0, or 77 when it printed nothing and exited
 * 77 (not built). */
static int spawn(char *const argv[], struct target *t) {
  char line[256];

  memset(t, 0, sizeof(*t));
  t->pid = test_spawn(argv, &t->out, NULL);
  ASSERT_GT(t->pid, 0);
  while (fgets(line, sizeof(line), t->out)) {
    struct thread *th = &t->v[t->n];
    if (!strncmp(line, "ready", 5))
      return 0;
    if (t->n < MAX_THREADS &&
        sscanf(line, "thread %d %31s", &th->tid, th->role) == 2)
      t->n++;
  }
  {
    int st;
    waitpid(t->pid, &st, 0);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
      return 77;
    TEST_FAIL("%s: no \"ready\" (exit status 0x%x)", argv[0], st);
  }
  return -1;
}

/* Analyses the target's libc and opens a resolver. */
static void attach(struct target *t) {
  ASSERT_EQ(pst__maps_load(t->pid, &t->maps), 0);
  ASSERT_EQ(pst__tsd_analyse(t->pid, &t->maps, PST_ARCH_X86_64, &t->tsd), 0);
  printf("# start routines: %s\n", t->tsd.start_method);
  pst__mem_init(&t->mem, t->pid);
  ASSERT_EQ(pst__resolver_new(t->pid, NULL, &t->r), 0);
}

/* Describes th: its start routine, origin and name. */
static void describe(struct target *t, struct thread *th,
                     const char *main_comm) {
  uint64_t tp, fn = 0, arg = 0;
  int err;

  read_comm(t->pid, th->tid, th->comm, sizeof(th->comm));
  ASSERT_EQ(pst__ptrace_thread_pointer(th->tid, &tp), 0);
  err = pst__tsd_start_routine(&t->tsd, &t->mem, tp, &fn, &arg);
  if (err) {
    pst__origin_unknown(pst_strerror(err), &th->o);
  } else {
    th->has_origin = 1;
    pst__origin_describe(t->r, &t->mem, fn, arg, &th->o);
  }
  pst__origin_thread_name(th->comm, main_comm, &th->o, th->tid, th->name,
                          sizeof(th->name));
  printf("# Thread %d \"%s\" (native, %s) [role %s, comm %s, kind %d]\n",
         th->tid, th->name, th->o.detail, th->role[0] ? th->role : "-",
         th->comm, (int)th->o.kind);
}

static void finish(struct target *t) {
  kill(t->pid, SIGKILL);
  waitpid(t->pid, NULL, 0);
  fclose(t->out);
  pst__resolver_free(t->r);
  pst__mem_exit(&t->mem);
  pst__maps_exit(&t->maps);
}

static struct thread *role(struct target *t, const char *r) {
  for (int i = 0; i < t->n; i++)
    if (!strcmp(t->v[i].role, r))
      return &t->v[i];
  TEST_FAIL("no thread with role %s", r);
  return NULL;
}

/* Every thread of the process into t->v (those read from the target keep
 * their roles). */
static void list_threads(struct target *t) {
  char cmd[64];
  FILE *p;
  int tid;

  snprintf(cmd, sizeof(cmd), "ls /proc/%d/task", (int)t->pid);
  p = popen(cmd, "r");
  ASSERT(p != NULL);
  while (fscanf(p, "%d", &tid) == 1) {
    int known = 0;
    for (int i = 0; i < t->n; i++)
      known |= t->v[i].tid == tid;
    if (!known && t->n < MAX_THREADS) {
      t->v[t->n].tid = tid;
      snprintf(t->v[t->n].role, sizeof(t->v[t->n].role), "%s",
               tid == t->pid ? "main" : "");
      t->n++;
    }
  }
  pclose(p);
}

/* The short C++ names of native frames (native/cxxname.c). */
TEST_IMPL(cxx_short) {
  static const struct {
    const char *in, *out;
  } v[] = {
      {"PyEval_EvalFrameDefault", "PyEval_EvalFrameDefault"},
      {"pyrun_file.lto_priv.0", "pyrun_file.lto_priv.0"},
      {"torch::autograd::python::PythonEngine::execute(std::vector<torch::"
       "autograd::Edge, std::allocator<torch::autograd::Edge> > const&, "
       "std::vector<at::Tensor, std::allocator<at::Tensor> > const&, bool, "
       "bool, bool, std::vector<torch::autograd::Edge, std::allocator<torch::"
       "autograd::Edge> > const&)",
       "torch::autograd::python::PythonEngine::execute"},
      {"void at::native::(anonymous namespace)::cpu_kernel<float>(at::"
       "TensorIteratorBase&, float)",
       "at::native::(anonymous namespace)::cpu_kernel"},
      {"std::vector<int, std::allocator<int> >::push_back(int const&)",
       "std::vector::push_back"},
      {"foo(int)::{lambda(int)#1}::operator()(int) const",
       "foo::{lambda(int)#1}::operator()"},
      {"std::basic_ostream<char, std::char_traits<char> >& std::operator<< "
       "<std::char_traits<char> >(std::basic_ostream<char, std::char_traits<"
       "char> >&, char const*)",
       "std::operator<<"},
      {"operator new(unsigned long)", "operator new"},
      {"operator delete[](void*)", "operator delete[]"},
      {"at::Tensor::operator[](long) const", "at::Tensor::operator[]"},
      {"Foo::operator bool() const", "Foo::operator bool"},
      {"a::b::operator<=(a::b const&) const", "a::b::operator<="},
      {"std::function<void ()>::operator()() const",
       "std::function::operator()"},
      {"gloo::transport::tcp::Pair::recv() [clone .cold]",
       "gloo::transport::tcp::Pair::recv [clone .cold]"},
      {"std::thread::_State_impl<std::thread::_Invoker<std::tuple<void (*)("
       "int), int> > >::_M_run()",
       "std::thread::_State_impl::_M_run"},
      {"c10::str[abi:cxx11](char const*)", "c10::str"},
      {"unsigned long ns::f<unsigned long>(unsigned long)", "ns::f"},
      {"A::B::B(int)", "A::B::B"},
      {"(anonymous namespace)::loop(void*)", "(anonymous namespace)::loop"},
      {"f(int&&) &&", "f"},
      /* Ill-formed: unclosed groups end the name, nothing is read past. */
      {"broken<int(", "broken"},
      {"(", "("},
  };
  char buf[256], small[8];

  for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
    ASSERT_STR_EQ(pst__cxx_short(v[i].in, buf, sizeof(buf)), v[i].out);
  ASSERT_STR_EQ(pst__cxx_short("ns::long_function(int)", small, sizeof(small)),
                "ns::lon");
  ASSERT_STR_EQ(pst__cxx_short("abc", small, 1), "");
  return 0;
}

TEST_IMPL(origin_shorten) {
  static const struct {
    const char *in, *out;
  } v[] = {
      {"worker_main", "worker_main"},
      {"ns::Foo<int>::bar(int) const", "ns::Foo::bar"},
      {"c10::ThreadPool::ThreadPool(int, int, std::function<void ()>)::"
       "{lambda()#1}",
       "c10::ThreadPool"},
      {"pst::Pool::Pool(int)::{lambda()#1}", "pst::Pool"},
      {"(anonymous namespace)::loop(void*)", "loop"},
      {"void ns::run<int>(int)", "ns::run"},
      {"ns::Fn::operator()(int)", "ns::Fn::operator()"},
      {"gomp_thread_start [clone .cold]", "gomp_thread_start"},
      {"A::B::B", "A::B"},
  };
  char buf[64], small[8];

  for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
    ASSERT_STR_EQ(pst__origin_shorten(v[i].in, buf, sizeof(buf)), v[i].out);
  ASSERT_STR_EQ(pst__origin_shorten("abcdefghijkl", small, sizeof(small)),
                "abcdefg");
  {
    /* An operator whose characters fill the copy (fuzz_origin): cut, not
     * one byte past the end of the copy. */
    char name[400];
    memset(name, '+', sizeof(name) - 1);
    memcpy(name, "operator", 8);
    name[sizeof(name) - 1] = '\0';
    ASSERT_STR_EQ(pst__origin_shorten(name, small, sizeof(small)), "operato");
  }
  return 0;
}

TEST_IMPL(origin_thread_name) {
  struct pst__origin o = {.kind = PST_ORIGIN_OTHER, .label = "worker"};
  struct pst__origin gomp = {.kind = PST_ORIGIN_OPENMP,
                             .label = "libgomp worker"};
  char buf[64];

  /* A comm the program set wins... */
  ASSERT_STR_EQ(
      pst__origin_thread_name("loader", "python3", &o, 7, buf, sizeof(buf)),
      "loader");
  /* ...not the inherited one... */
  ASSERT_STR_EQ(
      pst__origin_thread_name("python3", "python3", &o, 7, buf, sizeof(buf)),
      "worker");
  /* ...nor one an OpenMP worker inherited from the thread that started
   * its pool. */
  ASSERT_STR_EQ(pst__origin_thread_name("PTThreadPool", "python3.11", &gomp, 7,
                                        buf, sizeof(buf)),
                "libgomp worker");
  ASSERT_STR_EQ(
      pst__origin_thread_name("python3", "python3", NULL, 42, buf, sizeof(buf)),
      "native thread 42");
  pst__origin_unknown("no layout", &o);
  ASSERT_STR_EQ(
      pst__origin_thread_name("python3", "python3", &o, 42, buf, sizeof(buf)),
      "native thread 42");
  ASSERT_STR_EQ(o.detail, "start routine unknown: no layout");
  return 0;
}

/* origin-target with the stripped library of make-debuginfo.sh: the
 * executable's static routine, a self-named thread, the main thread and
 * the library's static routine, named by its debug file (build-id) and,
 * without one, by the module only. */
TEST_IMPL(origin_c_target) {
  char helper[512], lib[128], cmd[1024], dbg[128];
  struct target t;
  struct thread *th;
  struct pst__resolver *bare;
  struct pst__origin o;
  uint64_t tp, fn, arg;

  make_dir();
  snprintf(cmd, sizeof(cmd),
           "sh %s/tests/helpers/make-debuginfo.sh "
           "%s/tests/helpers/debuginfo-lib.c %s",
           test_srcdir(), test_srcdir(), dir);
  if (test_sh(cmd)) {
    cleanup();
    SKIP("could not build and split the library");
  }
  snprintf(helper, sizeof(helper), "%s/tests/helpers/origin-target",
           test_builddir());
  snprintf(lib, sizeof(lib), "%s/bid/libpstdbg.so", dir);
  snprintf(dbg, sizeof(dbg), "%s/debugroot/usr/lib/debug", dir);
  setenv("PST_DEBUG_DIRS", dbg, 1);
  ASSERT_EQ(spawn((char *const[]){helper, lib, NULL}, &t), 0);
  list_threads(&t);
  attach(&t);
  ASSERT(t.tsd.has_start);
  ASSERT_STR_EQ(t.tsd.start_method, "_thread_db_pthread_start_routine");
  for (int i = 0; i < t.n; i++)
    describe(&t, &t.v[i], "origin-target");

  th = role(&t, "main");
  ASSERT_EQ(th->o.kind, PST_ORIGIN_MAIN);
  ASSERT_EQ(th->o.fn, 0);
  th = role(&t, "plain");
  /* Built with ASan, the helper's threads all start in the sanitizer's
   * pthread_create wrapper: the routine is libasan's, not the test's. */
  if (!strncmp(th->o.func, "asan_thread_start", 17)) {
    finish(&t);
    cleanup();
    SKIP("sanitizer build: every thread starts in asan_thread_start");
  }
  ASSERT_EQ(th->o.kind, PST_ORIGIN_OTHER);
  ASSERT_STR_EQ(th->o.func, "origin_plain_worker");
  ASSERT_STR_EQ(th->o.module, "origin-target");
  ASSERT_STR_EQ(th->name, "origin_plain_worker");
  ASSERT_STR_EQ(th->o.detail, "started by origin_plain_worker in "
                              "origin-target");
  th = role(&t, "named");
  ASSERT_STR_EQ(th->o.func, "origin_named_worker");
  ASSERT_STR_EQ(th->comm, "pst-named");
  ASSERT_STR_EQ(th->name, "pst-named");
  th = role(&t, "lib");
  ASSERT_STR_EQ(th->o.func, "pst_dbg_thread_main");
  ASSERT_STR_EQ(th->o.module, "libpstdbg.so");
  ASSERT_STR_EQ(th->name, "pst_dbg_thread_main");

  /* No debug file: the library's module is all that is known. */
  setenv("PST_DEBUG_DIRS", "", 1);
  ASSERT_EQ(pst__resolver_new(t.pid, NULL, &bare), 0);
  ASSERT_EQ(pst__ptrace_thread_pointer(th->tid, &tp), 0);
  ASSERT_EQ(pst__tsd_start_routine(&t.tsd, &t.mem, tp, &fn, &arg), 0);
  pst__origin_describe(bare, &t.mem, fn, arg, &o);
  printf("# without its debug file: \"%s\" (%s)\n", o.label, o.detail);
  ASSERT_EQ(o.kind, PST_ORIGIN_OTHER);
  ASSERT_STR_EQ(o.func, "");
  ASSERT_STR_EQ(o.label, "libpstdbg thread");
  ASSERT(!strncmp(o.detail, "started at libpstdbg.so+0x", 26));
  pst__resolver_free(bare);
  finish(&t);
  cleanup();
  return 0;
}

/* std::threads of a stripped C++ program: named by RTTI alone. */
TEST_IMPL(origin_std_thread) {
  char cmd[1024], bin[128];
  struct target t;
  struct thread *th;

  if (system("command -v g++ >/dev/null 2>&1"))
    SKIP("no g++");
  make_dir();
  snprintf(bin, sizeof(bin), "%s/origin-cxx", dir);
  snprintf(cmd, sizeof(cmd),
           "g++ -O1 -pthread -o %s %s/tests/helpers/origin-cxx.cc && "
           "strip --strip-all %s",
           bin, test_srcdir(), bin);
  ASSERT_EQ(test_sh(cmd), 0);
  ASSERT_EQ(spawn((char *const[]){bin, NULL}, &t), 0);
  attach(&t);
  for (int i = 0; i < t.n; i++)
    describe(&t, &t.v[i], "origin-cxx");
  th = role(&t, "lambda");
  ASSERT_EQ(th->o.kind, PST_ORIGIN_STD_THREAD);
  ASSERT(!strncmp(th->o.module, "libstdc++.so", 12));
  ASSERT_STR_EQ(th->o.func, "pst::Pool::Pool(int)::{lambda()#1}");
  ASSERT_STR_EQ(th->name, "pst::Pool");
  th = role(&t, "member");
  ASSERT_EQ(th->o.kind, PST_ORIGIN_STD_THREAD);
  ASSERT_STR_EQ(th->o.func, "void (pst::Service::*)(int)");
  ASSERT_STR_EQ(th->name, "pst::Service");
  th = role(&t, "fnptr");
  ASSERT_EQ(th->o.kind, PST_ORIGIN_STD_THREAD);
  ASSERT_STR_EQ(th->o.func, "void (*)(int)");
  ASSERT_STR_EQ(th->name, "std::thread");
  finish(&t);
  cleanup();
  return 0;
}

/* musl keeps no start routine in struct pthread: -ENOSYS, said why. */
TEST_IMPL(origin_musl_unknown) {
  char helper[512];
  struct target t;
  uint64_t tp, fn, arg;

  snprintf(helper, sizeof(helper), "%s/tests/helpers/tsd-target-musl",
           test_builddir());
  if (spawn((char *const[]){helper, NULL}, &t) == 77)
    SKIP("tsd-target-musl not built (musl-gcc missing)");
  attach(&t);
  ASSERT(t.tsd.is_musl);
  ASSERT(!t.tsd.has_start);
  ASSERT(strstr(t.tsd.start_method, "musl") != NULL);
  ASSERT(t.n > 0);
  ASSERT_EQ(pst__ptrace_thread_pointer(t.v[0].tid, &tp), 0);
  ASSERT_EQ(pst__tsd_start_routine(&t.tsd, &t.mem, tp, &fn, &arg), -ENOSYS);
  finish(&t);
  return 0;
}

/* /usr/bin/python3.11 with Debian's PyTorch: intra-op threads (libgomp),
 * XNNPACK/NNPACK's pthreadpool, the inter-op pool (c10::ThreadPool, a
 * std::thread that names itself "PTThreadPool"), a threading.Thread
 * (CPython's pythread_wrapper) and the main thread. */
TEST_IMPL(origin_torch) {
  static const char script[] =
      "import os, sys, threading, time\n"
      "import torch\n"
      "torch.set_num_threads(4)\n"
      "x = torch.randn(256, 256)\n"
      "y = x @ x\n"
      "torch.nn.functional.conv2d(torch.randn(1, 3, 16, 16),\n"
      "                           torch.randn(4, 3, 3, 3))\n"
      "@torch.jit.script\n"
      "def f(a):\n"
      "    return a * 2\n"
      "@torch.jit.script\n"
      "def g(a):\n"
      "    return torch.jit.wait(torch.jit.fork(f, a))\n"
      "g(x)\n"
      "ev = threading.Event()\n"
      "def run():\n"
      "    print('thread', threading.get_native_id(), 'py', flush=True)\n"
      "    ev.wait()\n"
      "threading.Thread(target=run, name='waiter', daemon=True).start()\n"
      "time.sleep(0.2)\n"
      "print('ready', flush=True)\n"
      "time.sleep(600)\n";
  struct target t;
  struct thread *th;
  int gomp = 0, pool = 0, interop = 0;
  char path[128];
  FILE *f;

  if (access("/usr/bin/python3.11", X_OK))
    SKIP("no /usr/bin/python3.11");
  if (system("/usr/bin/python3.11 -c 'import torch' >/dev/null 2>&1"))
    SKIP("no torch for /usr/bin/python3.11 (python3-torch)");
  /* TorchScript compiles from the source file: no -c. */
  make_dir();
  snprintf(path, sizeof(path), "%s/torch_threads.py", dir);
  f = fopen(path, "w");
  ASSERT(f != NULL);
  ASSERT(fputs(script, f) >= 0);
  ASSERT_EQ(fclose(f), 0);
  ASSERT_EQ(spawn((char *const[]){"/usr/bin/python3.11", path, NULL}, &t), 0);
  list_threads(&t);
  attach(&t);
  for (int i = 0; i < t.n; i++)
    describe(&t, &t.v[i], "python3.11");
  th = role(&t, "main");
  ASSERT_EQ(th->o.kind, PST_ORIGIN_MAIN);
  th = role(&t, "py");
  ASSERT_EQ(th->o.kind, PST_ORIGIN_PYTHON);
  ASSERT_STR_EQ(th->o.module, "python3.11");
  ASSERT_STR_EQ(th->o.label, "Python thread");
  if (th->o.func[0]) /* with python3.11-dbg of the same version */
    ASSERT_STR_EQ(th->o.func, "pythread_wrapper");
  else
    printf("# no symbol for CPython's thread entry: python3.11-dbg not "
           "installed or of another version\n");
  for (int i = 0; i < t.n; i++) {
    th = &t.v[i];
    if (th->o.kind == PST_ORIGIN_OPENMP) {
      ASSERT(!strncmp(th->o.module, "libgomp.so", 10));
      ASSERT_STR_EQ(th->name, "libgomp worker");
      gomp++;
    } else if (th->o.kind == PST_ORIGIN_PTHREADPOOL) {
      ASSERT(!strncmp(th->o.module, "libpthreadpool.so", 17));
      ASSERT_STR_EQ(th->name, "pthreadpool worker");
      pool++;
    } else if (th->o.kind == PST_ORIGIN_STD_THREAD) {
      ASSERT_STR_EQ(th->o.label, "c10::ThreadPool worker");
      ASSERT(strstr(th->o.func, "c10::ThreadPool::ThreadPool(") == th->o.func);
      interop++;
    }
  }
  printf("# %d libgomp, %d pthreadpool, %d c10::ThreadPool threads\n", gomp,
         pool, interop);
  ASSERT_GE(gomp, 1);
  ASSERT_GE(pool, 1);
  ASSERT_GE(interop, 1);
  finish(&t);
  cleanup();
  return 0;
}
