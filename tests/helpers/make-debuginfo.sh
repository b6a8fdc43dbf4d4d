#!/bin/sh
# make-debuginfo.sh SRC DIR: builds SRC (tests/helpers/debuginfo-lib.c) as a
# shared library and splits off its debug info as distributions do, into:
#   DIR/full.so                 the library with every symbol (reference)
#   DIR/link/libpstdbg.so       stripped, with a .gnu_debuglink to
#   DIR/link/.debug/libpstdbg.so.debug   (the module's .debug/ directory)
#   DIR/bid/libpstdbg.so        stripped, no .gnu_debuglink; its debug file
#   DIR/debugroot/usr/lib/debug/.build-id/xx/yyyy.debug  by build-id
#   DIR/other.debug             the debug file of another build (another
#                               build-id and CRC), for the mismatch tests
# (objcopy --only-keep-debug, strip --strip-debug --strip-unneeded,
# objcopy --add-gnu-debuglink: the procedure of GDB's manual, "Separate
# Debug Files").
set -eu
src=$1
dir=$2
mkdir -p "$dir/link/.debug" "$dir/bid"
cc=${CC:-gcc}
$cc -g -O1 -fPIC -shared -Wl,--build-id -o "$dir/full.so" "$src" -lpthread
$cc -g -O1 -fPIC -shared -Wl,--build-id -DPST_DBG_OTHER -o "$dir/other.so" \
  "$src" -lpthread
objcopy --only-keep-debug "$dir/other.so" "$dir/other.debug"
objcopy --only-keep-debug "$dir/full.so" "$dir/link/.debug/libpstdbg.so.debug"
strip --strip-debug --strip-unneeded -o "$dir/stripped.so" "$dir/full.so"
cp "$dir/stripped.so" "$dir/bid/libpstdbg.so"
objcopy --add-gnu-debuglink="$dir/link/.debug/libpstdbg.so.debug" \
  "$dir/stripped.so" "$dir/link/libpstdbg.so"
id=$(readelf -n "$dir/full.so" | awk '/Build ID:/ { print $3 }')
prefix=$(echo "$id" | cut -c1-2)
rest=$(echo "$id" | cut -c3-)
mkdir -p "$dir/debugroot/usr/lib/debug/.build-id/$prefix"
cp "$dir/link/.debug/libpstdbg.so.debug" \
  "$dir/debugroot/usr/lib/debug/.build-id/$prefix/$rest.debug"
echo "$id" > "$dir/build-id"
