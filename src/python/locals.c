/* locals.c: a frame's local variables for `dump --locals`: their names
 * from the code object, their values from the frame, each shown as a
 * short text made from the object's bytes alone (no code of the target
 * runs): the value of an int, float, bool, None, the start of a str or
 * bytes, the type and length of a list, tuple, dict or set, else the
 * type's name. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python/dict.h"
#include "python/python.h"
#include "util/esc.h"

#define TEXT_MAX 64     /* bytes of a str or bytes value shown */
#define TP_HEAPTYPE 512 /* Py_TPFLAGS_HEAPTYPE: a class, not a builtin */

/* What a type is, from its tp_name, for builtin (static) types only: a
 * class of the program named "int" is not an int. */
enum kind {
  K_OTHER,
  K_INT,
  K_LONG2,
  K_BOOL,
  K_FLOAT,
  K_STR,
  K_BYTES,
  K_UNICODE2,
  K_LIST,
  K_TUPLE,
  K_DICT,
  K_SET
};

static enum kind kind_of(const struct pst__py *py, const char *name,
                         uint64_t flags) {
  static const struct {
    const char *name;
    enum kind kind;
  } known[] = {
      {"int", K_INT},       {"bool", K_BOOL},   {"float", K_FLOAT},
      {"str", K_STR},       {"bytes", K_BYTES}, {"list", K_LIST},
      {"tuple", K_TUPLE},   {"dict", K_DICT},   {"set", K_SET},
      {"frozenset", K_SET}, {"long", K_LONG2},  {"unicode", K_UNICODE2}};

  if (flags & TP_HEAPTYPE)
    return K_OTHER;
  for (size_t i = 0; i < sizeof(known) / sizeof(*known); i++)
    if (!strcmp(name, known[i].name)) {
      enum kind k = known[i].kind;
      if (py->version_hex < 0x0300) /* 2.7: str is bytes, int is PyInt */
        k = k == K_STR ? K_BYTES : k;
      else if (k == K_LONG2 || k == K_UNICODE2)
        k = K_OTHER;
      return k;
    }
  return K_OTHER;
}

/* The type of obj: its name (tp_name, into name) and its kind. */
static int type_of(struct pst__py *py, struct pst__mem *mem, uint64_t obj,
                   char *name, size_t len, enum kind *kind) {
  const struct pst__py_layout *l = &py->lay;
  uint64_t tp, flags = 0;
  int err;

  err = pst__mem_read_u64(mem, obj + (uint64_t)l->ob_type, &tp);
  if (err == 0 && l->type_flags != PST_NOFF)
    err = pst__mem_read_u64(mem, tp + (uint64_t)l->type_flags, &flags);
  if (err == 0)
    err = pst__py_type_name(py, mem, tp, name, len);
  if (err == 0)
    *kind = kind_of(py, name, flags);
  return err;
}

/* An int's value (PyLong; 2.7's PyInt), signed, from its first bytes. 0,
 * or -ERANGE when it does not fit 64 bits. */
static int int_value(const struct pst__py *py, const uint8_t *buf, size_t len,
                     int pyint, int64_t *out) {
  const struct pst__py_layout *l = &py->lay;
  unsigned shift = py->long_shift ? (unsigned)py->long_shift : 30;
  unsigned dsize = shift > 16 ? 4 : 2;
  uint64_t v = 0;
  int64_t nd;
  int neg;

  if (pyint) { /* 2.7's PyIntObject */
    memcpy(out, buf + l->int_ival, 8);
    return 0;
  }
  if (l->long_tag != PST_NOFF) { /* lv_tag: digits << 3 | sign */
    uint64_t tag = pst__py_u64_at(buf, (size_t)l->long_tag);
    neg = (tag & 3) == 2;
    nd = (tag & 3) == 1 ? 0 : (int64_t)(tag >> 3);
  } else {
    memcpy(&nd, buf + l->long_size, 8);
    if (nd == INT64_MIN) /* no such size: -nd would overflow */
      return -ERANGE;
    neg = nd < 0;
    nd = neg ? -nd : nd;
  }
  if (nd < 0 || (size_t)l->long_digit + (size_t)nd * dsize > len ||
      (uint64_t)nd * shift > 63 + shift - 1)
    return -ERANGE;
  for (int64_t i = nd - 1; i >= 0; i--) {
    uint32_t d = 0;
    memcpy(&d, buf + l->long_digit + i * dsize, dsize);
    if (d >> shift || (v >> (63 - shift)) != 0)
      return -ERANGE;
    v = v << shift | d;
  }
  *out = neg ? -(int64_t)v : (int64_t)v;
  return 0;
}

/* The shortest text that reads back as d, as repr() writes it. */
static void float_text(double d, char *out, size_t len) {
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(out, len, "%.*g", prec, d);
    if (strtod(out, NULL) == d)
      break;
  }
  if (!strpbrk(out, ".eninf") && strlen(out) + 2 < len)
    strcat(out, ".0");
}

