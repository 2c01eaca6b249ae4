#!/usr/bin/env bash
# The installed package as a user meets it: installs tuner from an existing build into a fresh
# prefix, builds examples/runtime_gemm against find_package(tuner) there, makes a database with the
# installed `tuner tune` on sim:h100-sxm, exports its best configs, and runs the example's lookup on
# both (no GPU needed; with one, the example also launches and checks the kernel).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
work="$BUILD/install-check"
rm -rf "$work"
mkdir -p "$work"
prefix="$PWD/$work/prefix"

cmake --install "$BUILD" --prefix "$prefix" >"$work/install.log"
cmake -S examples/runtime_gemm -B "$work/example" -DCMAKE_PREFIX_PATH="$prefix" >"$work/configure.log"
cmake --build "$work/example" -j "${JOBS:-2}" >"$work/build.log"

export TUNER_CACHE_DIR="$PWD/$work/cache"
db="$work/sim.db"
"$prefix/bin/tuner" tune --op gemm --shape M=1024,N=1024,K=1024 --dtype f32 --device sim:h100-sxm \
  --trials 8 --strategy random --seed 1 --db "$db" >"$work/tune.log"
"$prefix/bin/tuner" export --format best --db "$db" --out "$work/best.json"

for source in "$db" "$work/best.json"; do
  out=$("$work/example/gemm_example" "$source" 1000 1000 1000 --device-name sim:h100-sxm)
  echo "$out"
  grep -q "chosen:   gemm_f32_simt" <<<"$out" || { echo "install check: no config chosen from $source" >&2; exit 1; }
  grep -q "tuned at M=1024,N=1024,K=1024 (nearest)" <<<"$out" || { echo "install check: wrong shape from $source" >&2; exit 1; }
done
# Bad input: one line, exit 2.
set +e
"$work/example/gemm_example" "$db" --dtype f64 2>"$work/err.txt"
rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q "f64" "$work/err.txt" || { echo "install check: bad --dtype not refused" >&2; exit 1; }
# The installed bash completion completes commands and flag values.
completions=$(PATH="$prefix/bin:$PATH" bash -c 'source "$1"; COMP_WORDS=(tuner tu); COMP_CWORD=1; _tuner
  echo "${COMPREPLY[@]}"; COMP_WORDS=(tuner tune --device ""); COMP_CWORD=3; _tuner; echo "${COMPREPLY[@]}"' _ \
  "$prefix/share/bash-completion/completions/tuner")
grep -q "^tune$" <<<"$completions" && grep -q "sim:h100-sxm" <<<"$completions" ||
  { echo "install check: bash completion gave: $completions" >&2; exit 1; }
echo "install check: ok (prefix $prefix)"
