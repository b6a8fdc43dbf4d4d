/* esc.h: target-controlled strings made safe to print as text.
 *
 * Thread, function, file, task and process names come from the target and
 * may hold terminal escapes ("\x1b]0;title\x07"), C1 controls or ill-formed
 * UTF-8. Text printed to a terminal or a log line shows them escaped:
 *   - C0 controls, DEL: "\n", "\r", "\t", else "\xNN" ("\x1b");
 *   - a backslash: "\\" (so an escape in the output is always ours);
 *   - C1 controls (U+0080-U+009F) and the characters that break or reorder
 *     a line (U+2028-U+202E, U+2066-U+2069) written in UTF-8: "\uNNNN";
 *   - every byte that is not part of well-formed UTF-8: "\xNN" (a raw C1
 *     byte such as 0x9b, CSI, included);
 *   - anything else, printable ASCII and valid UTF-8 ("ünïcode"), as is.
 * pst__esc() is only for text output: the sampling path never calls it
 * (it calls pst__utf8_copy() for names read, rarely).
 */
#ifndef PST_ESC_H
#define PST_ESC_H

#include <stddef.h>
#include <stdio.h>

/* A buffer size for pst__esc() that holds most names whole: a name read from
 * the target is at most 4096 bytes, and only its escaped bytes grow. */
#define PST_ESC_SIZE 4096

/* Length in bytes (1 to 4) of the well-formed UTF-8 sequence at s, or 0 when
 * the bytes at s are not one (overlong, surrogate, truncated, > U+10FFFF).
 * s must not point at its terminating NUL. */
size_t pst__utf8_len(const char *s);

/* Copies s into out (size >= 1 bytes), NUL-terminated; what does not fit
 * is cut before the character it would split (not escaped: for names kept
 * whole, such as a thread's name read from the target, escaped when
 * printed). */
void pst__utf8_copy(char *out, size_t size, const char *s);

/* Writes s (NULL is taken as "") escaped into out, which has size bytes
 * (size >= 1), always NUL-terminated. What does not fit is cut at a whole
 * character or escape and the result then ends with "..." (size >= 4).
 * Returns out, for use as a printf argument:
 *
 *   char name[PST_ESC_SIZE];
 *   printf("Thread \"%s\"\n", pst__esc(name, sizeof(name), th->name));
 */
const char *pst__esc(char *out, size_t size, const char *s);

/* Writes s (NULL is taken as "") escaped to f, whole: at most 4 bytes per
 * byte of s. */
void pst__esc_put(FILE *f, const char *s);

/* Terminal columns of the valid UTF-8 string s (as pst__esc() returns):
 * East Asian wide and fullwidth characters take 2, combining marks 0,
 * others 1. */
int pst__utf8_columns(const char *s);

/* s escaped into out (size bytes, PST_ESC_SIZE) as a table cell of width
 * columns: padded with spaces, or cut at a whole character and ended
 * with ".." when wider. Returns out. */
const char *pst__esc_cell(char *out, size_t size, const char *s, int width);

#endif
