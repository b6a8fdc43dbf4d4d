/* json.c: the streaming JSON writer of json.h. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "output/json.h"
#include "output/writer.h"
#include "util/esc.h"

void pst__json_init(struct pst__json *j, FILE *f) {
  memset(j, 0, sizeof(*j));
  j->f = f;
}

/* Writes what goes before a value: the comma after the previous member and,
 * for a container inside a container, a newline. Checks that a value is
 * allowed here; returns 0 if so. */
static int before_value(struct pst__json *j, int container) {
  int d = j->depth - 1;

  if (j->err)
    return -1;
  if (d < 0) {
    /* Top level: one value only. */
    if (j->started) {
      j->err = -EINVAL;
      return -1;
    }
    j->started = 1;
    return 0;
  }
  if (j->is_obj[d]) {
    if (!j->want_val) {
      j->err = -EINVAL; /* a value where a key was due */
      return -1;
    }
    j->want_val = 0;
    return 0;
  }
  if (j->nonempty[d])
    putc(',', j->f);
  if (container)
    putc('\n', j->f);
  j->nonempty[d] = 1;
  return 0;
}

static void open_container(struct pst__json *j, int obj) {
  if (before_value(j, 1))
    return;
  if (j->depth >= PST_JSON_MAX_DEPTH) {
    j->err = -EINVAL;
    return;
  }
  j->is_obj[j->depth] = (unsigned char)obj;
  j->nonempty[j->depth] = 0;
  j->depth++;
  putc(obj ? '{' : '[', j->f);
}

static void close_container(struct pst__json *j, int obj) {
  if (j->err)
    return;
  if (j->depth == 0 || j->is_obj[j->depth - 1] != obj || j->want_val) {
    j->err = -EINVAL;
    return;
  }
  j->depth--;
  putc(obj ? '}' : ']', j->f);
}

void pst__json_object_begin(struct pst__json *j) { open_container(j, 1); }
void pst__json_object_end(struct pst__json *j) { close_container(j, 1); }
void pst__json_array_begin(struct pst__json *j) { open_container(j, 0); }
void pst__json_array_end(struct pst__json *j) { close_container(j, 0); }

void pst__json_put_string(FILE *f, const char *s) {
  static const char hex[] = "0123456789abcdef";
  const char *run; /* start of bytes not yet written */

  if (!s)
    s = "";
  run = s;
  putc('"', f);
  while (*s) {
    unsigned char c = (unsigned char)*s;
    size_t n = pst__utf8_len(s);
    const char *esc = NULL;
    char u[7];

    if (n > 1) {
      s += n;
      continue;
    }
    if (n == 1 && c >= 0x20 && c != '"' && c != '\\') {
      s++;
      continue;
    }
    fwrite(run, 1, (size_t)(s - run), f);
    switch (c) {
    case '"':
      esc = "\\\"";
      break;
    case '\\':
      esc = "\\\\";
      break;
    case '\b':
      esc = "\\b";
      break;
    case '\f':
      esc = "\\f";
      break;
    case '\n':
      esc = "\\n";
      break;
    case '\r':
      esc = "\\r";
      break;
    case '\t':
      esc = "\\t";
      break;
    default:
      if (n == 0)
        esc = "\\ufffd"; /* ill-formed UTF-8 */
      else {
        memcpy(u, "\\u00", 4);
        u[4] = hex[c >> 4];
        u[5] = hex[c & 15];
        u[6] = '\0';
        esc = u;
      }
    }
    fputs(esc, f);
    s++;
    run = s;
  }
  fwrite(run, 1, (size_t)(s - run), f);
  putc('"', f);
}

void pst__json_key(struct pst__json *j, const char *key) {
  int d = j->depth - 1;

  if (j->err)
    return;
  if (d < 0 || !j->is_obj[d] || j->want_val) {
    j->err = -EINVAL;
    return;
  }
  if (j->nonempty[d])
    putc(',', j->f);
  j->nonempty[d] = 1;
  pst__json_put_string(j->f, key);
  putc(':', j->f);
  j->want_val = 1;
}

void pst__json_string(struct pst__json *j, const char *s) {
  if (!before_value(j, 0))
    pst__json_put_string(j->f, s);
}

void pst__json_int(struct pst__json *j, int64_t v) {
  if (!before_value(j, 0))
    fprintf(j->f, "%" PRId64, v);
}

void pst__json_uint(struct pst__json *j, uint64_t v) {
  if (!before_value(j, 0))
    fprintf(j->f, "%" PRIu64, v);
}

void pst__json_fixed(struct pst__json *j, uint64_t v, unsigned decimals) {
  uint64_t scale = 1, frac;
  unsigned d = decimals;

  if (decimals > 9) {
    if (!j->err)
      j->err = -EINVAL;
    return;
  }
  if (before_value(j, 0))
    return;
  for (unsigned i = 0; i < decimals; i++)
    scale *= 10;
  frac = v % scale;
  fprintf(j->f, "%" PRIu64, v / scale);
  if (!frac)
    return;
  while (frac % 10 == 0) {
    frac /= 10;
    d--;
  }
  fprintf(j->f, ".%0*" PRIu64, (int)d, frac);
}

void pst__json_bool(struct pst__json *j, int v) {
  if (!before_value(j, 0))
    fputs(v ? "true" : "false", j->f);
}

void pst__json_null(struct pst__json *j) {
  if (!before_value(j, 0))
    fputs("null", j->f);
}

void pst__json_kv_string(struct pst__json *j, const char *key, const char *s) {
  pst__json_key(j, key);
  pst__json_string(j, s);
}

void pst__json_kv_int(struct pst__json *j, const char *key, int64_t v) {
  pst__json_key(j, key);
  pst__json_int(j, v);
}

void pst__json_kv_uint(struct pst__json *j, const char *key, uint64_t v) {
  pst__json_key(j, key);
  pst__json_uint(j, v);
}

int pst__json_finish(struct pst__json *j) {
  if (!j->err && (j->depth != 0 || !j->started))
    j->err = -EINVAL;
  if (j->err)
    return j->err;
  putc('\n', j->f);
  return ferror(j->f) ? -EIO : 0;
}
