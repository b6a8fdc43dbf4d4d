/* test-registry.c: the thread registry reader (python/registry.c) and the
 * thread names (python/threadname.c) on live interpreters of every
 * version found on this machine, running tests/targets/names.py.
 *
 * For each interpreter: the target prints every thread's tid, ident and
 * threading name; the target is opened through the public API (its
 * threads with their thread pointers) and analysed again into our own
 * struct pst__py, as the target does. Then:
 *  - the registry holds exactly the threads the script printed, each
 *    ident the fsbase of the thread with that tid, and each Thread object
 *    named as printed: workers (one non-ASCII, one outside the BMP on 3.x),
 *    a default name, a _DummyThread and MainThread;
 *  - a second call reads once (one process_vm_readv);
 *  - after the main thread and a worker are renamed, exactly their names
 *    are reported changed (one read) and read again as renamed-main and
 *    renamed-worker, while the registry still reads once;
 *  - after a thread starts and another ends, the registry shows it.
 * Syscall counts are printed. Absent interpreters are skipped with the
 * reason. A target in a rootfs runs as a container (unshare + chroot): its
 * tids are compared through NSpid.
 *
 * Replay: what the first registry read and the names read from the live
 * target is recorded (pst__mem_set_recorder) as a memory image, replayed
 * (it must give the same threads and names), then corrupted word by word:
 * every read must end, with entries or an error, never a crash or a
 * read outside the image. With PST_REGISTRY_FIXTURES=DIR the image is
 * saved as DIR/registry-<name>.txt (the checked-in tests/fixtures/
 * registry-*.txt, replayed by registry_replay without interpreters). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "frame-fixture.h"
#include "helpers.h"
#include "proc/maps.h"
#include "proc/mem.h"
#include "pystitch.h"
#include "python/python.h"
#include "pythons.h"
#include "spawn.h"
#include "task.h"

#define ROOTFS_DIR "/var/cache/pystitch"
#define EXPECT_MAX 400
#define ENTS_MAX 512
#define TIMED_CALLS 200 /* stable calls timed */

struct expect {
  long tid; /* in the target's pid namespace */
  uint64_t ident;
  char name[128];
};

struct target {
  pid_t pid;   /* the interpreter, as we see it */
  pid_t child; /* what we forked (unshare for a container) */
  FILE *out;   /* its stdout */
  FILE *in;    /* its stdin */
  struct expect ex[EXPECT_MAX];
  int nex;
};

static int copy_file(const char *from, const char *to) {
  char buf[4096];
  size_t n;
  FILE *a = fopen(from, "rb"), *b = a ? fopen(to, "wb") : NULL;
  int err = a && b ? 0 : -1;

  while (err == 0 && (n = fread(buf, 1, sizeof(buf), a)) > 0)
    if (fwrite(buf, 1, n, b) != n)
      err = -1;
  if (a)
    fclose(a);
  if (b && fclose(b))
    err = -1;
  return err;
}

static pid_t first_child(pid_t pid) {
  char path[64];
  long kid = 0;
  FILE *f;

  snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
  f = fopen(path, "r");
  if (!f)
    return 0;
  if (fscanf(f, "%ld", &kid) != 1)
    kid = 0;
  fclose(f);
  return (pid_t)kid;
}

/* One line of the target's output, without the newline. */
static void read_line(struct target *t, char *line, size_t len) {
  if (!fgets(line, (int)len, t->out))
    TEST_FAIL("target ended before its output was complete");
  line[strcspn(line, "\n")] = '\0';
}

/* "thread TID IDENT NAME": adds or updates (by ident) an expectation. */
static int parse_thread(struct target *t, const char *line) {
  long tid;
  unsigned long long ident;
  int pos = 0, i;

  if (sscanf(line, "thread %ld %llu %n", &tid, &ident, &pos) != 2 || !pos)
    return 0;
  for (i = 0; i < t->nex && t->ex[i].ident != ident; i++)
    ;
  ASSERT_LT(i, EXPECT_MAX);
  if (i == t->nex)
    t->nex++;
  t->ex[i].tid = tid;
  t->ex[i].ident = ident;
  snprintf(t->ex[i].name, sizeof(t->ex[i].name), "%s", line + pos);
  return 1;
}

