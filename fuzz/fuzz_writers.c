/* fuzz_writers.c: libFuzzer harness for the output writers (src/output/:
 * pprof, speedscope, and folded, chrome, flame graph) over random profiles
 * (src/profile/profile.c).
 *
 * Input: a writer (byte 0: pprof, speedscope, folded, chrome, flamegraph,
 * or all of them), then processes, threads and samples parsed from the
 * bytes that follow (see build_profile): names and files with any bytes
 * (ill-formed UTF-8, control characters, quotes, ';'), any line, any time
 * and weight. Besides not crashing, the output must be well-formed: the
 * JSON formats parse as JSON and the pprof output inflates and unpacks
 * with every string index inside the string table. */
#define ZLIB_CONST
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "output/writer.h"
#include "profile/profile.h"
#include "proto/profile.pb-c.h"
#include "util/esc.h"

struct in {
  const uint8_t *p;
  size_t n;
};

static unsigned byte(struct in *in) {
  if (!in->n)
    return 0;
  in->n--;
  return *in->p++;
}

static uint32_t u32(struct in *in) {
  uint32_t v = byte(in);
  v |= byte(in) << 8;
  v |= byte(in) << 16;
  return v | (uint32_t)byte(in) << 24;
}

/* A string: a reference to one of the last strings (high bit set) or a
 * new one of up to 31 raw bytes (a NUL ends it early). */
#define POOL 8
struct pool {
  char s[POOL][32];
  unsigned next;
};

static const char *string(struct in *in, struct pool *pool) {
  unsigned b = byte(in), len = b & 31;
  char *s;

  if (b & 0x80)
    return pool->s[b % POOL];
  s = pool->s[pool->next++ % POOL];
  for (unsigned i = 0; i < len; i++)
    s[i] = (char)byte(in);
  s[len] = '\0';
  return s;
}

static struct pst__profile *build_profile(struct in *in) {
  struct pst__profile *p = pst__profile_new(1 + u32(in) % 100000000);
  struct pool pool = {{"main", "app.py", "", "<module>", "x;y", "\"q\\",
                       "\xff\xfe", "\xe2\x82\xac"},
                      0};
  unsigned nproc, nthreads;
  uint64_t t = 0;

  if (!p)
    return NULL;
  nproc = 1 + byte(in) % 3;
  for (unsigned i = 0; i < nproc; i++) {
    int pid = (int)(u32(in) & 0x3fffff);
    const char *cmd = string(in, &pool);
    int rank = (int)byte(in) - 2, local = (int)byte(in) - 2,
        world = (int)byte(in) - 2;
    if (pst__profile_process(p, pid, cmd, rank, local, world) < 0)
      goto fail;
  }
  nthreads = 1 + byte(in) % 4;
  for (unsigned i = 0; i < nthreads; i++) {
    unsigned proc = byte(in) % (unsigned)pst__profile_nprocesses(p);
    int tid = (int)(u32(in) & 0x3fffff);
    if (pst__profile_thread(p, proc, tid, string(in, &pool)) < 0)
      goto fail;
  }
  while (in->n) {
    struct pst__prof_frame frames[24];
    unsigned thread = byte(in) % (unsigned)pst__profile_nthreads(p);
    size_t n = byte(in) % 24;
    for (size_t i = 0; i < n; i++) {
      frames[i].name = string(in, &pool);
      frames[i].file = string(in, &pool);
      frames[i].line = (int)u32(in);
    }
    t += byte(in) * 1000u;
    if (pst__profile_add(p, thread, frames, n, t, byte(in) * 100000u))
      goto fail;
  }
  return p;
fail:
  pst__profile_free(p);
  return NULL;
}

/* ---- a strict JSON syntax check (RFC 8259), enough to catch bad
 * escaping, numbers and nesting in the writers' output ---- */

struct js {
  const char *p, *end;
  int depth;
};

