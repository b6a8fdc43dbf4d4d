#!/bin/sh
# install-deps.sh: installs what pystitch needs to build and test, from the
# distribution's packages (Debian 12+, Ubuntu 22.04+). Run as root.
set -eu
if [ "$(id -u)" != 0 ]; then
  echo "install-deps.sh: run as root (apt-get install)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
  build-essential autoconf automake libtool pkg-config \
  libelf-dev libcapstone-dev libunwind-dev libuv1-dev libncurses-dev tmux \
  musl-tools debootstrap python3 util-linux procps ca-certificates strace \
  protobuf-c-compiler libprotobuf-c-dev zlib1g-dev protobuf-compiler \
  liblzma-dev libiberty-dev xz-utils libcurl4-openssl-dev libcap-dev \
  libseccomp-dev libjansson-dev \
  openssl python3-pip python3-setuptools python3-wheel \
  chromium clang clang-tidy clang-format cppcheck \
  >/dev/null
# Separate debug files for tests/unit/test-debuginfo.c and test-origin.c:
# glibc's (libc6-dbg) and, on Debian 12, those of /usr/bin/python3.11
# (python3.11-dbg ships /usr/lib/debug/.build-id/ files for the python3.11
# of its own version, and so brings python3.11 to that version). Optional:
# the tests say what is missing and skip.
for p in libc6-dbg python3.11-dbg; do
  apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 || true
done
# libFuzzer's runtime (fuzz/): its own package on Debian 12, part of
# libclang-common-*-dev elsewhere; fuzz/build.sh skips when it is missing.
apt-get install -y -qq --no-install-recommends libclang-rt-14-dev \
  >/dev/null 2>&1 || true
# uvloop for /usr/bin/python3, for the --async test of a loop that does not
# say its thread (test_dump.py; skipped with the reason without it).
apt-get install -y -qq --no-install-recommends python3-uvloop \
  >/dev/null 2>&1 || echo "install-deps.sh: no python3-uvloop;" \
  "test_dump.py skips its uvloop test" >&2
# Real workloads for tests/integration/test_apps.py: Debian's PyTorch and
# gunicorn for /usr/bin/python3 (python3.11 on Debian 12; not a pyenv shim
# that may come first in PATH). Optional: where the distribution lacks
# them, those tests are skipped with the reason.
if apt-get install -y -qq --no-install-recommends python3-torch \
     python3-gunicorn python3-uvicorn >/dev/null 2>&1; then
  /usr/bin/python3 -c "import torch, gunicorn, uvicorn" 2>/dev/null ||
    echo "install-deps.sh: python3-torch/-gunicorn/-uvicorn installed but" \
      "do not import; test_apps.py will skip" >&2
else
  echo "install-deps.sh: python3-torch, -gunicorn or -uvicorn not" \
    "available; test_apps.py will skip them" >&2
fi