/* bytes (b'..': printable ASCII as is, else \xNN) of n at p, cut with
 * "..." when more. */
static void bytes_text(const uint8_t *p, int64_t n, int cut, char *out,
                       size_t len) {
  size_t at = (size_t)snprintf(out, len, "b'");

  for (int64_t i = 0; i < n && at + 8 < len; i++) {
    uint8_t c = p[i];
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'')
      out[at++] = (char)c;
    else
      at += (size_t)snprintf(out + at, len - at, "\\x%02x", c);
  }
  snprintf(out + at, len - at, "'%s", cut ? "..." : "");
}

/* 2.7's unicode obj (u'..', cut with "..." when longer than TEXT_MAX
 * characters): its length and Py_UNICODE buffer follow the object's
 * head; UCS-4, or UTF-16 in a narrow build. */
static int unicode2_text(const struct pst__py *py, struct pst__mem *mem,
                         uint64_t obj, uint64_t head, char *out, size_t len) {
  uint8_t buf[TEXT_MAX * 4];
  int64_t n;
  uint64_t data;
  size_t at, w = (size_t)py->unicode_width, k;

  if (!w || pst__mem_read(mem, obj + head, &n, 8) ||
      pst__mem_read_u64(mem, obj + head + 8, &data) || n < 0)
    return -EFAULT;
  if (n == 0) {
    snprintf(out, len, "u''");
    return 0;
  }
  k = TEXT_MAX;
  if (n < TEXT_MAX)
    k = (size_t)n;
  if (pst__mem_read(mem, data, buf, k * w))
    return -EFAULT;
  at = (size_t)snprintf(out, len, "u'");
  for (size_t i = 0; i < k && at + 8 < len; i++) {
    uint32_t c = w == 4 ? (uint32_t)buf[4 * i] | (uint32_t)buf[4 * i + 1] << 8 |
                              (uint32_t)buf[4 * i + 2] << 16 |
                              (uint32_t)buf[4 * i + 3] << 24
                        : (uint32_t)buf[2 * i] | (uint32_t)buf[2 * i + 1] << 8;
    if (w == 2 && c >= 0xd800 && c < 0xdc00 && i + 1 < k) { /* a pair */
      uint32_t lo = (uint32_t)buf[2 * i + 2] | (uint32_t)buf[2 * i + 3] << 8;
      if (lo >= 0xdc00 && lo < 0xe000) {
        c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
        i++;
      }
    }
    if (c == '\\' || c == '\'' || c < 0x20 || c == 0x7f ||
        (c >= 0xd800 && c < 0xe000) || c > 0x10ffff)
      at += (size_t)snprintf(out + at, len - at,
                             c < 0x100 ? "\\x%02x" : "\\u%04x", c);
    else
      at += pst__py_put_utf8(out + at, c); /* at + 8 < len: room for 4 */
  }
  snprintf(out + at, len - at, "'%s", (size_t)n > k ? "..." : "");
  return 0;
}

/* Text of the value obj (a frame's local), into out. */
static void value_text(struct pst__py *py, struct pst__mem *mem, uint64_t obj,
                       char *out, size_t len) {
  const struct pst__py_layout *l = &py->lay;
  uint8_t buf[PST_PY_INT_READ + TEXT_MAX];
  uint64_t head = (uint64_t)l->ob_type + 8; /* sizeof(PyObject) */
  char name[64];
  enum kind kind;
  int64_t n, v;
  double d;

  if (obj == py->none) {
    snprintf(out, len, "None");
    return;
  }
  if (type_of(py, mem, obj, name, sizeof(name), &kind)) {
    snprintf(out, len, "(unreadable)");
    return;
  }
  switch (kind) {
  case K_INT:
  case K_LONG2:
  case K_BOOL:
    if (pst__mem_read(mem, obj, buf, PST_PY_INT_READ)) {
      snprintf(out, len, "(unreadable %s)", name);
    } else if (int_value(py, buf, PST_PY_INT_READ,
                         py->version_hex < 0x0300 && kind != K_LONG2, &v)) {
      snprintf(out, len, "%s (more than 64 bits)", name);
    } else if (kind == K_BOOL) {
      snprintf(out, len, "%s", v ? "True" : "False");
    } else {
      snprintf(out, len, "%" PRId64 "%s", v, kind == K_LONG2 ? "L" : "");
    }
    return;
  case K_FLOAT:
    if (pst__mem_read(mem, obj + head, &d, sizeof(d)))
      snprintf(out, len, "(unreadable float)");
    else
      float_text(d, out, len);
    return;
  case K_STR: {
    char *s = NULL;
    if (pst__py_read_str(py, mem, obj, &s)) {
      snprintf(out, len, "(unreadable str)");
      return;
    }
    size_t sl = strlen(s);
    if (sl > TEXT_MAX) { /* cut at a whole character */
      sl = TEXT_MAX;
      while (sl && ((unsigned char)s[sl] & 0xc0) == 0x80)
        sl--;
    }
    snprintf(out, len, "'%.*s'%s", (int)sl, s, s[sl] ? "..." : "");
    free(s);
    return;
  }
  case K_BYTES:
    if (pst__mem_read(mem, obj + (uint64_t)l->bytes_size, &n, 8) || n < 0 ||
        pst__mem_read(mem, obj + (uint64_t)l->bytes_data, buf,
                      (size_t)(n < TEXT_MAX ? n : TEXT_MAX)))
      snprintf(out, len, "(unreadable %s)", name);
    else
      bytes_text(buf, n < TEXT_MAX ? n : TEXT_MAX, n > TEXT_MAX, out, len);
    return;
  case K_LIST:
  case K_TUPLE:
  case K_DICT:
  case K_SET:
    /* ob_size (list, tuple), ma_used (dict), used after fill (set) */
    if (pst__mem_read(mem,
                      obj + (kind == K_DICT  ? (uint64_t)l->dict_ma_used
                             : kind == K_SET ? head + 8
                                             : head),
                      &n, 8))
      snprintf(out, len, "%s (unreadable)", name);
    else
      snprintf(out, len, "%s (len %" PRId64 ")", name, n);
    return;
  case K_UNICODE2:
    if (unicode2_text(py, mem, obj, head, out, len) == 0)
      return;
    /* fall through - unreadable: named by its type */
  default:
    snprintf(out, len, "<%s object>", name);
    return;
  }
}

