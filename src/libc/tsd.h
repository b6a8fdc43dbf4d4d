/* tsd.h: the target libc's thread-specific data (pthread_getspecific), found
 * once per process and then emulated per thread with plain memory reads.
 *
 * pst__tsd_analyse() finds the libc of the target in its maps (glibc or musl,
 * or the executable itself when libc is linked in statically), decodes its
 * pthread_getspecific with the disassembler, cross-checks against glibc's
 * _thread_db_* descriptors where present, and falls back to the known default
 * for the libc family, saying which it used in method. It also finds where
 * glibc keeps each thread's start routine (pst__tsd_start_routine), saying
 * how in start_method.
 */
#ifndef PST_TSD_H
#define PST_TSD_H

#include <stdint.h>
#include <sys/types.h>

#include "disasm/disasm.h"
#include "proc/maps.h"
#include "proc/mem.h"

struct pst__debuginfo_where;
struct pst__elf;

struct pst__tsd {
  struct pst__tsd_layout layout;
  char libc_path[512]; /* as the target sees it */
  char method[160];    /* how the layout was found, for `info` */
  int is_musl;
  int l2_only; /* only the level-2 path is known (from _thread_db:
                           specific[0] points at specific_1stblock, so it
                           serves every key) */
  /* Thread start routines (pst__tsd_start_routine). */
  int has_start;          /* start_offset is known */
  int64_t start_offset;   /* glibc's struct pthread start_routine, from the
                           thread pointer; its arg is the next word */
  char start_method[160]; /* how start_offset was found, or why it is
                             unknown, for `info` */
};

/* 1 when the process is dynamically linked and its loader has not mapped
 * libc yet (a command or an exec caught starting: nothing about its
 * threads or its interpreter can be known yet), else 0. */
int pst__tsd_loading(const struct pst__maps *maps);

/* Fills *tsd. Returns 0 or PST_ENOTSD (no libc found and no usable default);
 * never guesses silently: a fallback is logged and named in tsd->method. */
int pst__tsd_analyse(pid_t pid, const struct pst__maps *maps,
                     enum pst__arch arch, struct pst__tsd *tsd);

/* The part of pst__tsd_analyse() that reads no /proc: the layout and the
 * start routine's from e, the target's libc (or libpthread.so.0), already
 * open. The caller has zeroed *tsd and set libc_path and is_musl; w says
 * where e's separate debug file is looked for (its path, the target whose
 * root is searched, the debug directories). Fills the rest of *tsd. 0, or
 * PST_EBADDATA when e's file was truncated while read (what was decoded
 * from it is not to be used). e stays the caller's. */
int pst__tsd_analyse_elf(const struct pst__elf *e,
                         const struct pst__debuginfo_where *w,
                         enum pst__arch arch, struct pst__tsd *tsd);

/* The start routine of the thread whose thread pointer is tp (fsbase on
 * x86_64, tpidr_el0 on aarch64): the function its pthread_create() was
 * given, read from glibc's struct pthread (start_routine, then arg), whose
 * offset pst__tsd_analyse() took from libthread_db's descriptor
 * _thread_db_pthread_start_routine (glibc >= 2.34: a GLIBC_PRIVATE dynamic
 * symbol of libc.so.6; before, in libpthread.so.0's .symtab, or in its
 * separate debug file). Two memory reads at most, no ptrace.
 * Returns 0 with *fn (a target address; 0 for the main thread, which no
 * pthread_create started) and *arg (if non-NULL: the argument it was
 * given), -ENOSYS when the libc's layout is unknown (musl keeps no start
 * routine in its struct pthread; tsd->start_method says why), or -EFAULT /
 * -ESRCH from the read. */
int pst__tsd_start_routine(const struct pst__tsd *tsd, struct pst__mem *mem,
                           uint64_t tp, uint64_t *fn, uint64_t *arg);

/* Emulates pthread_getspecific(key) for the thread whose thread pointer is
 * tp. Returns 0 with *value (possibly 0: the slot is empty), or -EFAULT. */
int pst__tsd_get(const struct pst__tsd *tsd, struct pst__mem *mem, uint64_t tp,
                 unsigned key, uint64_t *value);

#endif
