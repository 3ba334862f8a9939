#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for a bounded time each, from the seed corpus plus what
# earlier runs kept, and fails on any crash, leak, timeout or out-of-memory. CI runs 2 at a time:
#   DARKBERT_FUZZ_JOBS=2 tests/fuzz/run.sh 20   # all targets, 20 s each, two in parallel
#   tests/fuzz/run.sh 600 safetensors config     # two targets, 10 min each, one after the other
# Needs the fuzz preset built (cmake --workflow --preset fuzz). Prints, per target: executions, edges
# covered (cov), corpus size; reproducers land in build/fuzz/tests/fuzz/artifacts/. The corpus grows in
# $DARKBERT_FUZZ_CORPUS/<target> (default build/fuzz/tests/fuzz/corpus), never in the source tree.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-30}
shift || true
jobs=${DARKBERT_FUZZ_JOBS:-1}
bin=build/fuzz/tests/fuzz
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(safetensors checkpoint_index config checkpoint_forward tokenizer_text tokenizer_vocab glue conllu framenet cases npy)
fi
# Inputs larger than this are cut: the formats' structure sits in the first kilobytes, and shorter inputs
# mean more executions. checkpoint_forward needs a whole (tiny) checkpoint.
max_len() {
  case $1 in
    checkpoint_forward|checkpoint_index) echo 262144 ;;
    safetensors|framenet) echo 65536 ;;
    *) echo 16384 ;;
  esac
}
[ -d "$bin/seeds" ] || cmake --build build/fuzz --target fuzz_seeds >/dev/null
mkdir -p "$bin/artifacts"

# One target; prints its summary line, returns non-zero on any finding.
run_one() {
  local t=$1 corpus="${DARKBERT_FUZZ_CORPUS:-$bin/corpus}/$1" log="$bin/artifacts/$1.log"
  mkdir -p "$corpus"
  # -rss_limit_mb / -malloc_limit_mb: an input that makes darkbert allocate more than 1 GB is a finding.
  if ! ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
       "$bin/fuzz_$t" "$corpus" "$bin/seeds/$t" -dict="tests/fuzz/dicts/$t.dict" -max_total_time="$seconds" \
       -max_len="$(max_len "$t")" -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 \
       -artifact_prefix="$bin/artifacts/$t-" -close_fd_mask=1 >"$log" 2>&1; then
    echo "fuzz_$t: FAILED (see $log)"
    grep -E "ERROR|SUMMARY|property violated|==[0-9]+==" "$log" | head -20 || true
    return 1
  fi
  local execs cov files
  execs=$(grep -oE "stat::number_of_executed_units: *[0-9]+" "$log" | grep -oE "[0-9]+$" || echo "?")
  cov=$(grep -oE "cov: [0-9]+" "$log" | tail -1 | grep -oE "[0-9]+" || echo "?")
  files=$(find "$corpus" -type f | wc -l)
  echo "fuzz_$t: ${execs} executions, cov ${cov} edges, corpus ${files} files, ${seconds} s"
}

status=0
running=()
for t in "${targets[@]}"; do
  if [ ${#running[@]} -ge "$jobs" ]; then
    wait "${running[0]}" || status=1
    running=("${running[@]:1}")
  fi
  run_one "$t" &
  running+=($!)
done
for pid in "${running[@]}"; do wait "$pid" || status=1; done
exit $status
