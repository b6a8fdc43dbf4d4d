/* push.c: the Pyroscope ingest client: profiles to requests, a bounded
 * queue, and the sender thread (libcurl) with its retries. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "output/writer.h"
#include "push/curl_api.h"
#include "push/push.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/secret.h"

#define BACKOFF_MIN_S 0.5
#define BACKOFF_MAX_S 30.0
#define VALUE_MAX 120 /* bytes of a label value kept */
#define PROBE_DELAY_S 0.5

/* libcurl's table, set by the first pst__push_unavailable() (the CLI's
 * check of --push, before any thread of ours is started). */
static const struct pst__curl *cu;

/* One profile to send: the query string and the gzipped pprof. */
struct item {
  char *query;
  unsigned char *body;
  size_t len;
  uint64_t samples;
};

struct pst__push {
  struct pst__push_opts o;
  char *url;   /* the ingest endpoint, user info included (for curl) */
  char *where; /* the same without user info (for logs) */
  char *keys[PST_PUSH_LABELS_MAX], *values[PST_PUSH_LABELS_MAX];
  char *app, *tenant_hdr, *bearer_hdr, *basic;
  char *ca; /* CURLOPT_CAINFO, or NULL */
  char host[256];
  pthread_t thread;
  int started; /* the sender thread runs (from the first profile on, so
                  that it is made after the sandbox: sandbox.h) */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct item **q; /* oldest first */
  size_t nq;
  int stopping;
  uint64_t deadline_ns; /* pst__now_ns(): when stopping, give up then */
  struct pst__push_stats st;
  int failing; /* in a run of failures (logged once) */
};

/* pst__now_ns() seconds from now (the monotonic clock, which the condition
 * variable waits on too). */
static uint64_t after_ns(double seconds) {
  return pst__now_ns() + (seconds > 0 ? (uint64_t)(seconds * 1e9) : 0);
}

/* ---- names and labels ---- */

