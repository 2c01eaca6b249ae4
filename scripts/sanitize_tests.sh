#!/usr/bin/env bash
# The sanitizer pass of `make test` (issue 12): an AddressSanitizer + UndefinedBehaviorSanitizer
# build in build-asan (-O0, no debug info: the build is most of the cost), the unit tests that are
# cheap to build and run (not templates_tests: NVRTC compiles of every template; not gpu_tests; no benches),
# and every fuzz target of tests/fuzz/ over its corpus plus a fixed number of seeded mutants; the
# tests and fuzz targets run $JOBS at a time (each is single-threaded), their logs printed at the end.
# Any sanitizer report, test failure or fuzz failure fails the script; it goes on to the end first
# and names what failed. Failing fuzz inputs land in $BUILD/fuzz-artifacts/.
#
#   bash scripts/sanitize_tests.sh            # what CI runs (after ctest)
#   FUZZ_RUNS=100000 bash scripts/sanitize_tests.sh   # fuzz longer
#   SANITIZE_BUILD=build-asan JOBS=2 FUZZ_SEED=7 ...  # other knobs
set -uo pipefail
cd "$(dirname "$0")/.."

BUILD=${SANITIZE_BUILD:-build-asan}
JOBS=${JOBS:-$(nproc)}
FUZZ_RUNS=${FUZZ_RUNS:-10000}
FUZZ_SEED=${FUZZ_SEED:-1}
FUZZ_TIMEOUT_S=${FUZZ_TIMEOUT_S:-10}
ROOT=$(pwd)

OPT=${SANITIZE_OPT:--O0}
# The sanitized unit tests: those whose folders link a narrow library (CMakeLists.txt
# tests_link_<folder>), so the build needs neither the tuner library nor the CLI. costmodel_tests,
# tuner_tests and tools_tests build the tuner library too and run NVRTC; they are left out for CI
# time (docs/benchmarks.md, issue 12). SANITIZE_TESTS="search_tests costmodel_tests ..." runs others.
read -r -a tests <<<"${SANITIZE_TESTS:-search_tests parallel_tests db_tests}"
# gtest filters per executable where a part is too slow under the sanitizers ('*': all).
declare -A filters=()
fuzzers=(shape config replay model_json cluster_json fix model_family cluster_string)
# Mutants per target where the default does not fit (a slow target runs fewer).
declare -A fuzz_runs=()

failed=()
elapsed() { echo $(( SECONDS - $1 )); }

start=$SECONDS
mkdir -p "$BUILD"
echo "sanitize: configuring $BUILD (address,undefined, $OPT)"
targets=("${tests[@]}")
case " ${tests[*]} " in *" tuner_tests "*|*" tools_tests "*) targets+=(tuner_cli) ;; esac
for f in "${fuzzers[@]}"; do targets+=("${f}_fuzz"); done
build_set=$(IFS=';'; echo "${targets[*]}")
if ! cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=$OPT" \
    -DTUNER_SANITIZE=address,undefined -DTUNER_FUZZ=ON "-DTUNER_BUILD_SET=$build_set" >"$BUILD/configure.log" 2>&1; then
  cat "$BUILD/configure.log"
  exit 1
fi
# One goal (build_set depends on every target), so make runs the compiles of all targets in parallel.
if ! cmake --build "$BUILD" -j "$JOBS" --target build_set; then
  echo "sanitize: the sanitizer build failed"
  exit 1
fi
build_s=$(elapsed $start)
echo "sanitize: build ${build_s} s"

export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:strict_string_checks=1:check_initialization_order=1:detect_stack_use_after_return=1"
export LSAN_OPTIONS="suppressions=$ROOT/tests/sanitizers/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export TUNER_CACHE_DIR="$ROOT/$BUILD/test-cache"

# The sanitized tests and the fuzz targets each run on one core: run them $JOBS at a time, the
# slowest first (so the last to start are short), each into its own log under $BUILD/logs/, which
# is printed when all have ended.
runs=()
for t in "${tests[@]}"; do runs+=("$t"); done
for f in "${fuzzers[@]}"; do runs+=("${f}_fuzz"); done
slow_first=(parallel_tests search_tests config_fuzz replay_fuzz shape_fuzz db_tests model_json_fuzz)
order=()
for r in "${slow_first[@]}"; do
  case " ${runs[*]} " in *" $r "*) order+=("$r") ;; esac
done
for r in "${runs[@]}"; do
  case " ${order[*]} " in *" $r "*) ;; *) order+=("$r") ;; esac
done

# One run: a test executable (its filter) or a fuzz target over its corpus and seeded mutants.
run_one() {
  local r=$1
  case $r in
    *_fuzz)
      local f=${r%_fuzz}
      local dict=()
      [ -f "tests/fuzz/$f.dict" ] && dict=("-dict=tests/fuzz/$f.dict")
      "$BUILD/fuzz/$r" "-runs=${fuzz_runs[$f]:-$FUZZ_RUNS}" "-seed=$FUZZ_SEED" "${dict[@]}" \
        "-timeout=$FUZZ_TIMEOUT_S" -rss_limit_mb=2048 "-artifact_prefix=$BUILD/fuzz-artifacts/" "tests/fuzz/corpus/$f"
      ;;
    *)
      echo "sanitize: $r ${filters[$r]:-*}"
      (cd "$BUILD" && "./$r" --gtest_filter="${filters[$r]:-*}" --gtest_brief=1)
      ;;
  esac
}

start=$SECONDS
rm -rf "$BUILD/logs"
mkdir -p "$BUILD/fuzz-artifacts" "$BUILD/logs"
for r in "${order[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
  echo "sanitize: start $r"
  (
    s=$SECONDS
    run_one "$r" >"$BUILD/logs/$r.log" 2>&1
    echo "$? $((SECONDS - s))" >"$BUILD/logs/$r.rc"
  ) &
done
wait
runs_s=$(elapsed $start)

declare -A took=()
for r in "${order[@]}"; do
  echo "---- $r"
  cat "$BUILD/logs/$r.log"
  rc=1 secs=?
  [ -f "$BUILD/logs/$r.rc" ] && read -r rc secs <"$BUILD/logs/$r.rc"
  took[$r]=$secs
  [ "$rc" = 0 ] || failed+=("$r")
done

echo "sanitize: build ${build_s} s, tests and fuzz targets ${runs_s} s ($JOBS at a time)"
for k in "${order[@]}"; do echo "sanitize:   $k ${took[$k]} s"; done
if [ ${#failed[@]} -gt 0 ]; then
  echo "sanitize: FAILED: ${failed[*]}"
  exit 1
fi
echo "sanitize: all passed"
