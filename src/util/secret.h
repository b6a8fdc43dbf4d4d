/* secret.h: memory for secrets (the push token, the basic-auth pair):
 * never in a core dump, wiped when freed, and taken out of the
 * environment so that no child and no reader of /proc/PID/environ sees
 * them.
 *
 * A secret is a NUL-terminated string in a mapping of its own, marked
 * MADV_DONTDUMP, and the first one makes the whole process non-dumpable
 * (PR_SET_DUMPABLE 0: no core file, no ptrace or /proc/PID/mem,
 * /proc/PID/environ by another process of the same user). That lasts
 * until exit: copies made by libraries (libcurl's request buffers) are
 * out of our reach. Non-dumpable also makes pystitch's own /proc/PID
 * files root's; pystitch reads none of its own through /proc.
 *
 * Ownership: pst__secret_alloc(), pst__secret_dup() and
 * pst__secret_take_env() give the caller a secret, freed (wiped) with
 * pst__secret_free(). Thread-safe, but pst__secret_take_env() edits environ:
 * call it before any other thread starts.
 */
#ifndef PST_SECRET_H
#define PST_SECRET_H

#include <stddef.h>

/* A zeroed secret of len bytes plus its NUL, or NULL (errno ENOMEM). */
char *pst__secret_alloc(size_t len);

/* A secret copy of s, or NULL (errno ENOMEM). */
char *pst__secret_dup(const char *s);

/* Wipes and frees s (NULL is fine). */
void pst__secret_free(char *s);

/* Removes every NAME=... from the environment and overwrites those
 * strings in place (the initial ones are what /proc/PID/environ shows,
 * unsetenv() alone leaves them there). *out gets a secret copy of the
 * first value when it is not empty, else NULL. Returns 0, or -ENOMEM
 * (the variable removed all the same). With out NULL the value is only
 * wiped. */
int pst__secret_take_env(const char *name, char **out);

#endif
