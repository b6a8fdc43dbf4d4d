#!/bin/sh
# setup-rootfs.sh: builds the Debian rootfs the container tests run targets
# in (sid for python3.14, trixie for python3.13), once; later runs reuse
# them. Needs root and Debian's package archive. Failure only means those
# tests are skipped.
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
exit $status
