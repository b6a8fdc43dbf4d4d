/* top_screen.c: top's full-screen view with ncurses: header, keys line,
 * the table by function (or line), the thread pane; resize and keys. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curses.h>

#include "cli/top_screen.h"
#include "util/esc.h"

static int opened;

void pst__top_screen_close(void) {
  if (!opened)
    return;
  opened = 0;
  endwin();
}

int pst__top_screen_open(void) {
  if (opened)
    return 0;
  if (!isatty(0) || !isatty(1) || !getenv("TERM") ||
      !newterm(NULL, stdout, stdin))
    return -ENOTTY;
  opened = 1;
  atexit(pst__top_screen_close);
  cbreak();
  noecho();
  nodelay(stdscr, TRUE);
  keypad(stdscr, TRUE);
  curs_set(0);
  if (has_colors()) {
    start_color();
    use_default_colors();
    init_pair(1, COLOR_BLACK, COLOR_CYAN); /* header */
    init_pair(2, COLOR_RED, -1);           /* hot rows */
  }
  return 0;
}

int pst__top_screen_keys(struct pst__top_keys *k) {
  int c, dirty = 0;

  while ((c = getch()) != ERR) {
    dirty = 1;
    if (k->dump && c != KEY_RESIZE && c != 'q' && c != 'Q') {
      k->dump = 0; /* any key closes the stack view */
      continue;
    }
    switch (c) {
    case 'q':
    case 'Q':
      k->quit = 1;
      break;
    case '1':
    case 'o':
      k->sort = PST_TOP_OWN;
      break;
    case '2':
    case 'T':
      k->sort = PST_TOP_TOTAL;
      break;
    case '3':
    case 'O':
      k->sort = PST_TOP_OWN_TIME;
      break;
    case '4':
      k->sort = PST_TOP_TOTAL_TIME;
      break;
    case 'w':
      k->since_start = !k->since_start;
      break;
    case 'l':
      k->by_line = !k->by_line;
      break;
    case 't':
      k->threads = !k->threads;
      break;
    case KEY_UP:
    case 'k':
      k->moves--;
      break;
    case KEY_DOWN:
    case 'j':
      k->moves++;
      break;
    case '\n':
    case '\r':
    case KEY_ENTER:
      k->select = 1;
      break;
    case 'p':
      k->proc = 1;
      break;
    case 'd':
      k->dump = 1;
      break;
    default: /* KEY_RESIZE included: ncurses has the new size */
      break;
    }
  }
  return dirty;
}

static void line_at(int y, int attr, const char *s) {
  if (y >= LINES)
    return;
  move(y, 0);
  clrtoeol();
  if (attr)
    attron(attr);
  addnstr(s, COLS);
  if (attr)
    attroff(attr);
}

/* The process lines (procs: one per line) from row y: all when they are at
 * most PROC_LINES_MAX, else the first ones and a line saying how many more.
 * The next row. */
#define PROC_LINES_MAX 5
static int proc_lines(int y, const char *procs) {
  char line[1024];
  int total = *procs != '\0', show;
  const char *s = procs;

  for (const char *c = procs; *c; c++)
    total += *c == '\n';
  show = total <= PROC_LINES_MAX ? total : PROC_LINES_MAX - 1;
  for (int i = 0; i < show; i++) {
    const char *nl = strchr(s, '\n');
    size_t len = nl ? (size_t)(nl - s) : strlen(s);
    if (len >= sizeof(line))
      len = sizeof(line) - 1;
    memcpy(line, s, len);
    line[len] = '\0';
    line_at(y++, 0, line);
    s = nl ? nl + 1 : s + len;
  }
  if (total > show) {
    snprintf(line, sizeof(line),
             "... and %d more processes (t: the threads, p: a process's "
             "table)",
             total - show);
    line_at(y++, 0, line);
  }
  return y;
}

