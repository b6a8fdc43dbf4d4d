/* unwind.h: native (C) stacks of a stopped thread of another process,
 * unwound by libunwind through pystitch's own accessors.
 *
 * One struct pst__unwinder per target process. It keeps the process's
 * mappings, a reference to each mapped file's module (module.h: local
 * read-only image, .eh_frame_hdr table, shared between processes by device
 * and inode), a copy of the [vdso], and a libunwind address space whose
 * register-state cache lives as long as the unwinder. Per unwind it reads
 * the registers once (PTRACE_GETREGS) and the stack through a page cache
 * filled by process_vm_readv (struct pst__mem) in batches of pages; code and
 * unwind tables are read from the local images, never from the target.
 *
 * Ownership: pst__unwinder_new() returns an unwinder freed by
 * pst__unwinder_free(). The struct pst__mem is borrowed (the caller owns it
 * and keeps it alive and for the same pid); the module cache passed in (or
 * a private one when NULL) gets one more reference, dropped at free.
 * Strings and images returned by pst__unwinder_module() are borrowed, valid
 * until the next pst__unwind_thread()/pst__unwinder_refresh() (a maps reload
 * may drop a module) or pst__unwinder_free().
 *
 * Threads: not thread-safe. Use an unwinder from the thread that stopped
 * the target thread (ptrace's rule); its libunwind cache is then used by
 * one thread only, which is what lets it run without libunwind's lock
 * (see PST_UNWIND_CACHE_UNLOCKED).
 *
 * Architectures: x86_64. On other hosts every call returns -ENOSYS (the
 * register mapping is the only architecture-specific part, in unwind.c).
 */
#ifndef PST_NATIVE_UNWIND_H
#define PST_NATIVE_UNWIND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct pst__mem;
struct pst__modcache;
struct pst__unwinder;

/* How libunwind caches the register state it computes per IP. */
enum pst__unwind_cache {
  /* UNW_CACHE_NONE: every frame searches the table and parses its FDE and
   * CIE again (and libunwind allocates from its locked mempool per frame). */
  PST_UNWIND_CACHE_NONE,
  /* UNW_CACHE_GLOBAL: the address space's cache, behind a mutex that
   * libunwind takes with all signals blocked: two rt_sigprocmask calls per
   * frame in Debian's build. */
  PST_UNWIND_CACHE_LOCKED,
  /* UNW_CACHE_PER_THREAD: in a libunwind built without
   * --enable-per-thread-cache (Debian's), the same per-address-space cache
   * without the lock, hence without syscalls; correct because one thread
   * uses an unwinder. 1.6.2's unw_set_caching_policy() refuses it, so the
   * field is set directly once its offset is proven (unwind.c). The
   * default. */
  PST_UNWIND_CACHE_UNLOCKED,
};

/* Counters since pst__unwinder_new, for benchmarks and stats. */
struct pst__unwind_stats {
  uint64_t unwinds;      /* pst__unwind_thread calls that returned >= 1 */
  uint64_t frames;       /* frames returned */
  uint64_t errors;       /* unwinds ended by a libunwind error */
  uint64_t cycles;       /* unwinds ended by a non-advancing sp/ip */
  uint64_t truncated;    /* unwinds that hit max */
  uint64_t stack_reads;  /* process_vm_readv batches for stack pages */
  uint64_t maps_reloads; /* /proc/PID/maps reloads after the first */
  uint64_t table_misses; /* IPs outside every module with a table */
  uint64_t image_faults; /* unwinds failed by a module truncated meanwhile */
};

/* Creates the unwinder of process pid. mem reads pid's memory (borrowed);
 * cache is shared with other unwinders and the symbol side, or NULL for a
 * private one. Loads /proc/PID/maps, opens the mapped files lazily.
 * Returns 0 and *out, -ESRCH, -ENOMEM, -ENOSYS (architecture), or another
 * -errno. */
int pst__unwinder_new(pid_t pid, struct pst__mem *mem,
                      struct pst__modcache *cache, struct pst__unwinder **out);