static int name_char(int ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
         (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-';
}

int pst__push_check_name(const char *s) {
  if (!s || !*s)
    return -EINVAL;
  for (; *s; s++)
    if (!name_char((unsigned char)*s))
      return -EINVAL;
  return 0;
}

int pst__push_check_key(const char *s) {
  if (!s || !*s || (*s >= '0' && *s <= '9'))
    return -EINVAL;
  for (; *s; s++)
    if (!name_char((unsigned char)*s) || *s == '-')
      return -EINVAL;
  return 0;
}

static int value_bad(int ch) {
  return ch < 0x20 || ch == 0x7f || ch == ',' || ch == '{' || ch == '}' ||
         ch == '=';
}

int pst__push_check_value(const char *s) {
  if (!s || !*s)
    return -EINVAL;
  for (; *s; s++)
    if (value_bad((unsigned char)*s))
      return -EINVAL;
  return 0;
}

/* s as a label value: the characters the name syntax uses replaced by
 * '_', spaces at the ends trimmed, cut at VALUE_MAX bytes. */
static void clean_value(const char *s, char *out, size_t len) {
  size_t n = 0;

  while (*s == ' ')
    s++;
  for (; *s && n + 1 < len && n < VALUE_MAX; s++)
    out[n++] = value_bad((unsigned char)*s) ? '_' : *s;
  while (n && out[n - 1] == ' ')
    n--;
  out[n] = '\0';
}

/* The part of a command line that names the program: the script of
 * "python3 -u x/train.py ...", the module of "python3 -m mod", else the
 * executable's base name (also for -c). Interpreter options before the
 * script are skipped (-W and -X take a word). */
static void program_of(const char *cmdline, char *out, size_t len) {
  char words[8][256];
  const char *p = cmdline, *base;
  int n = 0;

  while (n < 8 && *p) {
    size_t k = 0;
    while (*p == ' ')
      p++;
    while (*p && *p != ' ' && k + 1 < sizeof(words[n]))
      words[n][k++] = *p++;
    words[n][k] = '\0';
    if (k)
      n++;
    while (*p && *p != ' ')
      p++;
  }
  base = n ? words[0] : "";
  for (int i = 1; i < n; i++) {
    if (!strcmp(words[i], "-m")) {
      if (i + 1 < n)
        base = words[i + 1];
      break;
    }
    if (!strcmp(words[i], "-c"))
      break;
    if (!strcmp(words[i], "-W") || !strcmp(words[i], "-X")) {
      i++;
      continue;
    }
    if (words[i][0] != '-') {
      base = words[i];
      break;
    }
  }
  if (strrchr(base, '/'))
    base = strrchr(base, '/') + 1;
  snprintf(out, len, "%s", base);
}

/* APP{k=v,...} for process p. */
static int series_name(struct pst__push *ps, const struct pst__sample_proc *p,
                       char *out, size_t len) {
  char app[128], v[VALUE_MAX + 8], prog[256];
  size_t off, n = 0;
  struct {
    const char *k;
    char v[VALUE_MAX + 8];
  } l[10 + PST_PUSH_LABELS_MAX];

  /* A worker found under a recorded process is part of its job: named
   * after the job's program (a spawned worker's own command line is
   * multiprocessing's -c line). */
  program_of(p->origin && p->origin[0] ? p->origin
             : p->cmdline              ? p->cmdline
                                       : "",
             prog, sizeof(prog));
  if (ps->app) {
    snprintf(app, sizeof(app), "%s", ps->app);
  } else {
    size_t k = 0;
    for (const char *s = prog; *s && k + 1 < sizeof(app); s++)
      app[k++] = name_char((unsigned char)*s) ? *s : '_';
    app[k] = '\0';
    if (!k)
      snprintf(app, sizeof(app), "python");
  }
#define LABEL(key, ...)                                                        \
  do {                                                                         \
    l[n].k = key;                                                              \
    snprintf(v, sizeof(v), __VA_ARGS__);                                       \
    clean_value(v, l[n].v, sizeof(l[n].v));                                    \
    if (l[n].v[0])                                                             \
      n++;                                                                     \
  } while (0)
  LABEL("hostname", "%.120s", ps->host);
  LABEL("pid", "%d", (int)p->pid);
  LABEL("command", "%.120s", prog);
  if (p->rank >= 0)
    LABEL("rank", "%d", p->rank);
  if (p->local_rank >= 0)
    LABEL("local_rank", "%d", p->local_rank);
  if (p->world_size >= 0)
    LABEL("world_size", "%d", p->world_size);
  if (p->role && p->role[0])
    LABEL("role", "%.100s", p->role);
  if (p->container && p->container[0])
    LABEL("container", "%.100s", p->container);
  if (p->ppid > 0)
    LABEL("ppid", "%d", (int)p->ppid);
#undef LABEL
  for (int i = 0; i < ps->o.nlabels; i++) {
    size_t k;
    for (k = 0; k < n && strcmp(l[k].k, ps->keys[i]); k++)
      ;
    l[k].k = ps->keys[i];
    snprintf(l[k].v, sizeof(l[k].v), "%s", ps->values[i]);
    if (k == n)
      n++;
  }
  off = (size_t)snprintf(out, len, "%s{", app);
  for (size_t i = 0; i < n && off < len; i++)
    off += (size_t)snprintf(out + off, len - off, "%s%s=%s", i ? "," : "",
                            l[i].k, l[i].v);
  if (off + 2 > len)
    return -EINVAL;
  snprintf(out + off, len - off, "}");
  return 0;
}

/* ---- the queue ---- */

static void item_free(struct item *it) {
  if (!it)
    return;
  free(it->query);
  free(it->body);
  free(it);
}

/* Adds it at the end (or, back from a failed send, at the front); drops
 * the oldest beyond the bound. Called locked. */
static void enqueue(struct pst__push *ps, struct item *it, int front) {
  if (front) {
    memmove(ps->q + 1, ps->q, ps->nq * sizeof(*ps->q));
    ps->q[0] = it;
  } else {
    ps->q[ps->nq] = it;
  }
  ps->nq++;
  while (ps->nq > (size_t)ps->o.queue_max) {
    item_free(ps->q[0]);
    memmove(ps->q, ps->q + 1, --ps->nq * sizeof(*ps->q));
    ps->st.dropped++;
  }
}

static void *sender(void *arg);

int pst__push_profile(void *push, const struct pst__profile *prof,
                      const struct pst__window_span *span) {
  struct pst__push *ps = push;
  char name[1024], *esc = NULL, *query = NULL;
  struct item *it = NULL;
  char *buf = NULL;
  size_t len = 0;
  uint64_t from, until;
  FILE *f;
  int err = -ENOMEM;

  if (!span->proc)
    return -EINVAL;
  if (series_name(ps, span->proc, name, sizeof(name)))
    goto fail;
  f = open_memstream(&buf, &len);
  if (!f)
    goto fail;
  err = pst__writer_pprof.write(prof, f);
  if (fclose(f) && !err)
    err = -EIO;
  if (err)
    goto fail;
  err = -ENOMEM;
  /* Whole seconds, as the API takes them: both rounded down, so that the
   * windows of a process tile the time line (the profile itself has the
   * exact start and duration). */
  from = span->from_unix_ns / 1000000000ULL;
  until = span->until_unix_ns / 1000000000ULL;
  if (until <= from)
    until = from + 1;
  esc = cu->easy_escape(NULL, name, 0);
  it = calloc(1, sizeof(*it));
  if (!esc || !it ||
      asprintf(&query,
               "name=%s&from=%llu&until=%llu&format=pprof&sampleRate=%d"
               "&spyName=pystitch",
               esc, (unsigned long long)from, (unsigned long long)until,
               (int)(ps->o.rate_hz + 0.5)) < 0) {
    query = NULL;
    goto fail;
  }
  it->query = query;
  it->body = (unsigned char *)buf;
  it->len = len;
  it->samples = span->samples;
  cu->free(esc);
  esc = NULL;
  if (!ps->started) {
    if (pthread_create(&ps->thread, NULL, sender, ps)) {
      err = -EAGAIN;
      goto fail;
    }
    ps->started = 1;
  }
  pthread_mutex_lock(&ps->mu);
  enqueue(ps, it, 0);
  ps->st.made++;
  pthread_cond_signal(&ps->cv);
  pthread_mutex_unlock(&ps->mu);
  return 0;

fail:
  ps->st.make_errors++;
  cu->free(esc);
  if (it)
    free(it->query);
  free(it);
  free(buf);
  return err;
}

/* ---- the sender ---- */

/* Aborts a transfer that runs past the drain deadline. */
static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c,
                       curl_off_t d) {
  struct pst__push *ps = arg;
  int stop;

  (void)a, (void)b, (void)c, (void)d;
  pthread_mutex_lock(&ps->mu);
  stop = ps->stopping && pst__now_ns() > ps->deadline_ns;
  pthread_mutex_unlock(&ps->mu);
  return stop;
}

