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
# gpu_tests start the worker at the build tree's absolute path (TUNER_BIN): gpu_check.sh puts tuner there.
echo "$PWD/build/bin/tuner" > .gpu/tuner_bin_path
du -sh .gpu | awk '{print "gpu_bundle: .gpu holds " $1 " (carry .gpu; the limit is 64 MiB)"}'
