/* writer.c: the registry of output formats, the atomic save, and the label
 * and UTF-8 helpers the writers share. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/writer.h"
#include "util/clock.h"
#include "util/esc.h"

static const struct pst__writer_ops *const writers[] = {
    &pst__writer_folded,     &pst__writer_speedscope, &pst__writer_chrome,
    &pst__writer_flamegraph, &pst__writer_pprof,      NULL,
};

const struct pst__writer_ops *const *pst__writer_list(void) { return writers; }

const struct pst__writer_ops *pst__writer_find(const char *name) {
  const struct pst__writer_ops *const *w;

  if (!name || !*name)
    return NULL;
  for (w = writers; *w; w++)
    if (!strcmp((*w)->name, name))
      return *w;
  if (name[0] == '.')
    name++;
  for (w = writers; *w; w++)
    if (!strcmp((*w)->ext + 1, name))
      return *w;
  return NULL;
}

/* ---- atomic save ---- */

/* Creates a new temporary file in the directory of path, named after it
 * (".<base>.<random>.tmp"). On success *tmp gets its malloc()ed name and *fd
 * its descriptor; returns 0 or -errno (nothing created on failure). */
static int open_temp(const char *path, char **tmp, int *fd) {
  const char *slash = strrchr(path, '/');
  size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
  size_t size = strlen(path) + 48;
  uint64_t seed;
  char *name;
  int err = -EEXIST;

  name = malloc(size);
  if (!name)
    return -ENOMEM;
  seed = ((uint64_t)getpid() << 32) ^ pst__now_ns() ^ (uint64_t)(uintptr_t)name;
  /* O_EXCL makes a collision harmless: try another name. */
  for (int tries = 0; tries < 100 && err == -EEXIST; tries++) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    /* The base name is cut at 200 bytes so that the temporary's name stays
     * within NAME_MAX (255) when path's own name is long. */
    snprintf(name, size, "%.*s.%.200s.%08x.tmp", (int)dirlen, path,
             path + dirlen, (unsigned)(seed >> 32));
    *fd =
        open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    err = *fd < 0 ? -errno : 0;
  }
  if (err) {
    free(name);
    return err;
  }
  *tmp = name;
  return 0;
}

char *pst__writer_dir_of(const char *path) {
  const char *slash = strrchr(path, '/');

  if (!slash)
    return strdup(".");
  if (slash == path)
    return strdup("/");
  return strndup(path, (size_t)(slash - path));
}

/* fsync() of the directory holding path, so that the rename is durable.
 * Best effort: the file is already in place when this runs. */
static void sync_dir(const char *path) {
  char *dir = pst__writer_dir_of(path);
  int fd;

  if (!dir)
    return;
  fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
  free(dir);
}

/* ---- where the output goes ---- */

int pst__writer_own_fd(const char *path) {
  const char *num = NULL;
  char *end;
  long v;

  if (!path)
    return -1;
  if (!strcmp(path, "-") || !strcmp(path, "/dev/stdout"))
    return 1;
  if (!strcmp(path, "/dev/stderr"))
    return 2;
  if (!strncmp(path, "/dev/fd/", 8))
    num = path + 8;
  else if (!strncmp(path, "/proc/self/fd/", 14))
    num = path + 14;
  if (!num || *num < '0' || *num > '9')
    return -1;
  errno = 0;
  v = strtol(num, &end, 10);
  if (errno || *end || v > INT_MAX)
    return -1;
  return (int)v;
}

/* Whether a special file owned by uid, in the directory described by dir,
 * could have been planted there by another user: the directory lets
 * others (group or world) create entries, and the file belongs neither to
 * us nor to the directory's owner. The kernel's protected_fifos=2 rule,
 * for every kind of special file and without the sticky bit required. */
static int planted(const struct stat *dir, uid_t uid) {
  if (!(dir->st_mode & (S_IWGRP | S_IWOTH)))
    return 0;
  return uid != geteuid() && uid != dir->st_uid;
}

/* Opens the directory of path (following links, like any path lookup)
 * and looks at its last component without following it. On success *dfd
 * is the directory (O_PATH), *base points into path, dst and st hold the
 * directory's and the entry's stat (st->st_mode 0 when there is none).
 * Returns 0 or -errno: -EISDIR for a directory (or a path ending in '/'
 * that names one), -ENOENT when the directory is missing. */
static int look(const char *path, int *dfd, const char **base, struct stat *dst,
                struct stat *st) {
  const char *slash = strrchr(path, '/');
  char *dir = NULL;
  int err = 0;

  *dfd = -1;
  *base = slash ? slash + 1 : path;
  memset(dst, 0, sizeof(*dst));
  memset(st, 0, sizeof(*st));
  if (slash && !slash[1]) {
    /* "dir/": a directory or nothing, never a file. */
    if (stat(path, st))
      return -errno;
    return S_ISDIR(st->st_mode) ? -EISDIR : -ENOTDIR;
  }
  dir = pst__writer_dir_of(path);
  if (!dir)
    return -ENOMEM;
  *dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (*dfd < 0 || fstat(*dfd, dst)) {
    err = -errno;
    goto out;
  }
  if (fstatat(*dfd, *base, st, AT_SYMLINK_NOFOLLOW)) {
    if (errno != ENOENT)
      err = -errno;
    memset(st, 0, sizeof(*st));
  } else if (S_ISDIR(st->st_mode)) {
    err = -EISDIR;
  }
out:
  if (err && *dfd >= 0) {
    close(*dfd);
    *dfd = -1;
  }
  free(dir);
  return err;
}

