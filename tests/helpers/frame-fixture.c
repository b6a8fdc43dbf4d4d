/* frame-fixture.c: reading, writing and walking frame-walker replay fixtures
 * (the format is described in frame-fixture.h). */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame-fixture.h"
#include "pystitch.h"

#define HEX_LINE 32           /* image bytes per hex line */
#define REGION_MAX (1u << 20) /* a bigger region is a corrupt file */
#define REGIONS_MAX 4096

/* The header's address fields, by name. */
static const struct {
  const char *name;
  size_t off;
} fields[] = {
    {"runtime", offsetof(struct pst_fixture, runtime)},
    {"interp_head", offsetof(struct pst_fixture, interp_head)},
    {"interp", offsetof(struct pst_fixture, interp)},
    {"tstate_current", offsetof(struct pst_fixture, tstate_current)},
    {"code_type", offsetof(struct pst_fixture, code_type)},
    {"none", offsetof(struct pst_fixture, none)},
    {"tstate", offsetof(struct pst_fixture, tstate)},
    /* Registry fixtures only: written when not 0. */
    {"dict_type", offsetof(struct pst_fixture, dict_type)},
    {"long_type", offsetof(struct pst_fixture, long_type)},
    {"int_type", offsetof(struct pst_fixture, int_type)},
    {"str_type", offsetof(struct pst_fixture, str_type)},
    {"module_type", offsetof(struct pst_fixture, module_type)},
    {"long_shift", offsetof(struct pst_fixture, long_shift)},
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))
#define NFIELDS_ALWAYS 7 /* the frame fixtures' fields, always written */

static uint64_t *field(struct pst_fixture *fx, const char *name) {
  for (size_t i = 0; i < NFIELDS; i++)
    if (!strcmp(name, fields[i].name))
      return (uint64_t *)((char *)fx + fields[i].off);
  return NULL;
}

static int hexval(int c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

/* The bytes of a region: len bytes of hex lines and "zero N" lines. */
static int read_bytes(FILE *f, uint8_t *out, size_t len) {
  char line[256];
  size_t done = 0;

  while (done < len) {
    unsigned long zeros;
    size_t n;
    if (!fgets(line, sizeof(line), f))
      return PST_EBADDATA;
    if (sscanf(line, "zero %lu", &zeros) == 1) {
      if (zeros > len - done)
        return PST_EBADDATA;
      memset(out + done, 0, zeros);
      done += zeros;
      continue;
    }
    n = strcspn(line, "\n");
    if (n % 2 || n / 2 > len - done || n == 0)
      return PST_EBADDATA;
    for (size_t i = 0; i < n; i += 2) {
      int hi = hexval(line[i]), lo = hexval(line[i + 1]);
      if (hi < 0 || lo < 0)
        return PST_EBADDATA;
      out[done++] = (uint8_t)(hi << 4 | lo);
    }
  }
  return 0;
}

static int add_region(struct pst_fixture *fx, FILE *f, uint64_t addr,
                      size_t len) {
  struct pst__mem_region *r;
  uint8_t *bytes;
  int err;

  if (len == 0 || len > REGION_MAX || fx->nregions == REGIONS_MAX ||
      (fx->nregions && addr < fx->regions[fx->nregions - 1].addr +
                                  fx->regions[fx->nregions - 1].len))
    return PST_EBADDATA; /* empty, huge, or not sorted and disjoint */
  r = realloc(fx->regions, (fx->nregions + 1) * sizeof(*r));
  if (!r)
    return -ENOMEM;
  fx->regions = r;
  bytes = malloc(len);
  if (!bytes)
    return -ENOMEM;
  err = read_bytes(f, bytes, len);
  if (err) {
    free(bytes);
    return err;
  }
  fx->regions[fx->nregions++] = (struct pst__mem_region){addr, bytes, len};
  return 0;
}

/* One "frame" line: frame<TAB>line<TAB>name<TAB>filename. */
static int add_frame(struct pst_fixture *fx, char *rest) {
  struct pst_fixture_frame *fr;
  char *name, *file, *end;
  long line;

  if (fx->nframes == PST_FIXTURE_FRAMES_MAX)
    return PST_EBADDATA;
  fr = &fx->frames[fx->nframes];
  line = strtol(rest, &end, 10);
  if (end == rest || *end != '\t')
    return PST_EBADDATA;
  name = end + 1;
  file = strchr(name, '\t');
  if (!file)
    return PST_EBADDATA;
  *file++ = '\0';
  file[strcspn(file, "\n")] = '\0';
  if (strlen(name) >= sizeof(fr->name) || strlen(file) >= sizeof(fr->filename))
    return PST_EBADDATA;
  fr->line = (int)line;
  strcpy(fr->name, name);
  strcpy(fr->filename, file);
  fx->nframes++;
  return 0;
}

/* One "thread" line: thread<TAB>0xIDENT<TAB>name. */
static int add_thread(struct pst_fixture *fx, char *rest) {
  struct pst_fixture_thread *th;
  char *end;

  if (fx->nthreads == PST_FIXTURE_THREADS_MAX)
    return PST_EBADDATA;
  th = &fx->threads[fx->nthreads];
  th->ident = strtoull(rest, &end, 16);
  if (end == rest || *end != '\t')
    return PST_EBADDATA;
  end[1 + strcspn(end + 1, "\n")] = '\0';
  if (strlen(end + 1) >= sizeof(th->name))
    return PST_EBADDATA;
  strcpy(th->name, end + 1);
  fx->nthreads++;
  return 0;
}

static int parse(FILE *f, struct pst_fixture *fx) {
  char line[1024], key[32];
  int magic = 0, end = 0, err = 0;

  while (!err && !end && fgets(line, sizeof(line), f)) {
    unsigned long long v;
    unsigned long len;
    uint64_t *p;

    if (line[0] == '#' || line[0] == '\n')
      continue;
    if (!magic) {
      if (strcmp(line, "pystitch-frame-image 1\n"))
        return PST_EBADDATA;
      magic = 1;
    } else if (!strncmp(line, "frame\t", 6)) {
      err = add_frame(fx, line + 6);
    } else if (!strncmp(line, "thread\t", 7)) {
      err = add_thread(fx, line + 7);
    } else if (sscanf(line, "region %llx %lu", &v, &len) == 2) {
      err = add_region(fx, f, v, len);
    } else if (sscanf(line, "python %31s", fx->python) == 1) {
      continue;
    } else if (sscanf(line, "version %llx", &v) == 1) {
      fx->version_hex = (int)v;
    } else if (sscanf(line, "%31s %llx", key, &v) == 2 &&
               (p = field(fx, key))) {
      *p = v;
    } else if (!strcmp(line, "end\n")) {
      end = 1;
    } else {
      err = PST_EBADDATA;
    }
  }
  if (!err && (!end || !fx->version_hex || !(fx->tstate || fx->nthreads) ||
               !fx->nregions))
    err = PST_EBADDATA;
  return err;
}

int pst_fixture_load(const char *path, struct pst_fixture *fx) {
  FILE *f;
  int err;

  memset(fx, 0, sizeof(*fx));
  f = fopen(path, "r");
  if (!f)
    return -errno;
  err = parse(f, fx);
  fclose(f);
  if (err)
    pst_fixture_exit(fx);
  return err;
}

void pst_fixture_exit(struct pst_fixture *fx) {
  for (size_t i = 0; i < fx->nregions; i++)
    free((void *)fx->regions[i].bytes);
  free(fx->regions);
  fx->regions = NULL;
  fx->nregions = 0;
}

size_t pst_fixture_image_size(const struct pst_fixture *fx) {
  size_t n = 0;
  for (size_t i = 0; i < fx->nregions; i++)
    n += fx->regions[i].len;
  return n;
}

static int all_zero(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i])
      return 0;
  return 1;
}

