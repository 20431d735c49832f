#!/usr/bin/env bash
# The checks CI runs after the test suite (`bash scripts/setup.sh test` calls this):
#   1. the whole test suite again, built with AddressSanitizer + UndefinedBehaviorSanitizer (clang, build-asan/),
#      failing on the first report;
#   2. every libFuzzer target (fuzz/) for a bounded time, seeded from the bundled files; a crash fails.
# Usage: bash scripts/ci-checks.sh   (TPUSIM_FUZZ_SECONDS=N: time per fuzz target, default 20; TPUSIM_FUZZ_SEED=N: default 1)
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=$(nproc)
fuzz_seconds="${TPUSIM_FUZZ_SECONDS:-20}"
# A fixed seed makes a CI run reproducible: the same mutations in the same order (TPUSIM_FUZZ_SEED=N varies it).
fuzz_seed="${TPUSIM_FUZZ_SEED:-1}"
build=build-asan
# abort_on_error: a report kills the process with SIGABRT, so a test driving the binary sees a crash, not an
# exit code it might expect. detect_leaks: the SystemC kernel keeps its simulation context to the end.
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=0:check_initialization_order=1:strict_string_checks=1"
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1"

start=$SECONDS
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize \
  -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -g1" -DCMAKE_UNITY_BUILD=ON -DTPUSIM_SANITIZE=ON -DTPUSIM_BUILD_FUZZERS=ON -DTPUSIM_BUILD_BENCH=OFF \
  >/dev/null
cmake --build "$build" -j "$jobs"
build_s=$((SECONDS - start))

start=$SECONDS
ctest --test-dir "$build" -j "$jobs" --output-on-failure
test_s=$((SECONDS - start))

# Seed corpora from the bundled files (rebuilt each time; the fuzzers add what they find next to them).
start=$SECONDS
corpus="$build/fuzz-corpus"
rm -rf "$corpus" "$build/fuzz-crashes"
mkdir -p "$corpus"/{scenario,model,chip_pod,units,set,program,sweep,expr} "$build/fuzz-crashes"
cp scenarios/*.yaml "$corpus/scenario/"
find test/badinput/cases -name '*.yaml' -size -64k | while read -r f; do cp "$f" "$corpus/scenario/$(echo "$f" | tr / _)"; done
cp configs/chips/*.yaml configs/pods/*.yaml "$corpus/chip_pod/"
cp configs/models/*.yaml "$corpus/model/"
cp sweeps/*.yaml "$corpus/sweep/"
cp test/badinput/cases/good/p.json "$corpus/program/mlp-small.json"
"$build/tools/tpusim" lower gemm-skinny-v4 > "$corpus/program/gemm.json"
"$build/tools/tpusim" lower allreduce-v4-4x4x4 > "$corpus/program/collective.json"
"$build/tools/tpusim" lower moe-layer-v5p > "$corpus/program/fused-v2.json" 2>/dev/null
"$build/tools/tpusim" lower dlrm-v4 --set workload.model.tables=2 > "$corpus/program/gather-v2.json" 2>/dev/null
i=0; while IFS= read -r line; do printf '%s' "$line" > "$corpus/units/$i"; i=$((i + 1)); done < fuzz/seeds/units.txt
i=0; while IFS= read -r line; do printf '%s' "$line" > "$corpus/set/$i"; i=$((i + 1)); done < fuzz/seeds/set.txt
i=0; while IFS= read -r line; do printf '%s' "$line" > "$corpus/expr/$i"; i=$((i + 1)); done < fuzz/seeds/expr.txt

failed=0
run_fuzzer() {
  local target=$1
  "$build/fuzz/fuzz_$target" "$corpus/$target" -max_total_time="$fuzz_seconds" -seed="$fuzz_seed" -timeout=10 -rss_limit_mb=2048 \
    -max_len=16384 -print_final_stats=1 -artifact_prefix="$build/fuzz-crashes/$target-" \
    >"$build/fuzz-$target.log" 2>&1
}
targets=(scenario model chip_pod units set program sweep expr)
# Two at a time on two cores: each fuzzer is single-threaded.
for ((t = 0; t < ${#targets[@]}; t += jobs)); do
  pids=()
  for ((j = t; j < t + jobs && j < ${#targets[@]}; j++)); do
    run_fuzzer "${targets[j]}" &
    pids+=("$!:${targets[j]}")
  done
  for entry in "${pids[@]}"; do
    if ! wait "${entry%%:*}"; then
      echo "ci-checks: fuzz_${entry#*:} found a crash; the input is in $build/fuzz-crashes/:" >&2
      tail -n 40 "$build/fuzz-${entry#*:}.log" >&2
      failed=1
    else
      echo "fuzz_${entry#*:}: $(grep -h "stat::number_of_executed_units" "$build/fuzz-${entry#*:}.log" || true)"
    fi
  done
done
fuzz_s=$((SECONDS - start))

echo "ci-checks: sanitizer build ${build_s} s, sanitizer test suite ${test_s} s, fuzzing ${fuzz_s} s"
exit "$failed"
