#!/usr/bin/env bash
# One short GPU lease's plan, in priority order (run through `scripts/gpu_check.sh session [SECONDS]
# [PLAN]`, which has set LD_LIBRARY_PATH, TUNER_CACHE_DIR and the worker's path). The first call starts
# the PLAN's queue below detached (setsid) in /tmp/gpu-session-PLAN, so it runs on between calls while
# the machine is warm; every call waits up to SECONDS, packs the finished steps' outputs into
# OUT/session.tar.gz every 15 s (so a call cut short still brings back what was done) and prints one
# line per step last. Each step has its own time limit and gets SIGINT at it (tune then stops and still
# writes its summary). Plans: `first` (about 320 s on an H100 on 2026-11-25: GPU tests, vendor
# baselines, loop speed, three whole-space recordings, the template_bench workloads with tune's
# default auto template) and `more` (the fault-isolation test, two more recordings, bf16, batched,
# short-K and conv2d rows) and `profile` (the cuDNN graph-API tests, baselines beside PyTorch, Nsight
# Compute profiles of wgmma and cuBLAS on batched, decode, 4096^3 and short-K, the decode M=64 recording)
# and `knobs` (gemm_tc_wgmma's GPU tests, then the GEMM rows of issue 16 tuned with tune's defaults),
# `extra` (the wgmma 4096^3 whole space with its new knobs, longer decode and batched wgmma sessions),
# `decode` (the wgmma knob tests, then the decode rows after BN 32 and 16-stage rings), `cluster` (the
# wgmma tests with 2- and 4-CTA clusters that multicast A and persistent grids over the batch, then
# issue 16's GEMM rows), `cluster2` (the 8192^3 rows, f32, the row ops and the conv rows on this GPU),
# `cluster3` (the wgmma knob tests with each case's time, then the rows where clusters should pay),
# `rows` (the row-op GPU tests with layernorm's shared gamma and beta, the baselines, the layernorm
# rows, and the square and batched GEMM rows again beside cuBLAS in the same lease), `rows2` (the row-op
# GPU tests with layernorm's MIN_BLOCKS, the device copies, the four row-op rows of issue 16), `conv`
# (the conv2d rows of issue 16 against cuDNN's graph-API baseline, in one lease), `conv2` (the GPU tests
# of the two conv templates built without a GPU, conv2d_igemm_wgmma and conv2d_gemm_simt, then the conv
# rows with each by name, with tune's default auto, and a whole-space recording of the 3x3 wgmma space),
# `h100` (issue 16's whole table with tune's defaults), `long` (longer searches of the rows just short),
# `patch` (conv2d_patch_tc's GPU tests and the stem rows), `patch2` (the same after MIN_BLOCKS), `profile2`
# (Nsight Compute on cuDNN's and our stem and 3x3 conv kernels), `profile3` (profile2's cuDNN steps again, and
# decode beside cuBLAS), `profile4` (every kernel of cuDNN's stem and 3x3 calls), `pingpong` and `constshape`
# (conv2d_igemm_wgmma's GPU tests, the 3x3 whole space and the 3x3 rows), `profile5` (Nsight Compute on named
# configs through tune --fix), `constgemm` (the wgmma GEMM tests and rows; stop 30 ran it with the
# GEMM's problem compiled in, a change then reverted) and `profile6` (stop 31, not yet run: Nsight Compute on
# the batched GEMM's best config and cuBLAS's batched kernel, then the GEMM rows' whole tables once more) and
# `ppgemm` (stop 32: gemm_tc_wgmma's PINGPONG: a smoke run, its GPU tests, cuBLAS, same-config pairs over the
# batched row, the batched, short-K and 4096^3 rows, then Nsight Compute on the batched winner and cuBLAS) and
# `table32` (stop 32: issue 16's whole table in one lease with tune's defaults, and the short-K pairs) and
# `sigint32` (stop 32: tune cut by SIGINT on a GPU reports and commits; table32's two rows its step limits cut) and
# `clusterk` (stop 32, run at stop 34: gemm_tc_wgmma's CLUSTER_K, split-K reduced through distributed shared
# memory: a smoke run, its GPU tests, same-config grids over the decode rows, the decode rows, the batched and
# short-K rows' whole wgmma spaces, then 300 trials by name and a profile) and `rec34` (stop 34: whole-space
# recordings of workloads no strategy was developed on, held out for issue 13's search checks) and `next35`
# (stop 34, not yet run: the wgmma GPU tests whose CLUSTER 4 / CLUSTER_K 4 cases became 2, CLUSTER 2 against 1
# at 4096^3 and 8192^3, 2048x8192x2048's whole space, uniform samples of the two spaces rec34 cut) and `checks44`
# (stop 44, not yet run, to run first: the fault-isolation, runtime, split-K and batched f32 GPU tests, a user
# kernel with <cuda_fp16.h> and printf, the spec key the GPU is matched to, and the memory check near a full H100).
#   bash scripts/gpu_session.sh SECONDS OUT [PLAN]
set -uo pipefail
cd "$(dirname "$0")/.."
wait_s="${1:-540}"
out="${2:-${OUT:-results/gpu}}"
plan="${3:-first}"
case "$plan" in
  first | more | profile | knobs | extra | decode | cluster | cluster2 | cluster3 | rows | rows2 | conv | conv2 | h100 | long | patch | patch2 | profile2 | profile3 | profile4 | pingpong | profile5 | constshape | constgemm | profile6 | ppgemm | table32 | sigint32 | clusterk | rec34 | next35 | checks44) ;;
  *) echo "gpu_session: '$plan' is not a plan; allowed: first, more, profile, knobs, extra, decode, cluster, cluster2, cluster3, rows, rows2, conv, conv2, h100, long, patch, patch2, profile2, profile3, profile4, pingpong, profile5, constshape, constgemm, profile6, ppgemm, table32, sigint32, clusterk, rec34, next35, checks44" >&2
     exit 2 ;;
esac
S=/tmp/gpu-session-$plan
mkdir -p "$out"

