/* unwind-target.c: a test target with known native stacks for the unwinder.
 *
 * One thread calls unwind_recurse() DEPTH (40) times deep and spins in the
 * innermost call; another blocks in read(2) on a pipe nobody writes, called
 * from unwind_block_thread(). Prints, one per line:
 *   recurse ADDR      runtime address of unwind_recurse
 *   spin_fn ADDR      runtime address of unwind_spin_thread
 *   block_fn ADDR     runtime address of unwind_block_thread
 *   spin TID
 *   block TID
 *   ready
 * then waits until killed. An optional argument changes DEPTH.
 *
 * With a second argument LIB: after "ready", reads a line from stdin,
 * dlopen()s LIB (tests/helpers/.libs/unwind-spin-lib.so), starts a thread
 * spinning in its unwind_lib_spin() and prints "lib TID".
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static int depth = 40;
static volatile pid_t spin_tid, block_tid;
static volatile int spinning, stop;
static int pipefd[2];

/* Not inlined, not cloned, and not a tail call: the local array's address
 * escapes into the callee and is used after the call returns, so every
 * level keeps its own frame (also at -O2). */
__attribute__((noinline, noclone)) int unwind_recurse(int n, char *up) {
  char buf[16];
  int r;

  buf[0] = (char)n;
  if (n == 0) {
    spin_tid = (pid_t)syscall(SYS_gettid);
    while (!stop) /* never set: spins until killed */
      spinning = 1;
    return 0;
  }
  r = unwind_recurse(n - 1, buf);
  __asm__ volatile("" : : "r"(buf), "r"(up) : "memory");
  return r + buf[0] + (up ? up[0] : 0);
}

__attribute__((noinline, noclone)) void *unwind_spin_thread(void *arg) {
  (void)arg;
  /* depth - 1 so that there are exactly depth unwind_recurse frames. */
  return (void *)(intptr_t)unwind_recurse(depth - 1, NULL);
}

__attribute__((noinline, noclone)) void *unwind_block_thread(void *arg) {
  char c;
  ssize_t r;

  (void)arg;
  block_tid = (pid_t)syscall(SYS_gettid);
  do
    r = read(pipefd[0], &c, 1);
  while (r != 0);
  __asm__ volatile("" ::: "memory");
  return NULL;
}

static int (*lib_spin)(int);
static volatile pid_t lib_tid;

__attribute__((noinline, noclone)) void *unwind_lib_thread(void *arg) {
  (void)arg;
  lib_tid = (pid_t)syscall(SYS_gettid);
  return (void *)(intptr_t)lib_spin(2);
}

static int start_lib(const char *path) {
  char line[16];
  pthread_t c;
  void *h;

  if (!fgets(line, sizeof(line), stdin) || !(h = dlopen(path, RTLD_NOW)) ||
      !(*(void **)&lib_spin = dlsym(h, "unwind_lib_spin")))
    return 1;
  pthread_create(&c, NULL, unwind_lib_thread, NULL);
  while (!lib_tid)
    usleep(1000);
  usleep(20000); /* into the spin loop */
  printf("lib %d\n", (int)lib_tid);
  return 0;
}

int main(int argc, char **argv) {
  pthread_t a, b;

  if (argc > 1)
    depth = atoi(argv[1]);
  if (depth < 1 || pipe(pipefd) != 0)
    return 1;
  setvbuf(stdout, NULL, _IOLBF, 0);
  pthread_create(&a, NULL, unwind_spin_thread, NULL);
  pthread_create(&b, NULL, unwind_block_thread, NULL);
  while (!spinning || !block_tid)
    usleep(1000);
  usleep(20000); /* let the blocked thread reach read() */
  printf("recurse %p\n", (void *)unwind_recurse);
  printf("spin_fn %p\n", (void *)unwind_spin_thread);
  printf("block_fn %p\n", (void *)unwind_block_thread);
  printf("spin %d\nblock %d\nready\n", (int)spin_tid, (int)block_tid);
  if (argc > 2 && start_lib(argv[2]) != 0)
    return 1;
  for (;;)
    pause();
}