/* Frees u and drops its module references. NULL is ignored. */
void pst__unwinder_free(struct pst__unwinder *u);

/* Chooses libunwind's caching policy (and flushes its cache). 0, -EINVAL,
 * or -ENOTSUP when PST_UNWIND_CACHE_UNLOCKED cannot be set in this
 * libunwind (the locked cache is then in use, which is correct). */
int pst__unwinder_set_cache(struct pst__unwinder *u, enum pst__unwind_cache c);

/* Unwinds thread tid of the process, which the caller has stopped with
 * pst__ptrace_stop() and resumes afterwards (nothing here stops or resumes
 * it). Fills ips[0..n) innermost first: ips[0] is the thread's pc, the
 * others return addresses as libunwind reports them (subtract 1 before a
 * symbol lookup of a non-signal frame). sps[i] (sps may be NULL) is the
 * frame's stack pointer (the CFA of the frame below), for the merge with
 * Python frames. At most max frames (max >= 1).
 *
 * Returns n >= 1, or -errno when not even the registers could be read
 * (-ESRCH: thread gone or not stopped). An unwind that fails midway (no
 * unwind info, an unreadable stack page, a stack pointer going down or an
 * ip/sp pair repeating) returns the frames found so far, which is never
 * less than 1. */
int pst__unwind_thread(struct pst__unwinder *u, pid_t tid, uint64_t *ips,
                       uint64_t *sps, int max);

/* The same for a thread that is not stopped but blocked (off every CPU),
 * from the stack pointer and program counter /proc/.../syscall gave
 * (pst__proc_syscall_fd()): its other registers are not known. Returns n
 * as above, or -EAGAIN when a frame's rule needed one of them (a frame
 * pointer kept from before the block: stop it and pst__unwind_thread()
 * instead). The caller checks that the thread did not run meanwhile (its
 * stack may have moved), as nothing holds it still. */
int pst__unwind_blocked(struct pst__unwinder *u, pid_t tid, uint64_t sp,
                        uint64_t pc, uint64_t *ips, uint64_t *sps, int max);

/* The mapping of ip in the process: path as the target sees it ("[vdso]"
 * for the vdso), load bias (file vaddr = ip - bias) and the module's whole
 * ELF image for symbol lookup. Any out pointer may be NULL. Returns 0 or
 * -ENOENT (ip in no file mapping, a writable one, or one whose file could
 * not be opened; the cause is logged at debug level). Borrowed results:
 * see the ownership note above. */
int pst__unwinder_module(struct pst__unwinder *u, uint64_t ip,
                         const char **path, uint64_t *bias, const void **image,
                         size_t *image_len);

/* Symbolises ip (subtract 1 from a return address first): *func is the
 * function containing it (demangled, borrowed like the module's strings)
 * and *offset the offset into it, or, without a symbol, *func NULL and
 * *offset the file-relative address; *path the mapping's path (NULL when
 * ip is in no mapping). 0 when a symbol was found, -EINPROGRESS when the
 * module's table is being built in the background (module.h; wait: wait
 * for it instead), else -ENOENT. */
int pst__unwinder_symbol(struct pst__unwinder *u, uint64_t ip, int wait,
                         const char **func, uint64_t *offset,
                         const char **path);

/* Reloads /proc/PID/maps now (dlopen, dlclose, exec): new files are
 * picked up, gone ones released, and libunwind's cache flushed if a
 * mapping changed. Unwinds also do this by themselves, at most every
 * PST_UNWIND_RELOAD_MS, when an IP is in no known mapping. 0 or -errno
 * (the previous maps are then kept). */
int pst__unwinder_refresh(struct pst__unwinder *u);

/* Minimum interval between two automatic maps reloads. */
#define PST_UNWIND_RELOAD_MS 100

/* The counters. */
void pst__unwinder_stats(const struct pst__unwinder *u,
                         struct pst__unwind_stats *out);

#endif
