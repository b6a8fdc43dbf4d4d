/* folded.c: Brendan Gregg's collapsed stacks ("folded"), the input of
 * flamegraph.pl, inferno and speedscope: one line per distinct stack,
 * "root;caller;leaf count", counting samples over all threads.
 *
 * A frame is "function (file:line)", "function (file)" when the line is
 * unknown, and the bare name for a synthetic frame (empty file). The format
 * has no escapes, so ';' in a name becomes ':' and control characters
 * (newlines) become spaces; ill-formed UTF-8 becomes U+FFFD. Stacks with no
 * frames have no line (there is nothing to draw). Lines come in the order
 * of the profile's stack ids, which is the order stacks were first seen.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "output/writer.h"

static int folded_write(const struct pst__profile *p, FILE *f) {
  size_t nstacks = pst__profile_nstacks(p);
  uint64_t *counts = calloc(nstacks + 1, sizeof(*counts));
  char **labels = pst__writer_labels(p, PST_CLEAN_CTRL | PST_CLEAN_SEMI);
  int err = -ENOMEM;

  if (!counts || !labels)
    goto out;
  pst__profile_stack_totals(p, counts, NULL);
  for (uint32_t s = 0; s < nstacks; s++) {
    size_t n;
    const uint32_t *ids = pst__profile_stack(p, s, &n);

    if (!counts[s] || !n)
      continue;
    for (size_t i = 0; i < n; i++) {
      if (i)
        putc(';', f);
      fputs(labels[ids[i]], f);
    }
    fprintf(f, " %" PRIu64 "\n", counts[s]);
  }
  err = ferror(f) ? -EIO : 0;
out:
  pst__writer_labels_free(p, labels);
  free(counts);
  return err;
}

const struct pst__writer_ops pst__writer_folded = {
    .name = "folded",
    .ext = ".folded",
    .desc = "collapsed stacks, one line per stack (flamegraph.pl, inferno)",
    .write = folded_write,
};
