/* fuzz_proc.c: libFuzzer harness for the /proc text parsers (src/proc/proc.c,
 * src/proc/maps.c). The first byte picks the file, the rest is its text:
 * maps (through a memory stream, as pst__maps_load reads the file; then the
 * lookups every user makes), status, stat (the state and start time of a
 * thread, and a process's image), schedstat, environ (the RANK variables),
 * cmdline, cgroup (the container's name), a children list and a blocked
 * thread's syscall line (its stack and program counter for --native). A target
 * writes its own comm, command line, environment, file names and, in a
 * container, cgroup names: none of it may do more than fail to parse.
 * Seeds: these files of real Python processes, plus hostile variants. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc/maps.h"
#include "proc/proc.h"

enum {
  F_MAPS,
  F_STATUS,
  F_STAT,
  F_SCHEDSTAT,
  F_ENVIRON,
  F_CMDLINE,
  F_CGROUP,
  F_CHILDREN,
  F_SYSCALL,
  F_COUNT
};

static int is_libpython(const char *base) {
  return !strncmp(base, "libpython", 9);
}

static void fuzz_maps(const char *text, size_t len) {
  struct pst__maps m;
  const struct pst__map *mp;
  FILE *f;

  if (!len)
    return; /* fmemopen refuses an empty buffer; so does the kernel's file */
  f = fmemopen((void *)text, len, "r");
  if (!f)
    return;
  if (pst__maps_read(f, &m) == 0) {
    for (size_t i = 0; i < m.n; i++) {
      const struct pst__map *v = &m.v[i];
      if (v->start >= v->end || (i && v->start < m.v[i - 1].end))
        abort(); /* accepted maps must be sorted and apart */
      if (pst__maps_find(&m, v->start) != v ||
          pst__maps_find(&m, v->end - 1) != v)
        abort();
      if (pst__maps_file_base(&m, v) > v)
        abort(); /* the base is the lowest mapping of its file */
      if (strlen(v->path) >= len)
        abort();
    }
    (void)pst__maps_find(&m, 0);
    (void)pst__maps_find(&m, UINT64_MAX);
    mp = pst__maps_find_file(&m, is_libpython);
    if (mp && mp->path[0] != '/')
      abort();
    pst__maps_exit(&m);
  } else if (m.n || m.v) {
    abort(); /* a failure leaves nothing behind */
  }
  fclose(f);
}

static void fuzz_text(int kind, char *text, size_t len) {
  switch (kind) {
  case F_STATUS: {
    struct pst__proc_status st;
    if (pst__proc_parse_status(text, 4242, &st) == 0 &&
        (strlen(st.name) >= sizeof(st.name) || st.tgid < 0 || st.ppid < 0 ||
         st.tracer < 0 || st.nspid < 0))
      abort();
    break;
  }
  case F_STAT: {
    struct pst__proc_image im;
    uint64_t start;
    char state;
    (void)pst__proc_parse_stat(text, &state, &start);
    (void)pst__proc_parse_stat(text, &state, NULL);
    (void)pst__proc_parse_stat(text, NULL, NULL);
    (void)pst__proc_parse_image(text, &im);
    break;
  }
  case F_SCHEDSTAT: {
    uint64_t run, wait;
    (void)pst__proc_parse_schedstat(text, &run, &wait);
    break;
  }
  case F_SYSCALL: {
    long nr;
    uint64_t sp, pc;
    (void)pst__proc_parse_syscall(text, &nr, &sp, &pc);
    break;
  }
  case F_ENVIRON: {
    static const char *const keys[] = {"RANK", "LOCAL_RANK", "WORLD_SIZE", "",
                                       "="};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
      int v;
      (void)pst__proc_env_int(text, len, keys[i], &v);
    }
    break;
  }
  case F_CMDLINE:
    pst__proc_args_join(text, len);
    if (strlen(text) > len)
      abort();
    break;
  case F_CGROUP: {
    char out[128], tiny[1];
    char *copy = malloc(len + 1);
    if (!copy)
      return;
    memcpy(copy, text, len + 1);
    pst__proc_cgroup_name(text, out, sizeof(out));
    pst__proc_cgroup_name(copy, tiny, sizeof(tiny));
    if (strlen(out) >= sizeof(out) || tiny[0])
      abort();
    free(copy);
    break;
  }
  case F_CHILDREN: {
    const char *p = text;
    pid_t pid;
    while (pst__proc_next_pid(&p, &pid))
      if (pid <= 0 || p > text + len)
        abort();
    break;
  }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text;
  size_t len;
  int kind;

  if (size < 1)
    return 0;
  kind = data[0] % F_COUNT;
  len = size - 1;
  /* Exactly the bytes read and the NUL pst__proc_read adds: ASan sees any
   * read past them. */
  text = malloc(len + 1);
  if (!text)
    return 0;
  memcpy(text, data + 1, len);
  text[len] = '\0';
  if (kind == F_MAPS)
    fuzz_maps(text, len);
  else
    fuzz_text(kind, text, len);
  free(text);
  return 0;
}
