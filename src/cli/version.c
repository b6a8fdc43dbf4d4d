/* version.c: `pystitch --version`: the version, how this binary was built
 * (static or not, architecture, C library) and the library behind each
 * feature, with the version linked in (read at run time where the library
 * says it, else the headers' at build time). libcurl is loaded to be
 * named (a shared build opens it only when --push or this asks). */
#include <capstone/capstone.h>
#include <curses.h>
#include <elfutils/version.h>
#include <gnu/libc-version.h>
#include <jansson.h>
#include <libunwind.h>
#include <lzma.h>
#include <protobuf-c/protobuf-c.h>
#include <seccomp.h>
#include <stdio.h>
#include <uv.h>
#include <zlib.h>

#include "cli/cli.h"
#include "push/curl_api.h"

#ifdef PST_STATIC_BINARY
#define PST_LINKING "static (no shared library needed at run time)"
#else
#define PST_LINKING "shared libraries"
#endif

int pst__cli_version(void) {
  const struct pst__curl *cu = pst__curl();
  const curl_version_info_data *curl =
      cu ? cu->version_info(CURLVERSION_NOW) : NULL;
  const struct scmp_version *sc = seccomp_version();
  int cs_major = 0, cs_minor = 0;

  cs_version(&cs_major, &cs_minor);
  printf("pystitch %s\n", PACKAGE_VERSION);
  printf("build: %s, %s, glibc %s\n", PST_LINKING, PST_HOST_CPU,
         gnu_get_libc_version());
  printf("python frames: CPython 2.7, 3.6-3.15 (free-threaded and debug "
         "builds too)\n");
  printf("disassembly: capstone %d.%d\n", cs_major, cs_minor);
  printf("ELF files: libelf (elfutils 0.%d), liblzma %s (MiniDebugInfo)\n",
         _ELFUTILS_VERSION, lzma_version_string());
  printf("--native: libunwind %d.%d.%d\n", UNW_VERSION_MAJOR, UNW_VERSION_MINOR,
         UNW_VERSION_EXTRA);
  printf("sampler: libuv %s\n", uv_version_string());
  printf("pprof: protobuf-c %s, zlib %s\n", protobuf_c_version(),
         zlibVersion());
  if (curl)
    printf("--push: libcurl %s, %s (%s)%s\n", curl->version,
           curl->ssl_version ? curl->ssl_version : "no TLS",
           (curl->features & CURL_VERSION_ASYNCHDNS) ? "resolver thread"
                                                     : "blocking resolver",
#ifdef PST_STATIC_BINARY
           ""
#else
           ", loaded when used"
#endif
    );
  else
    printf("--push: unavailable: %s\n", pst__curl_why());
  printf("top: %s\n", curses_version());
  printf("dump --merge: jansson %s\n", JANSSON_VERSION);
  printf("sandbox: libseccomp %u.%u.%u, libcap\n", sc ? sc->major : 0,
         sc ? sc->minor : 0, sc ? sc->micro : 0);
  return PST_EXIT_OK;
}