/* A region's bytes: hex lines, runs of whole zero lines as "zero N". */
static void write_bytes(FILE *f, const uint8_t *b, size_t len) {
  size_t i = 0;

  while (i < len) {
    size_t n = len - i < HEX_LINE ? len - i : HEX_LINE, z = 0;
    while (i + z + HEX_LINE <= len && all_zero(b + i + z, HEX_LINE))
      z += HEX_LINE;
    if (z >= 2 * HEX_LINE) { /* one zero line is shorter as hex */
      fprintf(f, "zero %zu\n", z);
      i += z;
      continue;
    }
    for (size_t k = 0; k < n; k++)
      fprintf(f, "%02x", b[i + k]);
    fputc('\n', f);
    i += n;
  }
}

int pst_fixture_save(const char *path, const struct pst_fixture *fx,
                     const char *comment) {
  FILE *f = fopen(path, "w");
  int err = 0;

  if (!f)
    return -errno;
  for (const char *c = comment; c && *c;) {
    size_t n = strcspn(c, "\n");
    fprintf(f, "# %.*s\n", (int)n, c);
    c += n + (c[n] == '\n');
  }
  fprintf(f, "pystitch-frame-image 1\npython %s\nversion 0x%x\n", fx->python,
          fx->version_hex);
  for (size_t i = 0; i < NFIELDS; i++) {
    uint64_t v;
    memcpy(&v, (const char *)fx + fields[i].off, sizeof(v));
    if (i < NFIELDS_ALWAYS || v)
      fprintf(f, "%s 0x%" PRIx64 "\n", fields[i].name, v);
  }
  for (int i = 0; i < fx->nframes; i++)
    fprintf(f, "frame\t%d\t%s\t%s\n", fx->frames[i].line, fx->frames[i].name,
            fx->frames[i].filename);
  for (int i = 0; i < fx->nthreads; i++)
    fprintf(f, "thread\t0x%" PRIx64 "\t%s\n", fx->threads[i].ident,
            fx->threads[i].name);
  for (size_t i = 0; i < fx->nregions; i++) {
    fprintf(f, "region 0x%" PRIx64 " %zu\n", fx->regions[i].addr,
            fx->regions[i].len);
    write_bytes(f, fx->regions[i].bytes, fx->regions[i].len);
  }
  fprintf(f, "end\n");
  if (ferror(f))
    err = -EIO;
  if (fclose(f) && !err)
    err = -errno;
  return err;
}

