/* writer.c: the registry of output formats, the atomic save, and the label
 * and UTF-8 helpers the writers share. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/writer.h"
#include "util/clock.h"
#include "util/esc.h"

static const struct pst_writer_ops *const writers[] = {
    &pst_writer_folded,     &pst_writer_speedscope, &pst_writer_chrome,
    &pst_writer_flamegraph, &pst_writer_pprof,      NULL,
};

const struct pst_writer_ops *const *pst_writer_list(void) { return writers; }

const struct pst_writer_ops *pst_writer_find(const char *name) {
  const struct pst_writer_ops *const *w;

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
  seed = ((uint64_t)getpid() << 32) ^ pst_now_ns() ^ (uint64_t)(uintptr_t)name;
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

/* fsync() of the directory holding path, so that the rename is durable.
 * Best effort: the file is already in place when this runs. */
static void sync_dir(const char *path) {
  const char *slash = strrchr(path, '/');
  char *dir;
  int fd;

  if (!slash)
    dir = strdup(".");
  else if (slash == path)
    dir = strdup("/");
  else
    dir = strndup(path, (size_t)(slash - path));
  if (!dir)
    return;
  fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
  free(dir);
}

/* pst_writer_save() into something that is not a regular file. */
static int write_special(const struct pst_writer_ops *w,
                         const struct pst_profile *p, const char *path) {
  FILE *f = fopen(path, "wb");
  int err;

  if (!f)
    return -errno;
  err = w->write(p, f);
  if (fflush(f) && !err)
    err = -errno;
  if (ferror(f) && !err)
    err = -EIO;
  if (fclose(f) && !err)
    err = -errno;
  return err;
}

int pst_writer_save(const struct pst_writer_ops *w, const struct pst_profile *p,
                    const char *path) {
  struct stat st;
  char *tmp = NULL;
  FILE *f = NULL;
  int fd = -1, err, rc;

  if (!w || !w->write || !p || !path || !*path)
    return -EINVAL;
  /* rename() would say EISDIR too, but only after the writer's work. */
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
    return -EISDIR;
  /* Not a regular file (/dev/null, /dev/stdout, a FIFO): written into as
   * it is. A rename over it would replace the device node with a file. */
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
    return write_special(w, p, path);
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

/* ---- helpers ---- */

size_t pst_writer_utf8_chars(const char *s) {
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
    size_t n = pst_utf8_len(s);

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

char *pst_writer_clean(const char *s, unsigned flags) {
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

char *pst_writer_label(const struct pst_prof_frame *fr, unsigned flags) {
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

char **pst_writer_labels(const struct pst_profile *p, unsigned flags) {
  size_t n = pst_profile_nframes(p);
  char **labels = calloc(n + 1, sizeof(*labels));

  if (!labels)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    labels[i] = pst_writer_label(pst_profile_frame(p, (uint32_t)i), flags);
    if (!labels[i]) {
      pst_writer_labels_free(p, labels);
      return NULL;
    }
  }
  return labels;
}

void pst_writer_labels_free(const struct pst_profile *p, char **labels) {
  if (!labels)
    return;
  /* Entries after a failed allocation are NULL (calloc). */
  for (size_t i = 0; i < pst_profile_nframes(p); i++)
    free(labels[i]);
  free(labels);
}

char *pst_writer_proc_label(const struct pst_prof_process *pr) {
  char *cmd = pst_writer_clean(pr->cmdline, PST_CLEAN_CTRL), *buf = NULL;
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
