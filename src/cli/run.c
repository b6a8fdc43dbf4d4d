/* run.c: what record and top share around the engine's run: its ready()
 * hook (the sandbox), its error as a message and an exit code, the names
 * of thread-sample errors, and why an output could not be written. */
/*
 * Ownership: nothing kept; the strings returned are static.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "output/writer.h"
#include "pystitch.h"
#include "sampler/sampler.h"
#include "sandbox/sandbox.h"
#include "util/log.h"

void pst__cli_sandbox(const struct pst__sampler_opts *o, void *arg) {
  const char *out = arg;
  struct pst__sandbox_opts so = {0};

  if (o->no_sandbox) {
    pst__info("--no-sandbox: every privilege kept");
    return;
  }
  so.filter = o->all;
  /* A command started as sudo's user is signalled at the end. */
  so.keep_kill = o->argv && !o->keep_running && geteuid() == 0 &&
                 getenv("SUDO_UID") != NULL;
  /* A file written at the end (not our own descriptor, -o -): its
   * directory decides whether CAP_DAC_OVERRIDE stays. */
  if (out && *out && pst__writer_own_fd(out) < 0) {
    char *dir = pst__writer_dir_of(out);
    so.keep_dac_override = dir && pst__sandbox_dir_needs_override(dir);
    if (so.keep_dac_override)
      pst__info("sandbox: CAP_DAC_OVERRIDE kept: %s is not ours to write", dir);
    free(dir);
  }
  pst__sandbox_enter(&so);
}

int pst__cli_sampler_error(const struct pst__sampler_opts *o, int err) {
  if (err == -ENOENT && o->argv) {
    fprintf(stderr, "pystitch: error: command not found: %s\n", o->argv[0]);
    return PST_EXIT_NO_PROCESS;
  }
  return pst__cli_explain(o->npids ? o->pids[0] : 0, err);
}

const char *pst__cli_error_name(int err) {
  const char *name;

  if (err == PST_ETORN)
    return "torn";
  if (err == -ESRCH)
    return "gone";
  name = pst_errname(err);
  return strncmp(name, "PST_", 4) ? name : name + 4;
}

const char *pst__cli_error_reason(int err) {
  switch (err) {
  case PST_ETORN:
  case -ESRCH:
    return pst__cli_error_name(err);
  case -EFAULT:
    return "EFAULT (memory unreadable: freed or unmapped while read)";
  case PST_EBADDATA:
    return "EBADDATA (not a frame or code object when read)";
  case -EAGAIN:
    return "EAGAIN (thread in D or T state: not stopped for --native)";
  case -ENOMEM:
    return "ENOMEM (out of memory)";
  case -EPERM:
    return "EPERM (ptrace refused)";
  default:
    return NULL;
  }
}

const char *pst__cli_output_why(int err) {
  switch (err) {
  case -EPERM:
    return "a FIFO, device or socket owned by another user in a directory "
           "others can write to (it may have been planted): not written; "
           "remove it or choose another -o";
  case -ENXIO:
    return "nothing reads it (start the FIFO's reader first; a socket "
           "cannot be written) or choose another -o";
  case -ESTALE:
    return "it was replaced while being opened (someone else writes that "
           "directory); choose another -o";
  case -EBADF:
    return "that descriptor is not open for writing; redirect it "
           "(3>FILE) or choose another -o";
  case -ELOOP:
    return "it became a symlink while being opened; choose another -o";
  default:
    return pst_strerror(err);
  }
}