/* Keeps the first bytes of the server's answer, for the log. */
struct answer {
  char text[120];
  size_t n;
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg) {
  struct answer *a = arg;
  size_t n = size * nmemb;

  for (size_t i = 0; i < n && a->n + 1 < sizeof(a->text); i++)
    a->text[a->n++] = (data[i] == '\n' || data[i] == '\r') ? ' ' : data[i];
  a->text[a->n] = '\0';
  return n;
}

/* One request. 0: accepted; 1: refused for good (4xx); -1: retry. why
 * gets the reason of a failure. */
static int send_one(struct pst__push *ps, CURL *h, const struct item *it,
                    char *why, size_t len) {
  struct curl_slist *hdrs = NULL;
  struct answer ans = {.n = 0};
  curl_mime *mime;
  curl_mimepart *part;
  char *url = NULL;
  long status = 0;
  CURLcode rc;
  int ret = -1;

  if (asprintf(&url, "%s?%s", ps->url, it->query) < 0) {
    snprintf(why, len, "out of memory");
    return -1;
  }
  mime = cu->mime_init(h);
  part = cu->mime_addpart(mime);
  cu->mime_name(part, "profile");
  cu->mime_filename(part, "profile.pprof");
  cu->mime_type(part, "application/octet-stream");
  cu->mime_data(part, (const char *)it->body, it->len);
  if (ps->tenant_hdr)
    hdrs = cu->slist_append(hdrs, ps->tenant_hdr);
  if (ps->bearer_hdr)
    hdrs = cu->slist_append(hdrs, ps->bearer_hdr);
  cu->easy_reset(h);
  cu->easy_setopt(h, CURLOPT_URL, url);
  cu->easy_setopt(h, CURLOPT_MIMEPOST, mime);
  cu->easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  cu->easy_setopt(h, CURLOPT_USERAGENT, "pystitch/" PACKAGE_VERSION);
  cu->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  cu->easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(ps->o.timeout_s * 1000));
  cu->easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                  (long)(ps->o.timeout_s < 5 ? ps->o.timeout_s * 1000 : 5000));
  cu->easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  cu->easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  cu->easy_setopt(h, CURLOPT_XFERINFODATA, ps);
  cu->easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  cu->easy_setopt(h, CURLOPT_WRITEDATA, &ans);
  cu->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  if (ps->basic) {
    cu->easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    cu->easy_setopt(h, CURLOPT_USERPWD, ps->basic);
  }
  if (ps->ca)
    cu->easy_setopt(h, CURLOPT_CAINFO, ps->ca);
  rc = cu->easy_perform(h);
  if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE) {
    snprintf(why, len,
             "%s (CA certificates from %s; --push-ca FILE names "
             "others)",
             cu->easy_strerror(rc), ps->ca ? ps->ca : "libcurl's default");
  } else if (rc != CURLE_OK) {
    snprintf(why, len, "%s", cu->easy_strerror(rc));
  } else {
    cu->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300)
      ret = 0;
    else
      snprintf(why, len, "HTTP %ld%s%s", status, ans.n ? ": " : "", ans.text);
    if (status >= 400 && status < 500 && status != 408 && status != 429)
      ret = 1;
  }
  cu->easy_setopt(h, CURLOPT_MIMEPOST, NULL);
  cu->easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
  cu->mime_free(mime);
  cu->slist_free_all(hdrs);
  free(url);
  return ret;
}

