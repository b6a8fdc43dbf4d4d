/* secret.c: secrets kept out of core dumps, wiped when freed, taken out
 * of the environment. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "util/secret.h"

extern char **environ;

/* Each secret is a mapping of its own: [size_t size][bytes...]. A heap
 * block could not be excluded from dumps alone, nor be sure to be wiped
 * after a realloc by someone else. */
struct head {
  size_t size; /* of the whole mapping */
};

char *pst__secret_alloc(size_t len) {
  long page = sysconf(_SC_PAGESIZE);
  size_t size;
  struct head *h;

  if (page <= 0)
    page = 4096;
  if (len > SIZE_MAX / 2) {
    errno = ENOMEM;
    return NULL;
  }
  size = (sizeof(*h) + len + 1 + (size_t)page - 1) & ~((size_t)page - 1);
  /* Before the secret exists: no dump, no same-user ptrace from now on. */
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  h = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
           0);
  if (h == MAP_FAILED) {
    errno = ENOMEM;
    return NULL;
  }
  /* Best effort: a kernel without it still has the process non-dumpable. */
  madvise(h, size, MADV_DONTDUMP);
  madvise(h, size, MADV_DONTFORK);
  h->size = size;
  return (char *)(h + 1);
}

char *pst__secret_dup(const char *s) {
  size_t len = strlen(s);
  char *copy = pst__secret_alloc(len);

  if (copy)
    memcpy(copy, s, len + 1);
  return copy;
}

void pst__secret_free(char *s) {
  struct head *h;
  int saved = errno;

  if (!s)
    return;
  h = (struct head *)s - 1;
  explicit_bzero(s, h->size - sizeof(*h));
  munmap(h, h->size);
  errno = saved;
}

int pst__secret_take_env(const char *name, char **out) {
  size_t n = strlen(name);
  char **ep = environ;
  int err = 0, first = 1;

  if (out)
    *out = NULL;
  while (ep && *ep) {
    char *entry = *ep;
    if (strncmp(entry, name, n) || entry[n] != '=') {
      ep++;
      continue;
    }
    if (first && out && entry[n + 1]) {
      *out = pst__secret_dup(entry + n + 1);
      if (!*out)
        err = -ENOMEM;
    }
    first = 0;
    /* Out of environ first (what getenv() and a child see), then the
     * bytes (what /proc/PID/environ shows). */
    for (char **q = ep; *q; q++)
      q[0] = q[1];
    explicit_bzero(entry, strlen(entry));
  }
  return err;
}
