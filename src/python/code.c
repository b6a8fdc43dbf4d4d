/* code.c: code objects decoded once (name, file, line table) and cached by
 * address; str objects read as UTF-8; the line tables of every version.
 *
 * Cache validity: a code object is immutable, but its address can be reused
 * by a new one after it is freed. Each lookup re-reads the object's header
 * (one read, which also gives the fields) and compares it with the cached
 * copy: type, name, qualname, filename, line table pointers and first line.
 * Any difference decodes the object anew. Names and file names are
 * interned in a table the cache owns, so frames that point at them stay
 * valid when an entry is evicted or decoded anew.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "python/python.h"
#include "util/dmcache.h"
#include "util/log.h"
#include "util/strtab.h"

#define CACHE_BITS 12 /* 4096 slots, direct-mapped by address */
#define STR_MAX 4096  /* longer names are cut */
/* Line tables up to LINETABLE_MAX bytes are read (one allocation of that
 * size per cached code object at most). A bigger one is legitimate (a
 * generated function of 300,000 lines has a 1.5 MB table on 3.11+) but
 * is not read: its frames get the function's first line, and the code
 * object is counted (pst__py_code_tables_cut()). A size past
 * LINETABLE_CORRUPT is no bytes object of a real process. */
#define LINETABLE_MAX (1 << 20)
#define LINETABLE_CORRUPT ((int64_t)1 << 40)

/* The immutable header fields an entry was decoded from: a code object at
 * the same address with other values is another object. */
struct code_sig {
  uint64_t type, name, filename, table;
  int32_t firstlineno;
};

struct code_entry {
  uint64_t addr;
  struct code_sig sig;
  const char *name, *filename; /* interned in the cache's strtab */
  uint8_t *table;
  size_t table_len;
  int table_cut; /* 1: the table was over LINETABLE_MAX, not read */
  int firstlineno;
  int64_t memo_lasti; /* the last offset looked up, or INT64_MIN */
  int memo_line;      /* and its line */
};

struct pst__code_cache {
  struct pst__strtab *strings;
  struct pst__dmcache slots; /* struct code_entry */
  uint64_t tables_cut;       /* decodes whose line table was not read */
};

struct pst__code_cache *pst__code_cache_new(void) {
  struct pst__code_cache *c = calloc(1, sizeof(*c));

  if (!c)
    return NULL;
  c->strings = pst__strtab_new();
  if (!c->strings ||
      pst__dmcache_init(&c->slots, CACHE_BITS, sizeof(struct code_entry))) {
    pst__strtab_free(c->strings);
    free(c);
    return NULL;
  }
  return c;
}

static void entry_clear(struct code_entry *e) {
  free(e->table);
  memset(e, 0, sizeof(*e));
}

void pst__code_cache_free(struct pst__code_cache *c) {
  if (!c)
    return;
  /* Only the tables: clearing every slot wrote the whole cache (400 KB,
   * mostly never touched) at exit, 7% of a one-shot dump's CPU. */
  for (size_t i = 0; i < pst__dmcache_nslots(&c->slots); i++) {
    struct code_entry *e = pst__dmcache_at(&c->slots, i);
    if (e->addr)
      free(e->table);
  }
  pst__dmcache_exit(&c->slots);
  pst__strtab_free(c->strings);
  free(c);
}

int pst__code_cache_flush(struct pst__code_cache *c) {
  struct pst__strtab *fresh = pst__strtab_new();

  if (!fresh)
    return -ENOMEM;
  for (size_t i = 0; i < pst__dmcache_nslots(&c->slots); i++) {
    struct code_entry *e = pst__dmcache_at(&c->slots, i);
    if (e->addr)
      entry_clear(e);
  }
  pst__strtab_free(c->strings);
  c->strings = fresh;
  return 0;
}

static int32_t i32_at(const uint8_t *p, int32_t off) {
  int32_t v;
  memcpy(&v, p + off, 4);
  return v;
}

