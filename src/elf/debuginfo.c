/* debuginfo.c: separate debug files (build-id and .gnu_debuglink) of
 * stripped ELF images, found and verified as gdb does (debuginfo.h).
 *
 * The image and every candidate are untrusted: notes and the link are
 * parsed with bounds checks against their section's size. No state is kept
 * between calls: the callers (native/module.c, libc/tsd.c) remember what
 * they found. In elf/, below both of them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "elf/debuginfo.h"
#include "elf/elf.h"
#include "proc/rootfs.h"
#include "pystitch.h"
#include "util/log.h"

/* ELF note type of the GNU build-id (elf.h's NT_GNU_BUILD_ID). */
#define NOTE_GNU_BUILD_ID 3
/* Longest build-id accepted: ld writes 20 bytes (sha1) by default, 16 for
 * md5/uuid; --build-id=0x... can be anything, bounded here. */
#define MAX_BUILD_ID 64
/* At most this many debug directories are searched. */
#define MAX_DIRS 8
#define DEFAULT_DIRS "/usr/lib/debug"

/* What a candidate must match. */
struct want {
  const uint8_t *id; /* the image's build-id, or NULL */
  size_t id_len;
  const char *link; /* the .gnu_debuglink name, or NULL */
  uint32_t crc;
  int machine;
  const struct pst__debuginfo_where *w;
};

static uint32_t get_u32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4); /* notes are in the file's byte order: the host's */
  return v;
}

static size_t align4(size_t n) { return (n + 3) & ~(size_t)3; }

int pst__debuginfo_build_id(const struct pst__elf *e, const uint8_t **id,
                            size_t *len) {
  uint64_t size = 0;
  const uint8_t *p = pst__elf_section_bytes(e, ".note.gnu.build-id", &size);

  /* Each note: namesz, descsz, type, then the name and the descriptor,
   * each padded to 4 bytes (ELF64 notes on Linux use 4, like ELF32). */
  while (p && size >= 12) {
    uint32_t namesz = get_u32(p), descsz = get_u32(p + 4),
             type = get_u32(p + 8);
    uint64_t name_room = align4(namesz), desc_room = align4(descsz);
    if (namesz > size || descsz > size || 12 + name_room > size ||
        desc_room > size - 12 - name_room)
      break;
    if (type == NOTE_GNU_BUILD_ID && namesz == 4 && !memcmp(p + 12, "GNU", 4) &&
        descsz >= 1 && descsz <= MAX_BUILD_ID) {
      *id = p + 12 + name_room;
      *len = descsz;
      return 0;
    }
    p += 12 + name_room + desc_room;
    size -= 12 + name_room + desc_room;
  }
  return PST_ENOSYM;
}

int pst__debuginfo_debuglink(const struct pst__elf *e, const char **name,
                             uint32_t *crc) {
  uint64_t size = 0;
  const char *p = pst__elf_section_bytes(e, ".gnu_debuglink", &size);
  size_t n, at;

  /* The file name, NUL-terminated, padded to 4 bytes, then its CRC-32
   * (binutils' bfd_create_gnu_debuglink_section). */
  if (!p || size < 5)
    return PST_ENOSYM;
  n = strnlen(p, size);
  if (n == 0 || n == size || memchr(p, '/', n) || !strcmp(p, ".") ||
      !strcmp(p, ".."))
    return PST_ENOSYM;
  at = align4(n + 1);
  if (at > size || size - at < 4)
    return PST_ENOSYM;
  *name = p;
  *crc = get_u32((const uint8_t *)p + at);
  return 0;
}

uint32_t pst__debuginfo_crc32(const void *buf, size_t len) {
  const Bytef *p = buf;
  uLong c = crc32(0L, Z_NULL, 0);

  /* zlib takes a uInt length: feed it in pieces. */
  while (len > 0) {
    uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;
    c = crc32(c, p, n);
    p += n;
    len -= n;
  }
  return (uint32_t)c;
}

/* Opens path, inside the root rootfd (proc/rootfs.h: a regular file, no
 * FIFO or device opened, no symlink out of that root), when it is the
 * debug file wanted. 0 with *out, -ENOENT when it does not exist or does
 * not match (logged), -ENOMEM. */
static int try_file(int rootfd, const char *path, const struct want *wt,
                    int by_link, struct pst__elf **out) {
  struct pst__elf *d = NULL;
  struct stat st;
  const uint8_t *id;
  size_t id_len, len;
  const void *img;
  int fd, err;

  fd = pst__root_openat(rootfd, path, &st);
  if (fd < 0) {
    if (fd != -ENOENT && fd != -ENOTDIR)
      pst__debug("debuginfo: %s: %s", path, pst_strerror(fd));
    return -ENOENT;
  }
  if (wt->w->inode && st.st_ino == wt->w->inode && st.st_dev == wt->w->dev) {
    close(fd); /* the image itself */
    return -ENOENT;
  }
  err = pst__elf_open(fd, &d); /* owns fd now */
  if (err) {
    pst__debug("debuginfo: %s: %s", path, pst_strerror(err));
    return err == -ENOMEM ? err : -ENOENT;
  }
  if (pst__elf_machine(d) != wt->machine) {
    pst__debug("debuginfo: %s: another machine", path);
    goto refuse;
  }
  if (wt->id) {
    if (pst__debuginfo_build_id(d, &id, &id_len) || id_len != wt->id_len ||
        memcmp(id, wt->id, id_len)) {
      pst__debug("debuginfo: %s: build-id differs", path);
      goto refuse;
    }
  }
  if (by_link) {
    img = pst__elf_image(d, &len);
    if (pst__debuginfo_crc32(img, len) != wt->crc) {
      pst__debug("debuginfo: %s: CRC-32 differs from .gnu_debuglink's", path);
      goto refuse;
    }
  }
  *out = d;
  return 0;
refuse:
  pst__elf_close(d);
  return -ENOENT;
}