/* Reads lines up to "want" (a line starting with it), taking in thread
 * lines on the way. */
static void read_until(struct target *t, const char *want) {
  char line[512];

  for (;;) {
    read_line(t, line, sizeof(line));
    if (!strncmp(line, want, strlen(want)))
      return;
    if (!parse_thread(t, line) && strncmp(line, "rename ", 7))
      TEST_FAIL("unexpected line from the target: %s", line);
  }
}

/* Starts tests/targets/<name> under exe (inside rootfs when not NULL). */
static void start(struct target *t, const char *name, const char *exe,
                  const char *rootfs) {
  char script[1024], dst[1024];
  char *local[] = {(char *)exe, "-u", script, NULL};
  char *chrooted[] = {"unshare",   "--pid",  "--mount",
                      "--fork",    "chroot", (char *)rootfs,
                      (char *)exe, "-u",     "/tmp/pst-names.py",
                      NULL};

  memset(t, 0, sizeof(*t));
  snprintf(script, sizeof(script), "%s/tests/targets/%s", test_srcdir(), name);
  if (rootfs) {
    snprintf(dst, sizeof(dst), "%s/tmp/pst-names.py", rootfs);
    ASSERT_EQ(copy_file(script, dst), 0);
  }
  t->child = test_spawn(rootfs ? chrooted : local, &t->out, &t->in);
  ASSERT_GT(t->child, 0);
  ASSERT(t->out && t->in);
  t->pid = t->child;
  if (rootfs) {
    for (int i = 0; i < 1000 && !(t->pid = first_child(t->child)); i++)
      usleep(10000);
    ASSERT_GT(t->pid, 0);
  }
  read_until(t, "ready");
}

static void command(struct target *t, const char *cmd) {
  char done[64];

  fprintf(t->in, "%s\n", cmd);
  fflush(t->in);
  snprintf(done, sizeof(done), "done %s", cmd);
  read_until(t, done);
}

static void stop(struct target *t) {
  fclose(t->in);
  kill(t->pid, SIGKILL);
  if (t->child != t->pid)
    kill(t->child, SIGKILL);
  waitpid(t->child, NULL, 0);
  fclose(t->out);
}

/* The tid of host thread tid inside the target's pid namespace. */
static long ns_tid(pid_t pid, pid_t tid) {
  char path[96], line[256];
  long v = -1;
  FILE *f;

  snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
  f = fopen(path, "r");
  if (!f)
    return -1;
  while (fgets(line, sizeof(line), f))
    if (!strncmp(line, "NSpid:", 6)) {
      char *last = strrchr(line, '\t');
      v = strtol(last ? last + 1 : line + 6, NULL, 10);
    }
  fclose(f);
  return v;
}

/* Our own analysis of the target's interpreter, as the target does. */
struct reader {
  struct pst_target *tg;
  struct pst__maps maps;
  struct pst__mem mem;
  struct pst__py py;
};

static void reader_open(struct reader *r, pid_t pid) {
  struct pst_target_info info;
  struct pst__py_found found;
  int err;

  memset(r, 0, sizeof(*r));
  err = pst_target_open(pid, &r->tg);
  if (err)
    TEST_FAIL("pst_target_open: %s", pst_strerror(err));
  info = *pst_target_info(r->tg);
  pst__mem_init(&r->mem, pid);
  pst__py_init(&r->py);
  ASSERT_EQ(pst__maps_load(pid, &r->maps), 0);
  err = pst__py_analyse(&r->py, pid, &r->maps, &r->mem, test_host_arch(),
                        info.exe, &found);
  if (err)
    TEST_FAIL("pst__py_analyse: %s", pst_strerror(err));
}