/* The n names of tuple tup (str objects) into out[].name: how many. */
static int read_names(struct pst__py *py, struct pst__mem *mem, uint64_t tup,
                      struct pst__py_local *out, int max, int *total) {
  uint64_t head = (uint64_t)py->lay.ob_type + 8, items[PST_PY_LOCALS_MAX];
  int64_t n;
  int k;

  if (py->lay.tuple_item == PST_NOFF)
    return -ENOSYS;
  if (pst__mem_read(mem, tup + head, &n, 8))
    return -EFAULT;
  if (n < 0 || n > 65536)
    return PST_EBADDATA;
  *total = (int)n;
  k = (int)(n < max ? n : max);
  if (k && pst__mem_read(mem, tup + (uint64_t)py->lay.tuple_item, items,
                         (size_t)k * 8))
    return -EFAULT;
  for (int i = 0; i < k; i++) {
    char *s = NULL;
    out[i].name[0] = 0;
    if (pst__py_read_str(py, mem, items[i], &s) == 0) {
      pst__utf8_copy(out[i].name, sizeof(out[i].name), s);
      free(s);
    }
  }
  return k;
}

int pst__py_frame_locals(struct pst__py *py, struct pst__mem *mem,
                         uint64_t frame, uint64_t code,
                         struct pst__py_local *out, int max, int *total) {
  const struct pst__py_layout *l = &py->lay;
  uint64_t names = 0, vals[PST_PY_LOCALS_MAX];
  int32_t first = l->ts_frame != PST_NOFF ? l->f_localsplus : l->if_localsplus;
  int32_t nlocals = -1;
  int n, k = 0, err;

  *total = 0;
  if (max > PST_PY_LOCALS_MAX)
    max = PST_PY_LOCALS_MAX;
  if (first == PST_NOFF ||
      (l->co_localsplusnames == PST_NOFF && l->co_varnames == PST_NOFF))
    return -ENOSYS;
  err = pst__mem_read_u64(mem,
                          code + (uint64_t)(l->co_localsplusnames != PST_NOFF
                                                ? l->co_localsplusnames
                                                : l->co_varnames),
                          &names);
  if (err == 0 && l->co_nlocals != PST_NOFF)
    err = pst__mem_read(mem, code + (uint64_t)l->co_nlocals, &nlocals, 4);
  if (err)
    return err;
  n = read_names(py, mem, names, out, max, total);
  if (n < 0)
    return n;
  /* <= 3.10: the names are the locals alone; co_nlocals says so too. */
  if (nlocals >= 0 && nlocals < n)
    n = nlocals;
  if (nlocals >= 0 && nlocals < *total)
    *total = nlocals;
  if (n && pst__mem_read(mem, frame + (uint64_t)first, vals, (size_t)n * 8))
    return -EFAULT;
  for (int i = 0; i < n; i++) {
    uint64_t v = vals[i] & ~(uint64_t)py->tag_mask; /* 3.14: stack refs */
    if (!v) /* not bound yet, or deleted */
      continue;
    if (k != i)
      memcpy(out[k].name, out[i].name, sizeof(out[k].name));
    value_text(py, mem, v, out[k].value, sizeof(out[k].value));
    k++;
  }
  return k;
}
