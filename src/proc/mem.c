/* mem.c: process_vm_readv reader of target memory, /proc/PID/mem fallback. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "proc/mem.h"
#include "util/log.h"

/* process_vm_readv takes at most IOV_MAX (1024) iovecs per side. */
#define BATCH_MAX 1024

void pst__mem_init(struct pst__mem *m, pid_t pid) {
  m->pid = pid;
  m->memfd = -1;
  m->reads = 0;
  m->image = NULL;
  m->image_n = 0;
  m->image_sorted = 0;
  m->record = NULL;
  m->record_arg = NULL;
}

void pst__mem_set_recorder(struct pst__mem *m, pst__mem_record_cb cb,
                           void *arg) {
  m->record = cb;
  m->record_arg = arg;
}

void pst__mem_init_image(struct pst__mem *m, const struct pst__mem_region *r,
                         size_t n) {
  pst__mem_init(m, 0);
  m->image = r;
  m->image_n = n;
  m->image_sorted = 1;
  for (size_t i = 1; i < n && m->image_sorted; i++)
    m->image_sorted =
        r[i].addr > r[i - 1].addr && r[i].addr - r[i - 1].addr >= r[i - 1].len;
}

/* Whether region r holds all of [addr, addr + len). Written with
 * subtractions: addr + len may wrap. */
static int region_holds(const struct pst__mem_region *r, uint64_t addr,
                        size_t len) {
  return addr >= r->addr && addr - r->addr <= r->len &&
         len <= r->len - (addr - r->addr);
}

/* Replay: copies [addr, addr + len) from the region that holds all of it. */
static int image_read(const struct pst__mem *m, uint64_t addr, void *buf,
                      size_t len) {
  const struct pst__mem_region *r = NULL;

  if (m->image_sorted) { /* the last region starting at or before addr */
    size_t lo = 0, hi = m->image_n;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (m->image[mid].addr <= addr)
        lo = mid + 1;
      else
        hi = mid;
    }
    if (lo && region_holds(&m->image[lo - 1], addr, len))
      r = &m->image[lo - 1];
  } else {
    for (size_t i = 0; i < m->image_n && !r; i++)
      if (region_holds(&m->image[i], addr, len))
        r = &m->image[i];
  }
  if (!r)
    return -EFAULT;
  if (len)
    memcpy(buf, (const char *)r->bytes + (addr - r->addr), len);
  return 0;
}

void pst__mem_exit(struct pst__mem *m) {
  if (m->memfd >= 0)
    close(m->memfd);
  m->memfd = -1;
}

/* Switches to /proc/pid/mem after process_vm_readv failed with EPERM or
 * ENOSYS although the process exists (seccomp filters answer so). */
static int enter_fallback(struct pst__mem *m, int why) {
  char path[64];

  snprintf(path, sizeof(path), "/proc/%d/mem", (int)m->pid);
  m->memfd = open(path, O_RDONLY | O_CLOEXEC);
  if (m->memfd < 0)
    return errno == ENOENT ? -ESRCH : -errno;
  pst__warn_once("process_vm_readv is not allowed (%s); reading target "
                 "memory through /proc/%d/mem instead (slower)",
                 why == ENOSYS ? "ENOSYS" : "EPERM", (int)m->pid);
  return 0;
}

static int pread_all(struct pst__mem *m, uint64_t addr, void *buf, size_t len) {
  ssize_t n;

  m->reads++;
  do
    n = pread(m->memfd, buf, len, (off_t)addr);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return errno == EIO ? -EFAULT : -errno;
  return (size_t)n == len ? 0 : -EFAULT;
}

/* Replay: the leading pieces that lie in the image, as the kernel would. */
static int image_readv(struct pst__mem *m, const struct pst__mem_iov *iov,
                       size_t n) {
  size_t i;

  m->reads++;
  for (i = 0; i < n; i++)
    if (image_read(m, iov[i].addr, iov[i].buf, iov[i].len))
      break;
  return (int)i;
}

/* The live read (process_vm_readv in batches, or /proc/PID/mem in fallback
 * mode): pst__mem_readv()'s contract. */
static int live_readv(struct pst__mem *m, const struct pst__mem_iov *iov,
                      size_t n) {
  struct iovec local[BATCH_MAX], remote[BATCH_MAX];
  size_t done = 0;

  while (done < n) {
    size_t k = n - done < BATCH_MAX ? n - done : BATCH_MAX, i;
    size_t want = 0;
    ssize_t got;

    /* k >= 1 here; cppcheck 2.10 takes it for 0 (a false positive). */
    if (m->memfd >= 0) {
      /* cppcheck-suppress knownConditionTrueFalse */
      for (i = 0; i < k; i++)
        if (pread_all(m, iov[done + i].addr, iov[done + i].buf,
                      iov[done + i].len))
          return (int)(done + i);
      done += k;
      continue;
    }
    /* cppcheck-suppress knownConditionTrueFalse */
    for (i = 0; i < k; i++) {
      local[i].iov_base = iov[done + i].buf;
      local[i].iov_len = iov[done + i].len;
      remote[i].iov_base = (void *)(uintptr_t)iov[done + i].addr;
      remote[i].iov_len = iov[done + i].len;
      want += iov[done + i].len;
    }
    m->reads++;
    got = process_vm_readv(m->pid, local, k, remote, k, 0);
    if (got < 0) {
      int e = errno;
      if (e == EINTR)
        continue;
      if (e == ESRCH)
        return -ESRCH;
      if ((e == EPERM || e == ENOSYS) && kill(m->pid, 0) == 0 &&
          enter_fallback(m, e) == 0)
        continue;
      return (int)done;
    }
    if ((size_t)got < want) {
      /* The kernel stops at the first piece it cannot read. */
      size_t sum = 0;
      for (i = 0; i < k; i++) {
        sum += iov[done + i].len;
        if (sum > (size_t)got)
          break;
      }
      return (int)(done + i);
    }
    done += k;
  }
  return (int)n;
}

int pst__mem_readv(struct pst__mem *m, const struct pst__mem_iov *iov,
                   size_t n) {
  int got;

  if (m->image)
    got = image_readv(m, iov, n);
  else
    got = live_readv(m, iov, n);
  if (got >= 0 && (size_t)got < n)
    m->fault_addr = iov[got].addr;
  if (m->image)
    return got;
  if (m->record)
    for (int i = 0; i < got; i++)
      m->record(m->record_arg, iov[i].addr, iov[i].buf, iov[i].len);
  return got;
}

int pst__mem_read(struct pst__mem *m, uint64_t addr, void *buf, size_t len) {
  struct pst__mem_iov iov = {addr, buf, len};
  int r;

  if (len == 0)
    return 0;
  r = pst__mem_readv(m, &iov, 1);
  return r == 1 ? 0 : r < 0 ? r : -EFAULT;
}

int pst__mem_readv_each(struct pst__mem *m, const struct pst__mem_iov *iov,
                        size_t n, uint8_t *ok) {
  size_t done = 0, good = 0;

  while (done < n) {
    int got = pst__mem_readv(m, iov + done, n - done);
    if (got < 0)
      return got;
    memset(ok + done, 1, (size_t)got);
    good += (size_t)got;
    done += (size_t)got;
    if (done < n)
      ok[done++] = 0; /* the piece that stopped the kernel */
  }
  return (int)good;
}

int pst__mem_read_u64(struct pst__mem *m, uint64_t addr, uint64_t *out) {
  return pst__mem_read(m, addr, out, sizeof(*out));
}
