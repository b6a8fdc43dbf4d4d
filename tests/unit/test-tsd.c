/* test-tsd.c: the TSD layout found in a real libc (glibc, musl) reads back
 * every value that the threads of tests/helpers/tsd-target stored, for
 * keys below and above 32. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "libc/tsd.h"
#include "proc/ptrace.h"
#include "spawn.h"
#include "task.h"

static int run(const char *helper) {
  char path[512], line[256];
  char *argv[] = {path, NULL};
  struct pst__maps maps;
  struct pst__tsd tsd;
  struct pst__mem mem;
  int checked = 0, high = 0;
  pid_t pid;
  FILE *f;

  snprintf(path, sizeof(path), "%s/tests/helpers/%s", test_builddir(), helper);
  pid = test_spawn(argv, &f, NULL);
  ASSERT_GT(pid, 0);
  /* Skip when the helper could not be built (no musl-gcc): it exits 77. */
  if (!fgets(line, sizeof(line), f)) {
    int st;
    waitpid(pid, &st, 0);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
      SKIP("%s not built (musl-gcc missing)", helper);
    TEST_FAIL("%s printed nothing (exit %d)", helper, WEXITSTATUS(st));
  }
  ASSERT_EQ(pst__maps_load(pid, &maps), 0);
  ASSERT_EQ(pst__tsd_analyse(pid, &maps, PST_ARCH_X86_64, &tsd), 0);
  printf("# %s: libc %s, layout {0x%llx, %lld, %d} l2 0x%llx: %s\n", helper,
         tsd.libc_path, (long long)tsd.layout.offset,
         (long long)tsd.layout.multiplier, tsd.layout.indirect,
         (long long)tsd.layout.l2_offset, tsd.method);
  ASSERT(strstr(tsd.method, "disassembly") == tsd.method);
  pst__mem_init(&mem, pid);
  do {
    int tid;
    unsigned key;
    unsigned long want;
    uint64_t tp, got;
    if (!strncmp(line, "ready", 5))
      break;
    ASSERT_EQ(sscanf(line, "thread %d %u %lu", &tid, &key, &want), 3);
    ASSERT_EQ(pst__ptrace_thread_pointer(tid, &tp), 0);
    ASSERT_EQ(pst__tsd_get(&tsd, &mem, tp, key, &got), 0);
    if (got != want)
      TEST_FAIL("thread %d key %u: read 0x%llx, stored 0x%lx", tid, key,
                (unsigned long long)got, want);
    checked++;
    high += key >= 32;
  } while (fgets(line, sizeof(line), f));
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  pst__maps_exit(&maps);
  ASSERT_GE(checked, 4 * 14);
  ASSERT_GT(high, 0);
  return 0;
}

TEST_IMPL(tsd_glibc_threads) { return run("tsd-target"); }
TEST_IMPL(tsd_musl_threads) { return run("tsd-target-musl"); }