void pst__top_screen_draw(const char *header, const char *procs,
                          const struct pst__top_row *rows, size_t n,
                          uint64_t samples, const struct pst__top_thread *th,
                          size_t nth, const struct pst__top_keys *k,
                          const struct pst__top_view *v, double interval_s) {
  static const char *sorts[] = {"own", "total", "own time", "total time"};
  int pane = k->threads ? (int)nth + 2 : 0, y = 0, body;
  char buf[1024], a[256], b[256]; /* a, b: the target's names, escaped */
  double d = samples ? 100.0 / (double)samples : 0;

  if (pane > LINES / 2)
    pane = LINES / 2;
  erase();
  line_at(y++, has_colors() ? COLOR_PAIR(1) : A_REVERSE, header);
  y = proc_lines(y, procs);
  char window[32] = "since start";
  if (!k->since_start)
    snprintf(window, sizeof(window), "last %.1f s", interval_s);
  snprintf(buf, sizeof(buf),
           "%s%s%swindow: %s (w)  sort: %s (1-4)  by %s (l)  threads (t arrows "
           "Enter p d)  quit (q)",
           v->filter ? "table of " : "", v->filter ? v->filter : "",
           v->filter ? " (Enter/p: all)  " : "", window, sorts[k->sort],
           k->by_line ? "line" : "function");
  line_at(y++, 0, buf);
  snprintf(buf, sizeof(buf), "%7s %7s %9s %9s  %s", "%Own", "%Total", "OwnTime",
           "TotalTime", "Function (file:line)");
  line_at(y++, A_BOLD, buf);
  body = LINES - y - pane;
  for (size_t i = 0; i < n && (int)i < body; i++) {
    const struct pst__top_row *r = &rows[i];
    const char *file = strrchr(r->file, '/'); /* the name is enough here */
    double own = d * (double)r->own;

    file = file ? file + 1 : r->file;
    if (r->line)
      snprintf(buf, sizeof(buf), "%6.1f%% %6.1f%% %8.2fs %8.2fs  %s (%s:%d)",
               own, d * (double)r->total, (double)r->own_ns / 1e9,
               (double)r->total_ns / 1e9, pst__esc(a, sizeof(a), r->name),
               pst__esc(b, sizeof(b), file), r->line);
    else
      snprintf(buf, sizeof(buf), "%6.1f%% %6.1f%% %8.2fs %8.2fs  %s (%s)", own,
               d * (double)r->total, (double)r->own_ns / 1e9,
               (double)r->total_ns / 1e9, pst__esc(a, sizeof(a), r->name),
               pst__esc(b, sizeof(b), file));
    line_at(y++, own >= 20 && has_colors() ? COLOR_PAIR(2) : 0, buf);
  }
  if (pane) {
    y = LINES - pane;
    snprintf(buf, sizeof(buf), "%7s %7s %-5s %-4s %-24s %s", "PID", "TID",
             "STATE", "GIL", "THREAD", "TOP");
    line_at(y++, A_BOLD, buf);
    /* The rows that fit, the selected one among them. */
    size_t fit = (size_t)(LINES - y), first = 0;
    if (fit && v->selected >= fit)
      first = v->selected - fit + 1;
    for (size_t i = first; i < nth && y < LINES; i++) {
      const struct pst__top_thread *x = &th[i];
      int sel = i == v->selected;
      snprintf(buf, sizeof(buf), "%c%6d %7d %-5c %-4s %s %s", sel ? '>' : ' ',
               (int)x->pid, (int)x->tid, x->state ? x->state : '?',
               x->holds_gil == 1   ? "yes"
               : x->holds_gil == 0 ? "no"
                                   : "?",
               pst__esc_cell(a, sizeof(a), x->name, 24),
               x->active_p && x->top ? pst__esc(b, sizeof(b), x->top)
                                     : "(idle)");
      line_at(y++, sel ? A_REVERSE : 0, buf);
    }
  }
  refresh();
}

void pst__top_screen_draw_stack(const char *header,
                                const struct pst__top_thread *x,
                                const struct pst__top_frame *f, size_t n,
                                size_t nall, double age_s) {
  char buf[1024], a[256], b[256]; /* a, b: the target's names, escaped */
  int y = 0;

  erase();
  line_at(y++, has_colors() ? COLOR_PAIR(1) : A_REVERSE, header);
  snprintf(buf, sizeof(buf), "Thread %d \"%s\" of process %d: state %c, %s",
           (int)x->tid, pst__esc(a, sizeof(a), x->name), (int)x->pid,
           x->state ? x->state : '?',
           x->holds_gil == 1   ? "holds the GIL"
           : x->holds_gil == 0 ? "does not hold the GIL"
                               : "GIL unknown");
  line_at(y++, A_BOLD, buf);
  if (age_s < 0)
    line_at(y++, 0,
            "no stack sampled yet (an idle thread is read only with --idle)");
  else {
    snprintf(buf, sizeof(buf),
             "its last stack, sampled %.1f s ago, innermost first (%zu "
             "frames%s); any key goes back",
             age_s, nall, x->stack_truncated ? ", cut" : "");
    line_at(y++, 0, buf);
  }
  for (size_t i = 0; i < n && y < LINES; i++) {
    if (f[i].line)
      snprintf(buf, sizeof(buf), "    %s (%s:%d)",
               pst__esc(a, sizeof(a), f[i].name),
               pst__esc(b, sizeof(b), f[i].file), f[i].line);
    else
      snprintf(buf, sizeof(buf), "    %s (%s)",
               pst__esc(a, sizeof(a), f[i].name),
               pst__esc(b, sizeof(b), f[i].file));
    line_at(y++, 0, buf);
  }
  refresh();
}
