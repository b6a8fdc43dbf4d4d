/* probe.c: a process's command line, environment, container and look, from
 * /proc (probe.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/probe.h"
#include "proc/proc.h"

void pst__probe_cmdline(pid_t pid, char *buf, size_t len) {
  char path[64];
  ssize_t n;

  snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
  n = pst__proc_read(path, buf, len);
  if (n <= 0)
    buf[0] = '\0';
  else
    pst__proc_args_join(buf, (size_t)n);
}

int pst__probe_env_int(pid_t pid, const char *key, int *out) {
  char path[64], buf[65536];
  ssize_t n;

  snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
  n = pst__proc_read(path, buf, sizeof(buf));
  if (n < 0)
    return (int)n;
  return pst__proc_env_int(buf, (size_t)n, key, out);
}

uint64_t pst__probe_pidns(pid_t pid) {
  char path[64];
  struct stat st;

  if (pid)
    snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
  else
    snprintf(path, sizeof(path), "/proc/self/ns/pid");
  return stat(path, &st) ? 0 : (uint64_t)st.st_ino;
}

void pst__probe_container(pid_t pid, uint64_t ns, char *out, size_t len) {
  char path[64], buf[4096];
  uint64_t its = pst__probe_pidns(pid);

  out[0] = '\0';
  if (!its || !ns || its == ns)
    return;
  snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
  if (pst__proc_read(path, buf, sizeof(buf)) <= 0)
    return;
  pst__proc_cgroup_name(buf, out, len);
}

/* Does the file at path (a /proc maps file) mention needle? Read in
 * chunks, a needle across two of them included. */
static int file_mentions(const char *path, const char *needle) {
  char buf[65536];
  size_t keep = 0, nl = strlen(needle);
  int fd = open(path, O_RDONLY | O_CLOEXEC), found = 0;
  ssize_t n;

  if (fd < 0)
    return 0;
  while (!found && (n = read(fd, buf + keep, sizeof(buf) - keep)) > 0) {
    size_t have = keep + (size_t)n;
    found = memmem(buf, have, needle, nl) != NULL;
    keep = have < nl - 1 ? have : nl - 1;
    memmove(buf, buf + have - keep, keep);
  }
  close(fd);
  return found;
}

int pst__probe_looks_python(pid_t pid) {
  char path[64], exe[4096];
  const char *base;

  if (pst__proc_exe(pid, exe, sizeof(exe)) < 0 || !exe[0])
    return 0; /* a kernel thread, or not ours to read */
  base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
  if (!strncmp(base, "python", 6))
    return 1;
  snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
  return file_mentions(path, "/libpython");
}