/* Waits (locked) until woken, the time given has passed, or the drain
 * deadline. */
static void wait_for(struct pst__push *ps, double seconds) {
  struct timespec ts;
  uint64_t until = after_ns(seconds);

  if (ps->stopping && until > ps->deadline_ns)
    until = ps->deadline_ns;
  ts.tv_sec = (time_t)(until / 1000000000ULL);
  ts.tv_nsec = (long)(until % 1000000000ULL);
  pthread_cond_timedwait(&ps->cv, &ps->mu, &ts);
}

/* At start: can the server be reached at all? A warning now, not at the
 * first interval's end; recording goes on either way. */
static void probe(struct pst__push *ps, CURL *h) {
  double t = ps->o.timeout_s < 3 ? ps->o.timeout_s : 3;
  CURLcode rc;

  cu->easy_setopt(h, CURLOPT_URL, ps->url);
  cu->easy_setopt(h, CURLOPT_CONNECT_ONLY, 1L);
  cu->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  cu->easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(t * 1000));
  cu->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  rc = cu->easy_perform(h);
  if (rc != CURLE_OK) {
    pst__warn("push: %s cannot be reached now (%s); recording goes on, and "
              "up to %d profiles are kept until it answers",
              ps->where, cu->easy_strerror(rc), ps->o.queue_max);
    pthread_mutex_lock(&ps->mu);
    ps->failing = 1;
    pthread_mutex_unlock(&ps->mu);
  }
  cu->easy_reset(h);
}

