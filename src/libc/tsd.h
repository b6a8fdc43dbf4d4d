/* tsd.h: the target libc's thread-specific data (pthread_getspecific), found
 * once per process and then emulated per thread with plain memory reads.
 *
 * pst_tsd_analyse() finds the libc of the target in its maps (glibc or musl,
 * or the executable itself when libc is linked in statically), decodes its
 * pthread_getspecific with the disassembler, cross-checks against glibc's
 * _thread_db_* descriptors where present, and falls back to the known default
 * for the libc family, saying which it used in method.
 */
#ifndef PST_TSD_H
#define PST_TSD_H

#include <stdint.h>
#include <sys/types.h>

#include "disasm/disasm.h"
#include "proc/maps.h"
#include "proc/mem.h"

struct pst_tsd {
  struct pst_tsd_layout layout;
  char libc_path[512];  /* as the target sees it */
  char method[160];     /* how the layout was found, for `info` */
  int is_musl;
  int l2_only;          /* only the level-2 path is known (from _thread_db:
                           specific[0] points at specific_1stblock, so it
                           serves every key) */
};

/* 1 when the process is dynamically linked and its loader has not mapped
 * libc yet (a command or an exec caught starting: nothing about its
 * threads or its interpreter can be known yet), else 0. */
int pst_tsd_loading(const struct pst_maps *maps);

/* Fills *tsd. Returns 0 or PST_ENOTSD (no libc found and no usable default);
 * never guesses silently: a fallback is logged and named in tsd->method. */
int pst_tsd_analyse(pid_t pid, const struct pst_maps *maps,
                    enum pst_arch arch, struct pst_tsd *tsd);

/* Emulates pthread_getspecific(key) for the thread whose thread pointer is
 * tp. Returns 0 with *value (possibly 0: the slot is empty), or -EFAULT. */
int pst_tsd_get(const struct pst_tsd *tsd, struct pst_mem *mem, uint64_t tp,
                unsigned key, uint64_t *value);

#endif
