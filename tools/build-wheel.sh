#!/bin/sh
# build-wheel.sh: builds the pystitch wheel (pystitch-VERSION-py3-none-
# manylinux_2_17_x86_64.whl) into dist/: pystitch-static (built first when
# absent: tools/build-static.sh) as the wheel's script, which pip installs
# as bin/pystitch. Offline, with the distribution's setuptools and wheel
# (`pip wheel --no-build-isolation`; packaging/wheel/setup.py), as root or
# not. Environment: PST_PYTHON (default /usr/bin/python3).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
py=${PST_PYTHON:-/usr/bin/python3}
arch=$(uname -m)
[ -x "$top/pystitch-static" ] || "$top/tools/build-static.sh"
version=$("$top/pystitch-static" --version | sed -n '1s/^pystitch //p')
[ -n "$version" ] || { echo "build-wheel.sh: pystitch-static --version says no version" >&2; exit 1; }
stage=$top/build-wheel
rm -rf "$stage"
mkdir -p "$stage" "$top/dist"
cp "$top/packaging/wheel/setup.py" "$top/README.md" "$stage/"
cp "$top/pystitch-static" "$stage/pystitch"
printf '[bdist_wheel]\npython_tag = py3\nplat_name = manylinux_2_17_%s\n' \
  "$arch" >"$stage/setup.cfg"
rm -f "$top"/dist/pystitch-"$version"-*.whl
(cd "$stage" && PST_VERSION=$version "$py" -m pip wheel -q --no-build-isolation \
   --no-deps --no-index -w "$top/dist" .) || {
  echo "build-wheel.sh: pip wheel failed (apt-get install python3-pip" \
    "python3-setuptools python3-wheel)" >&2
  exit 1
}
rm -rf "$stage"
ls "$top"/dist/pystitch-"$version"-py3-none-manylinux_2_17_"$arch".whl