static void *sender(void *arg) {
  struct pst__push *ps = arg;
  double backoff = BACKOFF_MIN_S;
  CURL *h = cu->easy_init();
  char why[160];

  int quit;

  /* The probe a moment after start: a run that fails to attach ends
   * first, with its one error line. */
  pthread_mutex_lock(&ps->mu);
  if (!ps->stopping && !ps->nq)
    wait_for(ps, PROBE_DELAY_S);
  quit = ps->stopping;
  pthread_mutex_unlock(&ps->mu);
  if (h && !quit)
    probe(ps, h);
  pthread_mutex_lock(&ps->mu);
  for (;;) {
    struct item *it;
    int r;
    while (!ps->nq && !ps->stopping)
      pthread_cond_wait(&ps->cv, &ps->mu);
    if (!ps->nq || (ps->stopping && pst__now_ns() >= ps->deadline_ns))
      break;
    it = ps->q[0];
    memmove(ps->q, ps->q + 1, --ps->nq * sizeof(*ps->q));
    pthread_mutex_unlock(&ps->mu);
    r = h ? send_one(ps, h, it, why, sizeof(why)) : -1;
    if (!h)
      snprintf(why, sizeof(why), "libcurl could not start");
    pthread_mutex_lock(&ps->mu);
    if (r == 0) {
      ps->st.sent++;
      ps->st.samples += it->samples;
      item_free(it);
      if (ps->failing)
        pst__info("push: %s takes profiles again", ps->where);
      ps->failing = 0;
      backoff = BACKOFF_MIN_S;
      continue;
    }
    snprintf(ps->st.last_error, sizeof(ps->st.last_error), "%s", why);
    if (r == 1) {
      ps->st.rejected++;
      item_free(it);
      pst__warn("push: %s refused a profile: %s", ps->where, why);
      continue;
    }
    ps->st.failures++;
    if (!ps->failing)
      pst__warn("push: %s: %s; retrying (profiles are kept, up to %d)",
                ps->where, why, ps->o.queue_max);
    else
      pst__debug("push: %s: %s; retrying in %.1f s", ps->where, why, backoff);
    ps->failing = 1;
    enqueue(ps, it, 1);
    wait_for(ps, backoff);
    backoff = backoff * 2 > BACKOFF_MAX_S ? BACKOFF_MAX_S : backoff * 2;
  }
  pthread_mutex_unlock(&ps->mu);
  cu->easy_cleanup(h);
  return NULL;
}

/* ---- setup ---- */

const char *pst__push_unavailable(void) {
  if (!cu)
    cu = pst__curl();
  return cu ? NULL : pst__curl_why();
}

int pst__push_check_url(const char *url, char *why, size_t len) {
  const char *no = pst__push_unavailable();
  CURLU *u;
  char *scheme = NULL, *host = NULL;
  int err = -EINVAL;

  if (no) {
    snprintf(why, len, "%s", no);
    return -ENOPKG;
  }
  u = cu->url();
  if (!u) {
    snprintf(why, len, "out of memory");
    return -ENOMEM;
  }
  if (cu->url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK)
    snprintf(why, len, "not a URL (want http://HOST[:PORT])");
  else if (cu->url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
           (strcmp(scheme, "http") && strcmp(scheme, "https")))
    snprintf(why, len, "the scheme must be http or https");
  else if (cu->url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host)
    snprintf(why, len, "no host in the URL");
  else if (strchr(url, '?') || strchr(url, '#'))
    snprintf(why, len, "no query or fragment: pystitch adds /ingest?...");
  else
    err = 0;
  cu->free(scheme);
  cu->free(host);
  cu->url_cleanup(u);
  return err;
}

/* The ingest endpoint of base (its path kept as a prefix), with and
 * without user info. */
static int endpoint(struct pst__push *ps, const char *base) {
  CURLU *u = cu->url();
  char *path = NULL, *full = NULL, *bare = NULL, *np = NULL;
  int err = -ENOMEM;

  if (!u)
    return -ENOMEM;
  if (cu->url_set(u, CURLUPART_URL, base, 0) != CURLUE_OK ||
      cu->url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK) {
    err = -EINVAL;
    goto out;
  }
  if (asprintf(&np, "%s%singest", path,
               path[0] && path[strlen(path) - 1] == '/' ? "" : "/") < 0) {
    np = NULL;
    goto out;
  }
  if (cu->url_set(u, CURLUPART_PATH, np, 0) != CURLUE_OK ||
      cu->url_get(u, CURLUPART_URL, &full, 0) != CURLUE_OK ||
      cu->url_set(u, CURLUPART_USER, NULL, 0) != CURLUE_OK ||
      cu->url_set(u, CURLUPART_PASSWORD, NULL, 0) != CURLUE_OK ||
      cu->url_get(u, CURLUPART_URL, &bare, 0) != CURLUE_OK)
    goto out;
  ps->url = strdup(full);
  ps->where = strdup(bare);
  err = ps->url && ps->where ? 0 : -ENOMEM;
out:
  free(np);
  cu->free(path);
  cu->free(full);
  cu->free(bare);
  cu->url_cleanup(u);
  return err;
}

/* The Authorization header of token, as a secret (util/secret.h). */
static char *bearer(const char *token) {
  static const char prefix[] = "Authorization: Bearer ";
  size_t len = sizeof(prefix) - 1 + strlen(token);
  char *h = pst__secret_alloc(len);

  if (h)
    snprintf(h, len + 1, "%s%s", prefix, token);
  return h;
}

