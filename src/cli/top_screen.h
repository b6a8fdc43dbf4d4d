/* top_screen.h: `pystitch top`'s full-screen view (ncurses): draws the
 * table and the thread pane, reads the keys.
 *
 * One screen per process (ncurses' own global state): pst__top_screen_open()
 * takes the terminal, pst__top_screen_close() gives it back (also at exit,
 * so an error path cannot leave it raw). Not thread-safe.
 */
#ifndef PST_CLI_TOP_SCREEN_H
#define PST_CLI_TOP_SCREEN_H

#include <stddef.h>
#include <stdint.h>

#include "consumer/top.h"

/* What the keys set; the caller draws with it. */
struct pst__top_keys {
  enum pst__top_sort sort; /* 1-4 */
  int since_start;         /* w: since the start, else the last interval */
  int by_line;             /* l */
  int threads;             /* t: the thread pane shown */
  int quit;                /* q */
  /* Asked since the last call, for the caller to apply: */
  int moves;  /* Up/Down (k/j): the selection moves by this many threads */
  int select; /* Enter: the table of the selected thread (again: all) */
  int proc;   /* p: the table of the selected thread's process (again: all) */
  int dump;   /* d: the selected thread's last stack shown (any key closes) */
};

/* What the thread pane and the stack view show. */
struct pst__top_view {
  size_t selected;    /* the selected thread, an index in the pane */
  const char *filter; /* what the table is of ("thread 12 spin-0"), or NULL */
};

/* 0, or -ENOTTY when there is no usable terminal. */
int pst__top_screen_open(void);
void pst__top_screen_close(void);

/* Takes the keys typed since the last call into *k: 1 when the view must
 * be drawn again (a key or a resize), else 0. */
int pst__top_screen_keys(struct pst__top_keys *k);

/* Draws a whole screen: the header line, the processes line, the table
 * rows (n; samples: what the shares are of) and, with k->threads, the nth
 * threads, v->selected highlighted. */
void pst__top_screen_draw(const char *header, const char *procs,
                          const struct pst__top_row *rows, size_t n,
                          uint64_t samples, const struct pst__top_thread *th,
                          size_t nth, const struct pst__top_keys *k,
                          const struct pst__top_view *v, double interval_s);

/* Draws the stack view of thread x: its n frames (nall in all; age_s:
 * seconds since it was sampled, < 0 when it never was), innermost first,
 * under the header line. */
void pst__top_screen_draw_stack(const char *header,
                                const struct pst__top_thread *x,
                                const struct pst__top_frame *f, size_t n,
                                size_t nall, double age_s);

#endif