/* Writes the formatted path into buf; 0, or -ENAMETOOLONG. */
static int join(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int join(char *buf, size_t len, const char *fmt, ...) {
  va_list ap;
  int n;

  va_start(ap, fmt);
  n = vsnprintf(buf, len, fmt, ap);
  va_end(ap);
  return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Root descriptors to search: roots[0] the target's (when it has one that
 * differs from ours), roots[1] ours; -1 where none. */
static void open_roots(pid_t pid, int roots[2]) {
  struct stat ours, theirs;

  roots[0] = -1;
  roots[1] = pst__root_open(0);
  if (pid <= 0)
    return;
  roots[0] = pst__root_open(pid);
  if (roots[0] < 0 || roots[1] < 0)
    return; /* gone, or not ours to see: our root's debug dirs only */
  if (fstat(roots[0], &theirs) == 0 && fstat(roots[1], &ours) == 0 &&
      theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino) {
    close(roots[0]); /* the same root: search it once */
    roots[0] = -1;
  }
}

/* Splits the debug directories into dirs[] (pointers into s, with
 * lengths). Returns how many. */
static int split_dirs(const char *s, const char **dirs, int *lens) {
  int n = 0;

  while (*s && n < MAX_DIRS) {
    const char *end = strchr(s, ':');
    size_t l = end ? (size_t)(end - s) : strlen(s);
    while (l > 1 && s[l - 1] == '/')
      l--; /* "/usr/lib/debug/" */
    if (l > 0 && s[0] == '/' && l < PATH_MAX) {
      dirs[n] = s;
      lens[n++] = (int)l;
    }
    if (!end)
      break;
    s = end + 1;
  }
  return n;
}

int pst__debuginfo_open(const struct pst__elf *e,
                        const struct pst__debuginfo_where *w,
                        struct pst__elf **out, char *found, size_t found_len,
                        enum pst__debuginfo_how *how) {
  const char *dirs_s = w->dirs ? w->dirs : getenv("PST_DEBUG_DIRS");
  const char *dirs[MAX_DIRS];
  int lens[MAX_DIRS], ndirs, roots[2];
  char hex[2 * MAX_BUILD_ID + 1], path[PATH_MAX];
  const char *slash = w->path ? strrchr(w->path, '/') : NULL;
  int mod_len = slash ? (int)(slash - w->path) : 0;
  struct want wt = {.machine = pst__elf_machine(e), .w = w};
  int err = -ENOENT, r;

  if (!dirs_s)
    dirs_s = DEFAULT_DIRS;
  ndirs = split_dirs(dirs_s, dirs, lens);
  if (pst__debuginfo_build_id(e, &wt.id, &wt.id_len))
    wt.id = NULL;
  if (pst__debuginfo_debuglink(e, &wt.link, &wt.crc))
    wt.link = NULL;
  if (!wt.id && !wt.link)
    return -ENOENT;
  if (wt.id)
    for (size_t i = 0; i < wt.id_len; i++)
      snprintf(hex + 2 * i, 3, "%02x", wt.id[i]);
  open_roots(w->pid, roots);
  /* Roots: the target's (when it has its own), then ours. */
  for (r = 0; wt.id && r < 2; r++) {
    for (int d = 0; roots[r] >= 0 && d < ndirs; d++) {
      if (join(path, sizeof(path), "%.*s/.build-id/%.2s/%s.debug", lens[d],
               dirs[d], hex, hex + 2))
        continue;
      err = try_file(roots[r], path, &wt, 0, out);
      if (err != -ENOENT) {
        if (how)
          *how = PST_DEBUGINFO_BUILD_ID;
        goto done;
      }
    }
  }
  /* The image's own directory (MOD) is the target's: in our root only
   * when the target shares it; our debug directories hold MOD's copy. */
  for (r = 0; wt.link && slash && r < 2; r++) {
    int own = r == 0 || roots[0] < 0;
    for (int k = own ? 0 : 2; roots[r] >= 0 && k < 2 + ndirs; k++) {
      if (k == 0)
        err = join(path, sizeof(path), "%.*s/%s", mod_len, w->path, wt.link);
      else if (k == 1)
        err = join(path, sizeof(path), "%.*s/.debug/%s", mod_len, w->path,
                   wt.link);
      else
        err = join(path, sizeof(path), "%.*s%.*s/%s", lens[k - 2], dirs[k - 2],
                   mod_len, w->path, wt.link);
      if (err)
        continue;
      err = try_file(roots[r], path, &wt, 1, out);
      if (err != -ENOENT) {
        if (how)
          *how = PST_DEBUGINFO_DEBUGLINK;
        goto done;
      }
    }
  }
  err = -ENOENT;
done:
  if (err == 0 && found) {
    if (r == 0 && roots[0] >= 0)
      snprintf(found, found_len, "/proc/%d/root%s", (int)w->pid, path);
    else
      snprintf(found, found_len, "%s", path);
  }
  for (r = 0; r < 2; r++)
    if (roots[r] >= 0)
      close(roots[r]);
  return err;
}
