/* test-proc.c: the /proc text parsers on hostile text: a cgroup path that
 * imitates the v2 line, maps lines the kernel never writes, environment
 * values that are not ints, children lists with numbers that are no pid. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proc/maps.h"
#include "proc/proc.h"
#include "task.h"

static int maps_of(const char *text, struct pst__maps *m) {
  FILE *f = fmemopen((void *)text, strlen(text), "r");
  int err;

  ASSERT(f != NULL);
  err = pst__maps_read(f, m);
  fclose(f);
  return err;
}

TEST_IMPL(proc_cgroup_name) {
  char buf[256], out[64];

  /* A v1 path naming "0::" is not the v2 line. */
  snprintf(buf, sizeof(buf),
           "3:cpu:/evil0::/fake\n0::/system.slice/"
           "docker-abc.scope\n");
  pst__proc_cgroup_name(buf, out, sizeof(out));
  ASSERT_STR_EQ(out, "docker-abc.scope");
  snprintf(buf, sizeof(buf), "4:memory:/a/b\n0::/\n");
  pst__proc_cgroup_name(buf, out, sizeof(out));
  ASSERT_STR_EQ(out, "pidns");
  snprintf(buf, sizeof(buf), "4:memory:/a/b\n");
  pst__proc_cgroup_name(buf, out, sizeof(out));
  ASSERT_STR_EQ(out, "b");
  return 0;
}

TEST_IMPL(proc_maps_refused) {
  struct pst__maps m;

  ASSERT_EQ(maps_of("1000-2000 r-xp 00000000 08:01 12 /a b (deleted)\n"
                    "2000-3000 rw-p 00000000 00:00 0 \n",
                    &m),
            0);
  ASSERT_EQ(m.n, 2);
  ASSERT_STR_EQ(m.v[0].path, "/a b (deleted)");
  ASSERT_STR_EQ(m.v[1].path, "");
  ASSERT(pst__maps_find(&m, 0x2fff) == &m.v[1]);
  pst__maps_exit(&m);
  ASSERT_EQ(maps_of("2000-3000 r--p 0 0:0 0\n1000-2000 r--p 0 0:0 0\n", &m),
            -EINVAL); /* unsorted */
  ASSERT_EQ(maps_of("1000-3000 r--p 0 0:0 0\n2000-4000 r--p 0 0:0 0\n", &m),
            -EINVAL); /* overlapping */
  ASSERT_EQ(maps_of("2000-1000 r--p 0 0:0 0\n", &m), -EINVAL);
  ASSERT_EQ(maps_of("1000-2000 r 0 0:0 0 /x\n", &m), -EINVAL);
  ASSERT_EQ(m.n, 0);
  return 0;
}

TEST_IMPL(proc_env_and_children) {
  static const char env[] = "A=1\0RANK=\0LOCAL_RANK=x\0WORLD_SIZE=99999999999"
                            "\0XRANK=5\0RANK=7";
  const char *p = "12 -3 0 99999999999 17 ";
  pid_t pid, got[4];
  int v = -1, n = 0;

  ASSERT_EQ(pst__proc_env_int(env, sizeof(env) - 1, "RANK", &v), -EINVAL);
  ASSERT_EQ(pst__proc_env_int(env, sizeof(env) - 1, "LOCAL_RANK", &v), -EINVAL);
  ASSERT_EQ(pst__proc_env_int(env, sizeof(env) - 1, "WORLD_SIZE", &v), -EINVAL);
  ASSERT_EQ(pst__proc_env_int(env, sizeof(env) - 1, "NONE", &v), -ENOENT);
  ASSERT_EQ(pst__proc_env_int(env + 46, 8, "RANK", &v), -ENOENT); /* XRANK */
  ASSERT_EQ(pst__proc_env_int(env, 3, "A", &v), 0); /* cut: "A=1" */
  ASSERT_EQ(v, 1);
  while (n < 4 && pst__proc_next_pid(&p, &pid))
    got[n++] = pid;
  ASSERT_EQ(n, 2);
  ASSERT_EQ(got[0], 12);
  ASSERT_EQ(got[1], 17);
  return 0;
}
