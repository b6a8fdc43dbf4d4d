/* fuzz_origin.c: libFuzzer harness for src/native/origin.c: a native
 * thread's label from its start routine's module and function names (the
 * thread pools, libstdc++'s std::thread with its callable named through
 * the RTTI of the _State object in memory, or the vtable's _M_run), the
 * shortening of demangled names (origin labels and frames' short C++
 * names, native/cxxname.c), and the thread-name rule over comm, all
 * with hostile names and memory.
 *
 * An input is a header (struct header), six strings each ended by a NUL
 * or by the end of the input (the start routine's file and function, the
 * file and function of _M_run, the thread's comm and the main thread's),
 * then the image as records {u64 address, u32 length, bytes} (as
 * fuzz_pyimage.c) after the last NUL. Names are answered by a lookup that
 * stands for the resolver: fn gives the first pair, an address in
 * [run_lo, run_hi) the second. Seeds (make_seeds.py): std::threads of a
 * live C++ program (a lambda, c10::ThreadPool's constructor lambda, a
 * member function pointer, a function pointer) with their _State objects,
 * vtables, type_info and names read from its memory; libgomp's,
 * pthreadpool's and CPython's start routines; long demangled names from
 * this machine's libstdc++. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "native/cxxname.h"
#include "native/origin.h"
#include "native/resolve.h"
#include "proc/mem.h"
#include "regions.h"

#define REGIONS_MAX 1024
#define NSTR 6

struct header {
  uint64_t fn, arg;        /* the start routine and its argument */
  uint64_t run_lo, run_hi; /* where the second pair of names answers */
  uint64_t vaddr, run_vaddr;
  int32_t tid;
  uint32_t flags; /* FLAG_*: which strings are NULL instead */
};

#define FLAG_NO_PATH 1u       /* the start routine is in no file */
#define FLAG_NO_FUNC 2u       /* ... or in no function */
#define FLAG_NO_RUN_PATH 4u   /* _M_run is in no file */
#define FLAG_NO_RUN_FUNC 8u   /* ... or in no function */
#define FLAG_NO_COMM 16u      /* comm NULL */
#define FLAG_NO_MAIN 32u      /* main_comm NULL */
#define FLAG_NO_MEM 64u       /* no memory reader */
#define FLAG_LOOKUP_FAIL 128u /* the lookup of fn fails */

static struct pst__mem_region regions[REGIONS_MAX];

struct names {
  const struct header *h;
  char *s[NSTR];
};

/* The regions of the image: how many. */
static size_t image(const uint8_t *p, size_t n) {
  return fuzz_regions(p, n, regions, REGIONS_MAX);
}

static int lookup(void *opaque, uint64_t addr, struct pst__resolved *out) {
  const struct names *nm = opaque;
  const struct header *h = nm->h;
  int run;

  memset(out, 0, sizeof(*out));
  if (addr == h->fn && !(h->flags & FLAG_LOOKUP_FAIL))
    run = 0;
  else if (addr >= h->run_lo && addr < h->run_hi)
    run = 1;
  else
    return -ENOENT;
  if (!(h->flags & (run ? FLAG_NO_RUN_PATH : FLAG_NO_PATH)))
    out->path = nm->s[2 * run];
  if (!(h->flags & (run ? FLAG_NO_RUN_FUNC : FLAG_NO_FUNC)))
    out->func = nm->s[2 * run + 1];
  out->vaddr = run ? h->run_vaddr : h->vaddr;
  out->offset = out->vaddr;
  return 0;
}

static void check_str(const char *s, size_t size) {
  if (!memchr(s, 0, size))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const size_t lens[] = {0, 1, 2, 9, PST_ORIGIN_LABEL_MAX, 300};
  struct names nm;
  struct pst__origin o;
  struct pst__mem mem;
  struct header h;
  char *copy, *buf;
  size_t pos = 0, n;

  if (size < sizeof(h))
    return 0;
  memcpy(&h, data, sizeof(h));
  n = size - sizeof(h);
  /* One copy of the strings, each ended by its NUL (the last maybe by
   * the one added); the image follows the last NUL. */
  copy = malloc(n + 1);
  if (!copy)
    return 0;
  memcpy(copy, data + sizeof(h), n);
  copy[n] = '\0';
  nm.h = &h;
  for (int i = 0; i < NSTR; i++) {
    nm.s[i] = copy + pos;
    if (pos < n)
      pos += strlen(copy + pos) + 1;
    if (pos > n)
      pos = n;
  }
  pst__mem_init_image(&mem, regions, image(data + sizeof(h) + pos, n - pos));
  pst__origin_describe_with(lookup, &nm, h.flags & FLAG_NO_MEM ? NULL : &mem,
                            h.fn, h.arg, &o);
  check_str(o.label, sizeof(o.label));
  check_str(o.func, sizeof(o.func));
  check_str(o.module, sizeof(o.module));
  check_str(o.detail, sizeof(o.detail));
  if (getenv("FUZZ_ORIGIN_VERBOSE")) /* to check that the seeds read */
    fprintf(stderr, "%d \"%s\" (%s)\n", o.kind, o.label, o.detail);
  /* Buffers of exactly the size given: ASan sees a byte written past. */
  for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
    if (!(buf = malloc(lens[i] ? lens[i] : 1)))
      break;
    pst__origin_thread_name(h.flags & FLAG_NO_COMM ? NULL : nm.s[4],
                            h.flags & FLAG_NO_MAIN ? NULL : nm.s[5], &o, h.tid,
                            buf, lens[i]);
    if (lens[i])
      check_str(buf, lens[i]);
    pst__origin_thread_name(nm.s[4], nm.s[5], NULL, h.tid, buf, lens[i]);
    for (int k = 0; k < NSTR; k++) {
      pst__origin_shorten(nm.s[k], buf, lens[i]);
      if (lens[i])
        check_str(buf, lens[i]);
      if (lens[i]) { /* a frame's short C++ name (native/cxxname.c) */
        pst__cxx_short(nm.s[k], buf, lens[i]);
        check_str(buf, lens[i]);
      }
    }
    free(buf);
  }
  pst__origin_unknown(nm.s[0], &o);
  check_str(o.detail, sizeof(o.detail));
  pst__mem_exit(&mem);
  free(copy);
  return 0;
}
