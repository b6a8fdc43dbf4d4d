#!/usr/bin/env bash
# gen-offsets.sh: generate src/python/offsets/pyXY.h, offsets/all.h and
# src/python/layout.c from the headers of installed CPythons.
#
#   tools/gen-offsets.sh                 every CPython under $PYENV_ROOT/versions
#                                        (default /root/.pyenv/versions)
#   tools/gen-offsets.sh PREFIX...       only these installs (e.g. /usr/local)
#
# For each prefix tools/gen-offsets.c is compiled with $CC (default gcc)
# against PREFIX/include/pythonX.Y[m] (and its internal/ dir) and run; its
# output becomes src/python/offsets/pyXY.h. all.h and layout.c are then
# rebuilt from every pyXY.h present, so regenerating one version keeps the
# others. Files whose content does not change are left untouched.
#
# In the scan mode, pyenv entries that are not plain CPython releases of a
# supported version (pypy*, miniconda*, 3.13.0t, 3.14.x, ...) are skipped with
# a notice; a prefix given on the command line must work. Any missing header
# or failed compile is fatal.
#
# The values are those of the ABI of $CC (x86_64 glibc for the checked-in
# tables: pthread types are embedded in some of the structs).

set -euo pipefail

die() { echo "gen-offsets.sh: error: $*" >&2; exit 1; }
note() { echo "gen-offsets.sh: $*" >&2; }

root=$(cd "$(dirname "$0")/.." && pwd)
gen_c=$root/tools/gen-offsets.c
outdir=$root/src/python/offsets
layout_c=$root/src/python/layout.c
CC=${CC:-gcc}

[ -f "$gen_c" ] || die "missing $gen_c"
[ -f "$root/src/python/layout.h" ] || die "missing $root/src/python/layout.h"
command -v "$CC" >/dev/null 2>&1 || die "compiler '$CC' not found"
machine=$("$CC" -dumpmachine)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Replace $2 by $1 only when they differ (keeps timestamps on reruns),
# formatted as the tree is (.clang-format) when clang-format is there.
fmt=$(command -v clang-format-14 || command -v clang-format || true)
install_if_changed() {
  if [ -n "$fmt" ]; then
    "$fmt" --style=file:"$root/.clang-format" "$1" >"$1.fmt" && mv -f "$1.fmt" "$1"
  fi
  if [ -f "$2" ] && cmp -s "$1" "$2"; then
    note "unchanged ${2#"$root"/}"
    rm -f "$1"
  else
    mv -f "$1" "$2"
    note "wrote ${2#"$root"/}"
  fi
}

# define_value FILE NAME: the number of "#define NAME <n>" in FILE.
define_value() {
  sed -n "s/^#define[[:space:]]\{1,\}$2[[:space:]]\{1,\}\([0-9]\{1,\}\).*/\1/p" "$1" |
    head -n 1
}

supported() { # major minor
  [ "$1" -eq 2 ] && [ "$2" -eq 7 ] && return 0
  [ "$1" -eq 3 ] && [ "$2" -ge 6 ] && [ "$2" -le 13 ] && return 0
  return 1
}