static void reader_close(struct reader *r) {
  pst__py_exit(&r->py);
  pst__mem_exit(&r->mem);
  pst__maps_exit(&r->maps);
  pst_target_close(r->tg);
}

/* Calls the registry; *reads gets the syscalls it took. */
static int registry(struct reader *r, struct pst__py_thread_ent *ents,
                    uint64_t *reads) {
  uint64_t before = r->mem.reads;
  int n = pst__py_thread_registry(&r->py, &r->mem, ents, ENTS_MAX);

  if (n < 0)
    TEST_FAIL("pst__py_thread_registry: %s", pst_strerror(n));
  *reads = r->mem.reads - before;
  return n;
}

/* The registry holds exactly t's threads, each named as expected, each
 * ident the thread pointer of the thread with that tid. refs[i] gets
 * where t->ex[i]'s name lives. */
static void check(struct reader *r, const struct target *t,
                  const struct pst__py_thread_ent *ents, int n,
                  struct pst__py_name_ref *refs, uint64_t *name_reads) {
  const struct pst_thread *th;
  int nth = pst_target_snapshot(r->tg, &th);

  ASSERT_GT(nth, 0);
  ASSERT_EQ(n, t->nex);
  *name_reads = 0;
  for (int i = 0; i < t->nex; i++) {
    const struct expect *e = &t->ex[i];
    uint64_t before = r->mem.reads;
    char *name = NULL;
    int j, k, err;
    for (j = 0; j < n && ents[j].ident != e->ident; j++)
      ;
    if (j == n)
      TEST_FAIL("ident %llu (%s) not in the registry",
                (unsigned long long)e->ident, e->name);
    err = pst__py_thread_name_ref(&r->py, &r->mem, ents[j].thread_obj, &name,
                                  &refs[i]);
    if (err)
      TEST_FAIL("name of %s: %s", e->name, pst_strerror(err));
    *name_reads += r->mem.reads - before;
    ASSERT_STR_EQ(name, e->name);
    free(name);
    /* A tid of 0: not known (a target that did not print it). */
    for (k = 0; k < nth && (e->tid ? ns_tid(t->pid, th[k].tid) != e->tid
                                   : th[k].fsbase != e->ident);
         k++)
      ;
    if (k == nth)
      TEST_FAIL("no thread %ld (%s) in the target", e->tid, e->name);
#if defined(__x86_64__)
    /* glibc and musl on x86_64: pthread_self() is the thread pointer. */
    if (th[k].fsbase != e->ident)
      TEST_FAIL("%s: thread %ld has fsbase 0x%llx, ident 0x%llx", e->name,
                e->tid, (unsigned long long)th[k].fsbase,
                (unsigned long long)e->ident);
#endif
  }
}

/* ---- replay ---- */

/* What pst_fixture_py() reads to set a replay up: (3.13+) the
 * _Py_DebugOffsets and the interpreter pointer, read now so that they are
 * recorded. */
static void record_interp(struct reader *r) {
  uint64_t interp;

  if (r->py.version_hex >= 0x030d) {
    struct pst__py_layout lay;
    uint64_t size;
    int hex;
    ASSERT_EQ(pst__py_debug_offsets(&r->mem, r->py.runtime, &lay, &size, &hex),
              0);
  }
  ASSERT_EQ(
      pst__mem_read_u64(&r->mem,
                        r->py.runtime
                            ? r->py.runtime + (uint64_t)r->py.lay.rt_interp_head
                            : r->py.interp_head_addr,
                        &interp),
      0);
  ASSERT_EQ(interp, r->py.interp);
}

