/* origin.c: labels for native-only threads from their start routines
 * (origin.h): known thread pools by function and module name, C++
 * std::thread callables through their _State vtable, else the shortened
 * function or the module.
 *
 * Names come from untrusted images and memory: every copy is bounded, and
 * a vtable read that fails or leads to something other than an _M_run only
 * leaves the callable unnamed.
 */
#include <stdio.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "native/origin.h"
#include "native/resolve.h"
#include "proc/mem.h"

/* std::thread::_State's vtable: [0] the complete destructor, [1] the
 * deleting destructor, [2] _M_run (libstdc++'s <bits/std_thread.h>:
 * struct _State { virtual ~_State(); virtual void _M_run() = 0; }, Itanium
 * C++ ABI vtable order). The vptr is the object's first word. */
#define STATE_M_RUN_SLOT 2

/* Copies at most n bytes of s (up to its end) into buf of len bytes. */
static void copy_n(char *buf, size_t len, const char *s, size_t n) {
  size_t l = strnlen(s, n);

  if (len == 0)
    return;
  if (l >= len)
    l = len - 1;
  memcpy(buf, s, l);
  buf[l] = '\0';
}

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* The module's short name: its file name up to ".so" ("libgomp.so.1.0.0"
 * gives "libgomp"), or the whole file name (an executable). */
static void short_module(const char *base, char *buf, size_t len) {
  const char *so = base;

  while ((so = strstr(so, ".so")) != NULL) {
    if (so[3] == '\0' || so[3] == '.')
      break;
    so += 3;
  }
  copy_n(buf, len, base, so ? (size_t)(so - base) : strlen(base));
}

/* python3.11, python3.14t, python2.7, libpython3.12.so.1.0: the
 * interpreter's own code. */
static int is_python_module(const char *base) {
  if (!strncmp(base, "lib", 3))
    base += 3;
  return !strncmp(base, "python", 6) && base[6] >= '2' && base[6] <= '3';
}

/* Whether s at p starts with the literal lit. */
static int at_lit(const char *p, const char *lit) {
  return !strncmp(p, lit, strlen(lit));
}

char *pst__origin_shorten(const char *func, char *buf, size_t len) {
  char tmp[256];
  size_t n = 0, last_space = 0;
  int depth = 0;
  const char *p, *clone, *a, *b;

  if (len == 0)
    return buf;
  clone = strstr(func, " [clone ");
  for (p = func; *p && (!clone || p < clone) && n + 1 < sizeof(tmp); p++) {
    if (depth == 0 && at_lit(p, "(anonymous namespace)::")) {
      p += strlen("(anonymous namespace)::") - 1;
      continue;
    }
    if (depth == 0 && n >= 8 && !memcmp(tmp + n - 8, "operator", 8)) {
      /* operator(), operator<, ...: copy the operator's own characters */
      while (*p && *p != '(' && n + 1 < sizeof(tmp))
        tmp[n++] = *p++;
      if (at_lit(p, "()(") && n + 3 < sizeof(tmp)) {
        tmp[n++] = '(';
        tmp[n++] = ')';
        p += 2;
      }
      if (!*p || n + 1 >= sizeof(tmp))
        break; /* full: what follows would be stored past tmp's end */
    }
    if (*p == '<' || *p == '(' || *p == '{' || *p == '[') {
      if (depth == 0 && *p == '(')
        break; /* the parameter list: what follows is qualifiers or a
                  lambda of this function */
      depth++;
      continue;
    }
    if (*p == '>' || *p == ')' || *p == '}' || *p == ']') {
      if (depth > 0)
        depth--;
      continue;
    }
    if (depth > 0)
      continue;
    if (*p == ' ')
      last_space = n + 1; /* a return type before the name */
    tmp[n++] = *p;
  }
  tmp[n] = '\0';
  p = tmp + last_space;
  /* A constructor, ns::C::C: its class. */
  b = NULL;
  for (a = strstr(p, "::"); a; a = strstr(a + 2, "::"))
    b = a;
  if (b) {
    const char *prev = NULL;
    for (a = p; (a = strstr(a, "::")) && a < b; a += 2)
      prev = a;
    a = prev ? prev + 2 : p;
    if ((size_t)(b - a) == strlen(b + 2) && !strncmp(a, b + 2, (size_t)(b - a)))
      n = (size_t)(b - p);
    else
      n = strlen(p);
  } else {
    n = strlen(p);
  }
  copy_n(buf, len, p, n);
  return buf;
}

/* The first element of the std::tuple<...> in the demangled name of
 * std::thread::_State_impl<std::thread::_Invoker<std::tuple<F, Args...> >
 * > (or of its _M_run): the callable's type. 0, or -1 when the name has
 * no tuple. */