scan=0
if [ $# -eq 0 ]; then
  scan=1
  versions=${PYENV_ROOT:-/root/.pyenv}/versions
  [ -d "$versions" ] || die "no $versions and no prefix given"
  set --
  for p in "$versions"/*; do
    [ -d "$p" ] || continue
    case ${p##*/} in
      [0-9]*t | *-dev* | *-debug*) note "skipping ${p} (not a plain build)" ;;
      [0-9]*) set -- "$@" "$p" ;;
      *) note "skipping ${p} (not CPython)" ;;
    esac
  done
  [ $# -gt 0 ] || die "no CPython found under $versions"
fi

mkdir -p "$outdir"
done_suffixes=" "

for prefix in "$@"; do
  prefix=${prefix%/}
  [ -d "$prefix" ] || die "$prefix: no such directory"

  incs=()
  for d in "$prefix"/include/python[0-9]*; do
    [ -f "$d/Python.h" ] && incs+=("$d")
  done
  [ ${#incs[@]} -gt 0 ] || die "$prefix: no include/python*/Python.h (headers not installed?)"
  [ ${#incs[@]} -eq 1 ] || die "$prefix: several include dirs: ${incs[*]}"
  inc=${incs[0]}

  [ -f "$inc/patchlevel.h" ] || die "$inc: missing patchlevel.h"
  major=$(define_value "$inc/patchlevel.h" PY_MAJOR_VERSION)
  minor=$(define_value "$inc/patchlevel.h" PY_MINOR_VERSION)
  if [ -z "$major" ] || [ -z "$minor" ]; then
    die "$inc/patchlevel.h: no version"
  fi
  if ! supported "$major" "$minor"; then
    [ $scan -eq 1 ] || die "$prefix: CPython $major.$minor is not supported (2.7, 3.6-3.13)"
    note "skipping $prefix (CPython $major.$minor not supported)"
    continue
  fi
  suffix=$major$minor
  case $done_suffixes in
    *" $suffix "*) die "$prefix: a second CPython $major.$minor in this run" ;;
  esac
  done_suffixes="$done_suffixes$suffix "

  # The headers gen-offsets.c includes for this version: check them first
  # so that a partial install fails with a clear message.
  need=(Python.h patchlevel.h)
  extra=()
  if [ "$major" -eq 2 ]; then
    need+=(frameobject.h stringobject.h)
  elif [ "$minor" -eq 6 ]; then
    need+=(frameobject.h)
  elif [ "$minor" -eq 7 ]; then
    need+=(frameobject.h internal/pystate.h internal/ceval.h internal/gil.h)
  else
    need+=(internal/pycore_gil.h)
    if [ "$minor" -eq 8 ]; then
      need+=(frameobject.h internal/pycore_pystate.h)
    else
      need+=(internal/pycore_runtime.h internal/pycore_interp.h)
      if [ "$minor" -le 10 ]; then
        need+=(frameobject.h)
      else
        need+=(internal/pycore_frame.h)
      fi
    fi
    extra=(-I "$inc/internal")
  fi
  for h in "${need[@]}"; do
    [ -f "$inc/$h" ] || die "$prefix: missing header $inc/$h"
  done

  exe=$tmp/gen-$suffix
  if ! "$CC" -std=gnu11 -Wall -Wextra -I "$root/src" -I "$inc" ${extra[@]+"${extra[@]}"} \
    -o "$exe" "$gen_c" 2>"$tmp/cc.log"; then
    cat "$tmp/cc.log" >&2
    die "$prefix: compiling tools/gen-offsets.c failed"
  fi
  [ -s "$tmp/cc.log" ] && cat "$tmp/cc.log" >&2

  read -r pyversion gsuffix < <("$exe" -v) || die "$exe -v failed"
  [ "$gsuffix" = "$suffix" ] || die "$prefix: headers say $gsuffix, patchlevel.h $suffix"
  "$exe" >"$tmp/body" || die "$prefix: gen-offsets failed for $pyversion"

  guard=PST_PY_OFFSETS_PY${suffix}_H
  {
    echo "/* Generated by tools/gen-offsets.sh from CPython $pyversion,"
    echo " * prefix $prefix (include/${inc##*/}), for $machine."
    echo " * Do not edit: rerun tools/gen-offsets.sh. */"
    echo "#ifndef $guard"
    echo "#define $guard"
    echo
    cat "$tmp/body"
    echo
    echo "#endif"
  } >"$tmp/py$suffix.h"
  install_if_changed "$tmp/py$suffix.h" "$outdir/py$suffix.h"
done

# Every table present, in version order ("27 36 ... 313").
tables=()
for f in "$outdir"/py[0-9]*.h; do
  [ -f "$f" ] || continue
  s=${f##*/py}
  s=${s%.h}
  case $s in *[!0-9]*) die "unexpected file $f" ;; esac
  tables+=("$(( ${s:0:1} * 100 + ${s:1} )) $s")
done
[ ${#tables[@]} -gt 0 ] || die "no tables in $outdir"
mapfile -t sorted < <(printf '%s\n' "${tables[@]}" | sort -n | cut -d' ' -f2)

{
  echo "/* Generated by tools/gen-offsets.sh. Do not edit."
  echo " * Every pst__py_layout table; include from layout.c only. */"
  echo "#ifndef PST_PY_OFFSETS_ALL_H"
  echo "#define PST_PY_OFFSETS_ALL_H"
  echo
  echo "#include \"python/layout.h\""
  echo
  for s in "${sorted[@]}"; do echo "#include \"py$s.h\""; done
  echo
  echo "#endif"
} >"$tmp/all.h"
install_if_changed "$tmp/all.h" "$outdir/all.h"

have_313=0
{
  echo "/* layout.c: the built-in pst__py_layout tables (see layout.h)."
  echo " * Generated by tools/gen-offsets.sh. Do not edit. */"
  echo "#include \"python/layout.h\""
  echo
  echo "#include <stddef.h>"
  echo
  echo "#include \"python/offsets/all.h\""
  echo
  echo "/* 3.13+ are read from _Py_DebugOffsets at run time: not listed. */"
  echo "static const struct pst__py_layout *const builtin_layouts[] = {"
  for s in "${sorted[@]}"; do
    if [ "${s:0:1}" -eq 3 ] && [ "${s:1}" -ge 13 ]; then
      [ "$s" = 313 ] && have_313=1
      continue
    fi
    echo "    &pst__py_layout_$s,"
  done
  echo "};"
  echo
  echo "const struct pst__py_layout *pst__py_layout_builtin(int version) {"
  echo "  size_t i;"
  echo
  echo "  for (i = 0; i < sizeof builtin_layouts / sizeof builtin_layouts[0]; i++)"
  echo "    if (builtin_layouts[i]->version == version)"
  echo "      return builtin_layouts[i];"
  echo "  return NULL;"
  echo "}"
  echo
  echo "const struct pst__py_layout *pst__py_layout_reference_313(void) {"
  if [ $have_313 -eq 1 ]; then
    echo "  return &pst__py_layout_313;"
  else
    echo "  return NULL; /* no 3.13 headers when this was generated */"
  fi
  echo "}"
} >"$tmp/layout.c"
install_if_changed "$tmp/layout.c" "$layout_c"