static void make_fixture(const struct reader *r, const struct target *t,
                         const struct pst__py_thread_ent *ents, int n,
                         struct pst_fixture_rec *rec, struct pst_fixture *fx) {
  const struct pst_target_info *info = pst_target_info(r->tg);

  memset(fx, 0, sizeof(*fx));
  snprintf(fx->python, sizeof(fx->python), "%s", info->version);
  fx->version_hex = r->py.version_hex;
  fx->runtime = r->py.runtime;
  fx->interp_head = r->py.runtime ? 0 : r->py.interp_head_addr;
  fx->interp = r->py.interp;
  fx->tstate_current = r->py.tstate_current;
  fx->code_type = r->py.code_type;
  fx->none = r->py.none;
  fx->dict_type = r->py.dict_type;
  fx->long_type = r->py.long_type;
  fx->int_type = r->py.int_type;
  fx->str_type = r->py.str_type;
  fx->module_type = r->py.module_type;
  fx->long_shift = (uint64_t)r->py.long_shift;
  ASSERT_LE(n, PST_FIXTURE_THREADS_MAX);
  for (int i = 0; i < n; i++) {
    int j;
    for (j = 0; j < t->nex && t->ex[j].ident != ents[i].ident; j++)
      ;
    ASSERT_LT(j, t->nex);
    fx->threads[i].ident = ents[i].ident;
    snprintf(fx->threads[i].name, sizeof(fx->threads[i].name), "%s",
             t->ex[j].name);
  }
  fx->nthreads = n;
  ASSERT_EQ(pst_fixture_merge(rec, fx), 0);
}

/* Outcomes of the reads of one corrupted image. */
struct tally {
  int same, other, failed, names_failed;
};

/* Registry and names over mem with py (its caches dropped first): 1 when
 * they equal fx's, 0 when not, -1 when the registry failed; *names_failed
 * counts names that could not be read. Never fails the test. */
static int read_all(const struct pst_fixture *fx, struct pst__mem *mem,
                    struct pst__py *py, int *names_failed) {
  struct pst__py_thread_ent ents[ENTS_MAX];
  int n, same = 1;

  pst__py_registry_free(py->reg);
  py->reg = NULL;
  py->name_key = 0;
  n = pst__py_thread_registry(py, mem, ents, ENTS_MAX);
  if (n < 0)
    return -1;
  if (n > ENTS_MAX)
    TEST_FAIL("registry returned %d > %d entries", n, ENTS_MAX);
  same = n == fx->nthreads;
  for (int i = 0; i < n; i++) {
    char *name = NULL;
    if (pst__py_thread_name(py, mem, ents[i].thread_obj, &name)) {
      (*names_failed)++;
      same = 0;
      continue;
    }
    if (strlen(name) > 4 * 1024 * 1024)
      TEST_FAIL("a name of %zu bytes", strlen(name));
    if (same && (ents[i].ident != fx->threads[i].ident ||
                 strcmp(name, fx->threads[i].name)))
      same = 0;
    free(name);
  }
  return same;
}

/* Replays fx: the registry gives its threads, in order, named as
 * recorded; then every 8-byte word of the image is corrupted in turn
 * (low bit, a high bit, zero, all ones) and read again. */
static void replay(struct pst_fixture *fx, const char *label, int corrupt) {
  static const uint64_t masks[] = {1, 1ULL << 44, 0, ~0ULL};
  struct tally tl = {0, 0, 0, 0};
  struct pst__mem mem;
  struct pst__py py;
  int nf = 0, words = 0, r;

  pst__mem_init_image(&mem, fx->regions, fx->nregions);
  pst__py_init(&py);
  ASSERT_EQ(pst_fixture_py(fx, &mem, &py), 0);
  r = read_all(fx, &mem, &py, &nf);
  if (r != 1)
    TEST_FAIL("%s: the replayed image does not give the recorded threads",
              label);
  for (size_t g = 0; corrupt && g < fx->nregions; g++) {
    uint8_t *b = (uint8_t *)fx->regions[g].bytes;
    for (size_t off = 0; off + 8 <= fx->regions[g].len; off += 8) {
      uint64_t w;
      memcpy(&w, b + off, 8);
      words++;
      for (size_t m = 0; m < sizeof(masks) / sizeof(masks[0]); m++) {
        uint64_t bad = m < 2 ? w ^ masks[m] : masks[m];
        if (bad == w)
          continue;
        memcpy(b + off, &bad, 8);
        r = read_all(fx, &mem, &py, &tl.names_failed);
        if (r == 1)
          tl.same++;
        else if (r == 0)
          tl.other++;
        else
          tl.failed++;
      }
      memcpy(b + off, &w, 8);
    }
  }
  /* The image whole again: the same result as before. */
  ASSERT_EQ(read_all(fx, &mem, &py, &nf), 1);
  if (corrupt)
    printf("# %s replay: %d threads; %d words corrupted: %d reads gave the "
           "same, %d other entries, %d failed; %d names unreadable\n",
           label, fx->nthreads, words, tl.same, tl.other, tl.failed,
           tl.names_failed);
  pst__py_exit(&py);
  pst__mem_exit(&mem);
}

