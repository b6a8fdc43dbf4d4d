/* no-vm-readv.c: runs a command with process_vm_readv forbidden.
 *
 * usage: no-vm-readv COMMAND [ARGS...]
 * Installs a seccomp-bpf filter under which process_vm_readv fails with
 * EPERM (as container runtimes' default profiles may make it do), then
 * execs COMMAND. The filter is inherited by COMMAND and its children. Used
 * by tests/integration/test_faults.py to check pystitch's /proc/PID/mem
 * fallback. Exit 77 (skip) when seccomp is not available.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#endif

int main(int argc, char **argv) {
#ifdef ARCH
  struct sock_filter filter[] = {
      /* Another architecture's system call numbers mean other calls: let
       * them through (the test runs native binaries only). */
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & 0xffff)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {sizeof(filter) / sizeof(filter[0]), filter};

  if (argc < 2) {
    fprintf(stderr, "usage: no-vm-readv COMMAND [ARGS...]\n");
    return 2;
  }
  /* Needed to install a filter without CAP_SYS_ADMIN; also keeps a
   * set-uid COMMAND from gaining privileges under the filter. */
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
    fprintf(stderr, "no-vm-readv: seccomp: %s\n", strerror(errno));
    return 77;
  }
  execvp(argv[1], argv + 1);
  fprintf(stderr, "no-vm-readv: %s: %s\n", argv[1], strerror(errno));
  return 127;
#else
  (void)argc;
  (void)argv;
  fprintf(stderr, "no-vm-readv: unknown architecture\n");
  return 77;
#endif
}
