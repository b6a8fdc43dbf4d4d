#!/bin/sh
# setup-freethreaded.sh: builds free-threaded CPythons (--disable-gil) from
# the release tarballs Debian's source packages carry (sid's and trixie's
# Sources), once, into /var/cache/pystitch/ft/<version>t; later runs reuse
# them. Versions: PST_FT_VERSIONS (default "3.13 3.14 3.15"); a version
# whose tarball the archive does not serve is skipped with the reason.
# About 5 minutes of 2 cores per build. Failure only means those tests are
# skipped (the build's log is ft/<version>t.log).
set -u
dir=${PST_ROOTFS_DIR:-/var/cache/pystitch}/ft
mirror=${PST_DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$dir"
status=0
sources=""
for v in ${PST_FT_VERSIONS:-3.13 3.14 3.15}; do
  dest=$dir/${v}t
  [ -f "$dest/.built" ] && continue
  if [ -z "$sources" ]; then
    sources=$dir/Sources
    for dist in sid trixie; do
      curl -fsS "$mirror/dists/$dist/main/source/Sources.xz" | xz -dc
    done >"$sources" 2>"$dir/Sources.log"
  fi
  # Every upstream tarball of package python$v the indexes name, newest
  # first; the first one the archive serves is built.
  origs=$(awk -v p="Package: python$v" '$0==p{s=1} /^$/{s=0}
            s && length($1)==64 && $3 ~ /\.orig\.tar\.xz$/ {print $3}' \
            "$sources" | sort -uVr)
  src=""
  for orig in $origs; do
    url=$mirror/pool/main/p/python$v/$orig
    if curl -fsSI "$url" >/dev/null 2>&1; then src=$url; break; fi
  done
  if [ -z "$src" ]; then
    tried=$(echo ${origs:-none})
    why="Debian's archive serves no source tarball of python$v (tried: $tried)"
    echo "setup-freethreaded: $why; its ${v}t tests are skipped" >&2
    echo "$why" >"$dest.why"
    continue
  fi
  rm -f "$dest.why"
  echo "setup-freethreaded: building CPython ${v}t from ${src##*/} (about 5 minutes)"
  rm -rf "$dest"
  mkdir -p "$dest"
  if ! (curl -fsS "$src" | tar -xJ -C "$dest" --strip-components=1 &&
        cd "$dest" &&
        ./configure --disable-gil --without-ensurepip --enable-shared \
          LDFLAGS="-Wl,-rpath,$dest" &&
        make -j"$(nproc)" &&
        ./python -c "import sys, asyncio; assert not sys._is_gil_enabled()" &&
        touch .built) >"$dest.log" 2>&1; then
    echo "setup-freethreaded: building ${v}t failed (see $dest.log);" \
      "its tests are skipped" >&2
    echo "building it failed (see $dest.log)" >"$dest.why"
    status=1
  fi
done
exit $status