steps() {
  t=.gpu/bin/tuner
  step() {  # step NAME LIMIT_S COMMAND...: stdout to NAME.out, stderr to NAME.log
    local name=$1 limit=$2; shift 2
    echo "$name start $(date +%s)" >> "$S/steps.txt"
    timeout -s INT -k 15 "$limit" "$@" > "$S/$name.out" 2> "$S/$name.log"
    local rc=$?  # before any other expansion: 124 when timeout's SIGINT ended it, 130 when the command exited on it
    echo "$name end $(date +%s) rc=$rc" >> "$S/steps.txt"
  }
  tune() { local name=$1 limit=$2; shift 2
    step "$name" "$limit" "$t" tune "$@" --device "${GPU_SESSION_DEVICE:-cuda:0}" --seed 1 --quiet --json --db "$S/$name.db"; }
  # The GPU's clocks, the wgmma GPU tests and every GEMM baseline: wgmma_checks TESTS_LIMIT_S BASELINES_LIMIT_S.
  wgmma_checks() {
    step env 20 bash -c 'nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv'
    step gpu_tests "$1" .gpu/bin/gpu_tests --gtest_filter='*wgmma*:GpuWgmmaKnobs.*' --gtest_output="json:$S/gpu_tests.json"
    step baselines "$2" .gpu/bin/template_bench --device "${GPU_SESSION_DEVICE:-cuda:0}" --trials 0 --filter gemm \
      --out "$S/baselines.json"
  }
  # Issue 16's decode rows (M = 16, 32, 64, 128 with N = K = 4096) and short K, tune's defaults, 100
  # trials each: decode_rows LIMIT_S (per row).
  decode_rows() {
    for m in 16 32 64 128; do
      tune xgb100_f16_decode_m$m "$1" --op gemm --shape M=$m,N=4096,K=4096 --dtype f16 --trials 100
    done
    tune xgb100_f16_shortk_auto "$1" --op gemm --shape M=4096,N=4096,K=512 --dtype f16 --trials 100
  }
  # Issue 16's rows between the square GEMMs and the convs, tune's defaults: decode and short K, batched, f32,
  # softmax and layernorm at both widths (the h100 and table32 plans).
  issue16_middle_rows() {
    decode_rows 25
    tune xgb100_batched_f16_b32_512_auto 30 --op batched_gemm --shape B=32,M=512,N=512,K=128 --dtype f16 --trials 100
    tune xgb100_f32_4096 45 --op gemm --shape M=4096,N=4096,K=4096 --dtype f32 --trials 100
    for c in 4096 32768; do
      tune xgb64_softmax_f16_4096x$c 18 --op softmax --shape rows=4096,cols=$c --dtype f16 --trials 64
      tune xgb64_layernorm_f16_4096x$c 18 --op layernorm --shape rows=4096,cols=$c --dtype f16 --trials 64
    done
  }
  # ncu_step NAME LIMIT KERNEL_REGEX SKIP COMMAND...: Nsight Compute's full set on the launch after SKIP of the
  # matching kernels, as a report and as CSV details (the launch geometry and registers there name the config).
  ncu_step() { local name=$1 limit=$2 regex=$3 skip=$4; shift 4
    step "$name" "$limit" ncu --target-processes all --kernel-name-base demangled -k "regex:$regex" \
      --launch-skip "$skip" --launch-count 1 --set full -f -o "$S/$name" "$@"
    ncu --import "$S/$name.ncu-rep" --page details --csv > "$S/$name.csv" 2>> "$S/$name.log"; }
  # conv2d_igemm_wgmma's GPU tests (after a 4-config smoke run with a 5 s kernel limit), cuDNN's 3x3 rows, the
  # 3x3 whole space (a replay file) and both 3x3 rows with auto and by name: conv_wgmma_rows NAME.
  conv_wgmma_rows() {
    local c33=N=32,H=56,W=56,C=64,K=64,R=3,S=3,stride=1,pad=1 c33s2=N=32,H=56,W=56,C=128,K=128,R=3,S=3,stride=2,pad=1
    tune smoke_conv_$1 30 --op conv2d --shape N=16,H=30,W=27,C=72,K=136,R=3,S=3,stride=1,pad=1 --dtype f16 \
      --trials 4 --template conv2d_igemm_wgmma --timeout 5
    step gpu_tests 90 .gpu/bin/gpu_tests --gtest_filter='*conv2d*wgmma*' --gtest_output="json:$S/gpu_tests.json"
    step baselines 40 .gpu/bin/template_bench --device "${GPU_SESSION_DEVICE:-cuda:0}" --trials 0 --filter 'K=64,R=3' \
      --out "$S/baselines.json"
    step baselines_s2 40 .gpu/bin/template_bench --device "${GPU_SESSION_DEVICE:-cuda:0}" --trials 0 --filter 'K=128,R=3' \
      --out "$S/baselines_s2.json"
    tune grid_conv_3x3_wgmma_all 90 --op conv2d --shape $c33 --dtype f16 --trials all --strategy grid --remeasure 0 \
      --template conv2d_igemm_wgmma --replay-out "$S/conv_3x3_wgmma.replay.json"
    tune xgb100_conv_3x3_auto 40 --op conv2d --shape $c33 --dtype f16 --trials 100
    tune xgb300_conv_3x3s2_wgmma 50 --op conv2d --shape $c33s2 --dtype f16 --trials 300 --template conv2d_igemm_wgmma
    tune xgb100_conv_3x3s2_auto 40 --op conv2d --shape $c33s2 --dtype f16 --trials 100
  }
  # conv2d_patch_tc's GPU tests, cuDNN's stem and the stem tuned by name and with auto:
  # stem_patch_rows TESTS_LIMIT_S TRIALS TUNE_LIMIT_S.
  stem_patch_rows() {
    local stem=N=32,H=224,W=224,C=3,K=64,R=7,S=7,stride=2,pad=3
    step gpu_tests "$1" .gpu/bin/gpu_tests --gtest_filter='*patch_tc*' --gtest_output="json:$S/gpu_tests.json"
    step baselines 20 .gpu/bin/template_bench --device "${GPU_SESSION_DEVICE:-cuda:0}" --trials 0 --filter 'C=3' \
      --out "$S/baselines.json"
    tune xgb${2}_conv_stem_patch "$3" --op conv2d --shape $stem --dtype f16 --trials "$2" --template conv2d_patch_tc
    tune xgb100_conv_stem_auto 45 --op conv2d --shape $stem --dtype f16 --trials 100
  }
}

