#!/bin/sh
# make-minidebuginfo.sh IN OUT: writes OUT.stripped (IN with every symbol
# table stripped) and OUT (the same plus a .gnu_debugdata section: an
# xz-compressed ELF whose .symtab holds the functions .dynsym lacks), as
# Fedora builds them. Procedure from GDB's manual, "MiniDebugInfo".
set -eu
in=$1
out=$2
tmp=$out.d
rm -rf "$tmp"
mkdir -p "$tmp"
# Defined functions minus the ones the dynamic symbol table already has.
nm -D --format=posix --defined-only "$in" | awk '{ print $1 }' | sort \
  > "$tmp/dynamic"
nm --format=posix --defined-only "$in" |
  awk '$2 == "T" || $2 == "t" { print $1 }' | sort > "$tmp/functions"
comm -13 "$tmp/dynamic" "$tmp/functions" > "$tmp/keep"
objcopy --only-keep-debug "$in" "$tmp/debug"
objcopy -S --remove-section .gdb_index --remove-section .comment \
  --keep-symbols="$tmp/keep" "$tmp/debug" "$tmp/mini"
xz -f "$tmp/mini"
cp "$in" "$out.stripped"
strip --strip-all --remove-section .comment "$out.stripped"
objcopy --add-section .gnu_debugdata="$tmp/mini.xz" "$out.stripped" "$out"
rm -rf "$tmp"