static void ws(struct js *j) {
  while (j->p < j->end &&
         (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
    j->p++;
}

static int lit(struct js *j, const char *s) {
  size_t n = strlen(s);
  if ((size_t)(j->end - j->p) < n || memcmp(j->p, s, n))
    return 0;
  j->p += n;
  return 1;
}

static int jstring(struct js *j) {
  if (!lit(j, "\""))
    return 0;
  while (j->p < j->end) {
    unsigned char c = (unsigned char)*j->p++;
    if (c == '"')
      return 1;
    if (c < 0x20)
      return 0;
    if (c == '\\') {
      if (j->p >= j->end)
        return 0;
      c = (unsigned char)*j->p++;
      if (c == 'u') {
        for (int i = 0; i < 4; i++)
          if (j->p >= j->end || !strchr("0123456789abcdefABCDEF", *j->p++))
            return 0;
      } else if (!strchr("\"\\/bfnrt", c) || !c) {
        return 0;
      }
    } else if (c >= 0x80) {
      size_t k = pst__utf8_len(j->p - 1);
      if (!k || (size_t)(j->end - j->p + 1) < k)
        return 0;
      j->p += k - 1;
    }
  }
  return 0;
}

static int jnumber(struct js *j) {
  const char *s = j->p;
  if (j->p < j->end && *j->p == '-')
    j->p++;
  if (j->p < j->end && *j->p == '0')
    j->p++;
  else if (j->p < j->end && *j->p >= '1' && *j->p <= '9')
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
      j->p++;
  else
    return 0;
  if (j->p < j->end && *j->p == '.') {
    j->p++;
    if (j->p >= j->end || *j->p < '0' || *j->p > '9')
      return 0;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
      j->p++;
  }
  if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
    j->p++;
    if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
      j->p++;
    if (j->p >= j->end || *j->p < '0' || *j->p > '9')
      return 0;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
      j->p++;
  }
  return j->p > s;
}

static int jvalue(struct js *j) {
  int ok = 0;

  ws(j);
  if (j->p >= j->end || ++j->depth > 512)
    return 0;
  if (*j->p == '{' || *j->p == '[') {
    char close = *j->p == '{' ? '}' : ']';
    int obj = *j->p == '{';
    j->p++;
    ws(j);
    if (lit(j, close == '}' ? "}" : "]")) {
      ok = 1;
    } else {
      for (;;) {
        if (obj) {
          ws(j);
          if (!jstring(j))
            break;
          ws(j);
          if (!lit(j, ":"))
            break;
        }
        if (!jvalue(j))
          break;
        ws(j);
        if (lit(j, ","))
          continue;
        ok = lit(j, close == '}' ? "}" : "]");
        break;
      }
    }
  } else if (*j->p == '"') {
    ok = jstring(j);
  } else if (*j->p == 't') {
    ok = lit(j, "true");
  } else if (*j->p == 'f') {
    ok = lit(j, "false");
  } else if (*j->p == 'n') {
    ok = lit(j, "null");
  } else {
    ok = jnumber(j);
  }
  j->depth--;
  return ok;
}

static void check_json(const char *buf, size_t len, const char *who) {
  struct js j = {buf, buf + len, 0};
  if (!jvalue(&j) || (ws(&j), j.p != j.end)) {
    fprintf(stderr, "%s: invalid JSON at byte %zu\n", who, (size_t)(j.p - buf));
    abort();
  }
}

static void check_pprof(const char *buf, size_t len) {
  z_stream z = {0};
  size_t cap = 1 << 16, got = 0;
  uint8_t *out = malloc(cap);
  Perftools__Profiles__Profile *pr;
  int zr;

  if (!out || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
    abort();
  z.next_in = (const Bytef *)buf;
  z.avail_in = (uInt)len;
  do {
    if (got == cap && !(out = realloc(out, cap *= 2)))
      abort();
    z.next_out = out + got;
    z.avail_out = (uInt)(cap - got);
    zr = inflate(&z, Z_NO_FLUSH);
    got = cap - z.avail_out;
  } while (zr == Z_OK);
  if (zr != Z_STREAM_END) {
    fprintf(stderr, "pprof: gzip stream ends badly (%d)\n", zr);
    abort();
  }
  inflateEnd(&z);
  pr = perftools__profiles__profile__unpack(NULL, got, out);
  if (!pr) {
    fprintf(stderr, "pprof: does not unpack\n");
    abort();
  }
#define STR_OK(i) ((i) >= 0 && (size_t)(i) < pr->n_string_table)
  if (!pr->n_string_table || pr->string_table[0][0])
    abort();
  for (size_t i = 0; i < pr->n_function; i++)
    if (!STR_OK(pr->function[i]->name) || !STR_OK(pr->function[i]->filename))
      abort();
  for (size_t i = 0; i < pr->n_sample; i++)
    for (size_t k = 0; k < pr->sample[i]->n_label; k++)
      if (!STR_OK(pr->sample[i]->label[k]->key) ||
          !STR_OK(pr->sample[i]->label[k]->str))
        abort();
  for (size_t i = 0; i < pr->n_comment; i++)
    if (!STR_OK(pr->comment[i]))
      abort();
#undef STR_OK
  perftools__profiles__profile__free_unpacked(pr, NULL);
  free(out);
}

static const struct pst__writer_ops *const writers[] = {
    &pst__writer_pprof, &pst__writer_speedscope, &pst__writer_folded,
    &pst__writer_chrome, &pst__writer_flamegraph};
#define NWRITERS (sizeof(writers) / sizeof(writers[0]))

static void run(const struct pst__writer_ops *w, const struct pst__profile *p) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  int err;

  if (!f)
    return;
  err = w->write(p, f);
  if (fclose(f) != 0 || err != 0) {
    free(buf);
    return; /* -ENOMEM is the only failure a memory stream gives */
  }
  if (w == &pst__writer_pprof)
    check_pprof(buf, len);
  else if (w == &pst__writer_speedscope || w == &pst__writer_chrome)
    check_json(buf, len, w->name);
  free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct in in = {data + 1, size ? size - 1 : 0};
  struct pst__profile *p;
  unsigned which;

  if (!size)
    return 0;
  which = data[0] % (NWRITERS + 1);
  p = build_profile(&in);
  if (!p)
    return 0;
  for (unsigned i = 0; i < NWRITERS; i++)
    if (which == NWRITERS || which == i)
      run(writers[i], p);
  pst__profile_free(p);
  return 0;
}