int pst_fixture_py(const struct pst_fixture *fx, struct pst__mem *mem,
                   struct pst__py *py) {
  char why[128];
  int err;

  py->version_hex = fx->version_hex;
  py->runtime = fx->runtime;
  py->interp_head_addr = fx->interp_head;
  py->tstate_current = fx->tstate_current;
  py->code_type = fx->code_type;
  py->none = fx->none;
  py->dict_type = fx->dict_type;
  py->long_type = fx->long_type;
  py->int_type = fx->int_type;
  py->str_type = fx->str_type;
  py->module_type = fx->module_type;
  py->long_shift = (int)fx->long_shift;
  /* The layout, as analyse.c's layout_for(). */
  if (fx->version_hex >= 0x030d) {
    int hex;
    if (!fx->runtime)
      return PST_EPYVERSION;
    err = pst__py_debug_offsets(mem, fx->runtime, &py->lay, &py->runtime_size,
                                &hex);
    if (err)
      return err;
  } else {
    err = pst__py_layout_builtin_copy(fx->version_hex, &py->lay);
    if (err)
      return err;
  }
  err = pst__py_layout_check(&py->lay, why, sizeof(why));
  if (err)
    return err;
  /* Shim owners and 3.14's tagged f_executable: as pst__py_analyse(). */
  py->owner_shim = 3;
  py->tag_mask = fx->version_hex >= 0x030e ? 7 : 0;
  /* The main interpreter, as pst__py_analyse() reads it. */
  if (fx->runtime)
    err = pst__mem_read_u64(mem, fx->runtime + (uint64_t)py->lay.rt_interp_head,
                            &py->interp);
  else
    err = pst__mem_read_u64(mem, fx->interp_head, &py->interp);
  if (err)
    return err;
  if (py->interp != fx->interp)
    return PST_EBADDATA;
  py->codes = pst__code_cache_new();
  return py->codes ? 0 : -ENOMEM;
}

void pst_fixture_record(void *arg, uint64_t addr, const void *buf, size_t len) {
  struct pst_fixture_rec *r = arg;
  struct pst_fixture_piece *p;

  if (r->err || len == 0)
    return;
  if (r->n == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 64;
    p = realloc(r->v, cap * sizeof(*p));
    if (!p) {
      r->err = -ENOMEM;
      return;
    }
    r->v = p;
    r->cap = cap;
  }
  p = &r->v[r->n];
  p->bytes = malloc(len);
  if (!p->bytes) {
    r->err = -ENOMEM;
    return;
  }
  memcpy(p->bytes, buf, len);
  p->addr = addr;
  p->len = len;
  r->n++;
}

void pst_fixture_rec_free(struct pst_fixture_rec *r) {
  for (size_t i = 0; i < r->n; i++)
    free(r->v[i].bytes);
  free(r->v);
  memset(r, 0, sizeof(*r));
}

static int by_addr(const void *a, const void *b) {
  const struct pst_fixture_piece *x = a, *y = b;
  return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int pst_fixture_merge(struct pst_fixture_rec *r, struct pst_fixture *fx) {
  size_t i = 0;

  if (r->err)
    return r->err;
  qsort(r->v, r->n, sizeof(*r->v), by_addr);
  fx->regions = calloc(r->n ? r->n : 1, sizeof(*fx->regions));
  if (!fx->regions)
    return -ENOMEM;
  while (i < r->n) {
    uint64_t start = r->v[i].addr, end = start + r->v[i].len;
    size_t j = i + 1;
    uint8_t *bytes;
    while (j < r->n && r->v[j].addr <= end) {
      if (r->v[j].addr + r->v[j].len > end)
        end = r->v[j].addr + r->v[j].len;
      j++;
    }
    bytes = malloc(end - start);
    if (!bytes)
      return -ENOMEM;
    fx->regions[fx->nregions++] =
        (struct pst__mem_region){start, bytes, end - start};
    for (size_t k = i; k < j; k++) {
      uint8_t *at = bytes + (r->v[k].addr - start);
      /* Earlier pieces of the region were copied in: compare overlaps. */
      for (size_t b = 0; b < r->v[k].len; b++) {
        uint64_t a = r->v[k].addr + b;
        int seen = 0;
        for (size_t q = i; q < k && !seen; q++)
          seen = a >= r->v[q].addr && a < r->v[q].addr + r->v[q].len;
        if (seen && at[b] != r->v[k].bytes[b]) {
          fprintf(stderr,
                  "fixture: 0x%llx read as %02x then %02x: "
                  "the target moved\n",
                  (unsigned long long)a, at[b], r->v[k].bytes[b]);
          return PST_ETORN;
        }
        at[b] = r->v[k].bytes[b];
      }
    }
    i = j;
  }
  return 0;
}
