#!/usr/bin/env bash
# Runs tuner's GPU checks on a GPU machine, from the repository root, with .gpu/ (scripts/gpu_bundle.sh)
# carried there: the GPU tests (every reduced-space config of every template correct, vendor
# baselines), then the benchmarks against cuBLAS/cuDNN. Results go to $OUT (default results/gpu).
#   scripts/gpu_check.sh tests            the GPU tests only (a few minutes)
#   scripts/gpu_check.sh bench [FILTER]   pipeline_bench and template_bench (--trials ${TRIALS:-200});
#                                         FILTER keeps template_bench rows containing it, e.g. gemm_tc_wgmma
#   scripts/gpu_check.sh record           starts the whole-space recordings (issue 11) detached, in
#                                         /tmp/gpu-record, and returns; they outlive the call while the
#                                         machine stays warm (keep polling)
#   scripts/gpu_check.sh poll [SECONDS]   waits up to SECONDS (default 480), then copies the recordings
#                                         and logs done so far to $OUT and prints their progress
#   scripts/gpu_check.sh session [SECONDS] [PLAN]  a short lease's plan (scripts/gpu_session.sh): starts
#                                         its queue detached in /tmp/gpu-session if it is not running,
#                                         then waits up to SECONDS (default 540), packing what is done
#                                         into $OUT/session.tar.gz every 15 s, and prints a table last;
#                                         call it again on the warm machine to go on
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
# (A second call finds the worker there, maybe running: "Text file busy" then, and the copy from the first call.)
mkdir -p "$(dirname "$tuner_bin")" && { cp .gpu/bin/tuner "$tuner_bin" 2>/dev/null || cmp -s .gpu/bin/tuner "$tuner_bin"; } ||
  { echo "gpu_check: cannot put the worker at $tuner_bin" >&2; exit 2; }
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
  record)
    rec=/tmp/gpu-record
    mkdir -p "$rec"
    # Smallest spaces first, so a short budget still brings whole recordings back. gemm f32's space
    # (33,294 configs at 1024^3) is the longest: F32_TRIALS (default all) bounds it.
    setsid nohup bash -c '
      t=.gpu/bin/tuner; rec=/tmp/gpu-record
      run() { name=$1; shift
        "$t" tune "$@" --device cuda:0 --strategy grid --min-time-ms 2 --remeasure 0 --seed 1 \
          --db "$rec/record.db" --replay-out "$rec/$name.replay.json" --json > "$rec/$name.json" 2> "$rec/$name.log"
        echo "$name rc=$? $(date +%T)" >> "$rec/done.txt"; }
      run softmax_f16_4096x4096 --op softmax --shape rows=4096,cols=4096 --dtype f16 --trials all
      run layernorm_f16_4096x4096 --op layernorm --shape rows=4096,cols=4096 --dtype f16 --trials all
      run gemm_f16_4096_wgmma --op gemm --shape M=4096,N=4096,K=4096 --dtype f16 --template gemm_tc_wgmma --trials all
      run gemm_f16_4096_mma --op gemm --shape M=4096,N=4096,K=4096 --dtype f16 --template gemm_tc_mma --trials all
      run gemm_f32_1024 --op gemm --shape M=1024,N=1024,K=1024 --dtype f32 --trials '"${F32_TRIALS:-all}"'
      echo all-done >> "$rec/done.txt"' > "$rec/driver.log" 2>&1 < /dev/null &
    echo "gpu_check: recordings started in $rec (poll with: scripts/gpu_check.sh poll)"
    ;;
  poll)
    rec=/tmp/gpu-record
    [[ -d "$rec" ]] || { echo "gpu_check: nothing recording here (run: scripts/gpu_check.sh record)" >&2; exit 2; }
    waited=0
    while (( waited < ${2:-480} )) && ! grep -q all-done "$rec/done.txt" 2>/dev/null; do sleep 10; waited=$((waited + 10)); done
    cp "$rec"/*.json "$rec"/*.log "$rec"/done.txt "$out"/ 2>/dev/null
    cat "$rec/done.txt" 2>/dev/null
    for l in "$rec"/*.log; do [[ -s "$l" ]] && echo "$(basename "$l"): $(tr '\r' '\n' < "$l" | grep -v '^$' | tail -1)"; done
    ;;
  session)
    exec bash scripts/gpu_session.sh "${2:-540}" "$out" "${3:-first}"
    ;;
  *) echo "gpu_check: '$what' is not a step; allowed: tests, bench [FILTER], record, poll [SECONDS], session [SECONDS] [PLAN]" >&2; exit 2 ;;
esac
