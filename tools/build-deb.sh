#!/bin/sh
# build-deb.sh DIST: builds the Debian packages (debian/: pystitch,
# libpystitch5, libpystitch-dev) for DIST (trixie or sid) with
# `dpkg-buildpackage -us -uc -b` inside that release, checks them with
# lintian, then installs the program alone with `apt-get install
# ./pystitch_*.deb` in a fresh copy of the release's rootfs (its minbase
# and python3; sid's has torch too), dumps a python3 there, then adds the
# library packages and checks their files. The .debs land in
# build-deb/DIST/. Run as root.
#
# The rootfs are the test rootfs (tests/setup-rootfs.sh), left untouched:
# the build runs on an overlay of it whose upper layer (the build
# dependencies, cached in /var/cache/pystitch/deb-DIST) is kept for the
# next runs while the rootfs stays the same; the install runs on an
# overlay whose upper layer is thrown away. Exit 77: no rootfs for DIST.
set -eu
dist=${1:?usage: build-deb.sh trixie|sid}
top=$(cd "$(dirname "$0")/.." && pwd)
cache=${PST_ROOTFS_DIR:-/var/cache/pystitch}
base=$cache/$dist-rootfs
b=$cache/deb-$dist
out=$top/build-deb/$dist
if [ ! -x "$base/usr/bin/apt-get" ]; then
  echo "build-deb.sh: no $base (tests/setup-rootfs.sh makes it)" >&2
  exit 77
fi
mkdir -p "$out"
log=$out/build.log
: >"$log"
die() {
  echo "build-deb.sh $dist: $1 (log: $log)" >&2
  tail -n 25 "$log" >&2
  exit 1
}

# Runs the shell script $3 in rootfs $1 seen through an overlay with upper
# layer $2, as a container (own mount and pid namespaces, its /proc),
# with the source tree at /pst/src and the output directory at /pst/out.
in_overlay() {
  lower=$1 upper=$2 script=$3
  mkdir -p "$upper/upper" "$upper/work" "$upper/merged"
  timeout 1800 unshare --mount --pid --fork sh -c '
    set -e
    m=$3/merged
    mount -t overlay overlay \
      -o "lowerdir=$2,upperdir=$3/upper,workdir=$3/work" "$m"
    mount -t proc proc "$m/proc"
    mkdir -p "$m/pst/src" "$m/pst/out"
    mount --bind "$4" "$m/pst/src"
    mount --bind "$5" "$m/pst/out"
    exec chroot "$m" /bin/sh -c "$1"' sh "$script" "$lower" "$upper" \
    "$top" "$out"
}

apt_opts="-o Acquire::Check-Valid-Until=false -o APT::Sandbox::User=root"

# 1. The build rootfs: the release's rootfs plus the build dependencies
# (debian/control's, by apt-get build-dep) and lintian; made again when
# the rootfs changed.
sum=$(md5sum "$base/var/lib/dpkg/status" | cut -d' ' -f1)
if [ "$(cat "$b/base.md5" 2>/dev/null)" != "$sum" ] ||
   [ ! -f "$b/upper/.pst-build-deps" ]; then
  echo "build-deb.sh: making the $dist build rootfs in $b"
  rm -rf "$b"
  mkdir -p "$b"
  in_overlay "$base" "$b" "set -e; export DEBIAN_FRONTEND=noninteractive
    apt-get $apt_opts update -qq
    apt-get $apt_opts install -y -qq --no-install-recommends build-essential \
      debhelper lintian fakeroot
    apt-get $apt_opts build-dep -y -qq /pst/src
    apt-get clean
    touch /.pst-build-deps" >>"$log" 2>&1 || die "installing the build dependencies"
  echo "$sum" >"$b/base.md5"
fi

# 2. dpkg-buildpackage on a copy of the sources (as git lists them), then
# lintian: no error and no warning.
rm -rf "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo "$out/pystitch"
mkdir -p "$out/pystitch"
(cd "$top" && git ls-files -z --cached --others --exclude-standard |
  tar --null --ignore-failed-read -T - -cf - 2>/dev/null) |
  tar -C "$out/pystitch" -xf - || die "copying the sources"
in_overlay "$base" "$b" "set -e
  cd /pst/out/pystitch
  dpkg-buildpackage -us -uc -b -j2
  lintian --fail-on error,warning --suppress-tags \
    initial-upload-closes-no-bugs ../*.changes
  echo \"lintian: no error or warning; information: \$(lintian -I \
    ../*.changes | cut -d' ' -f3 | sort | uniq -c | tr -s ' ' | tr '\\n' ,)\"" \
  >>"$log" 2>&1 ||
  die "dpkg-buildpackage or lintian"
rm -rf "$out/pystitch"
ls "$out"/*.deb | sed 's|.*/||'

# 3. A fresh rootfs of the release: the packages installed with apt-get
# (their dependencies from the archive), then a dump of a python3 there.
fresh=$(mktemp -d /var/tmp/pst-deb-XXXXXX)
trap 'rm -rf "$fresh"' EXIT
in_overlay "$base" "$fresh" "set -e; export DEBIAN_FRONTEND=noninteractive
  command -v pystitch && exit 3
  apt-get $apt_opts update -qq
  cd /pst/out
  # The program alone, as the README says: it needs no libpystitch5.
  apt-get $apt_opts install -y -qq --no-install-recommends ./pystitch_*.deb
  dpkg-query -W -f='\${Status}' libpystitch5 2>/dev/null | grep -q installed &&
    exit 4
  pystitch --version | head -n 2
  test -f /usr/lib/systemd/system/pystitch.service -o \
    -f /lib/systemd/system/pystitch.service
  apt-get $apt_opts install -y -qq --no-install-recommends \
    ./libpystitch5_*.deb ./libpystitch-dev_*.deb
  ls /usr/lib/*/pkgconfig/pystitch.pc /usr/include/pystitch.h
  py=\$(ls /usr/bin/python3* | grep -E 'python3[.][0-9]+\$' | head -n 1)
  \$py -c 'import time
def parked():
    time.sleep(60)
parked()' & T=\$!
  sleep 0.5
  pystitch dump -p \$T | tee /tmp/dump.txt
  kill \$T
  grep -q parked /tmp/dump.txt" >>"$log" 2>&1 ||
  die "installing in a fresh $dist rootfs or dumping its python"
grep -E '^lintian: ' "$log"
grep -E '^pystitch [0-9]|^build:|Thread .*MainThread|parked' "$log" | tail -n 4
