/* top_screen.h: `pystitch top`'s full-screen view (ncurses): draws the
 * table and the thread pane, reads the keys.
 *
 * One screen per process (ncurses' own global state): pst_top_screen_open()
 * takes the terminal, pst_top_screen_close() gives it back (also at exit,
 * so an error path cannot leave it raw). Not thread-safe.
 */
#ifndef PST_CLI_TOP_SCREEN_H
#define PST_CLI_TOP_SCREEN_H

#include <stddef.h>
#include <stdint.h>

#include "consumer/top.h"

/* What the keys set; the caller draws with it. */
struct pst_top_keys {
  enum pst_top_sort sort; /* 1-4 */
  int since_start;        /* w: since the start, else the last interval */
  int by_line;            /* l */
  int threads;            /* t: the thread pane shown */
  int quit;               /* q */
};

/* 0, or -ENOTTY when there is no usable terminal. */
int pst_top_screen_open(void);
void pst_top_screen_close(void);

/* Takes the keys typed since the last call into *k: 1 when the view must
 * be drawn again (a key or a resize), else 0. */
int pst_top_screen_keys(struct pst_top_keys *k);

/* Draws a whole screen: the header line, the processes line, the table rows (n; samples: what
 * the shares are of) and, with k->threads, the nth threads. */
void pst_top_screen_draw(const char *header, const char *procs,
                         const struct pst_top_row *rows, size_t n,
                         uint64_t samples, const struct pst_top_thread *th,
                         size_t nth, const struct pst_top_keys *k,
                         double interval_s);

#endif
