/* dump.h: what `pystitch dump` shares between its one-process output
 * (cmd_dump.c) and its many-process one (dump_many.c: -p A,B, -s, --all,
 * grouped by stack).
 *
 * Everything here prints to stdout; names from the target are escaped
 * (text) or JSON-encoded.
 */
#ifndef PST_CLI_DUMP_H
#define PST_CLI_DUMP_H

#include <stddef.h>
#include <stdint.h>

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

/* One process of a dump of several: read now (t), or from a saved
 * --json dump (--merge: t NULL, its threads and their locals texts owned
 * by dump_merge.c). */
struct pst__dump_proc {
  pid_t pid;
  struct pst_target *t; /* live: NULL when not read, err says why */
  int err;
  int given;      /* named by -p: a failure is told (else only listed) */
  int read;       /* has threads to show (th, n) */
  int from_merge; /* from a saved dump: named with its host */
  int n;          /* its threads */
  const struct pst_thread *th;
  char ***loc; /* --merge: per thread, per frame, its locals as text
                  ("name\x1fvalue\x1e..."), or NULL */
  const struct pst_task *tasks;
  int ntasks;
  int rank, local_rank, world_size; /* from its environment, -1: none */
  char role[64], container[64], cmd[256], host[64], version[32];
};

/* p's labels from /proc and its target (p->pid, p->t set): rank, local
 * rank and world size from its environment (-1: absent), container (in
 * another pid namespace than ns, ours), command line, role, version;
 * host is this host's name. */
void pst__dump_proc_label(struct pst__dump_proc *p, uint64_t ns,
                          const char *host);

/* p's labels as JSON fields (', "role": ..., "cmdline": ...'). */
void pst__dump_proc_json_fields(const struct pst__dump_proc *p);

/* This host's name (gethostname), "" when unknown. */
void pst__dump_hostname(char *out, size_t len);

/* The text view of ps[0..np): a line per process, then every distinct
 * stack once with who has it, the rarest first; with locals, each
 * frame's locals (where they differ, who has which). ms: the time the
 * stacks were read within (< 0: not known, a merge). Returns 0 or
 * -ENOMEM. */
int pst__dump_print_many(struct pst__dump_proc *ps, int np, double ms,
                         int locals);

/* The locals of one frame as the grouped view keeps them (malloc'ed
 * "name\x1fvalue\x1e..." text). */
char *pst__dump_locals_text(const struct pst_frame_locals *fl);

/* dump of several processes: the -p list, each one's descendants with
 * -s, or --all (--match, --exclude): every process attached, then all
 * read in one pass; text shows identical stacks once with who has them
 * (ranks, roles), the odd ones first; --json every process whole.
 * Returns the exit code. */
int pst__dump_many(const struct pst__cli_opts *o);

/* dump --merge FILE...: saved `dump --json` outputs (one process, or
 * several, from several hosts) shown as one grouped view, each process
 * labelled by its host and rank. Returns the exit code. */
int pst__dump_merge(const struct pst__cli_opts *o);

#endif
