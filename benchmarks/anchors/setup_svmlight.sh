#!/usr/bin/env bash
# Build SVMlight V6.02's `svm_learn` for the benchmarks (an anchor beside LIBSVM; issue 26).
#
#   bash benchmarks/anchors/setup_svmlight.sh            # build once; later runs only check the binary
#   bash benchmarks/anchors/setup_svmlight.sh --force    # rebuild
#
# What it does (docs/benchmarks/svmlight.md):
#   1. `pip download --no-binary :all: --no-deps svmlight==0.4`: the sdist of the Python binding,
#      which ships Thorsten Joachims' C sources of SVMlight V6.02 under lib/ (checked below);
#   2. gcc -O3 (SVMlight's own Makefile flags) on lib/svm_learn_main.c, svm_learn.c, svm_common.c,
#      svm_hideo.c, -lm: the stock command-line learner with the HIDEO QP solver (svm_loqo.c is
#      the alternative back end; svm_classify.c is the other program);
#   3. the executable and a BUILD_INFO file go to the cache folder
#         $QPCORE_SVMLIGHT_DIR, else ${XDG_CACHE_HOME:-~/.cache}/qpcore/svmlight
#      which is where benchmarks/anchors/svmlight.py looks for `svm_learn`.
# Nothing of SVMlight enters the repository: its licence allows non-commercial use and forbids
# redistributing modified copies, so each machine fetches and builds its own.
# Idempotent: with the binary present and built from the pinned sdist, it does nothing.
set -euo pipefail

SDIST_VERSION="0.4"
# sha256 of svmlight-0.4.tar.gz as served by the package index: the sources are pinned
SDIST_SHA256="3b6244050c9ee1f97ae8b305030851c757d98870ee7b3a1b9c9ea5e725d27541"
CFLAGS_SVMLIGHT="-O3"

dir="${QPCORE_SVMLIGHT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/qpcore/svmlight}"
bin="$dir/svm_learn"
info="$dir/BUILD_INFO"

force=0
case "${1:-}" in
  --force) force=1 ;;
  "") ;;
  -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
  *) echo "usage: $0 [--force]" >&2; exit 2 ;;
esac

# The binary answers `-?` with its banner (stdin from /dev/null: the help waits for a key).
works() { "$1" '-?' </dev/null 2>/dev/null | grep -q "SVM-light V6.02"; }

if [[ $force == 0 && -x "$bin" && -f "$info" ]] && grep -q "sdist_sha256=$SDIST_SHA256" "$info" && works "$bin"; then
  echo "SVMlight V6.02 already built: $bin"
  exit 0
fi

command -v gcc >/dev/null || { echo "error: gcc not found (needed to build SVMlight)" >&2; exit 1; }
PY="${PYTHON:-python3}"
"$PY" -m pip --version >/dev/null 2>&1 || { echo "error: $PY -m pip not available (set PYTHON=...)" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "downloading the svmlight $SDIST_VERSION sdist ..."
"$PY" -m pip download --quiet --no-binary :all: --no-deps "svmlight==$SDIST_VERSION" -d "$work"
tarball="$work/svmlight-$SDIST_VERSION.tar.gz"
[[ -f "$tarball" ]] || { echo "error: $tarball not downloaded" >&2; exit 1; }
got="$(sha256sum "$tarball" | cut -d' ' -f1)"
if [[ "$got" != "$SDIST_SHA256" ]]; then
  echo "error: sha256 of $tarball is $got, expected $SDIST_SHA256" >&2
  exit 1
fi

tar -xzf "$tarball" -C "$work"
src="$work/svmlight-$SDIST_VERSION/lib"
for f in svm_learn_main.c svm_learn.c svm_common.c svm_hideo.c svm_common.h svm_learn.h kernel.h; do
  [[ -f "$src/$f" ]] || { echo "error: $f missing from the sdist's lib/" >&2; exit 1; }
done
grep -q '# define VERSION       "V6.02"' "$src/svm_common.h" \
  || { echo "error: the sdist's lib/ is not SVMlight V6.02" >&2; exit 1; }

echo "compiling svm_learn (gcc $CFLAGS_SVMLIGHT) ..."
# shellcheck disable=SC2086  # CFLAGS_SVMLIGHT is a list of flags
gcc $CFLAGS_SVMLIGHT -o "$work/svm_learn" \
  "$src/svm_learn_main.c" "$src/svm_learn.c" "$src/svm_common.c" "$src/svm_hideo.c" -lm
works "$work/svm_learn" || { echo "error: the built svm_learn does not run" >&2; exit 1; }

mkdir -p "$dir"
# replace atomically so a benchmark never sees a half-written binary
install -m 0755 "$work/svm_learn" "$bin.tmp.$$"
mv -f "$bin.tmp.$$" "$bin"
{
  echo "program=SVM-light V6.02 svm_learn (HIDEO)"
  echo "sdist=svmlight==$SDIST_VERSION"
  echo "sdist_sha256=$SDIST_SHA256"
  echo "sources=lib/svm_learn_main.c lib/svm_learn.c lib/svm_common.c lib/svm_hideo.c"
  echo "cflags=$CFLAGS_SVMLIGHT -lm"
  echo "compiler=$(gcc --version | head -n1)"
  echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$info"
echo "built $bin"
