#!/bin/sh
# demo.sh: installs what pystitch needs, builds it, starts a multi-threaded
# Python demo, shows its threads with `pystitch dump` (Python frames, then
# with --native C frames stitched in), then records it for 3 seconds into a
# flame graph with native frames (as root).
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
./pystitch dump --native -p "$pid"
./pystitch record --native -p "$pid" -d 3 --threads -o pystitch-demo.svg
echo "open pystitch-demo.svg in a browser to explore the flame graph"
