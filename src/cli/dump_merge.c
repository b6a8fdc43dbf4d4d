/* dump_merge.c: `pystitch dump --merge FILE...`: saved `dump --json`
 * outputs (of one process or several, from one host or several) read back
 * (jansson) and shown as one grouped view, each process labelled by its
 * host and rank: the view of a multi-node job whose hosts each ran
 * `pystitch dump --json`.
 *
 * Ownership: the parsed documents, and the threads, frames and locals
 * texts built from them, are this file's, freed before it returns; the
 * strings of the frames point into the documents.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/dump.h"
#include "pystitch.h"
#include "util/esc.h"

#define PROCS_MAX 1024
#define THREADS_MAX 100000 /* of one process */
#define FRAMES_MAX 1024    /* of one thread, as a dump writes at most */

static const char *str_of(const json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}

static int int_of(const json_t *o, const char *key, int dflt) {
  const json_t *v = json_object_get(o, key);
  return json_is_integer(v) ? (int)json_integer_value(v) : dflt;
}

/* The code of an error name as pst_errname() writes it ("EFAULT",
 * "PST_ETORN"), else -EIO. */
static int err_code(const char *name) {
  for (int e = 1; e < 4100; e++)
    if (!strcmp(pst_errname(-e), name))
      return -e;
  return -EIO;
}

/* Frame kind from its JSON name. */
static unsigned char kind_of(const char *k) {
  return !strcmp(k, "native")   ? PST_FRAME_NATIVE
         : !strcmp(k, "marker") ? PST_FRAME_MARKER
                                : PST_FRAME_PYTHON;
}

/* The locals of one saved frame as the grouped view keeps them. */
static char *frame_locals(const json_t *frame) {
  const json_t *vars = json_object_get(frame, "locals");
  struct pst_local v[64];
  struct pst_frame_locals fl = {0, 0, v};
  size_t i;
  json_t *var;

  if (!json_is_array(vars))
    return NULL;
  json_array_foreach(vars, i, var) {
    if (fl.n == 64)
      break;
    v[fl.n++] = (struct pst_local){str_of(var, "name"), str_of(var, "value")};
  }
  return pst__dump_locals_text(&fl);
}

/* Thread t of a saved process into x (its frames malloc'ed); its frames'
 * locals into *loc (NULL when it has none). 0 or -ENOMEM. */
static int load_thread(const json_t *t, struct pst_thread *x, char ***loc) {
  const json_t *frames = json_object_get(t, "frames"), *exc;
  size_t n = json_is_array(frames) ? json_array_size(frames) : 0, i;
  int any = 0;
  json_t *f;

  memset(x, 0, sizeof(*x));
  *loc = NULL;
  x->tid = int_of(t, "tid", 0);
  pst__utf8_copy(x->name, sizeof(x->name), str_of(t, "name"));
  pst__utf8_copy(x->origin, sizeof(x->origin), str_of(t, "origin"));
  x->tstate = json_is_true(json_object_get(t, "python"));
  x->idle = json_is_true(json_object_get(t, "idle"));
  x->holds_gil = json_is_true(json_object_get(t, "gil"));
  x->gc = json_is_true(json_object_get(t, "gc"));
  if (json_is_string(json_object_get(t, "error")))
    x->error = err_code(str_of(t, "error"));
  exc = json_object_get(t, "exception");
  x->exception = json_is_string(exc) ? 1 : json_is_false(exc) ? 0 : -1;
  if (x->exception == 1)
    pst__utf8_copy(x->exception_type, sizeof(x->exception_type),
                   json_string_value(exc));
  if (n > FRAMES_MAX)
    n = FRAMES_MAX;
  x->frames = calloc(n + 1, sizeof(*x->frames));
  *loc = calloc(n + 1, sizeof(**loc));
  if (!x->frames || !*loc)
    return -ENOMEM;
  json_array_foreach(frames, i, f) {
    if (i == n)
      break;
    x->frames[i] = (struct pst_frame){str_of(f, "name"),
                                      str_of(f, "file"),
                                      int_of(f, "line", 0),
                                      kind_of(str_of(f, "kind")),
                                      0,
                                      0};
    (*loc)[i] = frame_locals(f);
    any |= (*loc)[i] != NULL;
  }
  x->nframes = n;
  if (!any) {
    free(*loc);
    *loc = NULL;
  }
  return 0;
}

/* A saved process into p, its host the process's own, else the
 * document's, else the file's name. */