static int tuple_first(const char *name, char *buf, size_t len) {
  const char *p = strstr(name, "std::tuple<"), *s;
  int depth = 0;

  if (!p)
    return -1;
  s = p += strlen("std::tuple<");
  for (; *p; p++) {
    if (*p == '<' || *p == '(' || *p == '{' || *p == '[')
      depth++;
    else if (*p == ')' || *p == '}' || *p == ']')
      depth--;
    else if (*p == '>') {
      if (depth == 0)
        break;
      depth--;
    } else if (*p == ',' && depth == 0)
      break;
  }
  while (p > s && p[-1] == ' ')
    p--;
  if (p == s)
    return -1;
  copy_n(buf, len, s, (size_t)(p - s));
  return 0;
}

/* Reads a NUL-terminated string of at most len - 1 bytes at addr, page
 * by page (a string near the end of a mapping must not fail as a whole).
 * 0, or -1 when unreadable or longer. */
static int read_cstr(struct pst__mem *mem, uint64_t addr, char *buf,
                     size_t len) {
  size_t got = 0;

  while (got + 1 < len) {
    size_t n = 4096 - (size_t)((addr + got) & 4095);
    if (n > len - 1 - got)
      n = len - 1 - got;
    if (pst__mem_read(mem, addr + got, buf + got, n))
      return -1;
    if (memchr(buf + got, '\0', n))
      return 0;
    got += n;
  }
  return -1;
}

struct dbuf {
  char *p;
  size_t len, used;
};

static void dbuf_put(const char *s, size_t n, void *opaque) {
  struct dbuf *d = opaque;

  if (d->used + n >= d->len)
    n = d->len - 1 - d->used;
  memcpy(d->p + d->used, s, n);
  d->used += n;
  d->p[d->used] = '\0';
}

/* The demangled type name of the polymorphic object at obj, from its RTTI:
 * the vtable's slot -1 is the std::type_info, whose second word is the
 * mangled name (Itanium C++ ABI 2.9.4/2.9.5; GCC prefixes '*' to the name
 * of a type with internal linkage). RTTI is there in stripped libraries,
 * where the vtable and _M_run symbols are not. 0 or -1. */
static int rtti_name(struct pst__mem *mem, uint64_t vptr, char *buf,
                     size_t len) {
  uint64_t ti, name;
  char mangled[2048];
  struct dbuf d = {buf, len, 0};
  const char *m = mangled;

  if (len == 0 || pst__mem_read_u64(mem, vptr - 8, &ti) ||
      pst__mem_read_u64(mem, ti + 8, &name) ||
      read_cstr(mem, name, mangled, sizeof(mangled)))
    return -1;
  if (*m == '*')
    m++;
  buf[0] = '\0';
  if (!cplus_demangle_v3_callback(m, DMGL_PARAMS | DMGL_ANSI | DMGL_TYPES,
                                  dbuf_put, &d))
    return -1;
  return 0;
}

/* A std::thread's callable, from its start argument (a
 * std::thread::_State *): the name of its dynamic type (RTTI), else of the
 * vtable's _M_run (symbols). Fills o->func, o->label and o->detail; leaves
 * them when anything does not fit. */
static void std_thread(pst__origin_lookup_cb lookup, void *opaque,
                       struct pst__mem *mem, uint64_t arg,
                       struct pst__origin *o) {
  struct pst__resolved run = {0};
  uint64_t vptr, m_run;
  char type[1024], callable[256], shortname[PST_ORIGIN_LABEL_MAX];
  const char *cls, *end, *where = NULL;

  if (!mem || !arg || pst__mem_read_u64(mem, arg, &vptr))
    return;
  if (pst__mem_read_u64(mem, vptr + 8 * STATE_M_RUN_SLOT, &m_run) == 0 &&
      lookup(opaque, m_run, &run) == 0 && run.path)
    where = base_name(run.path);
  if (!(rtti_name(mem, vptr, type, sizeof(type)) == 0 &&
        strstr(type, "std::thread::_State_impl<") &&
        tuple_first(type, callable, sizeof(callable)) == 0) &&
      !(run.func && strstr(run.func, "_M_run") &&
        tuple_first(run.func, callable, sizeof(callable)) == 0)) {
    if (where) /* unnamed: the module of its code at least */
      snprintf(o->detail, sizeof(o->detail),
               "std::thread running code at %s+0x%llx", where,
               (unsigned long long)run.vaddr);
    return;
  }
  snprintf(o->func, sizeof(o->func), "%s", callable);
  snprintf(o->detail, sizeof(o->detail), "std::thread running %s%s%s", callable,
           where ? " in " : "", where ? where : "");
  if ((end = strstr(callable, "::*)")) && (cls = strchr(callable, '(')) &&
      cls < end) {
    /* A member function pointer, void (ns::C::*)(...): its class. */
    copy_n(shortname, sizeof(shortname), cls + 1, (size_t)(end - cls - 1));
  } else if (strstr(callable, "(*)")) {
    return; /* a plain function pointer: its type says nothing */
  } else {
    pst__origin_shorten(callable, shortname, sizeof(shortname));
  }
  if (!shortname[0])
    return;
  if (!strcmp(shortname, "c10::ThreadPool"))
    snprintf(o->label, sizeof(o->label), "c10::ThreadPool worker");
  else
    snprintf(o->label, sizeof(o->label), "%s", shortname);
}

