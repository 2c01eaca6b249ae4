#!/usr/bin/env bash
# Runs tuner's GPU checks on a GPU machine, from the repository root, with .gpu/ (scripts/gpu_bundle.sh)
# carried there: the GPU tests (every reduced-space config of every template correct, vendor
# baselines), then the benchmarks against cuBLAS/cuDNN. Results go to $OUT (default results/gpu).
#   scripts/gpu_check.sh tests            the GPU tests only (a few minutes)
#   scripts/gpu_check.sh bench [FILTER]   pipeline_bench and template_bench (--trials ${TRIALS:-200});
#                                         FILTER keeps template_bench rows containing it, e.g. gemm_tc_wgmma
# One command of the device tool runs at most 10 minutes: run `tests` and `bench` in separate calls,
# and split `bench` with FILTER (e.g. "f16 gemm_tc_mma", "gemm_tc_wgmma", "conv2d", "softmax").
set -uo pipefail
cd "$(dirname "$0")/.."
what="${1:-tests}"
out="${OUT:-results/gpu}"
mkdir -p "$out"
[[ -d .gpu/bin ]] || { echo "gpu_check: no .gpu/ here; run scripts/gpu_bundle.sh and carry .gpu" >&2; exit 2; }
libs="$PWD/.gpu/lib"
# cuDNN: the toolkit's, else the one PyTorch's image ships as a Python package.
cudnn="$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(os.path.dirname(nvidia.cudnn.__file__), "lib"))' 2>/dev/null || true)"
export LD_LIBRARY_PATH="$libs:/usr/local/cuda/lib64${cudnn:+:$cudnn}:${LD_LIBRARY_PATH:-}"
export TUNER_CACHE_DIR="${TUNER_CACHE_DIR:-/tmp/tuner-cache}"
tuner_bin="$(cat .gpu/tuner_bin_path)"
mkdir -p "$(dirname "$tuner_bin")" && cp .gpu/bin/tuner "$tuner_bin"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
.gpu/bin/tuner devices | tee -a "$out/gpu.txt"
case "$what" in
  tests)
    .gpu/bin/gpu_tests --gtest_output="json:$out/gpu_tests.json" 2>&1 | tee "$out/gpu_tests.log" |
      grep -E '^\[  (FAILED|PASSED|SKIPPED) |Failure|status|error' | head -80
    grep -E '^\[  (PASSED|FAILED) ' "$out/gpu_tests.log" | tail -3
    ;;
  bench)
    filter="${2:-}"
    if [[ -z "$filter" ]]; then
      .gpu/bin/pipeline_bench --out "$out/pipeline_bench.json" 2>&1 | tail -20
    fi
    .gpu/bin/template_bench --device cuda:0 --trials "${TRIALS:-200}" --strategy xgb ${filter:+--filter "$filter"} \
      --out "$out/template_bench${filter:+_${filter// /_}}.json" 2>&1 | tail -40
    ;;
  *) echo "gpu_check: '$what' is not a step; allowed: tests, bench [FILTER]" >&2; exit 2 ;;
esac