/* A FIFO, device or socket at path itself (lstat); planted() is asked
 * apart. */
static int is_special(const struct stat *st) {
  return S_ISFIFO(st->st_mode) || S_ISCHR(st->st_mode) ||
         S_ISBLK(st->st_mode) || S_ISSOCK(st->st_mode);
}

int pst__writer_where(const char *path) {
  struct stat dst, st;
  const char *base;
  int fd, dfd, err, flags;

  if (!path || !*path)
    return -EINVAL;
  fd = pst__writer_own_fd(path);
  if (fd >= 0) {
    flags = fcntl(fd, F_GETFL);
    if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY)
      return -EBADF;
    return PST_WRITER_OWN_FD;
  }
  err = look(path, &dfd, &base, &dst, &st);
  if (err)
    return err;
  close(dfd);
  if (!is_special(&st))
    return PST_WRITER_FILE;
  return planted(&dst, st.st_uid) ? -EPERM : PST_WRITER_SPECIAL;
}

/* Writes p with w to fd (closed here) as it is: no temporary, no
 * rename, no fsync (a pipe or terminal has none). */
static int write_fd(const struct pst__writer_ops *w,
                    const struct pst__profile *p, int fd) {
  FILE *f = fdopen(fd, "wb");
  int err;

  if (!f) {
    err = -errno;
    close(fd);
    return err;
  }
  err = w->write(p, f);
  if (fflush(f) && !err)
    err = -errno;
  if (ferror(f) && !err)
    err = -EIO;
  if (fclose(f) && !err)
    err = -errno;
  return err;
}

/* Opens the special file base of dfd that look() saw as st, for writing:
 * never through a link (O_NOFOLLOW), never a controlling terminal, never
 * waiting for a FIFO's reader (O_NONBLOCK: -ENXIO when there is none),
 * and only when it is still the same file. Returns the descriptor (in
 * blocking mode) or -errno. */
static int open_special(int dfd, const char *base, const struct stat *dst,
                        const struct stat *st) {
  struct stat now;
  int fd, flags, err;

  if (planted(dst, st->st_uid))
    return -EPERM;
  do
    fd = openat(dfd, base,
                O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  if (fd < 0)
    return -errno;
  if (fstat(fd, &now)) {
    err = -errno;
    goto fail;
  }
  /* Swapped since the look (a race with whoever can write the
   * directory): not what was checked. */
  if (now.st_dev != st->st_dev || now.st_ino != st->st_ino ||
      (now.st_mode & S_IFMT) != (st->st_mode & S_IFMT)) {
    err = -ESTALE;
    goto fail;
  }
  flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
    err = -errno;
    goto fail;
  }
  return fd;
fail:
  close(fd);
  return err;
}

/* The profile into a new temporary file renamed over path: whatever was
 * at path (a file, a symlink to anything) is replaced, never written
 * through. */
static int save_file(const struct pst__writer_ops *w,
                     const struct pst__profile *p, const char *path) {
  char *tmp = NULL;
  FILE *f = NULL;
  int fd = -1, err, rc;

  err = open_temp(path, &tmp, &fd);
  if (err)
    return err;
  f = fdopen(fd, "wb");
  if (!f) {
    err = -errno;
    goto out;
  }
  fd = -1;
  err = w->write(p, f);
  if (err)
    goto out;
  if (fflush(f)) {
    err = -errno;
    goto out;
  }
  if (ferror(f)) {
    err = -EIO;
    goto out;
  }
  while ((rc = fsync(fileno(f))) < 0 && errno == EINTR)
    ;
  if (rc < 0) {
    err = -errno;
    goto out;
  }
  rc = fclose(f);
  f = NULL;
  if (rc) {
    err = -errno;
    goto out;
  }
  if (rename(tmp, path)) {
    err = -errno;
    goto out;
  }
  sync_dir(path);
  free(tmp);
  return 0;

out:
  if (f)
    fclose(f);
  if (fd >= 0)
    close(fd);
  unlink(tmp);
  free(tmp);
  return err;
}

int pst__writer_save(const struct pst__writer_ops *w,
                     const struct pst__profile *p, const char *path) {
  struct stat dst, st;
  const char *base = NULL;
  int dfd, fd, err;

  if (!w || !w->write || !p || !path || !*path)
    return -EINVAL;
  fd = pst__writer_own_fd(path);
  if (fd >= 0) {
    /* Our own descriptor, by name: no path lookup at all. */
    fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    return fd < 0 ? -errno : write_fd(w, p, fd);
  }
  /* A directory is refused now: rename() would say EISDIR too, but only
   * after the writer's work. */
  err = look(path, &dfd, &base, &dst, &st);
  if (err)
    return err;
  if (is_special(&st)) {
    /* Written into as it is: a rename would replace the node. */
    fd = open_special(dfd, base, &dst, &st);
    close(dfd);
    return fd < 0 ? fd : write_fd(w, p, fd);
  }
  close(dfd);
  return save_file(w, p, path);
}