static int load_proc(const json_t *pr, const char *host,
                     struct pst__dump_proc *p) {
  const json_t *threads = json_object_get(pr, "threads");
  size_t n = json_is_array(threads) ? json_array_size(threads) : 0, i;
  struct pst_thread *th;
  json_t *t;

  memset(p, 0, sizeof(*p));
  p->pid = int_of(pr, "pid", 0);
  p->rank = int_of(pr, "rank", -1);
  p->local_rank = int_of(pr, "local_rank", -1);
  p->world_size = int_of(pr, "world_size", -1);
  pst__utf8_copy(p->host, sizeof(p->host),
                 *str_of(pr, "host") ? str_of(pr, "host") : host);
  pst__utf8_copy(p->role, sizeof(p->role), str_of(pr, "role"));
  pst__utf8_copy(p->container, sizeof(p->container), str_of(pr, "container"));
  pst__utf8_copy(p->cmd, sizeof(p->cmd), str_of(pr, "cmdline"));
  pst__utf8_copy(p->version, sizeof(p->version), str_of(pr, "version"));
  p->from_merge = 1;
  if (n > THREADS_MAX)
    n = THREADS_MAX;
  th = calloc(n + 1, sizeof(*th));
  p->loc = calloc(n + 1, sizeof(*p->loc));
  p->th = th;
  if (!th || !p->loc)
    return -ENOMEM;
  json_array_foreach(threads, i, t) {
    if (i == n)
      break;
    if (load_thread(t, &th[i], &p->loc[i]))
      return -ENOMEM;
    p->n++;
  }
  p->read = 1;
  return 0;
}

static void free_proc(struct pst__dump_proc *p) {
  struct pst_thread *th = (struct pst_thread *)p->th;

  for (int i = 0; th && i < p->n; i++) {
    for (size_t f = 0; p->loc && p->loc[i] && f < th[i].nframes; f++)
      free(p->loc[i][f]);
    free(p->loc ? p->loc[i] : NULL);
    free(th[i].frames);
  }
  /* a thread that failed to load half-way */
  if (th && p->loc && p->loc[p->n])
    free(p->loc[p->n]);
  if (th)
    free(th[p->n].frames);
  free(p->loc);
  free(th);
}

/* The base name of path, for a document that names no host. */
static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

int pst__dump_merge(const struct pst__cli_opts *o) {
  struct pst__dump_proc *ps = calloc(PROCS_MAX, sizeof(*ps));
  json_t **docs = calloc((size_t)o->nmerge + 1, sizeof(*docs));
  int np = 0, rc = PST_EXIT_OK, locals = 0;
  char e[PST_ESC_SIZE];

  if (!ps || !docs) {
    free(ps);
    free(docs);
    fprintf(stderr, "pystitch: error: out of memory\n");
    return PST_EXIT_ERROR;
  }
  for (int f = 0; f < o->nmerge; f++) {
    const char *path = o->merge_files[f];
    json_error_t err;
    const json_t *procs;
    size_t i;
    json_t *pr;
    docs[f] = json_load_file(path, 0, &err);
    procs = json_object_get(docs[f], "processes");
    if (!docs[f] || (!json_is_array(procs) &&
                     !json_is_array(json_object_get(docs[f], "threads")))) {
      char why[PST_ESC_SIZE];
      if (docs[f])
        snprintf(why, sizeof(why), "no threads or processes in it");
      else
        snprintf(why, sizeof(why), "line %d: %s", err.line,
                 pst__esc(e, sizeof(e), err.text));
      fprintf(stderr,
              "pystitch: error: %s: %s (want what 'pystitch dump --json' "
              "writes); the other files are merged\n",
              pst__esc(e, sizeof(e), path), why);
      rc = PST_EXIT_ERROR;
      continue;
    }
    if (!json_is_array(procs)) { /* one process: the document itself */
      if (np < PROCS_MAX && load_proc(docs[f], base_name(path), &ps[np++]))
        goto nomem;
      continue;
    }
    json_array_foreach(procs, i, pr) {
      const char *host = str_of(docs[f], "host");
      if (np < PROCS_MAX &&
          load_proc(pr, *host ? host : base_name(path), &ps[np++]))
        goto nomem;
    }
  }
  for (int i = 0; i < np; i++)
    for (int k = 0; ps[i].loc && k < ps[i].n; k++)
      locals |= ps[i].loc[k] != NULL;
  if (np && pst__dump_print_many(ps, np, -1, locals))
    goto nomem;
  if (!np) {
    fprintf(stderr, "pystitch: error: no process in the files given\n");
    rc = PST_EXIT_ERROR;
  }
  goto out;
nomem:
  fprintf(stderr, "pystitch: error: out of memory\n");
  rc = PST_EXIT_ERROR;
out:
  for (int i = 0; i < np; i++)
    free_proc(&ps[i]);
  for (int f = 0; f < o->nmerge; f++)
    json_decref(docs[f]);
  free(docs);
  free(ps);
  return rc;
}
