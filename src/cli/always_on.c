/* always_on.c: `record --push` and `record --rotate`: options, secrets,
 * the window consumers and the pusher, and their summary. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/always_on.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "pystitch.h"
#include "util/log.h"
#include "util/secret.h"

#define INTERVAL_MAX 3600.0
#define QUEUE_MAX 100000
#define TIMEOUT_MAX 600.0
#define DRAIN_MAX_S 30.0
#define SECRET_MAX 4096

int pst__always_option(struct pst__always *a, enum pst__cli_opt id,
                       const char *arg) {
  double v;
  char *eq;

  switch (id) {
  case PST_CLI_O_PUSH:
    a->url = arg;
    return 0;
  case PST_CLI_O_PUSH_INTERVAL:
    if (pst__cli_parse_double(arg, 0, INTERVAL_MAX, &a->interval_s) ||
        a->interval_s < 0.1)
      return pst__cli_usage(
          "record", "--push-interval: want seconds in [0.1, 3600], got '%s'",
          arg);
    return 0;
  case PST_CLI_O_APP:
    if (pst__push_check_name(arg))
      return pst__cli_usage(
          "record", "--app: want letters, digits, '_', '.', '-', got '%s'",
          arg);
    a->po.app = arg;
    return 0;
  case PST_CLI_O_LABEL:
    eq = strchr(arg, '=');
    if (!eq || a->po.nlabels == PST_PUSH_LABELS_MAX)
      return pst__cli_usage("record", "%s '%s'",
                            eq ? "--label: at most 16 labels, got one more"
                               : "--label: want KEY=VALUE, got",
                            arg);
    *eq = '\0';
    if (pst__push_check_key(arg) || pst__push_check_value(eq + 1)) {
      *eq = '=';
      return pst__cli_usage(
          "record",
          "--label: want KEY=VALUE, KEY of letters, digits, '_' "
          "and '.', VALUE without ',{}=', got '%s'",
          arg);
    }
    a->po.label_keys[a->po.nlabels] = arg;
    a->po.label_values[a->po.nlabels++] = eq + 1;
    return 0;
  case PST_CLI_O_TENANT:
    if (pst__push_check_value(arg) || strchr(arg, ' '))
      return pst__cli_usage("record", "--tenant: want a tenant id, got '%s'",
                            arg);
    a->po.tenant = arg;
    return 0;
  case PST_CLI_O_PUSH_QUEUE:
    if (pst__cli_parse_double(arg, 0, QUEUE_MAX, &v) || v != (int)v)
      return pst__cli_usage(
          "record",
          "--push-queue: want a number of profiles in [1, 100000], "
          "got '%s'",
          arg);
    a->queue = (int)v;
    return 0;
  case PST_CLI_O_PUSH_TIMEOUT:
    if (pst__cli_parse_double(arg, 0, TIMEOUT_MAX, &a->timeout_s))
      return pst__cli_usage(
          "record", "--push-timeout: want seconds in (0, 600], got '%s'", arg);
    return 0;
  case PST_CLI_O_TOKEN_FILE:
    a->token_file = arg;
    return 0;
  case PST_CLI_O_AUTH_FILE:
    a->auth_file = arg;
    return 0;
  case PST_CLI_O_PUSH_CA:
    if (access(arg, R_OK))
      return pst__cli_usage("record", "--push-ca: cannot read '%s': %s", arg,
                            strerror(errno));
    a->po.ca_file = arg;
    return 0;
  case PST_CLI_O_ROTATE:
    if (pst__cli_parse_double(arg, 0, 30 * 86400.0, &a->rotate_s) ||
        a->rotate_s < 0.1)
      return pst__cli_usage(
          "record", "--rotate: want seconds in [0.1, 30 days], got '%s'", arg);
    return 0;
  default:
    return 0;
  }
}

int pst__always_whole_file(const struct pst__always *a, const char *output) {
  if (a->rotate_s > 0)
    return 0;
  return !a->url || output;
}

/* A secret from a file (its first line, without the newline), or NULL
 * with the message printed. */
static char *read_secret(const char *path, const char *opt) {
  char buf[SECRET_MAX];
  ssize_t n;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  char *s;

  if (fd < 0) {
    fprintf(stderr, "pystitch: error: %s: cannot read %s: %s\n", opt, path,
            strerror(errno));
    return NULL;
  }
  n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n < 0) {
    fprintf(stderr, "pystitch: error: %s: cannot read %s: %s\n", opt, path,
            strerror(errno));
    return NULL;
  }
  buf[n] = '\0';
  buf[strcspn(buf, "\r\n")] = '\0';
  if (!buf[0]) {
    fprintf(stderr, "pystitch: error: %s: %s is empty\n", opt, path);
    return NULL;
  }
  s = pst__secret_dup(buf);
  explicit_bzero(buf, sizeof(buf));
  if (!s)
    fprintf(stderr, "pystitch: error: out of memory\n");
  return s;
}

