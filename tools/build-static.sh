#!/bin/sh
# build-static.sh: builds pystitch-static, the pystitch program linked
# statically with every library it uses, into the top of the tree (run as
# root on Debian 12+: `make static`). Debian ships the static archive of
# each dependency but libcurl's (its libcurl.a wants libraries Debian has
# only as shared objects: gssapi, ldap, ssh2, rtmp, psl, nghttp2), so a
# libcurl for HTTP and HTTPS only (OpenSSL, zlib) is built from Debian's
# own source package (`apt-get source curl`, a deb-src entry is added for
# it) and kept under /var/cache/pystitch/static/ for the next runs.
#
# glibc, not musl: Debian's static archives are built against glibc.
# Name resolution still works without the libnss modules of a container:
# glibc 2.34+ has its "files" and "dns" back ends inside libc (checked by
# tests/integration/test_static.py, which pushes to "localhost" from the
# sid rootfs). Environment: PST_STATIC_CACHE (the cache above), PST_JOBS.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cache=${PST_STATIC_CACHE:-/var/cache/pystitch/static}
jobs=${PST_JOBS:-2}
b=$top/build-static
mkdir -p "$cache" "$b"
log=$b/build.log
: >"$log"

die() {
  echo "build-static.sh: $1 (log: $log)" >&2
  tail -n 20 "$log" >&2
  exit 1
}

# 1. libcurl, HTTP(S) only, static, from Debian's source package.
curl_ver=$(dpkg-query -W -f '${source:Version}' libcurl4-openssl-dev \
  2>/dev/null || true)
[ -n "$curl_ver" ] || die "libcurl4-openssl-dev is not installed (tools/install-deps.sh)"
curl_dir=$cache/curl-$curl_ver
if [ ! -f "$curl_dir/lib/libcurl.a" ]; then
  echo "build-static.sh: building libcurl $curl_ver (HTTP, HTTPS) in $cache"
  if ! apt-get indextargets --format '$(CREATED_BY)' 2>/dev/null |
       grep -qx Sources; then
    codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
    cat >/etc/apt/sources.list.d/pystitch-src.sources <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $codename $codename-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    apt-get update -qq >>"$log" 2>&1 || die "apt-get update (deb-src)"
  fi
  src=$cache/src
  rm -rf "$src"
  mkdir -p "$src"
  (cd "$src" && apt-get source -qq "curl=$curl_ver") >>"$log" 2>&1 ||
    die "apt-get source curl=$curl_ver"
  cdir=$(find "$src" -maxdepth 1 -type d -name 'curl-*' | head -n 1)
  [ -n "$cdir" ] || die "no curl source in $src"
  # Debian builds its OpenSSL flavour with the GnuTLS and NSS flavour
  # patches (the last two of the series) taken off again; so does this.
  for p in $(grep -v '^#' "$cdir/debian/patches/series" |
               grep -E '^(90_gnutls|99_nss)' | sort -r); do
    (cd "$cdir" && patch -R -s -p1 <"debian/patches/$p") >>"$log" 2>&1 ||
      die "taking $p off"
  done
  (cd "$cdir" && autoreconf -fi && ./configure --prefix="$curl_dir" \
     --disable-shared --enable-static --with-openssl --with-zlib \
     --without-nghttp2 --without-libidn2 --without-librtmp \
     --without-libssh2 --without-libpsl --without-zstd --without-brotli \
     --without-gssapi --without-libgsasl --disable-ldap --disable-ldaps \
     --disable-ftp --disable-file --disable-dict --disable-telnet \
     --disable-tftp --disable-pop3 --disable-imap --disable-smtp \
     --disable-gopher --disable-mqtt --disable-rtsp --disable-smb \
     --disable-ntlm --disable-manual --with-ca-fallback &&
   make -j"$jobs" -C lib && make -C lib install && make -C include install &&
   make install-pkgconfigDATA) >>"$log" 2>&1 || die "building libcurl"
  rm -rf "$src"
  [ -f "$curl_dir/lib/libcurl.a" ] || die "no $curl_dir/lib/libcurl.a"
fi

# libtool takes a libcurl.la beside libcurl.a for its own and then drops
# -lcurl from the static link: only the archive is kept.
rm -f "$curl_dir"/lib/*.la

# 2. pystitch, out of tree, against that libcurl and Debian's archives.
# A tree configured in place cannot host a VPATH build: its sources (as
# git lists them) are copied to build-static/src, as tests/asan.sh does.
src=$top
if [ -f "$top/config.status" ]; then
  src=$b/src
  mkdir -p "$src"
  (cd "$top" && git ls-files -z --cached --others --exclude-standard |
    tar --null --ignore-failed-read -T - -cf - 2>/dev/null) |
    tar -C "$src" -xpf - || die "copying the sources"
fi
if [ ! -x "$src/configure" ] || [ "$src/configure.ac" -nt "$src/configure" ] ||
   [ "$src/Makefile.am" -nt "$src/Makefile.in" ]; then
  (cd "$src" && autoreconf -fi) >>"$log" 2>&1 || die "autoreconf"
  rm -rf "$b/obj" # configured anew
fi
mkdir -p "$b/obj"
if [ ! -f "$b/obj/Makefile" ]; then
  (cd "$b/obj" && PKG_CONFIG_PATH="$curl_dir/lib/pkgconfig" \
     "$src/configure" --enable-werror --enable-static-binary) \
    >>"$log" 2>&1 || die "configure"
fi
(cd "$b/obj" && make -j"$jobs" pystitch) >>"$log" 2>&1 || die "make"
# Statically linked glibc warns that getaddrinfo/getpwnam load NSS
# modules; "files" and "dns" are in libc itself (see above).
readelf -l "$b/obj/pystitch" | grep -q INTERP &&
  die "build-static/obj/pystitch is not statically linked"
strip -o "$top/pystitch-static" "$b/obj/pystitch"
echo "build-static.sh: $top/pystitch-static," \
  "$(($(stat -c %s "$top/pystitch-static") / 1024)) KiB"
