/* json.h: a small streaming JSON writer for the output formats (speedscope,
 * Chrome trace): values go straight to a FILE, commas and string escapes
 * are handled here, and misuse or stream errors are reported once, at the
 * end, by pst__json_finish().
 *
 *   struct pst__json j;
 *   pst__json_init(&j, f);
 *   pst__json_object_begin(&j);
 *   pst__json_kv_string(&j, "name", name);
 *   pst__json_key(&j, "ids");
 *   pst__json_array_begin(&j);
 *   pst__json_uint(&j, 1);
 *   pst__json_array_end(&j);
 *   pst__json_object_end(&j);
 *   return pst__json_finish(&j);
 *
 * Strings are written as UTF-8: well-formed multibyte sequences pass
 * through, ill-formed bytes become U+FFFD, '"' and '\\' are escaped, and
 * control characters are written as \b \f \n \r \t or \u00XX. Objects and
 * arrays inside an array each start a new line, so that large files stay
 * readable (and diffable) line by line.
 *
 * pst__json_put_string() is the same string writer on its own, for a caller
 * that lays out its JSON with printf.
 *
 * The struct is caller-allocated (pst__json_init(), no exit function); it
 * borrows f, which it neither flushes nor closes. Not thread-safe.
 */
#ifndef PST_JSON_H
#define PST_JSON_H

#include <stdint.h>
#include <stdio.h>

#define PST_JSON_MAX_DEPTH 64

struct pst__json {
  FILE *f;
  int depth;    /* open containers */
  int err;      /* first misuse: -EINVAL; 0 if none */
  int want_val; /* a key was written, its value comes next */
  int started;  /* the top-level value was begun */
  /* Per open container: whether it is an object, and how many members
   * (saturated at 1) it has so far. */
  unsigned char is_obj[PST_JSON_MAX_DEPTH], nonempty[PST_JSON_MAX_DEPTH];
};

void pst__json_init(struct pst__json *j, FILE *f);

void pst__json_object_begin(struct pst__json *j);
void pst__json_object_end(struct pst__json *j);
void pst__json_array_begin(struct pst__json *j);
void pst__json_array_end(struct pst__json *j);

/* The key of the next member of the current object. */
void pst__json_key(struct pst__json *j, const char *key);

/* A string (NULL is written as ""). */
void pst__json_string(struct pst__json *j, const char *s);
void pst__json_int(struct pst__json *j, int64_t v);
void pst__json_uint(struct pst__json *j, uint64_t v);
/* The decimal number v / 10^decimals, exactly (decimals <= 9), without
 * trailing zeros: pst__json_fixed(j, 1500, 3) writes 1.5. */
void pst__json_fixed(struct pst__json *j, uint64_t v, unsigned decimals);
void pst__json_bool(struct pst__json *j, int v);
void pst__json_null(struct pst__json *j);

/* A key and its value in one call. */
void pst__json_kv_string(struct pst__json *j, const char *key, const char *s);
void pst__json_kv_int(struct pst__json *j, const char *key, int64_t v);
void pst__json_kv_uint(struct pst__json *j, const char *key, uint64_t v);

/* Writes s (NULL is taken as "") to f as one JSON string literal, quotes
 * included, escaped and made valid UTF-8 as described at the top: for
 * JSON written by hand, outside a struct pst__json document (`dump --json`).
 * Errors stay in f (ferror()). */
void pst__json_put_string(FILE *f, const char *s);

/* Ends the document with a newline. Returns 0; -EINVAL when it was misused
 * (a value where a key was due, unbalanced or too deep containers, more
 * than one top-level value); -EIO when the stream is in error. */
int pst__json_finish(struct pst__json *j);

#endif
