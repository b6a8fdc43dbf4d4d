/* maps.c: /proc/PID/maps parsed into a sorted array; files opened by mapping. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "proc/maps.h"
#include "proc/rootfs.h"
#include "util/array.h"

/* One line of a maps file (its newline removed) into *mp: 0, -EINVAL, or
 * -ENOMEM. The path is everything after the inode, spaces included: the
 * kernel writes a newline in a file name as "\012" and may end it with
 * " (deleted)", both kept as they are (the file is opened by its mapping,
 * and by path only with its device and inode checked). */
static int parse_line(char *line, struct pst__map *mp) {
  char perms[8] = "";
  int pathpos = 0;
  unsigned long long start, end, off, ino;

  if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms,
             &off, &mp->dev_major, &mp->dev_minor, &ino, &pathpos) < 7)
    return -EINVAL;
  /* Perms are four letters, e.g. "r-xp"; a shorter word would leave the
   * rest of perms[] unread. */
  if (strlen(perms) != 4 || start >= end)
    return -EINVAL;
  mp->start = start;
  mp->end = end;
  mp->offset = off;
  mp->inode = ino;
  mp->perms = (perms[0] == 'r' ? PST_MAP_R : 0) |
              (perms[1] == 'w' ? PST_MAP_W : 0) |
              (perms[2] == 'x' ? PST_MAP_X : 0);
  mp->path = strdup(pathpos > 0 ? line + pathpos : "");
  return mp->path ? 0 : -ENOMEM;
}

int pst__maps_read(FILE *f, struct pst__maps *m) {
  char *line = NULL;
  size_t cap = 0, lcap = 0;
  ssize_t len;
  int err = 0;

  m->v = NULL;
  m->n = 0;
  while ((len = getline(&line, &lcap, f)) > 0) {
    if (line[len - 1] == '\n')
      line[len - 1] = '\0';
    err = pst__array_reserve((void **)&m->v, &cap, m->n + 1, sizeof(*m->v));
    if (err)
      goto out;
    err = parse_line(line, &m->v[m->n]);
    if (err)
      goto out;
    m->n++;
    /* pst__maps_find() bsearches: the mappings must be sorted and apart,
     * as the kernel lists them. */
    if (m->n > 1 && m->v[m->n - 1].start < m->v[m->n - 2].end) {
      err = -EINVAL;
      goto out;
    }
  }
out:
  free(line);
  if (err)
    pst__maps_exit(m);
  return err;
}

int pst__maps_load(pid_t pid, struct pst__maps *m) {
  char path[64];
  FILE *f;
  int err;

  m->v = NULL;
  m->n = 0;
  snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
  f = fopen(path, "re");
  if (!f)
    return errno == ENOENT ? -ESRCH : -errno;
  err = pst__maps_read(f, m);
  fclose(f);
  return err;
}

void pst__maps_exit(struct pst__maps *m) {
  for (size_t i = 0; i < m->n; i++)
    free(m->v[i].path);
  free(m->v);
  m->v = NULL;
  m->n = 0;
}

static int cmp_addr(const void *key, const void *elt) {
  uint64_t a = *(const uint64_t *)key;
  const struct pst__map *mp = elt;
  if (a < mp->start)
    return -1;
  return a >= mp->end ? 1 : 0;
}

const struct pst__map *pst__maps_find(const struct pst__maps *m,
                                      uint64_t addr) {
  return bsearch(&addr, m->v, m->n, sizeof(*m->v), cmp_addr);
}

const struct pst__map *pst__maps_find_file(const struct pst__maps *m,
                                           int (*match)(const char *base)) {
  for (size_t i = 0; i < m->n; i++) {
    const char *p = m->v[i].path, *base;
    if (p[0] != '/')
      continue;
    base = strrchr(p, '/') + 1;
    if (match(base))
      return &m->v[i];
  }
  return NULL;
}

static int same_file(const struct pst__map *a, const struct pst__map *b) {
  return a->inode == b->inode && a->dev_major == b->dev_major &&
         a->dev_minor == b->dev_minor && !strcmp(a->path, b->path);
}

const struct pst__map *pst__maps_file_base(const struct pst__maps *m,
                                           const struct pst__map *mp) {
  for (size_t i = 0; i < m->n; i++)
    if (same_file(&m->v[i], mp))
      return &m->v[i];
  return mp;
}

/* fd (or -errno) when its file is the one mp maps, else -ESTALE. */
static int check_inode(int fd, const struct stat *st,
                       const struct pst__map *mp) {
  if (fd < 0)
    return fd;
  if (st->st_ino != mp->inode || major(st->st_dev) != mp->dev_major ||
      minor(st->st_dev) != mp->dev_minor) {
    close(fd);
    return -ESTALE;
  }
  return fd;
}

int pst__maps_open(pid_t pid, const struct pst__map *mp) {
  char path[128];
  struct stat st;
  int fd, root;

  /* map_files names the mapped file itself, with no path lookup, but needs
   * CAP_SYS_ADMIN (or CAP_CHECKPOINT_RESTORE), and the mapping may be gone;
   * else the path is looked up inside the target's root, never in ours. */
  snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
           (int)pid, mp->start, mp->end);
  fd = check_inode(pst__root_open_magic(path, &st), &st, mp);
  if (fd >= 0 || fd == -EINVAL || mp->path[0] != '/')
    return fd; /* EINVAL: not a regular file, wherever it is looked up */
  root = pst__root_open(pid);
  if (root < 0)
    return root;
  fd = check_inode(pst__root_openat(root, mp->path, &st), &st, mp);
  close(root);
  return fd;
}
