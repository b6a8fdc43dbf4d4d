#!/bin/sh
# setup-rootfs.sh: builds the Debian rootfs the container tests run targets
# in (sid for python3.14, python3.15 and their debug builds, trixie for
# python3.13), once; later runs reuse them. Needs root and Debian's package
# archive. Failure only means those tests are skipped.
set -u
dir=${PST_ROOTFS_DIR:-/var/cache/pystitch}
mkdir -p "$dir"
status=0
for spec in sid:python3.14 trixie:python3.13; do
  dist=${spec%%:*}
  py=${spec#*:}
  root=$dir/$dist-rootfs
  [ -x "$root/usr/bin/$py" ] && continue
  echo "setup-rootfs: building $root with $py (about a minute)"
  rm -rf "$root"
  if ! timeout 900 debootstrap --variant=minbase --include="$py" "$dist" \
       "$root" http://deb.debian.org/debian >"$dir/$dist.log" 2>&1; then
    echo "setup-rootfs: debootstrap $dist failed (see $dir/$dist.log)" >&2
    rm -rf "$root"
    status=1
  fi
done
# A command inside the rootfs, with /proc mounted in a mount namespace of
# its own (gone when it ends), at most 15 minutes.
in_root() {
  timeout 900 unshare --mount --fork sh -c \
    'mount -t proc proc "$1/proc" && exec chroot "$@"' sh "$@"
}
# Installs the packages named after $2 into rootfs $1 (log: $2). Check-
# Valid-Until=false: a rootfs kept for weeks has a Release file past its
# date. apt-get clean: the .debs are not kept.
add_packages() {
  root=$1 log=$2
  shift 2
  in_root "$root" sh -c 'export DEBIAN_FRONTEND=noninteractive
       apt-get -o Acquire::Check-Valid-Until=false update -qq &&
       apt-get install -y -qq --no-install-recommends "$@" &&
       apt-get clean' sh "$@" >"$log" 2>&1
}
sid=$dir/sid-rootfs
if [ "${PST_ROOTFS_TORCH:-1}" != 0 ] && [ -x "$sid/usr/bin/python3.14" ] &&
   [ "$(chroot "$sid" dpkg-query -W -f='${Status}' python3-torch \
        2>/dev/null)" != "install ok installed" ]; then
  echo "setup-rootfs: adding python3-torch to $sid (about a minute)"
  if add_packages "$sid" "$dir/sid-torch.log" python3-torch &&
     in_root "$sid" python3.14 -c "import torch" >>"$dir/sid-torch.log" 2>&1
  then
    echo "setup-rootfs: python3-torch added to $sid"
  else
    echo "setup-rootfs: no python3-torch in $sid (see $dir/sid-torch.log);" \
      "its torch tests will be skipped" >&2
  fi
fi
# CPython 3.15 beside 3.14 in sid, and both debug builds (python3.14d,
# python3.15d): each its own interpreter in the tests.
if [ "${PST_ROOTFS_MORE:-1}" != 0 ] && [ -x "$sid/usr/bin/python3.14" ] &&
   { [ ! -x "$sid/usr/bin/python3.15" ] || [ ! -x "$sid/usr/bin/python3.15d" ] ||
     [ ! -x "$sid/usr/bin/python3.14d" ]; }; then
  echo "setup-rootfs: adding python3.15, python3.15-dbg, python3.14-dbg to $sid"
  if add_packages "$sid" "$dir/sid-more.log" python3.15 python3.15-dbg \
       python3.14-dbg &&
     in_root "$sid" python3.15 -c "import threading" >>"$dir/sid-more.log" 2>&1
  then
    echo "setup-rootfs: python3.15 and the debug builds added to $sid"
  else
    echo "setup-rootfs: not all of python3.15, python3.15-dbg, python3.14-dbg" \
      "in $sid (see $dir/sid-more.log); the absent ones' tests are skipped" >&2
  fi
fi
# pip and venv in sid, for the wheel's test (test_packages.py installs it
# in a venv of python3.14 there).
if [ -x "$sid/usr/bin/python3.14" ] && [ ! -d "$sid/usr/lib/python3.14/ensurepip" ]; then
  echo "setup-rootfs: adding python3.14-venv and python3-pip to $sid"
  add_packages "$sid" "$dir/sid-venv.log" python3.14-venv python3-pip ||
    echo "setup-rootfs: no python3.14-venv in $sid (see $dir/sid-venv.log);" \
      "the wheel's test will be skipped" >&2
fi
exit $status
