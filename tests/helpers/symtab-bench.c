/* symtab-bench.c: build time, size and lookup speed of pst__symtab on ELF
 * files given as arguments (figures for docs/performance.md).
 * usage: symtab-bench FILE...   (prints one line per file)
 * Times are CPU times: build is the median of 5 builds, lookup the mean of
 * 1e6 lookups at random addresses of .text; heap peak is the growth of the
 * process's RSS high-water mark during the first build (the image is
 * faulted in before), so it is meaningful for the first file only. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "elf/elf.h"
#include "native/symtab.h"

#define BUILDS 5
#define LOOKUPS 1000000

/* CPU time of this thread: on a shared machine, wall time would also count
 * the time other processes ran instead of us. */
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* VmHWM or VmRSS of this process in KiB. */
static long status_kib(const char *key) {
  char line[256];
  long v = -1;
  FILE *f = fopen("/proc/self/status", "r");

  if (!f)
    return -1;
  while (fgets(line, sizeof(line), f))
    if (!strncmp(line, key, strlen(key)))
      v = strtol(line + strlen(key) + 1, NULL, 10);
  fclose(f);
  return v;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int bench(const char *path) {
  struct pst__symtab *t = NULL;
  struct stat st;
  double ms[BUILDS], t0;
  volatile unsigned sink = 0;
  long hwm0, hwm1;
  struct pst__elf *e;
  uint64_t lo, hi, x = 88172645463325252ull, off, found = 0;
  const unsigned char *img;
  int fd = open(path, O_RDONLY | O_CLOEXEC), err;

  if (fd < 0 || fstat(fd, &st) < 0) {
    perror(path);
    return 1;
  }
  img = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (img == MAP_FAILED) {
    perror(path);
    return 1;
  }
  /* Fault the whole image in first: the high-water mark then grows by the
   * builder's heap alone. */
  for (off_t i = 0; i < st.st_size; i += 4096)
    sink += img[i];
  hwm0 = status_kib("VmHWM:");
  for (int i = 0; i < BUILDS; i++) {
    if (t)
      pst__symtab_free(t);
    t0 = now_ms();
    err = pst__symtab_build(img, (size_t)st.st_size, &t);
    ms[i] = now_ms() - t0;
    if (err) {
      fprintf(stderr, "%s: build failed: %d\n", path, err);
      return 1;
    }
    if (i == 0)
      hwm1 = status_kib("VmHWM:");
  }
  qsort(ms, BUILDS, sizeof(ms[0]), cmp_double);
  /* Lookups at pseudo-random addresses of .text. */
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || pst__elf_open(fd, &e) ||
      pst__elf_section(e, ".text", &lo, &hi)) {
    fprintf(stderr, "%s: no .text\n", path);
    return 1;
  }
  pst__elf_close(e);
  t0 = now_ms();
  for (int i = 0; i < LOOKUPS; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    if (pst__symtab_lookup(t, lo + x % hi, &off))
      found++;
  }
  printf("%-60s entries %8zu table %9zu B build %8.2f ms (median of %d) "
         "heap peak %6ld KiB lookup %6.1f ns (%.0f%% hit)\n",
         path, pst__symtab_count(t), pst__symtab_memory(t), ms[BUILDS / 2],
         BUILDS, hwm1 - hwm0, (now_ms() - t0) * 1e6 / LOOKUPS,
         100.0 * (double)found / LOOKUPS);
  pst__symtab_free(t);
  munmap((void *)img, (size_t)st.st_size);
  return 0;
}

int main(int argc, char **argv) {
  int rc = 0;

  for (int i = 1; i < argc; i++)
    rc |= bench(argv[i]);
  return rc;
}
