/* proc.c: parsers for /proc/PID/{status,stat,comm,exe,task,environ,cmdline,
 * cgroup,children}. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "proc/proc.h"
#include "util/array.h"

/* Opens a /proc file read-only. A target of thousands of threads needs
 * two or three files open per thread (stat, schedstat, syscall): at the
 * first EMFILE the soft limit of open files is raised to the hard one,
 * once (a command started by record was spawned before and keeps the
 * usual limit). */
static int open_proc(const char *path) {
  static int raised;
  int fd = open(path, O_RDONLY | O_CLOEXEC);

  if (fd < 0 && errno == EMFILE && !raised) {
    struct rlimit rl;
    raised = 1;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
      rl.rlim_cur = rl.rlim_max;
      if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
        fd = open(path, O_RDONLY | O_CLOEXEC);
      else
        errno = EMFILE;
    } else {
      errno = EMFILE;
    }
  }
  return fd;
}

ssize_t pst__proc_read(const char *path, char *buf, size_t len) {
  ssize_t n, total = 0;
  int fd, err;

  fd = open_proc(path);
  if (fd < 0)
    return errno == ENOENT ? -ESRCH : -errno;
  while ((size_t)total + 1 < len) {
    n = read(fd, buf + total, len - 1 - (size_t)total);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      err = errno == ENOENT ? -ESRCH : -errno;
      close(fd);
      return err;
    }
    if (n == 0)
      break;
    total += n;
  }
  buf[total] = '\0';
  close(fd);
  return total;
}

/* A pid field of a /proc file: a decimal number in [0, INT_MAX] up to the
 * end of the line, else 0 (never a negative or wrapped pid). */
static pid_t pid_field(const char *s) {
  char *end;
  long v;

  errno = 0;
  v = strtol(s, &end, 10);
  if (end == s || errno || v < 0 || v > INT_MAX)
    return 0;
  return (pid_t)v;
}

int pst__proc_parse_status(char *buf, pid_t pid, struct pst__proc_status *st) {
  char *line, *save = NULL;

  memset(st, 0, sizeof(*st));
  st->nspid = pid;
  for (line = strtok_r(buf, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save)) {
    if (!strncmp(line, "Name:\t", 6)) {
      snprintf(st->name, sizeof(st->name), "%s", line + 6);
    } else if (!strncmp(line, "State:\t", 7)) {
      st->state = line[7];
    } else if (!strncmp(line, "Tgid:\t", 6)) {
      st->tgid = pid_field(line + 6);
    } else if (!strncmp(line, "PPid:\t", 6)) {
      st->ppid = pid_field(line + 6);
    } else if (!strncmp(line, "TracerPid:\t", 11)) {
      st->tracer = pid_field(line + 11);
    } else if (!strncmp(line, "Uid:\t", 5)) {
      st->uid = (uid_t)strtoul(line + 5, NULL, 10);
    } else if (!strncmp(line, "NSpid:\t", 7)) {
      /* The last field is the pid in the innermost namespace. */
      char *last = strrchr(line, '\t');
      st->nspid = pid_field(last + 1);
    }
  }
  return 0;
}

int pst__proc_status(pid_t pid, struct pst__proc_status *st) {
  char path[64], buf[4096];
  ssize_t n;

  snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
  n = pst__proc_read(path, buf, sizeof(buf));
  if (n < 0)
    return (int)n;
  return pst__proc_parse_status(buf, pid, st);
}

int pst__proc_tasks(pid_t pid, pid_t **tids) {
  char path[64];
  struct dirent *de;
  pid_t *v = NULL;
  size_t n = 0, cap = 0;
  DIR *d;
  int err = 0;

  snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
  d = opendir(path);
  if (!d)
    return errno == ENOENT ? -ESRCH : -errno;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] < '0' || de->d_name[0] > '9')
      continue;
    err = pst__array_reserve((void **)&v, &cap, n + 1, sizeof(*v));
    if (err)
      goto out;
    v[n++] = (pid_t)atoi(de->d_name);
  }
out:
  closedir(d);
  if (err) {
    free(v);
    return err;
  }
  *tids = v;
  return (int)n;
}

int pst__proc_parse_stat(const char *buf, char *state, uint64_t *starttime) {
  unsigned long long start = 0;
  const char *p;
  int field;

  /* comm may contain spaces and parentheses: fields start after the last
   * ')'. Field 3 is the state, field 22 the start time. */
  p = strrchr(buf, ')');
  if (!p || p[1] != ' ')
    return -EINVAL;
  p += 2;
  if (state)
    *state = *p;
  if (!starttime)
    return 0; /* the state alone: no need to scan to field 22 */
  for (field = 3; field < 22 && p; field++) {
    p = strchr(p, ' ');
    if (p)
      p++;
  }
  if (!p || sscanf(p, "%llu", &start) != 1)
    return -EINVAL;
  *starttime = start;
  return 0;
}

