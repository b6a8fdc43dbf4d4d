/* pystitch/errno.h: libpystitch's error codes, their names and messages.
 *
 * Every function of the library returns 0 (or a count) on success and a
 * negative errno or one of the PST_E* codes below on failure. This header
 * is all a module needs for that: include/pystitch.h includes it, and the
 * lower layers of the library include only it.
 */
#ifndef PYSTITCH_ERRNO_H
#define PYSTITCH_ERRNO_H

#ifdef __cplusplus
extern "C" {
#endif

/* Marks what libpystitch exports (it is built -fvisibility=hidden). */
#ifndef PST_API
#if defined(__GNUC__)
#define PST_API __attribute__((visibility("default")))
#else
#define PST_API
#endif
#endif

/* pystitch's own error codes sit below -4000 (like libuv's UV__EOF), beside
 * negative errnos. X(name, value, message). */
#define PST_ERRNO_MAP(X)                                                       \
  X(ENOTPY, -4001, "not a Python process (no libpython or python binary)")    \
  X(EPYVERSION, -4002, "unsupported CPython version")                          \
  X(ENOSYM, -4003, "symbol not found")                                         \
  X(ETORN, -4004, "stack changed while it was read (torn read)")               \
  X(EBADDATA, -4005, "target memory does not look like what was expected")     \
  X(ENOTSD, -4006, "libc thread-specific-data layout not found")               \
  X(ENOKEY, -4007, "CPython thread-state key not found")                       \
  X(ENOTHREADSTATE, -4008, "thread has no Python thread state")                \
  X(ESELF, -4009, "refusing to profile pystitch itself")                       \
  X(EZOMBIE, -4010, "process is a zombie")                                   \
  X(ETRACED, -4011, "process is already traced by another debugger")       \
  X(ENOTREADY, -4012, "the process is starting: its interpreter (or libc) "  \
                      "is not initialised yet")

enum {
#define PST_ERRNO_ENUM(name, val, msg) PST_##name = val,
  PST_ERRNO_MAP(PST_ERRNO_ENUM)
#undef PST_ERRNO_ENUM
};

/* Message for a negative errno or PST_E* code. Never NULL; static storage. */
PST_API const char *pst_strerror(int err);
/* Symbolic name ("ESRCH", "PST_ENOTPY"). Never NULL; static storage. */
PST_API const char *pst_errname(int err);

#ifdef __cplusplus
}
#endif
#endif
