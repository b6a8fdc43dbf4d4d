/* analyse.c: attach-time analysis of a target's CPython: binary, version,
 * layout, _PyRuntime, main interpreter and the thread-state key. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf.h"
#include "python/python.h"
#include "util/log.h"

/* PyGILState_GetThisThreadState is short; the key is loaded before the
 * first call or jmp within its first few dozen bytes. */
#define STUB_BYTES 128
/* _PyRuntimeState is a few hundred KiB at most (3.14: 0x4d4c8). */
#define RUNTIME_SIZE_CAP (1u << 20)

void pst__py_init(struct pst__py *py) {
  memset(py, 0, sizeof(*py));
  py->key = -1;
}

void pst__py_exit(struct pst__py *py) {
  pst__code_cache_free(py->codes);
  py->codes = NULL;
  pst__py_registry_free(py->reg);
  py->reg = NULL;
  pst__py_aio_legacy_exit(&py->aio);
  free(py->chunk_buf);
  py->chunk_buf = NULL;
  free(py->scratch.raw);
  free(py->scratch.iov);
  free(py->scratch.hdrs);
  free(py->scratch.hdr_of);
  free(py->scratch.guess);
  free(py->scratch.visit);
  free(py->scratch.civ);
  free(py->scratch.cbytes);
  memset(&py->scratch, 0, sizeof(py->scratch));
}

static int is_libpython(const char *base) {
  return !strncmp(base, "libpython2.", 11) || !strncmp(base, "libpython3.", 11);
}

/* "libpython3.12.so.1.0", "libpython3.6m.so", "python3.11", "python2.7":
 * the X.Y after the given prefix, as 0xMMmm, or 0. */
static int version_from_name(const char *base) {
  const char *p = strstr(base, "python");
  int major, minor;

  if (!p || sscanf(p + 6, "%d.%d", &major, &minor) != 2)
    return 0;
  if ((major == 2 && minor == 7) || (major == 3 && minor >= 6 && minor < 100))
    return major << 8 | minor;
  return 0;
}

struct read_ctx {
  struct pst__mem *mem;
};

static int read64_cb(void *arg, uint64_t addr, uint64_t *out) {
  struct read_ctx *c = arg;
  return pst__mem_read_u64(c->mem, addr, out);
}

/* The full version string ("3.10.13") for versions without Py_Version:
 * PY_VERSION sits in .rodata, NUL-terminated, possibly as the tail of a
 * longer string the linker merged it into ("/Python-3.10.13"). */
static void version_string(const struct pst__elf *e, int hex, char *out,
                           size_t len) {
  const char *buf, *p;
  uint64_t size;
  char prefix[16];
  size_t plen;

  snprintf(out, len, "%d.%d", hex >> 8, hex & 0xff);
  buf = pst__elf_section_bytes(e, ".rodata", &size);
  if (!buf)
    return;
  plen =
      (size_t)snprintf(prefix, sizeof(prefix), "%d.%d.", hex >> 8, hex & 0xff);
  for (p = buf; (p = memmem(p, size - (size_t)(p - buf), prefix, plen)) != NULL;
       p++) {
    const char *q = p + plen;
    if (p > buf && ((p[-1] >= '0' && p[-1] <= '9') || p[-1] == '.'))
      continue;
    if (q >= buf + size || *q < '0' || *q > '9')
      continue;
    while (q < buf + size &&
           ((*q >= '0' && *q <= '9') || *q == '+' || (*q >= 'a' && *q <= 'z')))
      q++;
    if (q < buf + size && *q == '\0' && q - p < 20) {
      snprintf(out, len, "%s", p);
      break;
    }
  }
}

/* Every symbol the analysis needs, looked up in one pass (a missing one
 * costs a full scan of .symtab). */
