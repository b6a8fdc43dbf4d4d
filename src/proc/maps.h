/* maps.h: a process's memory mappings (/proc/PID/maps) and opening the files
 * behind them from outside the target's mount namespace.
 *
 * struct pst__maps owns its array and the path strings; entries are sorted by
 * address (the kernel lists them so) and found with bsearch.
 */
#ifndef PST_MAPS_H
#define PST_MAPS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define PST_MAP_R 1
#define PST_MAP_W 2
#define PST_MAP_X 4

struct pst__map {
  uint64_t start, end; /* [start, end) */
  uint64_t offset;     /* file offset of start */
  unsigned perms;      /* PST_MAP_* */
  unsigned dev_major, dev_minor;
  uint64_t inode;
  char *path; /* "" for anonymous mappings */
};

struct pst__maps {
  struct pst__map *v;
  size_t n;
};

/* Reads /proc/pid/maps into *m (initialised here). 0 or -errno. */
int pst__maps_load(pid_t pid, struct pst__maps *m);
/* The same from an open maps file (or any stream of its text): 0, -ENOMEM,
 * or -EINVAL for a line that is not a mapping (start >= end included) or
 * one that does not follow the previous one (unsorted, overlapping). On
 * failure *m is empty. */
int pst__maps_read(FILE *f, struct pst__maps *m);
void pst__maps_exit(struct pst__maps *m);

/* The mapping containing addr, or NULL. Borrowed. */
const struct pst__map *pst__maps_find(const struct pst__maps *m, uint64_t addr);

/* The first file mapping whose base name satisfies match(basename), or NULL.
 * Borrowed. */
const struct pst__map *pst__maps_find_file(const struct pst__maps *m,
                                           int (*match)(const char *base));

/* The lowest mapping of the same file as mp (its load base), borrowed. */
const struct pst__map *pst__maps_file_base(const struct pst__maps *m,
                                           const struct pst__map *mp);

/* Opens the file behind mapping mp of process pid read-only: through
 * /proc/pid/map_files/START-END, else its path inside the target's root
 * (proc/rootfs.h: never a host path, never a FIFO or device), and checks
 * that its device and inode match the maps line. Returns an fd the caller
 * closes, or -errno (-EINVAL: not a regular file; -ESTALE: another file). */
int pst__maps_open(pid_t pid, const struct pst__map *mp);

#endif
