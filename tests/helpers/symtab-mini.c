/* symtab-mini.c: a program whose local function is found only through its
 * MiniDebugInfo once stripped (tests/unit/test-symtab.c builds it, then
 * tests/helpers/make-minidebuginfo.sh), plus a function without an ELF size. */
#include <stdio.h>

/* A symbol of size 0 (no .size directive): pst__symtab gives it the room up
 * to the next symbol. */
__asm__(".text\n"
        ".globl symtab_zero_size\n"
        ".type symtab_zero_size, @function\n"
        "symtab_zero_size:\n"
        "  nop\n  nop\n  nop\n  nop\n"
        "  ret\n");

static __attribute__((noinline)) int symtab_local_fn(int x) {
  volatile int v = x;
  return v * 7 + 3;
}

int main(int argc, char **argv) {
  (void)argv;
  printf("%d\n", symtab_local_fn(argc));
  return 0;
}