enum {
  SYM_INIT,        /* Py_Initialize: is it Python at all */
  SYM_VERSION,     /* Py_Version (3.11+) */
  SYM_RUNTIME,     /* _PyRuntime (3.7+) */
  SYM_CODE_TYPE,   /* PyCode_Type */
  SYM_TSTATE_CUR,  /* _PyThreadState_Current (2.7, 3.6) */
  SYM_INTERP_HEAD, /* interp_head (static: .symtab only) */
  SYM_HEAD_FN,     /* PyInterpreterState_Head */
  SYM_GILSTATE_FN, /* PyGILState_GetThisThreadState */
  SYM_NONE,        /* _Py_NoneStruct: 3.13+ shim frames execute None */
  /* Types of the objects the thread registry reads (registry.c, dict.c):
   * exported data of the C API in every version, so .dynsym has them even
   * in a stripped interpreter. */
  SYM_DICT_TYPE,      /* PyDict_Type */
  SYM_LONG_TYPE,      /* PyLong_Type */
  SYM_INT_TYPE,       /* PyInt_Type (2.7) */
  SYM_STR_TYPE,       /* PyUnicode_Type (3.x) */
  SYM_BYTES_STR_TYPE, /* PyString_Type (2.7's str) */
  SYM_MODULE_TYPE,    /* PyModule_Type */
  SYM_CORO_TYPE,      /* PyCoro_Type (asyncio.c) */
  SYM_GEN_TYPE,       /* PyGen_Type */
  SYM_METHOD_TYPE,    /* PyMethod_Type (asyncio_legacy.c) */
  SYM_SET_TYPE,       /* PySet_Type */
  SYM_UCS4,           /* PyUnicodeUCS4_FromString: 2.7's unicode is UCS-4 */
  SYM_UCS2,           /* PyUnicodeUCS2_FromString: UTF-16 (a narrow build) */
  SYM_COUNT
};

static const char *const sym_names[SYM_COUNT] = {
    [SYM_INIT] = "Py_Initialize",
    [SYM_VERSION] = "Py_Version",
    [SYM_RUNTIME] = "_PyRuntime",
    [SYM_CODE_TYPE] = "PyCode_Type",
    [SYM_TSTATE_CUR] = "_PyThreadState_Current",
    [SYM_INTERP_HEAD] = "interp_head",
    [SYM_HEAD_FN] = "PyInterpreterState_Head",
    [SYM_GILSTATE_FN] = "PyGILState_GetThisThreadState",
    [SYM_NONE] = "_Py_NoneStruct",
    [SYM_DICT_TYPE] = "PyDict_Type",
    [SYM_LONG_TYPE] = "PyLong_Type",
    [SYM_INT_TYPE] = "PyInt_Type",
    [SYM_STR_TYPE] = "PyUnicode_Type",
    [SYM_BYTES_STR_TYPE] = "PyString_Type",
    [SYM_MODULE_TYPE] = "PyModule_Type",
    [SYM_CORO_TYPE] = "PyCoro_Type",
    [SYM_GEN_TYPE] = "PyGen_Type",
    [SYM_METHOD_TYPE] = "PyMethod_Type",
    [SYM_SET_TYPE] = "PySet_Type",
    [SYM_UCS4] = "PyUnicodeUCS4_FromString",
    [SYM_UCS2] = "PyUnicodeUCS2_FromString",
};

struct syms {
  uint64_t v[SYM_COUNT], size[SYM_COUNT];
};

static int read_stub(const struct pst__elf *e, const struct syms *sy, int sym,
                     uint8_t *code, size_t *len, uint64_t *vaddr) {
  uint64_t size = sy->size[sym];

  *vaddr = sy->v[sym];
  if (!*vaddr)
    return PST_ENOSYM;
  if (size == 0 || size > STUB_BYTES)
    size = STUB_BYTES;
  memset(code, 0, STUB_BYTES);
  *len = size;
  return pst__elf_read(e, *vaddr, code, size);
}

/* Where the thread-state key lives: decoded from PyGILState_GetThisThreadState
 * (facts.md section 2), checked for plausibility, else the layout table. */