int pst__always_take_env(struct pst__always *a) {
  int keep = a && a->url, e1, e2;

  e1 = pst__secret_take_env("PYSTITCH_PUSH_TOKEN",
                            keep && !a->token_file ? &a->env_token : NULL);
  e2 = pst__secret_take_env("PYSTITCH_PUSH_BASIC_AUTH",
                            keep && !a->auth_file ? &a->env_basic : NULL);
  if (e1 || e2) {
    fprintf(stderr, "pystitch: error: out of memory\n");
    return PST_EXIT_ERROR;
  }
  return 0;
}

/* The secrets: files named on the command line first, else what
 * pst__always_take_env() took from the environment (PYSTITCH_PUSH_TOKEN,
 * PYSTITCH_PUSH_BASIC_AUTH). */
static int secrets(struct pst__always *a) {
  if (a->token_file) {
    if (!(a->secret_token = read_secret(a->token_file, "--push-token-file")))
      return PST_EXIT_USAGE;
  } else {
    a->secret_token = a->env_token;
    a->env_token = NULL;
  }
  if (a->auth_file) {
    if (!(a->secret_basic = read_secret(a->auth_file, "--push-auth-file")))
      return PST_EXIT_USAGE;
  } else {
    a->secret_basic = a->env_basic;
    a->env_basic = NULL;
  }
  if (a->secret_basic && !strchr(a->secret_basic, ':')) {
    fprintf(stderr, "pystitch: error: basic auth wants USER:PASSWORD "
                    "(--push-auth-file or PYSTITCH_PUSH_BASIC_AUTH)\n");
    return PST_EXIT_USAGE;
  }
  a->po.bearer = a->secret_token;
  a->po.basic = a->secret_basic;
  return 0;
}

/* ---- --rotate ---- */

/* The window's file name: the pattern with its strftime fields at the
 * window's start; a name the last window had gets "-N" before its
 * extension. */
static int rotate_path(struct pst__always *a, uint64_t from_ns, char *out,
                       size_t len) {
  time_t t = (time_t)(from_ns / 1000000000ULL);
  struct tm tm;
  const char *dot, *slash;

  localtime_r(&t, &tm);
  if (!strftime(out, len, a->pattern, &tm))
    return -ENAMETOOLONG;
  if (!strcmp(out, a->last_path)) {
    char base[4096];
    snprintf(base, sizeof(base), "%s", a->last_path);
    slash = strrchr(base, '/');
    dot = strrchr(base, '.');
    if (!dot || (slash && dot < slash))
      dot = base + strlen(base);
    snprintf(out, len, "%.*s-%d%s", (int)(dot - base), base, ++a->same, dot);
    return 0;
  }
  snprintf(a->last_path, sizeof(a->last_path), "%s", out);
  a->same = 0;
  return 0;
}

static int rotate_emit(void *arg, const struct pst__profile *prof,
                       const struct pst__window_span *span) {
  struct pst__always *a = arg;
  char path[4096];
  int err = rotate_path(a, span->from_unix_ns, path, sizeof(path));

  if (!err)
    err = pst__writer_save(a->w, prof, path);
  if (err) {
    a->file_errors++;
    pst__warn("rotate: cannot write %s: %s", path, pst__cli_output_why(err));
    return err;
  }
  a->files++;
  pst__info("rotate: wrote %s (%llu samples)", path,
            (unsigned long long)span->samples);
  return 0;
}

/* ---- start, finish ---- */