/* Opens /proc/pid/task/tid/name for repeated preads: fd, -ESRCH, -errno. */
static int task_file_open(pid_t pid, pid_t tid, const char *name) {
  char path[80];
  int fd;

  snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", (int)pid, (int)tid, name);
  fd = open_proc(path);
  if (fd < 0)
    return errno == ENOENT ? -ESRCH : -errno;
  return fd;
}

int pst__proc_task_stat_open(pid_t pid, pid_t tid) {
  return task_file_open(pid, tid, "stat");
}

int pst__proc_task_schedstat_open(pid_t pid, pid_t tid) {
  return task_file_open(pid, tid, "schedstat");
}

/* One pread of a whole small /proc file from its start, NUL-terminated:
 * the length, or -ESRCH when its task is gone, -EBADF, -errno. */
static ssize_t pread_fd(int fd, char *buf, size_t len) {
  ssize_t n;

  if (fd < 0)
    return -EBADF;
  do
    n = pread(fd, buf, len - 1, 0);
  while (n < 0 && errno == EINTR);
  if (n <= 0)
    return n < 0 ? -errno : -ESRCH;
  buf[n] = '\0';
  return n;
}

int pst__proc_parse_schedstat(const char *buf, uint64_t *run_ns,
                              uint64_t *wait_ns) {
  unsigned long long run, wait;

  if (sscanf(buf, "%llu %llu", &run, &wait) != 2)
    return -EINVAL;
  *run_ns = run;
  *wait_ns = wait;
  return 0;
}

int pst__proc_schedstat_fd(int fd, uint64_t *run_ns, uint64_t *wait_ns) {
  char buf[128];
  ssize_t n = pread_fd(fd, buf, sizeof(buf));

  return n < 0 ? (int)n : pst__proc_parse_schedstat(buf, run_ns, wait_ns);
}

int pst__proc_task_syscall_open(pid_t pid, pid_t tid) {
  return task_file_open(pid, tid, "syscall");
}

int pst__proc_parse_syscall(const char *buf, long *nr, uint64_t *sp,
                            uint64_t *pc) {
  unsigned long long w[8];
  char *end;
  long n;
  int k = 0;

  if (!strncmp(buf, "running", 7))
    return -EBUSY;
  errno = 0;
  n = strtol(buf, &end, 10);
  if (end == buf || errno || n < -1)
    return -EINVAL;
  /* NR, then 6 arguments and SP PC; -1 has SP PC only. */
  while (k < 8 && *end == ' ') {
    const char *at = end + 1;
    if (strncmp(at, "0x", 2))
      return -EINVAL;
    errno = 0;
    w[k] = strtoull(at, &end, 16);
    if (end == at + 2 || errno)
      return -EINVAL;
    k++;
  }
  if ((*end && *end != '\n') || k != (n == -1 ? 2 : 8))
    return -EINVAL;
  *nr = n;
  *sp = w[k - 2];
  *pc = w[k - 1];
  return 0;
}

int pst__proc_syscall_fd(int fd, long *nr, uint64_t *sp, uint64_t *pc) {
  char buf[256];
  ssize_t n = pread_fd(fd, buf, sizeof(buf));

  return n < 0 ? (int)n : pst__proc_parse_syscall(buf, nr, sp, pc);
}

int pst__proc_stat_fd(int fd, char *state, uint64_t *starttime) {
  char buf[1024];
  ssize_t n = pread_fd(fd, buf, sizeof(buf));

  return n < 0 ? (int)n : pst__proc_parse_stat(buf, state, starttime);
}

int pst__proc_task_stat(pid_t pid, pid_t tid, char *state,
                        uint64_t *starttime) {
  char path[80], buf[1024];
  ssize_t n;

  snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
  n = pst__proc_read(path, buf, sizeof(buf));
  if (n < 0)
    return (int)n;
  return pst__proc_parse_stat(buf, state, starttime);
}

int pst__proc_parse_image(const char *buf, struct pst__proc_image *im) {
  /* Fields of /proc/pid/stat (proc(5)), in increasing order. */
  static const int want[] = {22, 23, 26, 28, 47, 48, 50};
  const char *p;
  char *end;
  int field;

  /* comm may contain spaces and parentheses: field 3 (the state) starts
   * after the last ')'. */
  p = strrchr(buf, ')');
  if (!p || p[1] != ' ')
    return -EINVAL;
  p += 2;
  memset(im, 0, sizeof(*im));
  im->state = *p;
  field = 3;
  for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
    unsigned long long v;
    for (; field < want[k] && p; field++) {
      p = strchr(p, ' ');
      if (p)
        p++;
    }
    if (!p)
      return -EINVAL;
    v = strtoull(p, &end, 10);
    if (end == p)
      return -EINVAL;
    if (k == 0)
      im->starttime = v;
    else if (k == 1)
      im->vsize = v;
    else
      im->addr[k - 2] = v;
  }
  return 0;
}

