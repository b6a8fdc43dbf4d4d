#!/bin/sh
# demo.sh: installs what pystitch needs, builds it, starts a multi-threaded
# Python demo and shows its threads with `pystitch dump` (as root).
set -eu
cd "$(dirname "$0")"
./tools/install-deps.sh
[ -x configure ] || autoreconf -fi >/dev/null
[ -f Makefile ] || ./configure >/dev/null
make -j2 >/dev/null
python3 -u tests/targets/threads.py >/tmp/pystitch-demo.out &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
while ! grep -q '^ready' /tmp/pystitch-demo.out 2>/dev/null; do sleep 0.1; done
./pystitch dump -p "$pid"