static int find_key(struct pst__py *py, const struct pst__elf *e,
                    const struct syms *sy, uint64_t bias, struct pst__mem *mem,
                    enum pst__arch arch, struct pst__py_found *found) {
  uint8_t code[STUB_BYTES];
  struct read_ctx rc = {mem};
  char shape[96] = "", why[96] = "";
  uint64_t vaddr, addr = 0, key_addr = 0;
  int32_t key = -1, inited;
  size_t len;
  int is_load = 0, err;

  if (py->version_hex < 0x0306) {
    snprintf(found->key_method, sizeof(found->key_method),
             "none: CPython 2.7 keeps no pthread key on Linux; threads "
             "mapped by the thread-state list");
    return 0;
  }
  err = read_stub(e, sy, SYM_GILSTATE_FN, code, &len, &vaddr);
  if (err == 0)
    err = pst__disasm_tss_key(arch, code, len, vaddr + bias, read64_cb, &rc,
                              &addr, &is_load, shape, sizeof(shape), why,
                              sizeof(why));
  else
    snprintf(why, sizeof(why), "PyGILState_GetThisThreadState not readable");
  /* 3.15: no key, a C11 thread-local read at the thread pointer. */
  if (err == -EINVAL &&
      pst__disasm_tls_getter(arch, code, len, vaddr + bias, read64_cb, &rc,
                             &py->tls_offset, shape, sizeof(shape), NULL,
                             0) == 0) {
    py->tls = 1;
    snprintf(found->key_method, sizeof(found->key_method),
             "none: a thread-local at the thread pointer %s0x%llx "
             "(disassembly of PyGILState_GetThisThreadState: %s)",
             py->tls_offset < 0 ? "-" : "+",
             (unsigned long long)(py->tls_offset < 0 ? -py->tls_offset
                                                     : py->tls_offset),
             shape);
    return 0;
  }
  if (err == 0) {
    /* 3.7+: the argument is &Py_tss_t {int _is_initialized; int _key} or
     * the key loaded from &Py_tss_t._key; 3.6: the int autoTLSkey. */
    key_addr = (py->version_hex >= 0x0307 && !is_load) ? addr + 4 : addr;
    if (py->runtime &&
        (key_addr < py->runtime + 4 ||
         key_addr >= py->runtime + (py->runtime_size ? py->runtime_size
                                                     : RUNTIME_SIZE_CAP))) {
      snprintf(why, sizeof(why), "decoded 0x%llx is outside _PyRuntime",
               (unsigned long long)key_addr);
      err = -EINVAL;
    } else if (py->runtime &&
               pst__mem_read(mem, key_addr - 4, &inited, 4) == 0 &&
               inited == 0) {
      /* Created by Py_Initialize just after the interpreter: still
       * starting up. Not a reason to fall back on a guess. */
      return PST_ENOTREADY;
    } else if (py->runtime &&
               (pst__mem_read(mem, key_addr - 4, &inited, 4) || inited != 1)) {
      snprintf(why, sizeof(why), "Py_tss_t at 0x%llx is not initialised",
               (unsigned long long)(key_addr - 4));
      err = -EINVAL;
    }
  }
  if (err == 0) {
    snprintf(found->key_method, sizeof(found->key_method),
             "disassembly of PyGILState_GetThisThreadState: %s", shape);
    if (py->lay.rt_tss != PST_NOFF &&
        key_addr != py->runtime + (uint64_t)py->lay.rt_tss + 4)
      pst__warn("TSS key: disassembly gives _PyRuntime+0x%llx, the layout "
                "table +0x%x; using the disassembly",
                (unsigned long long)(key_addr - py->runtime),
                py->lay.rt_tss + 4);
  } else if (py->runtime && py->lay.rt_tss != PST_NOFF) {
    key_addr = py->runtime + (uint64_t)py->lay.rt_tss + 4;
    snprintf(found->key_method, sizeof(found->key_method),
             "layout table _PyRuntime+0x%x (disassembly failed: %s)",
             py->lay.rt_tss + 4, why);
    pst__warn("TSS key: %s", found->key_method);
  } else {
    snprintf(found->key_method, sizeof(found->key_method),
             "none (disassembly failed: %s); threads mapped by the "
             "thread-state list",
             why);
    pst__warn("TSS key: %s", found->key_method);
    return 0;
  }
  if (pst__mem_read(mem, key_addr, &key, 4) || key < 0 || key >= 1024) {
    pst__warn("TSS key at 0x%llx unreadable or out of range (%d); threads "
              "mapped by the thread-state list",
              (unsigned long long)key_addr, (int)key);
    snprintf(found->key_method + strlen(found->key_method),
             sizeof(found->key_method) - strlen(found->key_method),
             "; key value invalid, list used");
    return 0;
  }
  py->key_addr = key_addr;
  py->key = key;
  return 0;
}

