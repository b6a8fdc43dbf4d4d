/* push.h: profiles sent to a profiling server as they are made: Grafana
 * Pyroscope's ingest API (`POST /ingest`, also taken by Pyroscope-
 * compatible servers), one pprof profile per process and window.
 *
 * A request: POST URL/ingest?name=APP{k=v,...}&from=S&until=S&format=pprof
 * &sampleRate=HZ&spyName=pystitch, body multipart/form-data with the
 * gzipped pprof in the field "profile" (what the server's pprof ingest
 * reads). Labels: hostname, pid, command, rank/local_rank/world_size and
 * role when the process has them, then the user's (which win).
 *
 * Delivery: a queue of made profiles, bounded (the oldest is dropped and
 * counted when full), drained by a thread of its own with libcurl, so
 * sampling never waits for the network. A failed request (no connection,
 * timeout, HTTP 408, 429, 5xx) is retried with a backoff doubling from
 * 0.5 s to 30 s; another 4xx is the server refusing that profile: dropped
 * and counted as rejected. At close, what is queued is sent for at most
 * the drain time given, the rest counted as unsent.
 *
 * Secrets: the bearer token and the basic-auth pair are given by the CLI
 * from the environment or a file, and never logged; URLs are logged
 * without their user-info part.
 *
 * Threading: pst__push_new(), pst__push_profile() and pst__push_close() on
 * one thread (the engine's); the sender thread is internal, started with
 * the first profile.
 * Ownership: pst__push_new() copies the options' strings; pst__push_close()
 * joins the sender and frees everything.
 */
#ifndef PST_PUSH_H
#define PST_PUSH_H

#include <stddef.h>
#include <stdint.h>

#include "consumer/window.h"
#include "profile/profile.h"

#define PST_PUSH_LABELS_MAX 16

struct pst__push_opts {
  const char *url; /* the server: scheme://host[:port][/prefix] */
  const char *app; /* application name, or NULL: each process's own
                      (its script or module, else its executable) */
  const char *label_keys[PST_PUSH_LABELS_MAX]; /* the user's labels */
  const char *label_values[PST_PUSH_LABELS_MAX];
  int nlabels;
  const char *tenant;  /* X-Scope-OrgID, or NULL */
  const char *bearer;  /* Authorization: Bearer, or NULL */
  const char *basic;   /* "user:password" for basic auth, or NULL */
  double rate_hz;      /* sampleRate */
  int queue_max;       /* profiles waiting at most */
  double timeout_s;    /* per request */
  const char *ca_file; /* CA certificates for https (PEM), or NULL: the
                          first bundle found where distributions keep one
                          (pst__push_ca_default()), else libcurl's own */
};

struct pst__push_stats {
  uint64_t made;        /* profiles queued */
  uint64_t sent;        /* accepted by the server */
  uint64_t samples;     /* samples in those */
  uint64_t failures;    /* requests that failed and were retried */
  uint64_t dropped;     /* oldest dropped from a full queue */
  uint64_t rejected;    /* refused by the server (4xx) */
  uint64_t unsent;      /* still queued at close */
  uint64_t make_errors; /* profiles that could not be serialized */
  char last_error[160]; /* the last failure, "" if none */
};

/* NULL when libcurl is there, else why not in one line (a shared build
 * loads it on this first call: push/curl_api.h). */
const char *pst__push_unavailable(void);

/* 0, or -EINVAL with a one-line reason in why (not a URL, a scheme other
 * than http/https, no host), or -ENOPKG (no libcurl, the reason too). */
int pst__push_check_url(const char *url, char *why, size_t len);

/* Checks an application name or a label key/value given by the user:
 * 0, or -EINVAL (a name: [A-Za-z0-9_.-]+; a key: [A-Za-z_][A-Za-z0-9_.]*;
 * a value: no ',', '{', '}', '=' or control characters). */
int pst__push_check_name(const char *s);
int pst__push_check_key(const char *s);
int pst__push_check_value(const char *s);

/* The first CA bundle found where distributions keep theirs (Debian,
 * Ubuntu and Alpine's ca-certificates, Fedora/RHEL, openSUSE), or NULL.
 * A static pystitch carries no CA path of its own that fits every
 * distribution; a container's bundle is not looked at (pystitch's root's). */
const char *pst__push_ca_default(void);

struct pst__push;

/* Starts the sender. 0 and *out, or -ENOMEM, -EINVAL (URL), -EAGAIN (no
 * thread). */
int pst__push_new(const struct pst__push_opts *o, struct pst__push **out);

/* The window consumer's emit (arg: the struct pst__push): the profile made
 * into a request and queued. span->proc must be set (per-process windows).
 * 0 or -ENOMEM / -EINVAL. */
int pst__push_profile(void *push, const struct pst__profile *prof,
                      const struct pst__window_span *span);

/* The server's address as logged: scheme://host[:port]/path, no user
 * info. Borrowed, valid until close. */
const char *pst__push_where(const struct pst__push *p);

/* Sends what is queued for at most drain_s seconds, stops the sender and
 * frees p; *st gets the figures. */
void pst__push_close(struct pst__push *p, double drain_s,
                     struct pst__push_stats *st);

#endif