size_t pst__py_put_utf8(char *o, uint32_t cp) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xc0 | cp >> 6);
    o[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xe0 | cp >> 12);
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  o[0] = (char)(0xf0 | cp >> 18);
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
  o[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

int pst__py_read_str(struct pst__py *py, struct pst__mem *mem, uint64_t addr,
                     char **out) {
  const struct pst__py_layout *l = &py->lay;
  uint8_t head[PST_PY_STR_HEAD], *raw = NULL;
  int64_t len;
  unsigned kind = 1;
  uint64_t data;
  char *s = NULL;
  size_t o = 0;
  int err;

  if (!addr)
    return -EFAULT;
  /* Exactly the object's header: a str near the end of a mapping must not
   * fail because we read past it. */
  err = pst__mem_read(mem, addr, head, (size_t)l->str_ascii_data);
  if (err)
    return err;
  memcpy(&len, head + l->str_length, 8);
  if (len < 0)
    return PST_EBADDATA;
  if (len > STR_MAX)
    len = STR_MAX;
  if (l->str_state == PST_NOFF) {
    data = addr + (uint64_t)l->str_ascii_data; /* 2.7 PyStringObject */
  } else {
    /* PyASCIIObject.state: interned:2, kind:3, compact:1, ascii:1. */
    uint32_t state = (uint32_t)i32_at(head, l->str_state);
    kind = (state >> 2) & 7;
    if (!((state >> 5) & 1))
      return PST_EBADDATA; /* legacy string: never a code name */
    if ((state >> 6) & 1)
      data = addr + (uint64_t)l->str_ascii_data;
    else
      data = addr + (uint64_t)l->str_compact_data;
    if (kind != 1 && kind != 2 && kind != 4)
      return PST_EBADDATA;
  }
  raw = malloc((size_t)len * kind + 1);
  s = malloc((size_t)len * 4 + 1);
  if (!raw || !s) {
    err = -ENOMEM;
    goto out;
  }
  err = pst__mem_read(mem, data, raw, (size_t)len * kind);
  if (err)
    goto out;
  for (int64_t i = 0; i < len; i++) {
    uint32_t cp;
    if (kind == 1)
      cp = raw[i];
    else if (kind == 2)
      cp = (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8;
    else
      memcpy(&cp, raw + 4 * i, 4);
    if (cp > 0x10ffff)
      cp = 0xfffd;
    if (l->str_state == PST_NOFF) /* 2.7 bytes: pass through */
      s[o++] = (char)cp;
    else
      o += pst__py_put_utf8(s + o, cp);
  }
  s[o] = '\0';
  *out = s;
  s = NULL;
out:
  free(raw);
  free(s);
  return err;
}

/* The decoders add up deltas in 64 bits (a table of LINETABLE_MAX bytes
 * cannot overflow that): a corrupt table or firstlineno from the target
 * could overflow an int. A line outside int's range is no line (-1). */
static int line_or_none(int64_t line) {
  return line >= INT32_MIN && line <= INT32_MAX ? (int)line : -1;
}

/* co_lnotab (<= 3.9): (byte increment, line increment) pairs; line
 * increments are signed from 3.6 on. addr is a byte offset. */
int pst__py_line_lnotab(const uint8_t *tab, size_t len, int first, int addr,
                        int signed_deltas) {
  int64_t line = first, a = 0;

  for (size_t i = 0; i + 1 < len; i += 2) {
    a += tab[i];
    if (a > addr)
      break;
    line += signed_deltas ? (int8_t)tab[i + 1] : tab[i + 1];
  }
  return line_or_none(line);
}

/* co_linetable (3.10): (byte length, signed line delta) pairs; a delta of
 * -128 means the range has no line. addr is a byte offset. */
int pst__py_line_310(const uint8_t *tab, size_t len, int first, int addr) {
  int64_t line = first;
  int start = 0;

  for (size_t i = 0; i + 1 < len; i += 2) {
    int end = start + tab[i];
    int8_t d = (int8_t)tab[i + 1];
    if (d != -128)
      line += d;
    if (addr >= start && addr < end)
      return d == -128 ? -1 : line_or_none(line);
    start = end;
  }
  return -1;
}

static int read_varint(const uint8_t *t, size_t len, size_t *i, unsigned *out) {
  unsigned v = 0, shift = 0;
  uint8_t b;

  do {
    if (*i >= len || shift > 28)
      return -1;
    b = t[(*i)++];
    v |= (unsigned)(b & 63) << shift;
    shift += 6;
  } while (b & 64);
  *out = v;
  return 0;
}

static int read_svarint(const uint8_t *t, size_t len, size_t *i, int *out) {
  unsigned v;
  if (read_varint(t, len, i, &v))
    return -1;
  *out = (v & 1) ? -(int)(v >> 1) : (int)(v >> 1);
  return 0;
}

/* Location table (3.11+, Objects/locations.md): entries start with a byte
 * 1CCCCLLL: code C, length L+1 code units. 15: no location; 14: long form
 * (svarint line delta, varint end line, column, end column); 13: no column
 * (svarint line delta); 10-12: line delta C-10 then two column bytes; 0-9:
 * short form, same line, one column byte. unit counts code units. */
int pst__py_line_311(const uint8_t *tab, size_t len, int first, int unit) {
  int64_t line = first;
  int start = 0;
  size_t i = 0;

  while (i < len) {
    uint8_t b = tab[i++];
    int code = (b >> 3) & 15, n = (b & 7) + 1, d = 0, has = 1;
    unsigned skip;

    if (!(b & 0x80))
      return -1; /* not an entry start: corrupt */
    if (code == 15) {
      has = 0;
    } else if (code == 14) {
      if (read_svarint(tab, len, &i, &d) || read_varint(tab, len, &i, &skip) ||
          read_varint(tab, len, &i, &skip) || read_varint(tab, len, &i, &skip))
        return -1;
    } else if (code == 13) {
      if (read_svarint(tab, len, &i, &d))
        return -1;
    } else if (code >= 10) {
      d = code - 10;
      i += 2;
    } else {
      i += 1;
    }
    line += d;
    if (unit >= start && unit < start + n)
      return has ? line_or_none(line) : -1;
    start += n;
  }
  return -1;
}

static int table_line(const struct pst__py *py, const struct code_entry *e,
                      int64_t lasti) {
  int hex = py->version_hex;

  if (lasti < 0 || e->table_cut)
    return e->firstlineno;
  if (lasti > INT32_MAX / 2) /* garbage: no code object is this long */
    return -1;
  if (hex >= 0x030b)
    return pst__py_line_311(e->table, e->table_len, e->firstlineno, (int)lasti);
  if (hex == 0x030a) /* f_lasti counts instructions of 2 bytes */
    return pst__py_line_310(e->table, e->table_len, e->firstlineno,
                            (int)lasti * 2);
  return pst__py_line_lnotab(e->table, e->table_len, e->firstlineno, (int)lasti,
                             hex >= 0x0306);
}

/* Reads the line table (a bytes object at obj) into e. Over
 * LINETABLE_MAX bytes: not read, e->table_cut set and counted. */
static int read_table(struct pst__py *py, struct pst__mem *mem, uint64_t obj,
                      struct code_entry *e) {
  const struct pst__py_layout *l = &py->lay;
  int64_t size;
  int err;

  if (!obj)
    return 0;
  err = pst__mem_read(mem, obj + (uint64_t)l->bytes_size, &size, 8);
  if (err)
    return err;
  if (size < 0 || size > LINETABLE_CORRUPT)
    return PST_EBADDATA;
  if (size > LINETABLE_MAX) {
    e->table_cut = 1;
    py->codes->tables_cut++;
    pst__debug("line table of %lld bytes at 0x%llx, over the %d bytes read: "
               "its function's frames show its first line",
               (long long)size, (unsigned long long)obj, LINETABLE_MAX);
    return 0;
  }
  e->table = malloc((size_t)size + 1);
  if (!e->table)
    return -ENOMEM;
  e->table_len = (size_t)size;
  return pst__mem_read(mem, obj + (uint64_t)l->bytes_data, e->table,
                       (size_t)size);
}

static void make_sig(const struct pst__py *py, const uint8_t *hdr,
                     struct code_sig *sig) {
  const struct pst__py_layout *l = &py->lay;

  memset(sig, 0, sizeof(*sig));
  sig->type = pst__py_u64_at(hdr, l->ob_type);
  sig->name = pst__py_u64_at(hdr, l->co_qualname != PST_NOFF ? l->co_qualname
                                                             : l->co_name);
  sig->filename = pst__py_u64_at(hdr, l->co_filename);
  sig->table = pst__py_u64_at(hdr, l->co_linetable != PST_NOFF ? l->co_linetable
                                                               : l->co_lnotab);
  sig->firstlineno = i32_at(hdr, l->co_firstlineno);
}

/* Field by field: memcmp would compare the struct's padding too. */
static int sig_eq(const struct code_sig *a, const struct code_sig *b) {
  return a->type == b->type && a->name == b->name &&
         a->filename == b->filename && a->table == b->table &&
         a->firstlineno == b->firstlineno;
}

static int decode(struct pst__py *py, struct pst__mem *mem, uint64_t addr,
                  const struct code_sig *sig, struct code_entry *e) {
  struct pst__strtab *strings = py->codes->strings;
  char *name = NULL, *filename = NULL;
  int err;

  entry_clear(e);
  err = pst__py_read_str(py, mem, sig->name, &name);
  if (err == 0)
    err = pst__py_read_str(py, mem, sig->filename, &filename);
  if (err == 0) {
    e->name = pst__strtab_intern(strings, name);
    e->filename = pst__strtab_intern(strings, filename);
    if (!e->name || !e->filename)
      err = -ENOMEM;
  }
  free(name);
  free(filename);
  if (err == 0)
    err = read_table(py, mem, sig->table, e);
  if (err) {
    entry_clear(e);
    return err;
  }
  e->firstlineno = sig->firstlineno;
  e->addr = addr;
  e->memo_lasti = INT64_MIN;
  e->sig = *sig;
  return 0;
}

uint64_t pst__py_code_tables_cut(const struct pst__py *py) {
  return py->codes ? py->codes->tables_cut : 0;
}

size_t pst__py_code_header_size(const struct pst__py *py) {
  size_t n = (size_t)py->lay.co_size;
  return n > PST_PY_CODE_HEADER_MAX ? PST_PY_CODE_HEADER_MAX : n;
}

int pst__py_code_header(struct pst__py *py, struct pst__mem *mem, uint64_t addr,
                        const uint8_t *hdr, int64_t lasti, const char **name,
                        const char **filename, int *line) {
  struct code_entry *e;
  struct code_sig sig;
  int err;

  make_sig(py, hdr, &sig);
  if (py->code_type && sig.type != py->code_type)
    return PST_EBADDATA;
  /* Code objects are 16-aligned and often a power of two apart: the
   * cache's Fibonacci hashing spreads them; the 4 zero bits go first. */
  e = pst__dmcache_slot(&py->codes->slots, addr >> 4);
  /* An empty slot (name NULL) never matches, even a zero address and
   * an all-zero header read from hostile memory. */
  if (!e->name || e->addr != addr || !sig_eq(&e->sig, &sig)) {
    err = decode(py, mem, addr, &sig, e);
    if (err)
      return err;
  }
  *name = e->name;
  *filename = e->filename;
  /* Recursion and loops ask for the same offset again and again. */
  if (e->memo_lasti != lasti) {
    e->memo_line = table_line(py, e, lasti);
    e->memo_lasti = lasti;
  }
  *line = e->memo_line;
  return 0;
}