/* 2.7 and 3.6 keep the interpreter list in a static `interp_head`, which
 * PyInterpreterState_Head() returns. */
static int find_interp_head(struct pst__py *py, const struct pst__elf *e,
                            const struct syms *sy, uint64_t bias,
                            struct pst__mem *mem, enum pst__arch arch) {
  uint8_t code[STUB_BYTES];
  struct read_ctx rc = {mem};
  char why[96] = "";
  uint64_t vaddr, addr;
  size_t len;
  int err;

  if (sy->v[SYM_INTERP_HEAD]) {
    py->interp_head_addr = sy->v[SYM_INTERP_HEAD] + bias;
    return 0;
  }
  err = read_stub(e, sy, SYM_HEAD_FN, code, &len, &vaddr);
  if (err)
    return err;
  err = pst__disasm_global_getter(arch, code, len, vaddr + bias, read64_cb, &rc,
                                  &addr, why, sizeof(why));
  if (err) {
    pst__warn("PyInterpreterState_Head: %s", why);
    return err;
  }
  py->interp_head_addr = addr;
  return 0;
}

int pst__py_interps(struct pst__py *py, struct pst__mem *mem, uint64_t *interps,
                    int max) {
  uint64_t is;
  int n = 0, err;

  err = pst__mem_read_u64(mem, py->interp_head_addr, &is);
  if (err)
    return err;
  while (is && n < max && n < PST_PY_INTERPS_MAX) {
    for (int k = 0; k < n; k++)
      if (interps[k] == is)
        return -ELOOP; /* a cycle: read while the list changed, or garbage */
    interps[n++] = is;
    err = pst__mem_read_u64(mem, is + (uint64_t)py->lay.is_next, &is);
    if (err)
      return err;
  }
  return n;
}

#define INTERPS_WALK_MAX 4096 /* a longer list is a cycle or garbage */

/* The main interpreter. The list's head is the newest interpreter: a
 * sub-interpreter's while one lives. With _PyRuntime (3.7+), its
 * `interpreters` is {mutex, head, main, next_id} in every version: main is
 * the word after head, checked by finding it in the list. 2.7 and 3.6 have
 * only the list: main is its last (the oldest). */
static int main_interp(struct pst__py *py, struct pst__mem *mem) {
  uint64_t is = 0, last = 0, main = 0;
  int found = 0, err;

  if (py->runtime &&
      (err = pst__mem_read_u64(mem, py->interp_head_addr + 8, &main)))
    return err;
  err = pst__mem_read_u64(mem, py->interp_head_addr, &is);
  for (int k = 0; !err && is && k < INTERPS_WALK_MAX; k++) {
    last = is;
    found |= is == main;
    err = pst__mem_read_u64(mem, is + (uint64_t)py->lay.is_next, &is);
  }
  if (err)
    return err;
  if (is) { /* a cycle, or garbage */
    pst__warn("the list of interpreters has more than %d: not read",
              INTERPS_WALK_MAX);
    return PST_EBADDATA;
  }
  py->interp = last; /* 0: none yet */
  if (!py->runtime || !last || found) {
    if (found)
      py->interp = main;
    return 0;
  }
  pst__warn("_PyRuntime.interpreters.main (0x%llx) is not in the list of "
            "interpreters: the oldest of them is taken as the main one",
            (unsigned long long)main);
  return 0;
}

/* The type objects the registry reader checks objects against; 0 when a
 * symbol is absent (the check is then skipped). */
