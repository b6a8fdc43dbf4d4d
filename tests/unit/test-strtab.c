/* test-strtab.c: interned strings are shared, stable across table growth,
 * and distinct strings stay distinct. */
#include <stdio.h>
#include <string.h>

#include "task.h"
#include "util/strtab.h"

TEST_IMPL(strtab_intern) {
  struct pst__strtab *t = pst__strtab_new();
  const char *first[2000];
  char buf[32];

  ASSERT(t != NULL);
  for (int i = 0; i < 2000; i++) {
    snprintf(buf, sizeof(buf), "name-%d", i);
    first[i] = pst__strtab_intern(t, buf);
    ASSERT(first[i] != NULL && first[i] != buf);
    ASSERT_STR_EQ(first[i], buf);
  }
  ASSERT_EQ(pst__strtab_count(t), 2000);
  /* After many growths, the same pointers come back. */
  for (int i = 0; i < 2000; i++) {
    snprintf(buf, sizeof(buf), "name-%d", i);
    ASSERT(pst__strtab_intern(t, buf) == first[i]);
  }
  ASSERT_EQ(pst__strtab_count(t), 2000);
  ASSERT(pst__strtab_intern(t, "gr\xc3\xbc\xc3\x9f"
                               "e") != pst__strtab_intern(t, "grusse"));
  pst__strtab_free(t);
  return 0;
}
