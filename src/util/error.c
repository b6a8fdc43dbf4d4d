/* error.c: names and messages for negative errnos and pystitch's PST_E* codes. */
#include <errno.h>
#include <string.h>

#include "pystitch/errno.h"

const char *pst_strerror(int err) {
  switch (err) {
#define PST_ERRNO_MSG(name, val, msg)                                          \
  case val:                                                                    \
    return msg;
    PST_ERRNO_MAP(PST_ERRNO_MSG)
#undef PST_ERRNO_MSG
  }
  if (err < 0)
    return strerror(-err);
  return "success";
}

const char *pst_errname(int err) {
  switch (err) {
#define PST_ERRNO_NAME(name, val, msg)                                         \
  case val:                                                                    \
    return "PST_" #name;
    PST_ERRNO_MAP(PST_ERRNO_NAME)
#undef PST_ERRNO_NAME
  case 0:
    return "OK";
  case -ESRCH:
    return "ESRCH";
  case -EPERM:
    return "EPERM";
  case -EFAULT:
    return "EFAULT";
  case -EIO:
    return "EIO";
  case -ENOMEM:
    return "ENOMEM";
  case -EINVAL:
    return "EINVAL";
  case -ENOENT:
    return "ENOENT";
  case -EACCES:
    return "EACCES";
  case -ENOSYS:
    return "ENOSYS";
  case -EAGAIN:
    return "EAGAIN";
  case -ESTALE:
    return "ESTALE";
  case -ENOEXEC:
    return "ENOEXEC";
  }
  return "E?";
}