static void object_types(struct pst__py *py, const struct syms *sy,
                         uint64_t bias) {
  int two = py->version_hex < 0x0300;

#define TYPE_ADDR(sym) (sy->v[sym] ? sy->v[sym] + bias : 0)
  py->dict_type = TYPE_ADDR(SYM_DICT_TYPE);
  py->long_type = TYPE_ADDR(SYM_LONG_TYPE);
  py->int_type = two ? TYPE_ADDR(SYM_INT_TYPE) : 0;
  py->str_type = two ? TYPE_ADDR(SYM_BYTES_STR_TYPE) : TYPE_ADDR(SYM_STR_TYPE);
  py->module_type = TYPE_ADDR(SYM_MODULE_TYPE);
  py->coro_type = TYPE_ADDR(SYM_CORO_TYPE);
  py->gen_type = TYPE_ADDR(SYM_GEN_TYPE);
  py->method_type = TYPE_ADDR(SYM_METHOD_TYPE);
  py->set_type = TYPE_ADDR(SYM_SET_TYPE);
#undef TYPE_ADDR
}

/* Bits per digit of an int (PyLong): 30, or 15 in builds configured with
 * --enable-big-digits=15. PyLong_Type.tp_itemsize is sizeof(digit). */
static void long_shift(struct pst__py *py, struct pst__mem *mem) {
  int64_t itemsize = 0;

  py->long_shift = 30;
  if (!py->long_type || py->lay.type_itemsize == PST_NOFF)
    return;
  if (pst__mem_read(mem, py->long_type + (uint64_t)py->lay.type_itemsize,
                    &itemsize, 8) == 0 &&
      itemsize == 2)
    py->long_shift = 15;
  else if (itemsize != 4)
    pst__debug("PyLong_Type.tp_itemsize %lld: assuming 30-bit digits",
               (long long)itemsize);
}

static int open_python_elf(pid_t pid, const struct pst__maps *maps,
                           const char *exe, struct pst__py_found *found,
                           const struct pst__map **mpp, struct pst__elf **ep) {
  const struct pst__map *mp = pst__maps_find_file(maps, is_libpython);
  int fd, err;

  if (mp) {
    snprintf(found->libpython, sizeof(found->libpython), "%s", mp->path);
  } else {
    for (size_t i = 0; i < maps->n && !mp; i++)
      if (!strcmp(maps->v[i].path, exe))
        mp = &maps->v[i];
    if (!mp)
      return PST_ENOTPY;
  }
  mp = pst__maps_file_base(maps, mp);
  fd = pst__maps_open(pid, mp);
  if (fd < 0)
    return fd;
  err = pst__elf_open(fd, ep);
  if (err)
    return err == -ENOEXEC ? PST_ENOTPY : err;
  *mpp = mp;
  return 0;
}

static int layout_for(struct pst__py *py, struct pst__mem *mem,
                      struct pst__py_found *found) {
  int hex = py->version_hex, err;

  if (hex >= 0x030d) {
    if (!py->runtime)
      return PST_EPYVERSION;
    err = pst__py_debug_offsets(mem, py->runtime, &py->lay, &py->runtime_size,
                                &hex);
    if (err)
      return err;
    snprintf(found->layout_method, sizeof(found->layout_method),
             "_Py_DebugOffsets in _PyRuntime (version 0x%x)", hex);
    return 0;
  }
  err = pst__py_layout_builtin_copy(hex, &py->lay);
  if (err)
    return err;
  snprintf(found->layout_method, sizeof(found->layout_method),
           "built-in table for %d.%d (tools/gen-offsets.sh)", hex >> 8,
           hex & 0xff);
  return 0;
}

static int layout_checked(struct pst__py *py, struct pst__mem *mem,
                          struct pst__py_found *found) {
  char why[128];
  int err = layout_for(py, mem, found);

  if (err)
    return err;
  err = pst__py_layout_check(&py->lay, why, sizeof(why));
  if (err)
    pst__err("CPython %s layout rejected: %s", found->version, why);
  return err;
}

