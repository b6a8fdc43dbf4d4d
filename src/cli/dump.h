/* dump.h: what `pystitch dump` shares between its one-process output
 * (cmd_dump.c) and its many-process one (dump_many.c: -p A,B, -s, --all,
 * grouped by stack).
 *
 * Everything here prints to stdout; names from the target are escaped
 * (text) or JSON-encoded.
 */
#ifndef PST_CLI_DUMP_H
#define PST_CLI_DUMP_H

#include "cli/options.h"
#include "pystitch.h"

/* One frame's line of the text output ("    name (file:line)"). */
void pst__dump_frame_text(const struct pst_frame *f);

/* A thread's state words for the text output, "idle, holds GIL,
 * exception ValueError" (escaped), into buf (PST_ESC_SIZE). */
const char *pst__dump_state_text(const struct pst_thread *x, char *buf);

/* One process as a JSON object (pid, version, threads...), its closing
 * brace left out: the caller adds fields, then closes it. With locals_of
 * (--locals: the process's target), each thread with a Python state is
 * read again with its locals (pst__dump_with_locals()). */
void pst__dump_json_open(const struct pst_target_info *info,
                         const struct pst_thread *th, int n, double snap_ms,
                         struct pst_target *locals_of);

/* --locals: thread x of target t read again, stopped, with its frames'
 * locals (*fl, one per frame; NULL when they cannot be read, or x has no
 * Python state: x itself is returned then). Valid until the next call on
 * t. */
const struct pst_thread *
pst__dump_with_locals(struct pst_target *t, const struct pst_thread *x,
                      const struct pst_frame_locals **fl);

/* A frame's locals as text lines under it ("        name = value"),
 * escaped; nothing for NULL. */
void pst__dump_frame_locals_text(const struct pst_frame_locals *fl);

/* --async: the tasks as text, each as a stack under its waiters,
 * starting with a line "asyncio tasks: N". */
void pst__dump_tasks_text(const struct pst_task *tk, int n);

/* --async: the tasks as the JSON field ',\n"tasks": [...]'. */
void pst__dump_tasks_json(const struct pst_task *tk, int n);

/* --async: reads t's tasks, or says on stderr why there are none. Returns
 * how many (0 when none). */
int pst__dump_read_tasks(struct pst_target *t, pid_t pid, int flags,
                         const struct pst_task **tk);

/* dump of several processes: the -p list, each one's descendants with
 * -s, or --all (--match, --exclude): every process attached, then all
 * read in one pass; text shows identical stacks once with who has them
 * (ranks, roles), the odd ones first; --json every process whole.
 * Returns the exit code. */
int pst__dump_many(const struct pst__cli_opts *o);

#endif