plan_first() {
  steps
  step env 20 bash -c 'nvidia-smi; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv; '"$t"' devices'
  step baselines 150 .gpu/bin/template_bench --device "${GPU_SESSION_DEVICE:-cuda:0}" --trials 0 --out "$S/baselines.json"
  step gpu_tests 200 .gpu/bin/gpu_tests --gtest_output="json:$S/gpu_tests.json"
  step torch_ref 150 python3 scripts/torch_ref.py "$S/baselines.json" "$S/torch_ref.json"
  tune rate_f16_4096_mma_random64 60 --op gemm --shape M=4096,N=4096,K=4096 --dtype f16 --template gemm_tc_mma \
    --trials 64 --strategy random --remeasure 0
  tune rec_softmax_f16_4096x4096 100 --op softmax --shape rows=4096,cols=4096 --dtype f16 --trials all \
    --strategy grid --min-time-ms 2 --remeasure 0 --replay-out "$S/softmax_f16_4096x4096.replay.json"
  tune rec_layernorm_f16_4096x4096 100 --op layernorm --shape rows=4096,cols=4096 --dtype f16 --trials all \
    --strategy grid --min-time-ms 2 --remeasure 0 --replay-out "$S/layernorm_f16_4096x4096.replay.json"
  tune xgb200_f16_8192_auto 240 --op gemm --shape M=8192,N=8192,K=8192 --dtype f16 --trials 200
  tune xgb200_f16_4096_auto 200 --op gemm --shape M=4096,N=4096,K=4096 --dtype f16 --trials 200
  for m in 16 32 64 128; do
    tune xgb100_f16_decode_m$m 100 --op gemm --shape M=$m,N=4096,K=4096 --dtype f16 --trials 100
  done
  tune xgb100_f32_4096 150 --op gemm --shape M=4096,N=4096,K=4096 --dtype f32 --trials 100
  tune xgb64_softmax_f16_4096x32768 90 --op softmax --shape rows=4096,cols=32768 --dtype f16 --trials 64
  tune xgb64_layernorm_f16_4096x32768 90 --op layernorm --shape rows=4096,cols=32768 --dtype f16 --trials 64
  tune rec_gemm_f16_4096_wgmma 240 --op gemm --shape M=4096,N=4096,K=4096 --dtype f16 --template gemm_tc_wgmma \
    --trials all --strategy grid --min-time-ms 2 --remeasure 0 --replay-out "$S/gemm_f16_4096_wgmma.replay.json"
  # gemm f32 1024^3's whole space (120,144 configs) does not fit a lease: a uniform sample of it.
  tune rec_gemm_f32_1024_sample4096 300 --op gemm --shape M=1024,N=1024,K=1024 --dtype f32 --template gemm_f32_simt \
    --trials 4096 --strategy random --min-time-ms 2 --remeasure 0 --replay-out "$S/gemm_f32_1024_sample4096.replay.json"
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_more() {
  steps
  step env 20 bash -c 'nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv'
  step gpu_tests 60 .gpu/bin/gpu_tests --gtest_filter='GpuGemm.Injected*' --gtest_output="json:$S/gpu_tests.json"
  tune rec_gemm_f16_8192_wgmma 150 --op gemm --shape M=8192,N=8192,K=8192 --dtype f16 --template gemm_tc_wgmma \
    --trials all --strategy grid --min-time-ms 2 --remeasure 0 --replay-out "$S/gemm_f16_8192_wgmma.replay.json"
  tune xgb200_bf16_4096_auto 60 --op gemm --shape M=4096,N=4096,K=4096 --dtype bf16 --trials 200
  tune xgb200_bf16_8192_auto 90 --op gemm --shape M=8192,N=8192,K=8192 --dtype bf16 --trials 200
  tune xgb100_batched_f16_b32_512_auto 60 --op batched_gemm --shape B=32,M=512,N=512,K=128 --dtype f16 --trials 100
  tune xgb100_f16_shortk_auto 60 --op gemm --shape M=4096,N=4096,K=512 --dtype f16 --trials 100
  tune xgb64_conv_stem_f16 60 --op conv2d --shape N=32,H=224,W=224,C=3,K=64,R=7,S=7,stride=2,pad=3 --dtype f16 --trials 64
  tune xgb64_conv_3x3_f16 60 --op conv2d --shape N=32,H=56,W=56,C=64,K=64,R=3,S=3,stride=1,pad=1 --dtype f16 --trials 64
  tune xgb64_conv_3x3s2_f16 60 --op conv2d --shape N=32,H=56,W=56,C=128,K=128,R=3,S=3,stride=2,pad=1 --dtype f16 --trials 64
  tune xgb64_conv_1x1_f32 60 --op conv2d --shape N=32,H=28,W=28,C=512,K=128,R=1,S=1,stride=1,pad=0 --dtype f32 --trials 64
  tune rec_gemm_f16_4096_mma 200 --op gemm --shape M=4096,N=4096,K=4096 --dtype f16 --template gemm_tc_mma \
    --trials all --strategy grid --min-time-ms 2 --remeasure 0 --replay-out "$S/gemm_f16_4096_mma.replay.json"
  tune rec_gemm_f16_decode_m64_wgmma 120 --op gemm --shape M=64,N=4096,K=4096 --dtype f16 --template gemm_tc_wgmma \
    --trials all --strategy grid --min-time-ms 2 --remeasure 0 --replay-out "$S/gemm_f16_decode_m64_wgmma.replay.json"
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_profile() {
  steps
  step env 20 bash -c 'nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv; which ncu; python3 -c "import torch; print(torch.__version__, torch.backends.cudnn.version())"'
  step gpu_tests 90 .gpu/bin/gpu_tests --gtest_filter='GpuVendor.*' --gtest_output="json:$S/gpu_tests.json"
  step baselines 120 .gpu/bin/template_bench --device "${GPU_SESSION_DEVICE:-cuda:0}" --trials 0 --out "$S/baselines.json"
  step torch_ref 120 python3 scripts/torch_ref.py "$S/baselines.json" "$S/torch_ref.json"
  local w="--device ${GPU_SESSION_DEVICE:-cuda:0} --trials 1 --batch 1 --remeasure 0 --seed 1 --quiet --json"
  ncu_step ncu_batched_wgmma 60 '^gemm_tc_wgmma' 1 "$t" tune --op batched_gemm --shape B=32,M=512,N=512,K=128 --dtype f16 \
    --template batched_gemm_tc_wgmma $w --db "$S/ncu_batched.db"
  ncu_step ncu_batched_cublas 60 'sm90|cutlass|xmma|gemm' 1 .gpu/bin/template_bench --device cuda:0 --trials 0 \
    --filter 'batched_gemm B=32,M=512,N=512,K=128 f16' --out "$S/ncu_batched_cublas.json"
  ncu_step ncu_decode64_wgmma 60 '^gemm_tc_wgmma' 1 "$t" tune --op gemm --shape M=64,N=4096,K=4096 --dtype f16 \
    --template gemm_tc_wgmma $w --db "$S/ncu_decode64.db"
  ncu_step ncu_decode64_cublas 60 'sm90|cutlass|xmma|gemm|gemv' 1 .gpu/bin/template_bench --device cuda:0 --trials 0 \
    --filter 'gemm M=64,N=4096,K=4096 f16' --out "$S/ncu_decode64_cublas.json"
  ncu_step ncu_4096_wgmma 60 '^gemm_tc_wgmma' 1 "$t" tune --op gemm --shape M=4096,N=4096,K=4096 --dtype f16 \
    --template gemm_tc_wgmma $w --db "$S/ncu_4096.db"
  ncu_step ncu_shortk_wgmma 60 '^gemm_tc_wgmma' 1 "$t" tune --op gemm --shape M=4096,N=4096,K=512 --dtype f16 \
    --template gemm_tc_wgmma $w --db "$S/ncu_shortk.db"
  tune rec_gemm_f16_decode_m64_wgmma 150 --op gemm --shape M=64,N=4096,K=4096 --dtype f16 --template gemm_tc_wgmma \
    --trials all --strategy grid --min-time-ms 2 --remeasure 0 --replay-out "$S/gemm_f16_decode_m64_wgmma.replay.json"
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_knobs() {
  steps
  wgmma_checks 150 60
  decode_rows 60
  tune xgb100_batched_f16_b32_512_auto 60 --op batched_gemm --shape B=32,M=512,N=512,K=128 --dtype f16 --trials 100
  tune xgb200_f16_4096_auto 60 --op gemm --shape M=4096,N=4096,K=4096 --dtype f16 --trials 200
  tune xgb200_f16_8192_auto 90 --op gemm --shape M=8192,N=8192,K=8192 --dtype f16 --trials 200
  tune xgb200_bf16_4096_auto 60 --op gemm --shape M=4096,N=4096,K=4096 --dtype bf16 --trials 200
  tune xgb200_bf16_8192_auto 90 --op gemm --shape M=8192,N=8192,K=8192 --dtype bf16 --trials 200
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_extra() {
  steps
  tune rec_gemm_f16_4096_wgmma 70 --op gemm --shape M=4096,N=4096,K=4096 --dtype f16 --template gemm_tc_wgmma \
    --trials all --strategy grid --min-time-ms 2 --remeasure 0 --replay-out "$S/gemm_f16_4096_wgmma.replay.json"
  tune xgb300_f16_decode_m64_wgmma 50 --op gemm --shape M=64,N=4096,K=4096 --dtype f16 --template gemm_tc_wgmma --trials 300
  tune xgb200_batched_wgmma 40 --op batched_gemm --shape B=32,M=512,N=512,K=128 --dtype f16 \
    --template batched_gemm_tc_wgmma --trials 200
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_decode() {
  steps
  step gpu_tests 45 .gpu/bin/gpu_tests --gtest_filter='GpuWgmmaKnobs.*' --gtest_output="json:$S/gpu_tests.json"
  step baselines 20 .gpu/bin/template_bench --device "${GPU_SESSION_DEVICE:-cuda:0}" --trials 0 \
    --filter 'N=4096,K=4096 f16' --out "$S/baselines.json"
  for m in 64 16 128 32; do
    tune xgb100_f16_decode_m$m 35 --op gemm --shape M=$m,N=4096,K=4096 --dtype f16 --trials 100
  done
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_cluster() {
  steps
  wgmma_checks 100 40
  tune xgb100_batched_f16_b32_512_auto 45 --op batched_gemm --shape B=32,M=512,N=512,K=128 --dtype f16 --trials 100
  decode_rows 40
  tune xgb200_f16_4096_auto 60 --op gemm --shape M=4096,N=4096,K=4096 --dtype f16 --trials 200
  tune xgb200_bf16_4096_auto 60 --op gemm --shape M=4096,N=4096,K=4096 --dtype bf16 --trials 200
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_cluster2() {
  steps
  tune xgb200_f16_8192_auto 90 --op gemm --shape M=8192,N=8192,K=8192 --dtype f16 --trials 200
  tune xgb200_bf16_8192_auto 90 --op gemm --shape M=8192,N=8192,K=8192 --dtype bf16 --trials 200
  for f in f32 softmax layernorm; do
    step baselines_$f 40 .gpu/bin/template_bench --device "${GPU_SESSION_DEVICE:-cuda:0}" --trials 0 \
      --filter "$f" --out "$S/baselines_$f.json"
  done
  tune xgb100_f32_4096 100 --op gemm --shape M=4096,N=4096,K=4096 --dtype f32 --trials 100
  tune xgb64_layernorm_f16_4096x32768 60 --op layernorm --shape rows=4096,cols=32768 --dtype f16 --trials 64
  tune xgb64_softmax_f16_4096x32768 60 --op softmax --shape rows=4096,cols=32768 --dtype f16 --trials 64
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_cluster3() {
  steps
  step gpu_tests 60 .gpu/bin/gpu_tests --gtest_filter='GpuWgmmaKnobs.*' --gtest_output="json:$S/gpu_tests.json"
  tune xgb100_f16_decode_m64_wgmma 40 --op gemm --shape M=64,N=4096,K=4096 --dtype f16 --template gemm_tc_wgmma --trials 100
  tune xgb100_batched_wgmma 40 --op batched_gemm --shape B=32,M=512,N=512,K=128 --dtype f16 \
    --template batched_gemm_tc_wgmma --trials 100
  tune xgb200_f16_4096_auto 40 --op gemm --shape M=4096,N=4096,K=4096 --dtype f16 --trials 200
  for m in 16 128; do
    tune xgb100_f16_decode_m$m 35 --op gemm --shape M=$m,N=4096,K=4096 --dtype f16 --trials 100
  done
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_rows() {
  steps
  step env 15 bash -c 'nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv'
  step gpu_tests 90 .gpu/bin/gpu_tests --gtest_filter='*layernorm*:*softmax*' --gtest_output="json:$S/gpu_tests.json"
  step baselines 40 .gpu/bin/template_bench --device "${GPU_SESSION_DEVICE:-cuda:0}" --trials 0 --out "$S/baselines.json"
  tune xgb64_layernorm_f16_4096x32768 40 --op layernorm --shape rows=4096,cols=32768 --dtype f16 --trials 64
  tune xgb64_layernorm_f16_4096x4096 30 --op layernorm --shape rows=4096,cols=4096 --dtype f16 --trials 64
  tune xgb200_f16_4096_auto 40 --op gemm --shape M=4096,N=4096,K=4096 --dtype f16 --trials 200
  tune xgb200_bf16_4096_auto 40 --op gemm --shape M=4096,N=4096,K=4096 --dtype bf16 --trials 200
  tune xgb100_batched_f16_b32_512_auto 30 --op batched_gemm --shape B=32,M=512,N=512,K=128 --dtype f16 --trials 100
  tune xgb128_layernorm_f16_4096x32768 40 --op layernorm --shape rows=4096,cols=32768 --dtype f16 --trials 128
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_rows2() {
  steps
  step gpu_tests 60 .gpu/bin/gpu_tests --gtest_filter='*layernorm*' --gtest_output="json:$S/gpu_tests.json"
  for f in layernorm softmax; do
    step baselines_$f 20 .gpu/bin/template_bench --device "${GPU_SESSION_DEVICE:-cuda:0}" --trials 0 \
      --filter "$f" --out "$S/baselines_$f.json"
  done
  tune xgb64_layernorm_f16_4096x32768 30 --op layernorm --shape rows=4096,cols=32768 --dtype f16 --trials 64
  tune xgb64_layernorm_f16_4096x4096 30 --op layernorm --shape rows=4096,cols=4096 --dtype f16 --trials 64
  tune xgb64_softmax_f16_4096x32768 30 --op softmax --shape rows=4096,cols=32768 --dtype f16 --trials 64
  tune xgb64_softmax_f16_4096x4096 30 --op softmax --shape rows=4096,cols=4096 --dtype f16 --trials 64
  step baselines_bf16 20 .gpu/bin/template_bench --device "${GPU_SESSION_DEVICE:-cuda:0}" --trials 0 \
    --filter "K=4096 bf16" --out "$S/baselines_bf16.json"
  tune xgb200_bf16_4096_auto 40 --op gemm --shape M=4096,N=4096,K=4096 --dtype bf16 --trials 200
  tune grid_layernorm_f16_4096x32768_all 60 --op layernorm --shape rows=4096,cols=32768 --dtype f16 --trials all \
    --strategy grid --remeasure 0 --replay-out "$S/layernorm_f16_4096x32768.replay.json"
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_conv() {
  steps
  step baselines 40 .gpu/bin/template_bench --device "${GPU_SESSION_DEVICE:-cuda:0}" --trials 0 --filter conv2d \
    --out "$S/baselines.json"
  tune xgb64_conv_stem_f16 40 --op conv2d --shape N=32,H=224,W=224,C=3,K=64,R=7,S=7,stride=2,pad=3 --dtype f16 --trials 64
  tune xgb64_conv_3x3_f16 30 --op conv2d --shape N=32,H=56,W=56,C=64,K=64,R=3,S=3,stride=1,pad=1 --dtype f16 --trials 64
  tune xgb64_conv_3x3s2_f16 30 --op conv2d --shape N=32,H=56,W=56,C=128,K=128,R=3,S=3,stride=2,pad=1 --dtype f16 --trials 64
  tune xgb64_conv_1x1_f32 40 --op conv2d --shape N=32,H=28,W=28,C=512,K=128,R=1,S=1,stride=1,pad=0 --dtype f32 --trials 64
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_conv2() {
  steps
  step env 20 bash -c 'nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv'
  # A few configs of the strided, dilated wgmma case first, each with a 5 s limit: a hang in a kernel never
  # run before costs 5 s here, not the GPU test's 60 s per config.
  tune smoke_conv_s2_wgmma 30 --op conv2d --shape N=2,H=15,W=13,C=24,K=40,R=3,S=3,stride=2,pad=1,dilation=2 \
    --dtype f16 --trials 4 --template conv2d_igemm_wgmma --timeout 5
  step gpu_tests 90 .gpu/bin/gpu_tests --gtest_filter='*conv2d*' --gtest_output="json:$S/gpu_tests.json"
  step baselines 40 .gpu/bin/template_bench --device "${GPU_SESSION_DEVICE:-cuda:0}" --trials 0 --filter conv2d \
    --out "$S/baselines.json"
  local c33=N=32,H=56,W=56,C=64,K=64,R=3,S=3,stride=1,pad=1 c33s2=N=32,H=56,W=56,C=128,K=128,R=3,S=3,stride=2,pad=1
  local c11=N=32,H=28,W=28,C=512,K=128,R=1,S=1,stride=1,pad=0
  tune xgb100_conv_3x3_wgmma 40 --op conv2d --shape $c33 --dtype f16 --trials 100 --template conv2d_igemm_wgmma
  tune xgb100_conv_3x3s2_wgmma 40 --op conv2d --shape $c33s2 --dtype f16 --trials 100 --template conv2d_igemm_wgmma
  tune xgb100_conv_1x1_gemm_simt 40 --op conv2d --shape $c11 --dtype f32 --trials 100 --template conv2d_gemm_simt
  tune xgb100_conv_3x3_auto 40 --op conv2d --shape $c33 --dtype f16 --trials 100
  tune xgb100_conv_3x3s2_auto 40 --op conv2d --shape $c33s2 --dtype f16 --trials 100
  tune xgb100_conv_1x1_f32_auto 40 --op conv2d --shape $c11 --dtype f32 --trials 100
  tune grid_conv_3x3_wgmma_all 90 --op conv2d --shape $c33 --dtype f16 --trials all --strategy grid --remeasure 0 \
    --template conv2d_igemm_wgmma --replay-out "$S/conv_3x3_wgmma.replay.json"
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_h100() {
  steps
  step env 10 bash -c 'nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv'
  step baselines 35 .gpu/bin/template_bench --device "${GPU_SESSION_DEVICE:-cuda:0}" --trials 0 --out "$S/baselines.json"
  tune xgb200_f16_4096_auto 35 --op gemm --shape M=4096,N=4096,K=4096 --dtype f16 --trials 200
  tune xgb200_bf16_4096_auto 35 --op gemm --shape M=4096,N=4096,K=4096 --dtype bf16 --trials 200
  tune xgb200_f16_8192_auto 45 --op gemm --shape M=8192,N=8192,K=8192 --dtype f16 --trials 200
  tune xgb200_bf16_8192_auto 45 --op gemm --shape M=8192,N=8192,K=8192 --dtype bf16 --trials 200
  issue16_middle_rows
  tune xgb64_conv_stem_f16 25 --op conv2d --shape N=32,H=224,W=224,C=3,K=64,R=7,S=7,stride=2,pad=3 --dtype f16 --trials 64
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_long() {
  steps
  tune xgb400_f32_4096 75 --op gemm --shape M=4096,N=4096,K=4096 --dtype f32 --trials 400
  for m in 16 32; do
    tune xgb300_f16_decode_m$m 30 --op gemm --shape M=$m,N=4096,K=4096 --dtype f16 --trials 300 --template gemm_tc_wgmma
  done
  tune xgb300_f16_shortk_wgmma 30 --op gemm --shape M=4096,N=4096,K=512 --dtype f16 --trials 300 --template gemm_tc_wgmma
  tune xgb300_batched_wgmma 30 --op batched_gemm --shape B=32,M=512,N=512,K=128 --dtype f16 --trials 300 \
    --template batched_gemm_tc_wgmma
  tune xgb300_conv_3x3_wgmma 30 --op conv2d --shape N=32,H=56,W=56,C=64,K=64,R=3,S=3,stride=1,pad=1 --dtype f16 \
    --trials 300 --template conv2d_igemm_wgmma
  step ncu_stem_cudnn 45 ncu --target-processes all -k 'regex:.' --launch-skip 0 --launch-count 3 --section SpeedOfLight \
    --section LaunchStats .gpu/bin/template_bench --device cuda:0 --trials 0 --filter 'C=3' --out "$S/stem.json"
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_patch() {
  steps
  tune smoke_patch 20 --op conv2d --shape N=2,H=23,W=29,C=3,K=20,R=7,S=7,stride=2,pad=3 --dtype f16 --trials 4 \
    --template conv2d_patch_tc --timeout 5
  stem_patch_rows 80 200 50
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_patch2() {
  steps
  stem_patch_rows 60 300 60
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_profile2() {
  steps
  local stem=N=32,H=224,W=224,C=3,K=64,R=7,S=7,stride=2,pad=3
  # cuDNN's stem kernel (not the input fills or the reference), then ours: a config of the patch template a
  # few trials into a search, profiled as the search launches it.
  ncu_step ncu_stem_cudnn 60 '^(?!fill|conv2d_reference|poison|checksum).*' 3 .gpu/bin/template_bench --device cuda:0 \
    --trials 0 --filter 'C=3' --out "$S/ncu_stem_cudnn.json"
  ncu_step ncu_stem_patch 90 '^conv2d_patch' 6 .gpu/bin/tuner tune --op conv2d --shape $stem --dtype f16 \
    --template conv2d_patch_tc --trials 8 --batch 8 --remeasure 0 --seed 1 --quiet --json --device cuda:0 \
    --db "$S/ncu_stem_patch.db"
  ncu_step ncu_conv33_wgmma 90 '^conv2d_igemm_wgmma' 6 .gpu/bin/tuner tune --op conv2d \
    --shape N=32,H=56,W=56,C=64,K=64,R=3,S=3,stride=1,pad=1 --dtype f16 --template conv2d_igemm_wgmma --trials 8 \
    --batch 8 --remeasure 0 --seed 1 --quiet --json --device cuda:0 --db "$S/ncu_conv33.db"
  ncu_step ncu_conv33_cudnn 60 '^(?!fill|conv2d_reference|poison|checksum).*' 3 .gpu/bin/template_bench --device cuda:0 \
    --trials 0 --filter 'C=64,K=64,R=3' --out "$S/ncu_conv33_cudnn.json"
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_profile3() {  # profile2's cuDNN steps with the checksum kernel skipped too, then decode M=64 beside cuBLAS
  steps
  ncu_step ncu_stem_cudnn 60 '^(?!fill|conv2d_reference|poison|checksum).*' 3 .gpu/bin/template_bench --device cuda:0 \
    --trials 0 --filter 'C=3' --out "$S/ncu_stem_cudnn.json"
  ncu_step ncu_conv33_cudnn 60 '^(?!fill|conv2d_reference|poison|checksum).*' 3 .gpu/bin/template_bench --device cuda:0 \
    --trials 0 --filter 'C=64,K=64,R=3' --out "$S/ncu_conv33_cudnn.json"
  ncu_step ncu_decode64_cublas 60 'sm90|cutlass|xmma|gemm|gemv' 1 .gpu/bin/template_bench --device cuda:0 --trials 0 \
    --filter 'gemm M=64,N=4096,K=4096 f16' --out "$S/ncu_decode64_cublas.json"
  ncu_step ncu_decode64_wgmma 90 '^gemm_tc_wgmma' 40 "$t" tune --op gemm --shape M=64,N=4096,K=4096 --dtype f16 \
    --template gemm_tc_wgmma --trials 48 --batch 16 --remeasure 0 --seed 1 --quiet --json --device cuda:0 --db "$S/ncu_decode64.db"
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_profile4() {  # every kernel of cuDNN's stem and 3x3 conv calls (the first 8 launches, speed of light only)
  steps
  local x='^(?!fill|conv2d_reference|poison|checksum).*'
  for w in stem:C=3 conv33:C=64,K=64,R=3; do
    step "ncu_seq_${w%%:*}" 60 ncu --target-processes all -k "regex:$x" --launch-count 8 --section SpeedOfLight \
      --section LaunchStats --csv --page details .gpu/bin/template_bench --device cuda:0 --trials 0 \
      --filter "${w#*:}" --out "$S/seq_${w%%:*}.json"
  done
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_pingpong() {  # conv2d_igemm_wgmma with PINGPONG (stop 30 ran these steps without the 3x3/2 auto row)
  steps
  conv_wgmma_rows pingpong
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_profile5() {  # Nsight Compute on named configs (tune --fix): the 3x3 conv's best and its BM 64, cuDNN's 3x3
  steps            # kernel, decode M=64's best; then decode with 64x32 tiles as cuBLAS runs it
  local c33=N=32,H=56,W=56,C=64,K=64,R=3,S=3,stride=1,pad=1 dec=M=64,N=4096,K=4096
  local one="--trials 1 --remeasure 0 --seed 1 --quiet --json --device cuda:0"
  ncu_step ncu_conv33_best 60 '^conv2d_igemm_wgmma' 2 "$t" tune --op conv2d --shape $c33 --dtype f16 \
    --template conv2d_igemm_wgmma --fix BM=256,BN=64,TILE_W=8,CONSUMERS=2,STAGES=4,PERSISTENT=132,PINGPONG=1 $one \
    --db "$S/ncu_conv33_best.db"
  ncu_step ncu_conv33_bm64 60 '^conv2d_igemm_wgmma' 2 "$t" tune --op conv2d --shape $c33 --dtype f16 \
    --template conv2d_igemm_wgmma --fix BM=64,BN=64,TILE_W=8,CONSUMERS=2,STAGES=6,PERSISTENT=132,PINGPONG=1 $one \
    --db "$S/ncu_conv33_bm64.db"
  ncu_step ncu_conv33_cudnn_xmma 60 'sm90_xmma_fprop' 0 .gpu/bin/template_bench --device cuda:0 --trials 0 \
    --filter 'C=64,K=64,R=3' --out "$S/ncu_conv33_cudnn_xmma.json"
  ncu_step ncu_decode64_best 60 '^gemm_tc_wgmma' 2 "$t" tune --op gemm --shape $dec --dtype f16 --template gemm_tc_wgmma \
    --fix BM=64,BN=64,CONSUMERS=1,STAGES=12,GROUP_M=1,OUT_F32=1,SPLIT_K=1,PERSISTENT=0,EPILOGUE=1,CLUSTER=1 $one --db "$S/ncu_decode64_best.db"
  step baselines 30 .gpu/bin/template_bench --device cuda:0 --trials 0 --filter 'gemm M=64,N=4096,K=4096 f16' \
    --out "$S/baselines.json"
  tune xgb100_decode64_bn32 40 --op gemm --shape $dec --dtype f16 --template gemm_tc_wgmma --trials 100 --fix BN=32
  tune xgb60_decode64_bn32_cluster2 40 --op gemm --shape $dec --dtype f16 --template gemm_tc_wgmma --trials 60 \
    --fix BN=32,CLUSTER=2
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_constshape() {  # conv2d_igemm_wgmma with the conv's shape compiled in: the same steps
  steps
  conv_wgmma_rows constshape
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_constgemm() {  # gemm_tc_wgmma with the problem compiled in: its GPU tests, cuBLAS, then the GEMM rows it runs
  steps
  step gpu_tests 75 .gpu/bin/gpu_tests --gtest_filter='*wgmma*:GpuWgmmaKnobs.*:-*conv2d*' --gtest_output="json:$S/gpu_tests.json"
  step baselines 30 .gpu/bin/template_bench --device "${GPU_SESSION_DEVICE:-cuda:0}" --trials 0 --filter gemm \
    --out "$S/baselines.json"
  tune xgb100_batched_f16_b32_512_auto 25 --op batched_gemm --shape B=32,M=512,N=512,K=128 --dtype f16 --trials 100
  tune xgb100_f16_decode_m64 25 --op gemm --shape M=64,N=4096,K=4096 --dtype f16 --trials 100
  tune xgb100_f16_shortk_auto 20 --op gemm --shape M=4096,N=4096,K=512 --dtype f16 --trials 100
  tune xgb200_f16_4096_auto 30 --op gemm --shape M=4096,N=4096,K=4096 --dtype f16 --trials 200
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_profile6() {  # batched GEMM (97% of cuBLAS at stop 29) beside cuBLAS under Nsight Compute: our best config by name
  steps            # (tune --fix, every knob), cuBLAS's batched call; then cuBLAS and the GEMM rows with tune's defaults
  local bat=B=32,M=512,N=512,K=128
  local one="--trials 1 --remeasure 0 --seed 1 --quiet --json --device cuda:0"
  ncu_step ncu_batched_best 60 '^gemm_tc_wgmma' 2 "$t" tune --op batched_gemm --shape $bat --dtype f16 \
    --template batched_gemm_tc_wgmma \
    --fix BM=128,BN=128,CONSUMERS=2,STAGES=5,GROUP_M=1,OUT_F32=0,SPLIT_K=1,PERSISTENT=132,EPILOGUE=1,CLUSTER=1 $one \
    --db "$S/ncu_batched_best.db"
  ncu_step ncu_batched_cublas 60 'sm90|cutlass|xmma|nvjet|gemm' 1 .gpu/bin/template_bench --device cuda:0 --trials 0 \
    --filter "batched_gemm $bat f16" --out "$S/ncu_batched_cublas.json"
  step baselines 30 .gpu/bin/template_bench --device "${GPU_SESSION_DEVICE:-cuda:0}" --trials 0 --filter gemm \
    --out "$S/baselines.json"
  tune xgb100_batched_f16_b32_512_auto 25 --op batched_gemm --shape $bat --dtype f16 --trials 100
  tune xgb100_f16_decode_m64 25 --op gemm --shape M=64,N=4096,K=4096 --dtype f16 --trials 100
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_ppgemm() {  # gemm_tc_wgmma's PINGPONG knob (stop 32), first run: a smoke run with a 5 s kernel limit, its GPU
  steps           # tests, cuBLAS; same-config pairs (pingpong or not) over the batched row; the rows it should move
  local bat=B=32,M=512,N=512,K=128 sk=M=4096,N=4096,K=512
  step env 20 bash -c 'nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv'
  tune smoke_pingpong 40 --op batched_gemm --shape $bat --dtype f16 --template batched_gemm_tc_wgmma \
    --fix PINGPONG=1,BM=128,BN=128 --trials 4 --timeout 5
  step gpu_tests 120 .gpu/bin/gpu_tests --gtest_filter='*wgmma*:GpuWgmmaKnobs.*:-*conv2d*' --gtest_output="json:$S/gpu_tests.json"
  step baselines 30 .gpu/bin/template_bench --device "${GPU_SESSION_DEVICE:-cuda:0}" --trials 0 --filter gemm \
    --out "$S/baselines.json"
  tune grid_batched_pairs 60 --op batched_gemm --shape $bat --dtype f16 --template batched_gemm_tc_wgmma \
    --fix BM=128,BN=128,CONSUMERS=2,PERSISTENT=132,SPLIT_K=1,CLUSTER=1 --trials all --strategy grid --remeasure 0 \
    --replay-out "$S/batched_pairs.replay.json"
  tune xgb100_batched_f16_b32_512_auto 25 --op batched_gemm --shape $bat --dtype f16 --trials 100
  tune xgb300_batched_wgmma 50 --op batched_gemm --shape $bat --dtype f16 --trials 300 --template batched_gemm_tc_wgmma
  tune xgb100_f16_shortk_auto 25 --op gemm --shape $sk --dtype f16 --trials 100
  tune xgb300_f16_shortk_wgmma 50 --op gemm --shape $sk --dtype f16 --trials 300 --template gemm_tc_wgmma
  tune xgb200_f16_4096_auto 35 --op gemm --shape M=4096,N=4096,K=4096 --dtype f16 --trials 200
  # The batched winner by name (every knob, absent ones at their defaults) and cuBLAS's batched kernel.
  local fix
  fix=$(python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))["best"]["config"]
c = {"EPILOGUE": 0, "CLUSTER": 1, "PINGPONG": 0, **c}
print(",".join("%s=%s" % kv for kv in c.items()))' "$S/xgb300_batched_wgmma.out" 2>/dev/null)
  if [[ -n "$fix" ]]; then
    ncu_step ncu_batched_best 60 '^gemm_tc_wgmma' 2 "$t" tune --op batched_gemm --shape $bat --dtype f16 \
      --template batched_gemm_tc_wgmma --fix "$fix" --trials 1 --remeasure 0 --seed 1 --quiet --json --device cuda:0 \
      --db "$S/ncu_batched_best.db"
  fi
  ncu_step ncu_batched_cublas 60 'sm90|cutlass|xmma|nvjet|gemm' 1 .gpu/bin/template_bench --device cuda:0 --trials 0 \
    --filter "batched_gemm $bat f16" --out "$S/ncu_batched_cublas.json"
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_table32() {  # issue 16's whole table in one lease after PINGPONG (tune's defaults: auto template, xgb, the
  steps            # compiled prior), every vendor baseline first; then the short-K row's same-config pairs
  step env 10 bash -c 'nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv'
  step baselines 40 .gpu/bin/template_bench --device "${GPU_SESSION_DEVICE:-cuda:0}" --trials 0 --out "$S/baselines.json"
  for d in f16 bf16; do
    tune xgb200_${d}_4096_auto 35 --op gemm --shape M=4096,N=4096,K=4096 --dtype $d --trials 200
    tune xgb200_${d}_8192_auto 45 --op gemm --shape M=8192,N=8192,K=8192 --dtype $d --trials 200
  done
  issue16_middle_rows
  tune xgb100_conv_stem_f16 30 --op conv2d --shape N=32,H=224,W=224,C=3,K=64,R=7,S=7,stride=2,pad=3 --dtype f16 --trials 100
  tune xgb100_conv_3x3_auto 30 --op conv2d --shape N=32,H=56,W=56,C=64,K=64,R=3,S=3,stride=1,pad=1 --dtype f16 --trials 100
  tune xgb100_conv_3x3s2_auto 30 --op conv2d --shape N=32,H=56,W=56,C=128,K=128,R=3,S=3,stride=2,pad=1 --dtype f16 --trials 100
  tune xgb100_conv_1x1_f32 30 --op conv2d --shape N=32,H=28,W=28,C=512,K=128,R=1,S=1,stride=1,pad=0 --dtype f32 --trials 100
  tune grid_shortk_pairs 40 --op gemm --shape M=4096,N=4096,K=512 --dtype f16 --template gemm_tc_wgmma \
    --fix BM=128,BN=128,CONSUMERS=2,PERSISTENT=132,SPLIT_K=1,CLUSTER=1 --trials all --strategy grid --remeasure 0 \
    --replay-out "$S/shortk_pairs.replay.json"
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_sigint32() {  # table32's decode M=128 and 3x3 conv rows were cut by their step limits (SIGINT), and tune then
  steps             # died silently: the CUDA driver's threads took the signal. After the fix: a run cut at 8 s, its
                    # exit code and its session, then the two rows with room
  step cut_by_sigint 8 "$t" tune --op gemm --shape M=128,N=4096,K=4096 --dtype f16 --trials 100 --device cuda:0 --seed 1 \
    --json --db "$S/cut_by_sigint.db"
  step cut_sessions 10 bash -c "grep 'cut_by_sigint end' '$S/steps.txt'; '$t' query --db '$S/cut_by_sigint.db' --sessions"
  tune xgb100_f16_decode_m128 50 --op gemm --shape M=128,N=4096,K=4096 --dtype f16 --trials 100
  tune xgb100_conv_3x3_auto 50 --op conv2d --shape N=32,H=56,W=56,C=64,K=64,R=3,S=3,stride=1,pad=1 --dtype f16 --trials 100
  step baselines 20 .gpu/bin/template_bench --device "${GPU_SESSION_DEVICE:-cuda:0}" --trials 0 --filter 'M=128,N=4096' \
    --out "$S/baselines.json"
  step baselines_3x3 20 .gpu/bin/template_bench --device "${GPU_SESSION_DEVICE:-cuda:0}" --trials 0 --filter 'C=64,K=64,R=3' \
    --out "$S/baselines_3x3.json"
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_clusterk() {  # gemm_tc_wgmma's CLUSTER_K (stop 32, built without a GPU): a smoke run with a 5 s kernel limit, its
  steps             # GPU tests, cuBLAS; per decode row, every 64x64 one-consumer config without split-K by grid (CLUSTER_K
                    # 1, 2 and 4 side by side), the row with tune's defaults and 300 trials by name; then Nsight Compute
  local f=BM=64,CONSUMERS=1,SPLIT_K=1,PERSISTENT=0,CLUSTER=1,PINGPONG=0
  step env 10 bash -c 'nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv'
  tune smoke_clusterk 40 --op gemm --shape M=64,N=4096,K=4096 --dtype f16 --template gemm_tc_wgmma \
    --fix BM=64,BN=64,CLUSTER_K=2 --trials 4 --timeout 5
  step gpu_tests 150 .gpu/bin/gpu_tests --gtest_filter='*wgmma*:GpuWgmmaKnobs.*:-*conv2d*' --gtest_output="json:$S/gpu_tests.json"
  step baselines 30 .gpu/bin/template_bench --device "${GPU_SESSION_DEVICE:-cuda:0}" --trials 0 --filter gemm \
    --out "$S/baselines.json"
  for m in 16 32 64 128; do
    tune grid_decode_m${m}_ck 60 --op gemm --shape M=$m,N=4096,K=4096 --dtype f16 --template gemm_tc_wgmma \
      --fix $f,BN=64 --trials all --strategy grid --remeasure 0 --replay-out "$S/decode_m${m}_ck.replay.json"
  done
  tune grid_decode_m64_bn32_ck 60 --op gemm --shape M=64,N=4096,K=4096 --dtype f16 --template gemm_tc_wgmma \
    --fix $f,BN=32 --trials all --strategy grid --remeasure 0 --replay-out "$S/decode_m64_bn32_ck.replay.json"
  decode_rows 40
  # The batched and short-K rows' whole wgmma spaces (4,304 configs each), to recalibrate the sim's epilogue.
  tune rec_batched_f16_b32_512_wgmma 150 --op batched_gemm --shape B=32,M=512,N=512,K=128 --dtype f16 \
    --template batched_gemm_tc_wgmma --trials all --strategy grid --min-time-ms 2 --remeasure 0 \
    --replay-out "$S/batched_f16_b32_512_wgmma.replay.json"
  tune rec_gemm_f16_shortk_wgmma 150 --op gemm --shape M=4096,N=4096,K=512 --dtype f16 --template gemm_tc_wgmma \
    --trials all --strategy grid --min-time-ms 2 --remeasure 0 --replay-out "$S/gemm_f16_shortk_wgmma.replay.json"
  for m in 16 32 64; do
    tune xgb300_f16_decode_m${m}_wgmma 50 --op gemm --shape M=$m,N=4096,K=4096 --dtype f16 --trials 300 --template gemm_tc_wgmma
  done
  local fix
  fix=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
recs = [r for r in d["records"] if r.get("status") == "ok" and r["config"].get("CLUSTER_K", 1) > 1]
c = min(recs, key=lambda r: r["time_ms"])["config"]
c = {"EPILOGUE": 0, "CLUSTER": 1, "PINGPONG": 0, **c}
print(",".join("%s=%s" % kv for kv in c.items()))' "$S/decode_m64_ck.replay.json" 2>/dev/null)
  if [[ -n "$fix" ]]; then
    ncu_step ncu_decode64_clusterk 60 '^gemm_tc_wgmma' 2 "$t" tune --op gemm --shape M=64,N=4096,K=4096 --dtype f16 \
      --template gemm_tc_wgmma --fix "$fix" --trials 1 --remeasure 0 --seed 1 --quiet --json --device cuda:0 \
      --db "$S/ncu_decode64_clusterk.db"
  fi
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_rec34() {  # Whole spaces of workloads held out from the search's development (issue 13): three wgmma GEMM
  steps         # shapes (each compiled cold: the shape is compiled in), softmax and layernorm. Stop 34 ran it: the
                # decode and 512x1024x4096 spaces are 15,272 and 15,132 configs, and their steps' limits cut them
  step env 10 bash -c 'nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv'
  rec() { local name=$1 limit=$2; shift 2
    tune "rec_$name" "$limit" "$@" --trials all --strategy grid --min-time-ms 2 --remeasure 0 --replay-out "$S/$name.replay.json"; }
  rec gemm_f16_2048x8192x2048_wgmma 150 --op gemm --shape M=2048,N=8192,K=2048 --dtype f16 --template gemm_tc_wgmma
  rec gemm_f16_16x4096x4096_wgmma 60 --op gemm --shape M=16,N=4096,K=4096 --dtype f16 --template gemm_tc_wgmma
  rec gemm_f16_512x1024x4096_wgmma 60 --op gemm --shape M=512,N=1024,K=4096 --dtype f16 --template gemm_tc_wgmma
  rec softmax_f16_4096x32768 60 --op softmax --shape rows=4096,cols=32768 --dtype f16
  rec layernorm_bf16_8192x8192 60 --op layernorm --shape rows=8192,cols=8192 --dtype bf16
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_next35() {  # After stop 34: the changed wgmma GPU test cases; whether CLUSTER 2 pays on the big squares (every
  steps          # 128x256 two-consumer persistent config, CLUSTER 1 and 2: 48 each); 2048x8192x2048's whole space
                 # (4,304 configs compiled cold, about 160 s on 16 cores) and uniform samples of the two 15,000-config
                 # spaces rec34 recorded only a prefix of (BM 64). About 11 minutes in all.
  step env 10 bash -c 'nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv'
  step gpu_tests 90 .gpu/bin/gpu_tests --gtest_filter='*wgmma*:GpuWgmmaKnobs.*:-*conv2d*' --gtest_output="json:$S/gpu_tests.json"
  for n in 4096 8192; do
    tune grid_cluster_${n} 60 --op gemm --shape M=$n,N=$n,K=$n --dtype f16 --template gemm_tc_wgmma \
      --fix BM=128,BN=256,CONSUMERS=2,PERSISTENT=132 --trials all --strategy grid --remeasure 0 \
      --replay-out "$S/cluster_${n}.replay.json"
  done
  tune rec_gemm_f16_2048x8192x2048_wgmma 200 --op gemm --shape M=2048,N=8192,K=2048 --dtype f16 --template gemm_tc_wgmma \
    --trials all --strategy grid --min-time-ms 2 --remeasure 0 --replay-out "$S/gemm_f16_2048x8192x2048_wgmma.replay.json"
  for s in 16x4096x4096:M=16,N=4096,K=4096 512x1024x4096:M=512,N=1024,K=4096; do
    tune sample_gemm_f16_${s%%:*}_wgmma 120 --op gemm --shape "${s#*:}" --dtype f16 --template gemm_tc_wgmma \
      --trials 1500 --strategy random --min-time-ms 2 --remeasure 0 --replay-out "$S/gemm_f16_${s%%:*}_sample.replay.json"
  done
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

plan_checks44() {  # Stop 44's pending correctness checks, first in the next lease (about 5-7 minutes on an H100; run
  steps            # next35 after it if time is left). Expected: gpu_tests all pass (the injected crash and hang stay
                   # runtime_fault / run_timeout; on an H100 the replayed H100 record launches, elsewhere it is refused);
                   # the user kernel with <cuda_fp16.h> and printf measures 8 configs with no errors; the spec key
                   # printed is h100-sxm on an H100 and h200-sxm on an H200; batched_gemm B=159 is refused before
                   # anything runs (exit 2: 85.5 GB > the GPU's), B=150 (80.6 GB) runs, and B=157 (84.4 GB, 0.6 GB
                   # left for the context) runs or fails as one trial, never ending the session.
  step env 10 bash -c 'nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv'
  step gpu_tests 300 .gpu/bin/gpu_tests --gtest_filter='GpuGemm.*:GpuRuntime.*:GpuWgmmaKnobs.*:*batched_gemm_f32*' \
    --gtest_output="json:$S/gpu_tests.json"
  tune user_printf_fp16 90 --kernel scripts/gpu_kernels/saxpy_printf_fp16.cu --spec examples/user_kernel/saxpy.json \
    --trials 8 --strategy random
  tune spec_key 60 --op softmax --shape rows=1024,cols=1024 --dtype f16 --trials 4 --strategy random \
    --replay-out "$S/spec_key.replay.json"
  step spec_key_gpu 5 bash -c "grep -ho '\"gpu\": *\"[^\"]*\"' '$S/spec_key.replay.json'"
  # The memory steps' sizes are an 80 GB H100's (85.0e9 bytes); on another GPU they check nothing.
  if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q 'H100 80GB'; then
    tune mem_over 30 --op batched_gemm --shape B=159,M=8192,N=8192,K=8192 --dtype f16 --trials 1 --strategy random
    tune mem_under 150 --op batched_gemm --shape B=150,M=8192,N=8192,K=8192 --dtype f16 --trials 1 \
      --strategy random --remeasure 0
    tune mem_edge 150 --op batched_gemm --shape B=157,M=8192,N=8192,K=8192 --dtype f16 --trials 1 \
      --strategy random --remeasure 0
  fi
  echo "all-done $(date +%s)" >> "$S/steps.txt"
}

if [[ ! -f "$S/steps.txt" ]]; then
  mkdir -p "$S"
  echo "queue $(date +%s)" > "$S/steps.txt"
  export -f steps "plan_$plan"
  export S GPU_SESSION_DEVICE
  setsid nohup bash -c "plan_$plan" > "$S/queue.log" 2>&1 < /dev/null &
fi

# (GNU tar exits 1 when a file changed as it read it, as the databases do while steps write them: the archive is
# still whole.)
pack() { tar czf "$out/session.tar.gz.tmp" --warning=no-file-changed -C /tmp "gpu-session-$plan" 2>/dev/null
         (( $? <= 1 )) && mv "$out/session.tar.gz.tmp" "$out/session.tar.gz"; }
summary() {
  local now; now=$(date +%s)
  awk -v now="$now" '$2 == "start" {s[$1] = $3; order[++n] = $1}
       $2 == "end" {e[$1] = $3; rc[$1] = $4}
       END {for (i = 1; i <= n; i++) {k = order[i];
              if (k in e) printf "%-34s %5d s %s\n", k, e[k] - s[k], rc[k];
              else printf "%-34s %5d s running\n", k, now - s[k]}}' "$S/steps.txt"
  grep -q all-done "$S/steps.txt" && echo "all-done"
  for f in "$S"/*.out; do
    [[ -s "$f" ]] || continue
    n=$(basename "$f" .out)
    case "$n" in
      env) ;;
      baselines*) grep -E ' baseline$' "$f" | awk '{printf "  %-10s %-34s %-5s %-16s %9s ms %8s TFLOP/s %6s GB/s\n", $1, $2, $3, $4, $5, $6, $7}' ;;
      gpu_tests) grep -E '^\[  (PASSED|FAILED) |^\[  FAILED  \]|tests ran|^  time ' "$f" | head -60 ;;
      torch_ref) cat "$f" ;;
      ncu_*) [[ -s "$S/$n.csv" ]] && python3 - "$S/$n.csv" "$n" <<'PY' 2>/dev/null || echo "  $n: $(tail -c 300 "$S/$n.log")"
import csv, sys
keep = ("Duration", "DRAM Throughput", "Memory Throughput", "Compute (SM) Throughput", "Registers Per Thread",
        "Dynamic Shared Memory Per Block", "Achieved Occupancy", "L2 Hit Rate", "Executed Ipc Active")
seen = {}
for r in csv.DictReader(open(sys.argv[1])):
    seen.setdefault("kernel", "%s grid %s block %s" % (r["Kernel Name"][:60], r["Grid Size"], r["Block Size"]))
    if r["Metric Name"] in keep: seen[r["Metric Name"]] = r["Metric Value"] + " " + r["Metric Unit"]
print("  %s: %s" % (sys.argv[2], seen.pop("kernel", "")))
print("    " + "; ".join("%s %s" % kv for kv in seen.items()))
PY
      ;;
      *) python3 - "$f" "$n" <<'PY' 2>/dev/null || echo "  $n: $(head -c 300 "$f")"
import json, sys
d = json.load(open(sys.argv[1])); s = d.get("summary", d); b = d.get("best") or {}
ph = s.get("phases", {})
print("  %-32s %s trials (%s errors) in %.0f s, %.2f configs/s, best %.4g ms %s | %s | %s" % (
    sys.argv[2], s.get("measured"), s.get("errors"), s.get("wall_s", 0), s.get("configs_per_s", 0),
    b.get("time_ms") or 0, d.get("template", ""), s.get("stop_reason", ""),
    " ".join("%s=%.1f" % (k, v) for k, v in ph.items() if isinstance(v, (int, float)) and v >= 0.5)))
if b.get("config"): print("    " + ",".join("%s=%s" % kv for kv in b["config"].items()))
PY
      ;;
    esac
  done
  # Steps that ended without a summary (refused, as the memory check's exit 2, or failed): their message.
  for f in "$S"/*.log; do
    n=$(basename "$f" .log)
    grep -q "^$n end " "$S/steps.txt" || continue
    [[ -s "$f" && ! -s "$S/$n.out" ]] && echo "  $n: $(tr '\r' '\n' < "$f" | grep -v '^$' | tail -1 | cut -c1-300)"
  done
}

waited=0
while (( waited < wait_s )) && ! grep -q all-done "$S/steps.txt"; do
  sleep 5; waited=$((waited + 5))
  (( waited % 15 == 0 )) && pack
done
pack
summary | tee "$out/summary.txt"
