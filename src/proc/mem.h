/* mem.h: the one reader of target memory.
 *
 * Every read of the target goes through pst__mem_read()/pst__mem_readv():
 * process_vm_readv, or /proc/PID/mem when process_vm_readv is forbidden
 * (seccomp, some container runtimes), announced once. Never writes.
 *
 * A struct pst__mem is embedded by its owner: pst__mem_init()/pst__mem_exit().
 * Not thread-safe; one per target.
 *
 * Replay: pst__mem_init_image() makes the same reader serve reads from a
 * memory image held by the caller (regions of bytes at target addresses)
 * instead of a process, so that the frame walker, the code and string
 * readers and the TSD emulation can run on a captured or synthetic image
 * (unit tests, the fuzz/ harnesses). It is one pointer test per batch on
 * the live path; nothing else in the reader changes.
 *
 * Recording: pst__mem_set_recorder() has every piece a live read filled
 * passed to a callback, so that a capture tool (tools/capture-image.c) can
 * save exactly what a walk read as an image to replay (tests/fixtures/).
 * One more pointer test per batch; nothing else changes.
 */
#ifndef PST_MEM_H
#define PST_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One region of a memory image: len bytes that the target has at addr. */
struct pst__mem_region {
  uint64_t addr;
  const void *bytes;
  size_t len;
};

/* Told of len bytes read at target address addr (buf: the caller's copy,
 * valid during the call only). */
typedef void (*pst__mem_record_cb)(void *arg, uint64_t addr, const void *buf,
                                   size_t len);

struct pst__mem {
  pid_t pid;
  int memfd;           /* /proc/pid/mem when in fallback mode, else -1 */
  uint64_t reads;      /* syscalls made, for the benchmarks */
  uint64_t fault_addr; /* start of the last piece that could not be read
                          (diagnostics: which address a sample lost) */
  const struct pst__mem_region *image; /* replay regions, or NULL (live) */
  size_t image_n;
  int image_sorted; /* regions in address order, none overlapping: bisect */
  pst__mem_record_cb record; /* told of every piece read live, or NULL */
  void *record_arg;
};

/* One piece of a batched read: len bytes at addr into buf. */
struct pst__mem_iov {
  uint64_t addr;
  void *buf;
  size_t len;
};

/* Prepares m to read process pid (nothing is opened until needed);
 * pst__mem_exit() closes the /proc/pid/mem fallback if it was opened. */
void pst__mem_init(struct pst__mem *m, pid_t pid);
void pst__mem_exit(struct pst__mem *m);

/* Prepares m to read the n regions instead of a process (borrowed: they
 * must outlive m). A read succeeds when it lies wholly inside one region,
 * else fails with -EFAULT as an unmapped page would. Regions in address
 * order that do not overlap are found by bisection, others by a scan in
 * order (the first that holds the read serves it). pst__mem_exit() is a
 * no-op on such a reader. */
void pst__mem_init_image(struct pst__mem *m, const struct pst__mem_region *r,
                         size_t n);

/* Calls cb(arg, ...) for every piece a live read of m fills from now on,
 * in the order read (pieces a batch could not read are not passed); NULL
 * stops it. Replay reads are not passed. */
void pst__mem_set_recorder(struct pst__mem *m, pst__mem_record_cb cb,
                           void *arg);

/* Reads exactly len bytes. 0, -EFAULT (unmapped or short), -ESRCH. */
int pst__mem_read(struct pst__mem *m, uint64_t addr, void *buf, size_t len);

/* Reads n pieces (n <= INT_MAX) in one syscall where possible. Returns the
 * number of leading pieces fully read (n when all were: pieces from the
 * first unreadable one on are not valid), or -ESRCH. */
int pst__mem_readv(struct pst__mem *m, const struct pst__mem_iov *iov,
                   size_t n);

/* Like pst__mem_readv() but reads past a piece it cannot read: ok[i] is
 * set to 1 for every piece fully read, 0 otherwise (one extra syscall per
 * unreadable piece). For speculative batches whose pieces may be stale.
 * Returns the number of pieces read, or -ESRCH. */
int pst__mem_readv_each(struct pst__mem *m, const struct pst__mem_iov *iov,
                        size_t n, uint8_t *ok);
/* Convenience: one 8-byte little-endian word. */
int pst__mem_read_u64(struct pst__mem *m, uint64_t addr, uint64_t *out);

#endif