int pst__always_start(struct pst__always *a, const struct pst__sampler_opts *o,
                      const struct pst__record_view *view, const char *output,
                      const struct pst__writer_ops *w, struct pst__consumer *c,
                      int *n) {
  uint64_t period = (uint64_t)(1e9 / o->rate_hz);
  char why[160];
  int rc, err;

  if (!a->url && (a->po.app || a->po.nlabels || a->po.tenant || a->queue ||
                  a->interval_s > 0 || a->timeout_s > 0 || a->token_file ||
                  a->auth_file || a->po.ca_file)) {
    fprintf(stderr, "pystitch: error: --app, --label, --tenant and the "
                    "--push-* options go with --push URL\n");
    return PST_EXIT_USAGE;
  }
  if (a->rotate_s > 0) {
    if (!output || !strchr(output, '%')) {
      fprintf(stderr,
              "pystitch: error: --rotate writes a file per window: give -o "
              "a name pattern with strftime fields, such as "
              "-o 'dir/%%Y%%m%%dT%%H%%M%%S%s'\n",
              w->ext);
      return PST_EXIT_USAGE;
    }
    a->pattern = output;
    a->w = w;
    struct pst__window_opts wo = {.window_ns = (uint64_t)(a->rotate_s * 1e9),
                                  .period_ns = period,
                                  .cpu = o->policy.mode == PST_MODE_CPU,
                                  .per_process = 0,
                                  .view = *view,
                                  .emit = rotate_emit,
                                  .arg = a};
    if (pst__window_consumer_new(&wo, &a->rot_wc))
      return PST_EXIT_ERROR;
    c[(*n)++] = (struct pst__consumer){&pst__window_consumer_ops, a->rot_wc};
  }
  if (!a->url)
    return 0;
  if ((err = pst__push_check_url(a->url, why, sizeof(why)))) {
    fprintf(stderr, "pystitch: error: --push %s: %s\n", a->url, why);
    return err == -ENOPKG ? PST_EXIT_ERROR : PST_EXIT_USAGE;
  }
  if ((rc = secrets(a)))
    return rc;
  a->po.url = a->url;
  a->po.rate_hz = o->rate_hz;
  a->po.queue_max = a->queue ? a->queue : 60;
  a->po.timeout_s = a->timeout_s > 0 ? a->timeout_s : 10;
  err = pst__push_new(&a->po, &a->push);
  if (err) {
    fprintf(stderr, "pystitch: error: --push: cannot start: %s\n",
            pst_strerror(err));
    return PST_EXIT_ERROR;
  }
  /* Labels say which process and thread: no synthetic roots. */
  struct pst__window_opts wo = {
      .window_ns = (uint64_t)((a->interval_s > 0 ? a->interval_s : 10) * 1e9),
      .period_ns = period,
      .cpu = o->policy.mode == PST_MODE_CPU,
      .per_process = 1,
      .view = {.by_function = view->by_function},
      .emit = pst__push_profile,
      .arg = a->push};
  if (pst__window_consumer_new(&wo, &a->push_wc))
    return PST_EXIT_ERROR;
  c[(*n)++] = (struct pst__consumer){&pst__window_consumer_ops, a->push_wc};
  pst__info("push: every %.1f s to %s", wo.window_ns / 1e9,
            pst__push_where(a->push));
  return 0;
}

void pst__always_finish(struct pst__always *a, int report) {
  struct pst__window_stats ws;

  if (a->rot_wc) {
    pst__window_consumer_stats(a->rot_wc, &ws);
    if (report)
      fprintf(stderr,
              "pystitch: rotate: wrote %llu files (%llu samples), one per "
              "%.1f s window%s%s\n",
              (unsigned long long)a->files, (unsigned long long)ws.samples,
              a->rotate_s, a->file_errors ? "; could not write " : "",
              a->file_errors ? "some (see above)" : "");
    pst__window_consumer_free(a->rot_wc);
    a->rot_wc = NULL;
  }
  if (a->push) {
    struct pst__push_stats ps;
    double drain = 2 * a->po.timeout_s;
    char where[512];
    snprintf(where, sizeof(where), "%s", pst__push_where(a->push));
    pst__window_consumer_stats(a->push_wc, &ws);
    pst__push_close(a->push, drain > DRAIN_MAX_S ? DRAIN_MAX_S : drain, &ps);
    a->push = NULL;
    if (report)
      fprintf(stderr,
              "pystitch: push: %llu of %llu profiles sent to %s (%llu "
              "samples); %llu failed attempts, %llu dropped (queue full), "
              "%llu refused, %llu unsent at exit\n",
              (unsigned long long)ps.sent, (unsigned long long)ps.made, where,
              (unsigned long long)ps.samples, (unsigned long long)ps.failures,
              (unsigned long long)ps.dropped, (unsigned long long)ps.rejected,
              (unsigned long long)ps.unsent);
    if (report && ps.last_error[0] && (ps.unsent || ps.dropped || ps.rejected))
      fprintf(stderr, "pystitch: push: last error: %s\n", ps.last_error);
    if (report && (ps.make_errors || ws.emit_errors))
      fprintf(stderr, "pystitch: push: %llu profiles could not be made\n",
              (unsigned long long)ps.make_errors);
  }
  pst__window_consumer_free(a->push_wc);
  a->push_wc = NULL;
  pst__secret_free(a->secret_token);
  pst__secret_free(a->secret_basic);
  pst__secret_free(a->env_token);
  pst__secret_free(a->env_basic);
  a->secret_token = a->secret_basic = a->env_token = a->env_basic = NULL;
}
