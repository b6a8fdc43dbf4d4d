/* curl_api.c: libcurl loaded on first use (dlopen), or linked in the
 * static binary; see curl_api.h. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#ifndef PST_STATIC_BINARY
#include <dlfcn.h>
#endif

#include "push/curl_api.h"

/* The soname of every libcurl since 7.16 (Debian's libcurl4 and
 * libcurl4t64 alike). */
#define CURL_SONAME "libcurl.so.4"

static struct pst__curl api;
static const struct pst__curl *loaded;
static char why[256];
static pthread_once_t once = PTHREAD_ONCE_INIT;

#ifdef PST_STATIC_BINARY
static void load(void) {
#define PST_CURL_LINK(f) api.f = curl_##f;
  PST_CURL_FUNCS(PST_CURL_LINK)
#undef PST_CURL_LINK
  loaded = &api;
}
#else
static void load(void) {
  /* RTLD_LOCAL: its symbols serve this table only; RTLD_NOW: a missing
   * one shows here, not in the middle of a request. */
  void *h = dlopen(CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
  void *sym;

  if (!h) {
    snprintf(why, sizeof(why),
             "libcurl could not be loaded (%s): install it with 'apt-get "
             "install libcurl4' (trixie and later: libcurl4t64)",
             dlerror());
    return;
  }
#define PST_CURL_SYM(f)                                                        \
  if (!(sym = dlsym(h, "curl_" #f))) {                                         \
    snprintf(why, sizeof(why), "%s has no curl_" #f ": libcurl too old",       \
             CURL_SONAME);                                                     \
    dlclose(h);                                                                \
    return;                                                                    \
  }                                                                            \
  memcpy(&api.f, &sym, sizeof(sym));
  PST_CURL_FUNCS(PST_CURL_SYM)
#undef PST_CURL_SYM
  loaded = &api;
}
#endif

const struct pst__curl *pst__curl(void) {
  pthread_once(&once, load);
  return loaded;
}

const char *pst__curl_why(void) {
  pthread_once(&once, load);
  return loaded ? "" : why;
}
