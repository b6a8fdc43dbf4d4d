/* rootfs.c: files a target names, opened inside its root (rootfs.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "proc/rootfs.h"

/* Symlinks followed in one lookup at most (the kernel's own limit). */
#define MAX_LINKS 40
/* Directories deep one walk may go (".." pops one). */
#define MAX_DEPTH 128

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* 1 once openat2 answered ENOSYS: the walk is used from then on. */
static int no_openat2;

int pst__root_open(pid_t pid) {
  char path[64];
  int fd;

  if (pid <= 0)
    snprintf(path, sizeof(path), "/");
  else
    snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
  fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? -ESRCH : -errno;
  return fd;
}

/* Turns an O_PATH descriptor into a read-only one when it is a regular file.
 * Takes fd (closed in every case). */
static int reopen_regular(int fd, struct stat *st) {
  struct stat tmp;
  char self[64];
  int rfd, err = 0;

  if (!st)
    st = &tmp;
  if (fstat(fd, st) < 0)
    err = -errno;
  else if (!S_ISREG(st->st_mode))
    err = -EINVAL;
  if (err) {
    close(fd);
    return err;
  }
  snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
  rfd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  err = rfd < 0 ? -errno : 0;
  close(fd);
  if (err)
    return err;
  /* The same inode, whatever happened to the path meanwhile. */
  if (fstat(rfd, &tmp) < 0 || tmp.st_ino != st->st_ino ||
      tmp.st_dev != st->st_dev) {
    close(rfd);
    return -ESTALE;
  }
  return rfd;
}

static int openat2_path(int rootfd, const char *path) {
  struct open_how how = {
      .flags = O_PATH | O_CLOEXEC,
      .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
  };
  long fd;
  int tries = 0;

  do /* EAGAIN: a rename raced the lookup; a few tries, never a spin */
    fd = syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
  while (fd < 0 && (errno == EAGAIN || errno == EINTR) && ++tries < 8);
  return fd < 0 ? -errno : (int)fd;
}

/* One lookup's walk: a stack of O_PATH directory descriptors from the root
 * (stack[0], borrowed) down, and the rest of the path still to resolve. */
struct walk {
  int stack[MAX_DEPTH];
  int depth; /* stack[depth - 1] is the current directory */
  int links;
  char rest[PATH_MAX * 2];
};

static void walk_pop_to(struct walk *w, int depth) {
  while (w->depth > depth) {
    w->depth--;
    if (w->depth > 0)
      close(w->stack[w->depth]);
  }
}

/* Puts s in front of what is left of w->rest (s, "/", rest). */
static int walk_prepend(struct walk *w, const char *s, size_t n) {
  size_t r = strlen(w->rest);

  if (n + 1 + r + 1 > sizeof(w->rest))
    return -ENAMETOOLONG;
  memmove(w->rest + n + 1, w->rest, r + 1);
  memcpy(w->rest, s, n);
  w->rest[n] = '/';
  return 0;
}

/* Resolves one component c (not empty, not ".") from the current
 * directory. Returns 1 with *out an O_PATH descriptor of what c names
 * when that is not a symlink, 0 when a symlink was queued in w->rest, or
 * -errno. */
static int walk_step(struct walk *w, const char *c, int last, int *out) {
  char target[PATH_MAX];
  struct stat st;
  ssize_t n;
  int fd, err;

  if (!strcmp(c, "..")) { /* never above the root */
    walk_pop_to(w, w->depth > 1 ? w->depth - 1 : 1);
    *out = -1;
    return 1;
  }
  fd = openat(w->stack[w->depth - 1], c, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  if (fstat(fd, &st) < 0) {
    err = -errno;
    close(fd);
    return err;
  }
  if (!S_ISLNK(st.st_mode)) {
    if (!last && !S_ISDIR(st.st_mode)) {
      close(fd);
      return -ENOTDIR;
    }
    *out = fd;
    return 1;
  }
  n = readlinkat(fd, "", target, sizeof(target) - 1);
  err = n < 0 ? -errno : 0;
  close(fd);
  if (err)
    return err;
  if (++w->links > MAX_LINKS)
    return -ELOOP;
  target[n] = '\0';
  if (target[0] == '/')
    walk_pop_to(w, 1); /* absolute: from the target's root */
  return walk_prepend(w, target, (size_t)n);
}

int pst__root_openat_walk(int rootfd, const char *path, struct stat *st) {
  struct walk *w = calloc(1, sizeof(*w));
  int err = 0, fd = -1;

  if (!w)
    return -ENOMEM;
  if (strlen(path) >= sizeof(w->rest)) {
    free(w);
    return -ENAMETOOLONG;
  }
  strcpy(w->rest, path);
  w->stack[0] = rootfd;
  w->depth = 1;
  for (;;) {
    char *p = w->rest, *c, *slash;
    int got;

    while (*p == '/')
      p++;
    if (!*p)
      break;
    slash = strchr(p, '/');
    c = strndup(p, slash ? (size_t)(slash - p) : strlen(p));
    if (!c) {
      err = -ENOMEM;
      break;
    }
    memmove(w->rest, p + strlen(c), strlen(p + strlen(c)) + 1);
    if (!strcmp(c, ".")) {
      free(c);
      continue;
    }
    {
      const char *q = w->rest;
      while (*q == '/')
        q++;
      got = walk_step(w, c, !*q, &fd);
    }
    free(c);
    if (got < 0) {
      err = got;
      break;
    }
    if (got == 0 || fd < 0)
      continue; /* a symlink queued, or ".." */
    if (w->depth >= MAX_DEPTH) {
      close(fd);
      err = -ELOOP;
      break;
    }
    w->stack[w->depth++] = fd;
    fd = -1;
  }
  if (!err) {
    if (w->depth > 1) {
      fd = w->stack[--w->depth]; /* the last component: ours now */
    } else {
      fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 0); /* the path named the root */
      err = fd < 0 ? -errno : 0;
    }
  }
  walk_pop_to(w, 1);
  free(w);
  if (err)
    return err;
  return reopen_regular(fd, st);
}

int pst__root_openat(int rootfd, const char *path, struct stat *st) {
  int fd;

  if (!path || !*path)
    return -ENOENT;
  if (!__atomic_load_n(&no_openat2, __ATOMIC_RELAXED)) {
    fd = openat2_path(rootfd, path);
    if (fd >= 0)
      return reopen_regular(fd, st);
    if (fd != -ENOSYS && fd != -EPERM) /* EPERM: a seccomp filter */
      return fd;
    __atomic_store_n(&no_openat2, 1, __ATOMIC_RELAXED);
  }
  return pst__root_openat_walk(rootfd, path, st);
}

int pst__root_open_magic(const char *proc_path, struct stat *st) {
  int fd = open(proc_path, O_PATH | O_CLOEXEC);

  if (fd < 0)
    return -errno;
  return reopen_regular(fd, st);
}