/* Mean time of a registry call that finds n entries, in microseconds. */
static double time_calls(struct reader *r, struct pst__py_thread_ent *ents,
                         int n) {
  struct timespec a, b;

  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < TIMED_CALLS; i++)
    ASSERT_EQ(pst__py_thread_registry(&r->py, &r->mem, ents, ENTS_MAX), n);
  clock_gettime(CLOCK_MONOTONIC, &b);
  return ((double)(b.tv_sec - a.tv_sec) * 1e9 +
          (double)(b.tv_nsec - a.tv_nsec)) /
         1e3 / TIMED_CALLS;
}

static int index_of(const struct target *t, const char *name) {
  for (int i = 0; i < t->nex; i++)
    if (!strcmp(t->ex[i].name, name))
      return i;
  TEST_FAIL("no thread named %s", name);
}

static void run(const char *label, const char *fixture, const char *exe,
                const char *rootfs) {
  struct pst__py_thread_ent ents[ENTS_MAX];
  struct pst__py_name_ref refs[EXPECT_MAX];
  uint8_t changed[EXPECT_MAX];
  uint64_t first, again, renamed, churned, names, check_reads, many;
  uint64_t names_churn;
  double stable_us, many_us;
  int nchurn;
  struct pst_fixture_rec rec = {0};
  struct pst_fixture fx;
  struct reader r;
  struct target t;
  int n, main_i, worker_i, nchanged;

  start(&t, "names.py", exe, rootfs);
  reader_open(&r, t.pid);

  /* Before renames: MainThread, the workers, the dummy; recorded. */
  pst__mem_set_recorder(&r.mem, pst_fixture_record, &rec);
  record_interp(&r);
  n = registry(&r, ents, &first);
  check(&r, &t, ents, n, refs, &names);
  pst__mem_set_recorder(&r.mem, NULL, NULL);
  make_fixture(&r, &t, ents, n, &rec, &fx);
  replay(&fx, label, 1);
  if (getenv("PST_REGISTRY_FIXTURES")) {
    char path[1024], note[512];
    snprintf(path, sizeof(path), "%s/registry-%s.txt",
             getenv("PST_REGISTRY_FIXTURES"), fixture);
    snprintf(note, sizeof(note),
             "Thread-registry replay fixture: CPython %s (%s), "
             "tests/targets/names.py ready.\nMade by tests/unit/"
             "test-registry.c with PST_REGISTRY_FIXTURES: do not edit.\n"
             "%d regions, %zu bytes of image.",
             fx.python, exe, (int)fx.nregions, pst_fixture_image_size(&fx));
    ASSERT_EQ(pst_fixture_save(path, &fx, note), 0);
    printf("# wrote %s\n", path);
  }
  pst_fixture_exit(&fx);
  pst_fixture_rec_free(&rec);
  main_i = index_of(&t, "MainThread");
  worker_i = index_of(&t, "worker-a");
  {
    int dummies = 0;
    for (int i = 0; i < t.nex; i++)
      dummies += !strncmp(t.ex[i].name, "Dummy-", 6);
    ASSERT_EQ(dummies, 1);
  }
  n = registry(&r, ents, &again);
  ASSERT_EQ(n, t.nex);
  ASSERT_EQ(again, 1);
  stable_us = time_calls(&r, ents, n);

  /* Renamed: exactly those two changed, in one read. */
  command(&t, "rename");
  {
    uint64_t before = r.mem.reads;
    nchanged =
        pst__py_thread_names_changed(&r.py, &r.mem, refs, t.nex, changed);
    check_reads = r.mem.reads - before;
  }
  ASSERT_EQ(nchanged, 2);
  ASSERT_EQ(check_reads, 1);
  ASSERT_EQ(changed[main_i], 1);
  ASSERT_EQ(changed[worker_i], 1);
  snprintf(t.ex[worker_i].name, sizeof(t.ex[worker_i].name), "renamed-worker");
  ASSERT_STR_EQ(t.ex[main_i].name, "renamed-main");
  n = registry(&r, ents, &renamed);
  ASSERT_EQ(renamed, 1);
  check(&r, &t, ents, n, refs, &names);

  /* A thread started, another ended. */
  command(&t, "churn");
  for (int i = 0; i < t.nex; i++)
    if (!strcmp(t.ex[i].name, "short-lived"))
      t.ex[i] = t.ex[--t.nex];
  n = registry(&r, ents, &churned);
  check(&r, &t, ents, n, refs, &names);
  nchurn = t.nex;
  names_churn = names;

  /* 300 more. */
  command(&t, "many");
  ASSERT_EQ(t.nex, nchurn + 300);
  n = registry(&r, ents, &many);
  check(&r, &t, ents, n, refs, &names);
  n = registry(&r, ents, &again);
  ASSERT_EQ(again, 1);
  many_us = time_calls(&r, ents, n);
  ASSERT_EQ(pst__py_registry_resolves(&r.py), 1);
  printf("# %s: %d threads; registry reads: first call %llu, stable %llu "
         "(%.1f us a call), after renames %llu, after churn %llu; %llu reads "
         "for %d names; %d threads: %llu reads, then 1 (%.1f us)\n",
         label, nchurn, (unsigned long long)first, (unsigned long long)again,
         stable_us, (unsigned long long)renamed, (unsigned long long)churned,
         (unsigned long long)names_churn, nchurn, t.nex,
         (unsigned long long)many, many_us);
  reader_close(&r);
  stop(&t);
}