static int resolver_lookup(void *opaque, uint64_t addr,
                           struct pst__resolved *out) {
  return pst__resolver_lookup(opaque, addr, out);
}

void pst__origin_describe(struct pst__resolver *r, struct pst__mem *mem,
                          uint64_t fn, uint64_t arg, struct pst__origin *o) {
  pst__origin_describe_with(resolver_lookup, r, mem, fn, arg, o);
}

void pst__origin_describe_with(pst__origin_lookup_cb lookup, void *opaque,
                               struct pst__mem *mem, uint64_t fn, uint64_t arg,
                               struct pst__origin *o) {
  struct pst__resolved at;
  char mod[64], shortname[PST_ORIGIN_LABEL_MAX];
  const char *f, *base;

  memset(o, 0, sizeof(*o));
  o->fn = fn;
  if (fn == 0) {
    o->kind = PST_ORIGIN_MAIN;
    snprintf(o->detail, sizeof(o->detail), "no start routine: the main thread");
    return;
  }
  if (lookup(opaque, fn, &at) || !at.path) {
    snprintf(o->detail, sizeof(o->detail), "started at 0x%llx, in no file",
             (unsigned long long)fn);
    return;
  }
  base = base_name(at.path);
  snprintf(o->module, sizeof(o->module), "%s", base);
  short_module(base, mod, sizeof(mod));
  f = at.func;
  if (f) {
    snprintf(o->func, sizeof(o->func), "%s", f);
    snprintf(o->detail, sizeof(o->detail), "started by %s in %s", f, base);
  } else {
    snprintf(o->detail, sizeof(o->detail), "started at %s+0x%llx", base,
             (unsigned long long)at.vaddr);
  }
  o->kind = PST_ORIGIN_OTHER;
  if ((f && !strcmp(f, "pythread_wrapper")) || is_python_module(base)) {
    o->kind = PST_ORIGIN_PYTHON;
    snprintf(o->label, sizeof(o->label), "Python thread");
  } else if ((f && !strcmp(f, "gomp_thread_start")) ||
             !strcmp(mod, "libgomp")) {
    o->kind = PST_ORIGIN_OPENMP;
    snprintf(o->label, sizeof(o->label), "libgomp worker");
  } else if ((f && !strcmp(f, "__kmp_launch_worker")) ||
             !strcmp(mod, "libomp") || !strcmp(mod, "libiomp5")) {
    o->kind = PST_ORIGIN_OPENMP;
    snprintf(o->label, sizeof(o->label), "libomp worker");
  } else if (strstr(mod, "pthreadpool")) {
    o->kind = PST_ORIGIN_PTHREADPOOL;
    snprintf(o->label, sizeof(o->label), "pthreadpool worker");
  } else if ((f && !strncmp(f, "execute_native_thread_routine", 29)) ||
             !strcmp(mod, "libstdc++")) {
    /* libstdc++ starts threads for std::thread only (thread.cc), through
     * the static execute_native_thread_routine: no symbol in a stripped
     * libstdc++.so.6. */
    o->kind = PST_ORIGIN_STD_THREAD;
    snprintf(o->label, sizeof(o->label), "std::thread");
    std_thread(lookup, opaque, mem, arg, o);
  } else if (f) {
    pst__origin_shorten(f, shortname, sizeof(shortname));
    snprintf(o->label, sizeof(o->label), "%s", shortname[0] ? shortname : f);
  } else {
    snprintf(o->label, sizeof(o->label), "%.50s thread", mod);
  }
}

void pst__origin_unknown(const char *why, struct pst__origin *o) {
  memset(o, 0, sizeof(*o));
  snprintf(o->detail, sizeof(o->detail), "start routine unknown: %s", why);
}

char *pst__origin_thread_name(const char *comm, const char *main_comm,
                              const struct pst__origin *o, pid_t tid, char *buf,
                              size_t len) {
  int pool =
      o && (o->kind == PST_ORIGIN_OPENMP || o->kind == PST_ORIGIN_PTHREADPOOL);

  if (len == 0)
    return buf;
  /* OpenMP runtimes and pthreadpool never name their workers: a comm of
   * theirs that is not the main thread's was inherited from the thread
   * that started the pool (PyTorch's inter-op threads call themselves
   * "PTThreadPool", and so do the libgomp workers they start). */
  if (!pool && comm && main_comm && comm[0] && strcmp(comm, main_comm))
    snprintf(buf, len, "%s", comm);
  else if (o && o->label[0])
    snprintf(buf, len, "%s", o->label);
  else
    snprintf(buf, len, "native thread %d", (int)tid);
  return buf;
}