int pst__py_analyse(struct pst__py *py, pid_t pid, const struct pst__maps *maps,
                    struct pst__mem *mem, enum pst__arch arch, const char *exe,
                    struct pst__py_found *found) {
  const struct pst__map *mp = NULL;
  struct pst__elf *e = NULL;
  int err;

  memset(found, 0, sizeof(*found));
  err = open_python_elf(pid, maps, exe, found, &mp, &e);
  if (err)
    return err;
  err = pst__py_analyse_elf(py, e, mp, mem, arch, found);
  pst__elf_close(e);
  return err;
}

int pst__py_analyse_elf(struct pst__py *py, const struct pst__elf *e,
                        const struct pst__map *mp, struct pst__mem *mem,
                        enum pst__arch arch, struct pst__py_found *found) {
  struct syms sy;
  uint64_t bias = 0;
  uint32_t pyver;
  int err;

  memset(&sy, 0, sizeof(sy));
  err = pst__elf_symbols(e, sym_names, SYM_COUNT, sy.v, sy.size);
  if (err < 0 || !sy.v[SYM_INIT])
    return PST_ENOTPY;
  err = pst__elf_bias(e, mp->start, mp->offset, &bias);
  if (err)
    goto out;

  /* Version: Py_Version (3.11+), else the file name. */
  if (sy.v[SYM_VERSION] &&
      pst__elf_read(e, sy.v[SYM_VERSION], &pyver, 4) == 0) {
    py->version_hex = (int)(pyver >> 16);
    snprintf(found->version, sizeof(found->version), "%u.%u.%u", pyver >> 24,
             (pyver >> 16) & 0xff, (pyver >> 8) & 0xff);
  } else {
    const char *base = strrchr(mp->path, '/');
    py->version_hex = version_from_name(base ? base + 1 : mp->path);
    if (!py->version_hex) {
      err = PST_EPYVERSION;
      goto out;
    }
    version_string(e, py->version_hex, found->version, sizeof(found->version));
  }
  if (sy.v[SYM_RUNTIME])
    py->runtime = sy.v[SYM_RUNTIME] + bias;
  if (sy.v[SYM_CODE_TYPE])
    py->code_type = sy.v[SYM_CODE_TYPE] + bias;
  if (sy.v[SYM_NONE])
    py->none = sy.v[SYM_NONE] + bias;
  if (sy.v[SYM_TSTATE_CUR])
    py->tstate_current = sy.v[SYM_TSTATE_CUR] + bias;
  /* 2.7's C API names its unicode functions by the width of Py_UNICODE. */
  py->unicode_width = sy.v[SYM_UCS4] ? 4 : sy.v[SYM_UCS2] ? 2 : 0;
  object_types(py, &sy, bias);

  err = layout_checked(py, mem, found);
  if (err)
    goto out;
  /* Frames that belong to no Python function: FRAME_OWNED_BY_CSTACK (3)
   * in 3.12-3.13; 3.14 added FRAME_OWNED_BY_INTERPRETER (3) and moved the
   * C stack to 4 (pycore_frame.h): owners from this value on are shims.
   * 3.14 also tags f_executable as a _PyStackRef (low bits). */
  py->owner_shim = 3;
  py->tag_mask = py->version_hex >= 0x030e ? 7 : 0;

  if (py->runtime) {
    py->interp_head_addr = py->runtime + (uint64_t)py->lay.rt_interp_head;
  } else {
    err = find_interp_head(py, e, &sy, bias, mem, arch);
    if (err)
      goto out;
  }
  err = main_interp(py, mem);
  if (err)
    goto out;
  if (!py->interp) {
    pst__debug("the interpreter is not initialised yet (no interpreter)");
    err = PST_ENOTREADY;
    goto out;
  }
  err = find_key(py, e, &sy, bias, mem, arch, found);
  if (err)
    goto out;
  long_shift(py, mem);
  py->codes = pst__code_cache_new();
  if (!py->codes)
    err = -ENOMEM;
out:
  if (!err && pst__elf_faulted(e)) {
    pst__warn("the Python ELF file was truncated while it was analysed");
    err = PST_EBADDATA; /* what was read of it is zeros */
  }
  return err;
}