static void run_pyenv(int major, int minor) {
  char exe[512], fixture[16];

  if (find_python(major, minor, exe, sizeof(exe)) ||
      strncmp(exe, "/root/.pyenv/", 13))
    SKIP("no CPython %d.%d under /root/.pyenv/versions", major, minor);
  snprintf(fixture, sizeof(fixture), "py%d%d", major, minor);
  run(exe, fixture, exe, NULL);
}

static void run_rootfs(const char *dist, const char *fixture, const char *exe) {
  char root[256], path[512];
  struct stat st;

  snprintf(root, sizeof(root), "%s/%s-rootfs", ROOTFS_DIR, dist);
  snprintf(path, sizeof(path), "%s%s", root, exe);
  if (stat(path, &st) || !(st.st_mode & S_IXUSR))
    SKIP("no %s (tests/setup-rootfs.sh makes it)", path);
  if (geteuid() != 0)
    SKIP("a container needs root (unshare)");
  run(path, fixture, exe, root);
}

TEST_IMPL(registry_py27) {
  run_pyenv(2, 7);
  return 0;
}
TEST_IMPL(registry_py36) {
  run_pyenv(3, 6);
  return 0;
}
TEST_IMPL(registry_py37) {
  run_pyenv(3, 7);
  return 0;
}
TEST_IMPL(registry_py38) {
  run_pyenv(3, 8);
  return 0;
}
TEST_IMPL(registry_py39) {
  run_pyenv(3, 9);
  return 0;
}
TEST_IMPL(registry_py310) {
  run_pyenv(3, 10);
  return 0;
}
TEST_IMPL(registry_py311) {
  run_pyenv(3, 11);
  return 0;
}
TEST_IMPL(registry_py312) {
  run_pyenv(3, 12);
  return 0;
}
TEST_IMPL(registry_py313) {
  run_pyenv(3, 13);
  return 0;
}

