#!/usr/bin/env bash
# Deep fuzzing: every target (or those named) for SECONDS each, one after another, keeping the corpus
# between runs in $DARKBERT_FUZZ_CORPUS (default build/fuzz/tests/fuzz/corpus; keep it outside the
# checkout); appends one line per target to build/fuzz/tests/fuzz/long-runs.txt (date, executions, edges,
# corpus size). Run under nice on a shared machine:
#   DARKBERT_FUZZ_CORPUS=$HOME/fuzz-corpus nice -n 19 tests/fuzz/run_long.sh 1800        # 30 min per target
#   DARKBERT_FUZZ_CORPUS=$HOME/fuzz-corpus nice -n 19 tests/fuzz/run_long.sh 3600 tokenizer_text
set -uo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:?usage: run_long.sh SECONDS [target...]}
shift
status=0
while read -r line; do
  echo "$line"
  echo "$(date -u +%FT%TZ) $line" >> build/fuzz/tests/fuzz/long-runs.txt
  case $line in *FAILED*) status=1 ;; esac
done < <(tests/fuzz/run.sh "$seconds" "$@")
exit $status
