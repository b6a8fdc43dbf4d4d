#!/bin/sh
# lint.sh: the style (clang-format) and static analysis of src/ (cppcheck,
# clang-tidy), as one
# test: prints "ok 1 - lint ..." or "not ok 1 - lint ..." with every
# finding as a "#" line, then "N passed, M failed, K skipped" (tests/run.sh
# adds it up). Findings that are not bugs are suppressed where they are,
# each with its reason: inline "cppcheck-suppress ID" / "NOLINT(check)"
# comments, tools/cppcheck.supp, and the check list in .clang-tidy.
# Needs a configured build directory ($PST_BUILDDIR, default the source
# tree) for config.h and the generated proto/profile.pb-c.h. A missing
# tool skips its half; both missing skips the test.
# usage: tools/lint.sh        (PST_JOBS=2 clang-tidy processes)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${PST_BUILDDIR:-$top}
jobs=${PST_JOBS:-2}
tidy=${CLANG_TIDY:-$(command -v clang-tidy-14 || echo clang-tidy)}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cd "$top"
srcs=$(find src -name '*.c' | sort)
ran="" missing="" bad=0

fmt=${CLANG_FORMAT:-$(command -v clang-format-14 || echo clang-format)}
if command -v "$fmt" >/dev/null; then
  ran="$ran clang-format"
  # The one style (.clang-format), on every C file of the tree.
  # (fuzz/build holds what the fuzz run generated: protoc-c's output.)
  find src tests/unit tests/helpers fuzz tools bench -path fuzz/build -prune \
    -o -name '*.[ch]' -print | sort |
    xargs "$fmt" --dry-run --Werror >"$out/clang-format" 2>&1 || bad=1
else
  missing="$missing clang-format"
fi

if command -v cppcheck >/dev/null; then
  ran="$ran cppcheck"
  cppcheck --quiet --std=c11 --platform=unix64 -D__x86_64__ -D__linux__ \
    --enable=warning,style,performance,portability --inline-suppr \
    --suppressions-list=tools/cppcheck.supp --error-exitcode=1 \
    -I include -I src $srcs >"$out/cppcheck" 2>&1 || bad=1
else
  missing="$missing cppcheck"
fi

if command -v "$tidy" >/dev/null && [ -f "$build/config.h" ]; then
  ran="$ran clang-tidy"
  # Every library's flags, so that each file parses as in the build.
  flags=$(pkg-config --cflags libelf capstone libuv libprotobuf-c zlib \
          libunwind-ptrace libunwind-generic 2>/dev/null)
  # One process per file, PST_JOBS at a time; its output kept per file.
  echo "$srcs" | xargs -P "$jobs" -I{} sh -c \
    '"$0" --quiet "$1" -- -std=gnu11 -include "$2/config.h" -Iinclude \
       -Isrc -I"$2" $3 >"$4/tidy.$(echo "$1" | tr / _)" 2>&1 || \
       echo "$1" >>"$4/tidy-failed"' "$tidy" {} "$build" "$flags" "$out"
  [ -f "$out/tidy-failed" ] && bad=1
  cat "$out"/tidy.* 2>/dev/null | grep -E '(warning|error):' | sort -u \
    >"$out/clang-tidy"
else
  missing="$missing clang-tidy"
  [ -f "$build/config.h" ] || missing="$missing(no config.h in $build)"
fi

if [ -z "$ran" ]; then
  echo "ok 1 - lint # SKIP not installed:$missing"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi
if [ $bad -eq 0 ]; then
  msg="ok 1 - lint:$ran on $(echo "$srcs" | wc -l) files, no findings"
  [ -n "$missing" ] && msg="$msg (not installed:$missing)"
  echo "$msg"
  echo "1 passed, 0 failed, 0 skipped"
  exit 0
fi
echo "not ok 1 - lint:$ran found problems"
for f in "$out/clang-format" "$out/cppcheck" "$out/clang-tidy"; do
  [ -s "$f" ] && sed 's/^/#   /' "$f"
done
[ -f "$out/tidy-failed" ] && [ ! -s "$out/clang-tidy" ] &&
  cat "$out"/tidy.* | tail -n 20 | sed 's/^/#   /'
echo "0 passed, 1 failed, 0 skipped"
exit 1
