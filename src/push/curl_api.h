/* curl_api.h: libcurl's functions as a table, loaded when `--push` (or
 * `--version`) first needs them.
 *
 * Why: libcurl brings ~30 shared libraries (TLS, Kerberos, LDAP, IDN, ...)
 * whose loading and relocation cost every start of pystitch ~20 ms of CPU
 * (measured: docs/performance.md), for a feature most runs do not use. A
 * shared build opens libcurl with dlopen() on first use; the static
 * binary (PST_STATIC_BINARY) has it linked in and fills the table from
 * its own symbols. The prototypes are libcurl's own (__typeof__), so a
 * call through the table is checked like a direct one.
 *
 * Threading: pst__curl() may be called from any thread; the first call
 * loads (once, under pthread_once). Ownership: the table and the library
 * stay loaded until exit.
 */
#ifndef PST_CURL_API_H
#define PST_CURL_API_H

#include <curl/curl.h>
#include <stddef.h>

/* Every libcurl function pystitch calls, without its "curl_" prefix. */
#define PST_CURL_FUNCS(X)                                                      \
  X(global_init)                                                               \
  X(version_info)                                                              \
  X(free)                                                                      \
  X(easy_init)                                                                 \
  X(easy_cleanup)                                                              \
  X(easy_reset)                                                                \
  X(easy_setopt)                                                               \
  X(easy_perform)                                                              \
  X(easy_getinfo)                                                              \
  X(easy_strerror)                                                             \
  X(easy_escape)                                                               \
  X(mime_init)                                                                 \
  X(mime_addpart)                                                              \
  X(mime_name)                                                                 \
  X(mime_filename)                                                             \
  X(mime_type)                                                                 \
  X(mime_data)                                                                 \
  X(mime_free)                                                                 \
  X(slist_append)                                                              \
  X(slist_free_all)                                                            \
  X(url)                                                                       \
  X(url_cleanup)                                                               \
  X(url_get)                                                                   \
  X(url_set)

struct pst__curl {
/* A member's name cannot be parenthesised. */
#define PST_CURL_MEMBER(f) __typeof__(curl_##f) *f; /* NOLINT */
  PST_CURL_FUNCS(PST_CURL_MEMBER)
#undef PST_CURL_MEMBER
};

/* The table, or NULL when libcurl cannot be loaded; then pst__curl_why()
 * says why in one line (the library not found and the package to
 * install, or the function missing). */
const struct pst__curl *pst__curl(void);
const char *pst__curl_why(void);

#endif
