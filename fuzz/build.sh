#!/bin/sh
# fuzz/build.sh: builds the libFuzzer harnesses (fuzz/fuzz_*.c) with clang,
# ASan and UBSan into fuzz/build (or $PST_FUZZ_BUILDDIR), apart from the
# gcc build: see fuzz/fuzz.mk. Exits 77 when clang or its libFuzzer
# runtime is missing (apt-get install clang libclang-rt-14-dev).
# usage: fuzz/build.sh [--seeds]
#   --seeds  also regenerate fuzz/corpus/frame (the frame walker's seeds,
#            which depend on the layout tables) and the other generated
#            seed directories (fuzz/make_seeds.py).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
out=${PST_FUZZ_BUILDDIR:-$top/fuzz/build}
cc=${CC:-clang}
jobs=${PST_JOBS:-2}

probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '%s\n' 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n)' \
  '{ (void)d; (void)n; return 0; }' >"$probe/p.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined -o "$probe/p" "$probe/p.c" \
    >/dev/null 2>&1; then
  echo "fuzz/build.sh: $cc cannot build libFuzzer harnesses" \
    "(apt-get install clang libclang-rt-14-dev)" >&2
  exit 77
fi
mkdir -p "$out"
make -s -C "$out" -f "$top/fuzz/fuzz.mk" -j"$jobs" TOP="$top" CC="$cc"
if [ "${1:-}" = --seeds ]; then
  rm -rf "$top/fuzz/corpus/frame"
  mkdir -p "$top/fuzz/corpus/frame"
  "$out/gen-frame-seeds" "$top/fuzz/corpus/frame"
  python3 "$top/fuzz/make_seeds.py"
fi
