#!/bin/sh
# test.sh: installs what the tests need, builds pystitch and runs the whole
# test suite (as root on Debian 12+ / Ubuntu 22.04+): unit and integration
# tests, then (tests/run.sh) tools/lint.sh, each fuzz harness for
# PST_FUZZ_SECONDS (60) and the same suites on an ASan/UBSan build in
# build-asan/ (tests/asan.sh). PST_QUICK=1 leaves those three out. Last
# line: "N passed, M failed, K skipped".
set -eu
cd "$(dirname "$0")"
./tools/install-deps.sh
./tests/setup-rootfs.sh || echo "test.sh: no container rootfs; those tests will be skipped"
./tests/setup-freethreaded.sh ||
  echo "test.sh: not every free-threaded CPython was built; those tests will be skipped"
[ -x configure ] || autoreconf -fi >/dev/null
# -Wall -Wextra -Werror: reconfigure a tree configured without --enable-werror.
grep -q '^PST_CFLAGS = .*-Werror' Makefile 2>/dev/null ||
  ./configure --enable-werror >/dev/null
make -j2 >/dev/null
make -j2 check >/dev/null
exec tests/run.sh