static void push_free(struct pst__push *ps) {
  for (int i = 0; i < PST_PUSH_LABELS_MAX; i++) {
    free(ps->keys[i]);
    free(ps->values[i]);
  }
  for (size_t i = 0; i < ps->nq; i++)
    item_free(ps->q[i]);
  free(ps->q);
  free(ps->url);
  free(ps->where);
  free(ps->app);
  free(ps->tenant_hdr);
  free(ps->ca);
  pst__secret_free(ps->bearer_hdr); /* secrets: wiped */
  pst__secret_free(ps->basic);
  free(ps);
}

static const char *const ca_bundles[] = {
    "/etc/ssl/certs/ca-certificates.crt",                /* Debian, Alpine */
    "/etc/pki/tls/certs/ca-bundle.crt",                  /* Fedora, RHEL */
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", /* RHEL 7+ */
    "/etc/ssl/ca-bundle.pem",                            /* openSUSE */
    "/etc/ssl/cert.pem",                                 /* Alpine, BSDs */
};

const char *pst__push_ca_default(void) {
  for (size_t i = 0; i < sizeof(ca_bundles) / sizeof(*ca_bundles); i++)
    if (!access(ca_bundles[i], R_OK))
      return ca_bundles[i];
  return NULL;
}

int pst__push_new(const struct pst__push_opts *o, struct pst__push **out) {
  struct pst__push *ps;
  const char *ca_file = o->ca_file ? o->ca_file : pst__push_ca_default();
  char why[128];
  int err = -ENOMEM;

  if (pst__push_check_url(o->url, why, sizeof(why)) || o->queue_max < 1 ||
      o->nlabels > PST_PUSH_LABELS_MAX || o->timeout_s <= 0)
    return -EINVAL;
  if (cu->global_init(CURL_GLOBAL_DEFAULT))
    return -ENOMEM;
  ps = calloc(1, sizeof(*ps));
  if (!ps)
    return -ENOMEM;
  ps->o = *o;
  if (gethostname(ps->host, sizeof(ps->host) - 1))
    snprintf(ps->host, sizeof(ps->host), "unknown");
  for (int i = 0; i < o->nlabels; i++)
    if (!(ps->keys[i] = strdup(o->label_keys[i])) ||
        !(ps->values[i] = strdup(o->label_values[i])))
      goto fail;
  if ((o->app && !(ps->app = strdup(o->app))) ||
      (o->tenant &&
       asprintf(&ps->tenant_hdr, "X-Scope-OrgID: %s", o->tenant) < 0) ||
      (o->bearer && !(ps->bearer_hdr = bearer(o->bearer))) ||
      (o->basic && !(ps->basic = pst__secret_dup(o->basic))))
    goto fail;
  if (ca_file && !(ps->ca = strdup(ca_file)))
    goto fail;
  ps->o.app = ps->o.tenant = ps->o.bearer = ps->o.basic = ps->o.url = NULL;
  ps->o.ca_file = NULL;
  if ((err = endpoint(ps, o->url)))
    goto fail;
  ps->q = calloc((size_t)o->queue_max + 1, sizeof(*ps->q));
  if (!ps->q) {
    err = -ENOMEM;
    goto fail;
  }
  pthread_mutex_init(&ps->mu, NULL);
  {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ps->cv, &ca);
    pthread_condattr_destroy(&ca);
  }
  *out = ps;
  return 0;
fail:
  push_free(ps);
  return err;
}

const char *pst__push_where(const struct pst__push *p) { return p->where; }

void pst__push_close(struct pst__push *ps, double drain_s,
                     struct pst__push_stats *st) {
  pthread_mutex_lock(&ps->mu);
  ps->stopping = 1;
  ps->deadline_ns = after_ns(drain_s);
  pthread_cond_signal(&ps->cv);
  pthread_mutex_unlock(&ps->mu);
  if (ps->started)
    pthread_join(ps->thread, NULL);
  ps->st.unsent = ps->nq;
  *st = ps->st;
  pthread_cond_destroy(&ps->cv);
  pthread_mutex_destroy(&ps->mu);
  push_free(ps);
}
