#!/usr/bin/env bash
# Packs what a GPU machine needs to run tuner's GPU checks into .gpu/ (git-ignored, carried to the
# machine; see docs/benchmarks.md, "Running the GPU checks"): the built binaries, and the shared
# libraries from Debian packages that a CUDA image lacks (XGBoost, CBC, SQLite, Boost...). Not
# bundled: glibc, libstdc++/libgcc (the image's are newer), the CUDA toolkit (the image has CUDA 13
# at /usr/local/cuda) and the driver. Run after `make build` (or any build of build/).
set -euo pipefail
cd "$(dirname "$0")/.."
bins=(build/bin/tuner build/bin/template_bench build/bin/pipeline_bench build/gpu_tests)
for b in "${bins[@]}"; do
  [[ -x "$b" ]] || { echo "gpu_bundle: $b is missing; build first (make build)" >&2; exit 2; }
done
rm -rf .gpu
mkdir -p .gpu/bin .gpu/lib
cp "${bins[@]}" .gpu/bin/
strip --strip-debug .gpu/bin/*  # debug sections are most of their size
for b in "${bins[@]}"; do ldd "$b"; done | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
  while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) continue ;;
    esac
    case "$lib" in /usr/local/cuda*) continue ;; esac
    cp -L "$lib" .gpu/lib/
  done
# The runtime library is built with debug information too (8.9 MB of its 9; stripped, 2 MB).
strip --strip-debug .gpu/lib/libtuner_runtime.so* 2>/dev/null || true
# gpu_tests start the worker at the build tree's absolute path (TUNER_BIN): gpu_check.sh puts tuner there.
echo "$PWD/build/bin/tuner" > .gpu/tuner_bin_path
# A call carries the tracked and untracked files of the tree besides .gpu: 64 MiB in all.
bundle=$(du -sb .gpu | cut -f1)
# (du fails on a tracked file deleted from the tree; the rest still counts.)
tree=$({ git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- 2>/dev/null || true; } |
       tail -1 | cut -f1)
total=$((bundle + tree))
echo "gpu_bundle: .gpu holds $((bundle >> 20)) MiB and the tree $((tree >> 20)) MiB: $((total >> 20)) MiB of the 64 MiB a call carries"
if (( total > 62 << 20 )); then
  echo "gpu_bundle: over 62 MiB; the call would be refused (strip more, or leave a binary out)" >&2
  exit 2
fi
