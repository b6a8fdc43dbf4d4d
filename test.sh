#!/bin/sh
# test.sh: installs what the tests need, builds pystitch and runs the whole
# test suite (as root on Debian 12+ / Ubuntu 22.04+). Last line:
# "N passed, M failed, K skipped".
set -eu
cd "$(dirname "$0")"
./tools/install-deps.sh
./tests/setup-rootfs.sh || echo "test.sh: no container rootfs; those tests will be skipped"
[ -x configure ] || autoreconf -fi >/dev/null
[ -f Makefile ] || ./configure --enable-werror >/dev/null
make -j2 >/dev/null
make -j2 check >/dev/null
exec tests/run.sh
