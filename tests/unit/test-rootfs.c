/* test-rootfs.c: pystitch among hostile targets: files a target names are
 * opened inside its root, never a FIFO or a device; an ELF image truncated
 * while mapped is a fault counted on that image, not a SIGBUS; the
 * sandbox's filter refuses what the engine never does (proc/rootfs.c,
 * elf/elf.c, sandbox/sandbox.c). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elf/elf.h"
#include "helpers.h"
#include "proc/rootfs.h"
#include "sandbox/sandbox.h"
#include "task.h"

/* Builds a small tree under dir: what a container's root may hold. */
static int make_tree(const char *dir) {
  char p[512], q[512];
  FILE *f;

  snprintf(p, sizeof(p), "%s/etc", dir);
  if (mkdir(p, 0755))
    return -1;
  snprintf(p, sizeof(p), "%s/sub", dir);
  if (mkdir(p, 0755))
    return -1;
  snprintf(p, sizeof(p), "%s/etc/file", dir);
  if (!(f = fopen(p, "w")))
    return -1;
  fputs("inside\n", f);
  fclose(f);
  snprintf(p, sizeof(p), "%s/fifo", dir);
  if (mkfifo(p, 0600))
    return -1;
  static const char *const links[][2] = {
      {"abs", "/etc/file"}, /* absolute: the root's /etc/file */
      {"dotdot", "../../../../../etc/file"}, /* never above the root */
      {"sub/rel", "../etc/file"},
      {"chain", "sub/rel"},
      {"loop1", "loop2"},
      {"loop2", "loop1"},
      {"host", "/etc/hostname-pst"}, /* a host file the root has not */
      {"tofifo", "/fifo"},
      {"magic", "/proc/self/exe"},
  };
  for (size_t i = 0; i < sizeof(links) / sizeof(*links); i++) {
    snprintf(q, sizeof(q), "%s/%s", dir, links[i][0]);
    if (symlink(links[i][1], q))
      return -1;
  }
  return 0;
}

static int read_word(int fd, char *buf, size_t len) {
  ssize_t n = read(fd, buf, len - 1);
  close(fd);
  if (n < 0)
    return -errno;
  buf[n] = '\0';
  return 0;
}

/* Runs the cases with open_fn (openat2, or the walk). */
static int cases(int (*open_fn)(int, const char *, struct stat *)) {
  char dir[64], buf[32], host[64];
  static const char *const inside[] = {
      "/etc/file", "etc/file",           "abs",        "/dotdot", "sub/rel",
      "chain",     "/sub/../etc/./file", "../etc/file"};
  struct stat st;
  int root, fd;

  ASSERT_EQ(test_scratch(dir, sizeof(dir), "rootfs"), 0);
  ASSERT_EQ(make_tree(dir), 0);
  /* A host file at the path "host" names: must not be what is opened. */
  snprintf(host, sizeof(host), "/etc/hostname-pst");
  root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(root, 0);
  for (size_t i = 0; i < sizeof(inside) / sizeof(*inside); i++) {
    fd = open_fn(root, inside[i], &st);
    if (fd < 0)
      TEST_FAIL("%s: %s", inside[i], strerror(-fd));
    ASSERT(S_ISREG(st.st_mode));
    ASSERT_EQ(read_word(fd, buf, sizeof(buf)), 0);
    ASSERT(!strcmp(buf, "inside\n"));
  }
  ASSERT_EQ(open_fn(root, "fifo", &st), -EINVAL); /* never blocks */
  ASSERT_EQ(open_fn(root, "tofifo", NULL), -EINVAL);
  ASSERT_EQ(open_fn(root, "loop1", NULL), -ELOOP);
  ASSERT_EQ(open_fn(root, "host", NULL), -ENOENT);
  ASSERT_EQ(open_fn(root, "etc", NULL), -EINVAL); /* a directory */
  ASSERT_EQ(open_fn(root, "etc/file/x", NULL), -ENOTDIR);
  fd = open_fn(root, "magic", NULL); /* a /proc magic link: refused */
  ASSERT(fd < 0);
  close(root);
  ASSERT_EQ(test_rmrf(dir), 0);
  return 0;
}

TEST_IMPL(rootfs_stays_inside) { return cases(pst__root_openat); }

TEST_IMPL(rootfs_walk_agrees) { return cases(pst__root_openat_walk); }

TEST_IMPL(elf_truncated_guard) {
  char path[] = "/tmp/pst-elf-XXXXXX";
  const unsigned char *img;
  struct pst__elf *e;
  unsigned long before = pst__elf_faults();
  size_t len;
  unsigned sum = 0;
  int in, out, fd;
  char buf[65536];
  ssize_t n;

  /* A copy of our own executable: an ELF file of several pages. */
  in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(in, 0);
  out = mkstemp(path);
  ASSERT_GE(out, 0);
  while ((n = read(in, buf, sizeof(buf))) > 0)
    ASSERT_EQ(write(out, buf, (size_t)n), n);
  close(in);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pst__elf_open(fd, &e), 0);
  img = pst__elf_image(e, &len);
  ASSERT_GT(len, (size_t)3 * 4096);
  ASSERT_EQ(pst__elf_faulted(e), 0);
  /* The target truncates its file: the pages past the end are gone. */
  ASSERT_EQ(ftruncate(out, 4096), 0);
  close(out);
  for (size_t i = 0; i < len; i += 512)
    sum += ((const volatile unsigned char *)img)[i]; /* no SIGBUS */
  ASSERT_EQ(pst__elf_faulted(e), 1);
  ASSERT_GT(pst__elf_faults(), before);
  /* Past the cut, zeros; the first page as it was. */
  ASSERT_EQ(((const volatile unsigned char *)img)[len - 1], 0);
  ASSERT_EQ(memcmp(img + 1, "ELF", 3), 0);
  (void)sum;
  pst__elf_close(e);
  unlink(path);
  return 0;
}

/* In a child: the filter refuses what the engine never does (exec, writes
 * to another process) with EPERM, counts it, and the sampling calls stay
 * allowed. */
TEST_IMPL(sandbox_filter_refuses) {
  struct pst__sandbox_opts so = {.filter = 1};
  int status;
  pid_t pid;

#if defined(__SANITIZE_ADDRESS__)
  SKIP("a sanitizer build has no system-call filter (sandbox.c)");
#endif
  pid = fork();

  ASSERT_GE(pid, 0);
  if (pid == 0) {
    char buf[8] = "", *argv[] = {"/bin/true", NULL};
    struct iovec l = {buf, sizeof(buf)}, r = {buf, sizeof(buf)};
    int code = 0;
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0)
      dup2(null, 2); /* the refusal's message is not this test's output */
    signal(SIGTERM, SIG_IGN); /* a refusal stops a recording with it */
    if (pst__sandbox_enter(&so) != 0)
      _exit(10);
    if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != sizeof(buf))
      code |= 1;
    if (syscall(SYS_process_vm_writev, getpid(), &l, 1, &r, 1, 0) != -1 ||
        errno != EPERM)
      code |= 2;
    if (execv(argv[0], argv) != -1 || errno != EPERM)
      code |= 4;
    if (pst__sandbox_violations() != 2)
      code |= 8;
    if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
      code |= 16;
    _exit(code);
  }
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT(WIFEXITED(status));
  if (WEXITSTATUS(status))
    TEST_FAIL("child's checks failed: mask %d", WEXITSTATUS(status));
  return 0;
}
