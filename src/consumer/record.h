/* record.h: the consumer of `pystitch record`: thread-samples into a
 * struct pst__profile, with the synthetic root frames the options ask for.
 *
 * Ownership: pst__record_consumer_new() borrows the profile (which must
 * outlive the consumer) and returns a consumer freed by
 * pst__record_consumer_free(). Hand it to the engine as
 * {&pst__record_consumer_ops, consumer}.
 */
#ifndef PST_CONSUMER_RECORD_H
#define PST_CONSUMER_RECORD_H

#include "profile/profile.h"
#include "sampler/sampler.h"

struct pst__record_view {
  int process_roots; /* a root frame per process: "process PID cmd" */
  int thread_roots;  /* a root frame per thread: "thread TID \"name\"" */
  int by_function;   /* lines dropped: aggregate by function */
};

struct pst__record_consumer;

extern const struct pst__consumer_ops pst__record_consumer_ops;

/* 0 and *out, or -ENOMEM. */
int pst__record_consumer_new(struct pst__profile *prof,
                             const struct pst__record_view *view,
                             struct pst__record_consumer **out);
void pst__record_consumer_free(struct pst__record_consumer *c);

#endif