/* ---- helpers ---- */

size_t pst__writer_utf8_chars(const char *s) {
  size_t n = 0;

  for (; *s; s++)
    n += ((unsigned char)*s & 0xc0) != 0x80;
  return n;
}

/* Appends the cleaned s to out (which has room: 3 bytes per input byte);
 * returns the new end. */
static char *clean_into(char *out, const char *s, unsigned flags) {
  while (*s) {
    unsigned char c = (unsigned char)*s;
    size_t n = pst__utf8_len(s);

    if (n == 0) {
      /* U+FFFD REPLACEMENT CHARACTER (out is terminated by the caller). */
      /* NOLINTNEXTLINE(bugprone-not-null-terminated-result) */
      memcpy(out, "\xef\xbf\xbd", 3);
      out += 3;
      s++;
    } else if (n > 1) {
      memcpy(out, s, n);
      out += n;
      s += n;
    } else {
      if ((flags & PST_CLEAN_CTRL) && (c < 0x20 || c == 0x7f))
        c = ' ';
      else if ((flags & PST_CLEAN_SEMI) && c == ';')
        c = ':';
      *out++ = (char)c;
      s++;
    }
  }
  return out;
}

char *pst__writer_clean(const char *s, unsigned flags) {
  char *buf, *end;

  if (!s)
    s = "";
  buf = malloc(3 * strlen(s) + 1);
  if (!buf)
    return NULL;
  end = clean_into(buf, s, flags);
  *end = '\0';
  return buf;
}

char *pst__writer_label(const struct pst__prof_frame *fr, unsigned flags) {
  const char *name = fr->name ? fr->name : "", *file = fr->file ? fr->file : "";
  char *buf, *end;

  /* 3 bytes per input byte, " (", ":", 11 digits and sign, ")", NUL. */
  buf = malloc(3 * (strlen(name) + strlen(file)) + 24);
  if (!buf)
    return NULL;
  end = clean_into(buf, name, flags);
  if (*file) {
    end = clean_into(end, " (", flags);
    end = clean_into(end, file, flags);
    if (fr->line)
      end += sprintf(end, ":%d", fr->line);
    *end++ = ')';
  }
  *end = '\0';
  return buf;
}

char **pst__writer_labels(const struct pst__profile *p, unsigned flags) {
  size_t n = pst__profile_nframes(p);
  char **labels = calloc(n + 1, sizeof(*labels));

  if (!labels)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    labels[i] = pst__writer_label(pst__profile_frame(p, (uint32_t)i), flags);
    if (!labels[i]) {
      pst__writer_labels_free(p, labels);
      return NULL;
    }
  }
  return labels;
}

void pst__writer_labels_free(const struct pst__profile *p, char **labels) {
  if (!labels)
    return;
  /* Entries after a failed allocation are NULL (calloc). */
  for (size_t i = 0; i < pst__profile_nframes(p); i++)
    free(labels[i]);
  free(labels);
}

char *pst__writer_proc_label(const struct pst__prof_process *pr) {
  char *cmd = pst__writer_clean(pr->cmdline, PST_CLEAN_CTRL), *buf = NULL;
  size_t size, len;
  const char *sep = " [";

  if (!cmd)
    return NULL;
  size = strlen(cmd) + 192;
  buf = malloc(size);
  if (!buf)
    goto out;
  if (*cmd)
    len = (size_t)snprintf(buf, size, "%s", cmd);
  else
    len = (size_t)snprintf(buf, size, "pid %d", pr->pid);
  if (pr->rank >= 0) {
    len += (size_t)snprintf(buf + len, size - len, "%srank %d", sep, pr->rank);
    if (pr->world_size >= 0)
      len += (size_t)snprintf(buf + len, size - len, "/%d", pr->world_size);
    sep = ", ";
  } else if (pr->world_size >= 0) {
    len += (size_t)snprintf(buf + len, size - len, "%sworld_size %d", sep,
                            pr->world_size);
    sep = ", ";
  }
  if (pr->local_rank >= 0) {
    len += (size_t)snprintf(buf + len, size - len, "%slocal_rank %d", sep,
                            pr->local_rank);
    sep = ", ";
  }
  if (pr->role && pr->role[0]) {
    len += (size_t)snprintf(buf + len, size - len, "%s%.60s", sep, pr->role);
    sep = ", ";
  }
  if (pr->ppid > 0) {
    len +=
        (size_t)snprintf(buf + len, size - len, "%sparent %d", sep, pr->ppid);
    sep = ", ";
  }
  if (sep[0] == ',')
    snprintf(buf + len, size - len, "]");
out:
  free(cmd);
  return buf;
}