TEST_IMPL(registry_debian_static_311) {
  if (access("/usr/bin/python3.11", X_OK))
    SKIP("/usr/bin/python3.11 absent");
  run("/usr/bin/python3.11", "static311", "/usr/bin/python3.11", NULL);
  return 0;
}

TEST_IMPL(registry_sid_314) {
  run_rootfs("sid", "sid314", "/usr/bin/python3.14");
  return 0;
}

TEST_IMPL(registry_trixie_313) {
  run_rootfs("trixie", "trixie313", "/usr/bin/python3.13");
  return 0;
}

/* threading imported after we looked: PST_ENOSYM, cheaply while
 * sys.modules does not change, then the registry once it is imported. */
static void late_import(const char *label, const char *exe,
                        const char *rootfs) {
  struct pst__py_thread_ent ents[ENTS_MAX];
  struct pst__py_name_ref refs[EXPECT_MAX];
  uint64_t before, names, negative;
  struct reader r;
  struct target t;
  int n;

  start(&t, "late_threading.py", exe, rootfs);
  reader_open(&r, t.pid);
  n = pst__py_thread_registry(&r.py, &r.mem, ents, ENTS_MAX);
  ASSERT_EQ(n, PST_ENOSYM);
  before = r.mem.reads;
  n = pst__py_thread_registry(&r.py, &r.mem, ents, ENTS_MAX);
  ASSERT_EQ(n, PST_ENOSYM);
  negative = r.mem.reads - before;
  ASSERT_LE(negative, 3);
  command(&t, "import");
  ASSERT_EQ(t.nex, 2);
  n = pst__py_thread_registry(&r.py, &r.mem, ents, ENTS_MAX);
  ASSERT_EQ(n, 2);
  check(&r, &t, ents, n, refs, &names);
  printf("# %s: PST_ENOSYM again in %llu reads; then %d threads\n", label,
         (unsigned long long)negative, n);
  reader_close(&r);
  stop(&t);
}

TEST_IMPL(registry_late_import) {
  static const int versions[][2] = {{2, 7}, {3, 12}};
  char exe[512], root[256], path[512];
  int done = 0;

  for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
    if (find_python(versions[i][0], versions[i][1], exe, sizeof(exe))) {
      printf("# no CPython %d.%d: skipped\n", versions[i][0], versions[i][1]);
      continue;
    }
    late_import(exe, exe, NULL);
    done++;
  }
  snprintf(root, sizeof(root), "%s/sid-rootfs", ROOTFS_DIR);
  snprintf(path, sizeof(path), "%s/usr/bin/python3.14", root);
  if (geteuid() == 0 && access(path, X_OK) == 0) {
    late_import(path, "/usr/bin/python3.14", root);
    done++;
  } else {
    printf("# no %s (or not root): skipped\n", path);
  }
  if (!done)
    SKIP("no interpreter found");
  return 0;
}

/* The checked-in images (tests/fixtures/registry-*.txt), without any
 * interpreter. */
TEST_IMPL(registry_replay) {
  static const char *const names[] = {"py27", "py36", "py311", "py312",
                                      "sid314"};
  int done = 0;

  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    struct pst_fixture fx;
    char path[1024];
    int err;
    snprintf(path, sizeof(path), "%s/tests/fixtures/registry-%s.txt",
             test_srcdir(), names[i]);
    err = pst_fixture_load(path, &fx);
    if (err)
      TEST_FAIL("%s: %s", path, pst_strerror(err));
    replay(&fx, names[i], 1);
    pst_fixture_exit(&fx);
    done++;
  }
  ASSERT_GT(done, 0);
  return 0;
}