int pst__proc_image(pid_t pid, struct pst__proc_image *im) {
  char path[64], buf[1024];
  ssize_t n;

  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  n = pst__proc_read(path, buf, sizeof(buf));
  if (n < 0)
    return (int)n;
  return pst__proc_parse_image(buf, im);
}

int pst__proc_task_comm(pid_t pid, pid_t tid, char *buf, size_t len) {
  char path[80];
  ssize_t n;

  snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
  n = pst__proc_read(path, buf, len);
  if (n < 0)
    return (int)n;
  if (n > 0 && buf[n - 1] == '\n')
    buf[n - 1] = '\0';
  return 0;
}

int pst__proc_exe(pid_t pid, char *buf, size_t len) {
  char path[64];
  ssize_t n;

  snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
  n = readlink(path, buf, len - 1);
  if (n < 0)
    return errno == ENOENT ? -ESRCH : -errno;
  buf[n] = '\0';
  return 0;
}

int pst__proc_env_int(const char *buf, size_t len, const char *key, int *out) {
  size_t klen = strlen(key), i = 0;

  /* NAME=VALUE strings, each ended by a NUL; the last may be cut short
   * (a buffer too small, an environment rewritten meanwhile). */
  while (i < len) {
    const char *s = buf + i;
    size_t slen = strnlen(s, len - i);
    if (slen > klen && !memcmp(s, key, klen) && s[klen] == '=') {
      char tmp[24], *end;
      size_t vlen = slen - klen - 1;
      long v;
      if (vlen >= sizeof(tmp))
        return -EINVAL;
      memcpy(tmp, s + klen + 1, vlen);
      tmp[vlen] = '\0';
      errno = 0;
      v = strtol(tmp, &end, 10);
      if (end == tmp || *end || errno || v < INT_MIN || v > INT_MAX)
        return -EINVAL;
      *out = (int)v;
      return 0;
    }
    i += slen + 1;
  }
  return -ENOENT;
}

void pst__proc_args_join(char *buf, size_t len) {
  if (!len)
    return;
  for (size_t i = 0; i + 1 < len; i++)
    if (buf[i] == '\0')
      buf[i] = ' ';
}

void pst__proc_cgroup_name(char *buf, char *out, size_t len) {
  char *line = buf, *p = buf, *last;

  /* The v2 line starts a line: a "0::" inside a v1 line's path (which a
   * container may name) is not it. */
  for (;;) {
    if (!strncmp(p, "0::", 3)) {
      line = p;
      break;
    }
    p = strchr(p, '\n');
    if (!p)
      break;
    p++;
  }
  line[strcspn(line, "\n")] = '\0';
  last = strrchr(line, '/');
  snprintf(out, len, "%s", last && last[1] ? last + 1 : "pidns");
}

int pst__proc_next_pid(const char **p, pid_t *pid) {
  for (;;) {
    char *end;
    long v;
    errno = 0;
    v = strtol(*p, &end, 10);
    if (end == *p)
      return 0;
    *p = end;
    if (!errno && v > 0 && v <= INT_MAX) {
      *pid = (pid_t)v;
      return 1;
    }
  }
}

int pst__proc_children(pid_t pid, pid_t *out, int *n, int max) {
  pid_t *tids = NULL;
  int k = pst__proc_tasks(pid, &tids);

  if (k < 0)
    return k;
  for (int i = 0; tids && i < k && *n < max; i++) {
    char path[80], buf[4096];
    const char *p = buf;
    pid_t c;
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid,
             (int)tids[i]);
    if (pst__proc_read(path, buf, sizeof(buf)) <= 0)
      continue;
    while (*n < max && pst__proc_next_pid(&p, &c)) {
      int seen = 0;
      for (int j = 0; j < *n && !seen; j++)
        seen = out[j] == c;
      if (!seen && c != pid)
        out[(*n)++] = c;
    }
  }
  free(tids);
  return 0;
}

int pst__proc_descendants(pid_t root, pid_t *out, int max) {
  int n = 0, err;

  if (max <= 0)
    return 0;
  memset(out, 0, (size_t)max * sizeof(*out));
  err = pst__proc_children(root, out, &n, max);

  if (err)
    return err;
  for (int i = 0; i < n; i++) /* each found one's children, in turn */
    pst__proc_children(out[i], out, &n, max);
  return n;
}
