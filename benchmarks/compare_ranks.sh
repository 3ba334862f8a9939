#!/usr/bin/env bash
# Two MPI ranks x one thread against one process x two threads, on the same cores, from one run:
#   1. the --quick study (`darkbert reproduce --quick --seeds 2`), with `--plan`'s predictions beside;
#   2. a 12 x 12 §3.6 sweep (156 ablations: BERT-base's layers and heads, width 192, random weights) on
#      SST-2 dev.
# Prints each wall time, the speed-up of the ranks (one process's time / the ranks' time: 1.0 is
# parity at equal cores) and the plan's error. Needs a darkbert built with MPI (darkbert::mpi) and mpiexec.
#
#   benchmarks/compare_ranks.sh [build/release/examples/darkbert] [SCRATCH=/tmp/darkbert-ranks]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cli=$(realpath "${1:-$here/../build/release/examples/darkbert}")
scratch=${2:-/tmp/darkbert-ranks}
export DARKBERT_DATA=${DARKBERT_DATA:-$here/../../shared/data}
export DARKBERT_CACHE=$scratch/cache OMP_WAIT_POLICY=PASSIVE
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpiexec -n 2 --oversubscribe)
study=(reproduce --quick --quiet --seeds 2)
mkdir -p "$scratch"
seconds() { local t0=$(date +%s.%N); "$@" > "$scratch/last.log" 2>&1 || { cat "$scratch/last.log"; exit 1; }; echo "$(date +%s.%N) - $t0" | bc; }

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $("$cli" --version)"
# The quick model and the annotator are trained into the cache once, untimed.
[[ -d $scratch/warm ]] || OMP_NUM_THREADS=2 "$cli" "${study[@]}" --out "$scratch/warm" > /dev/null 2>&1
rm -rf "$scratch"/study-* "$scratch"/sweep-*
one=$(OMP_NUM_THREADS=2 seconds "$cli" "${study[@]}" --out "$scratch/study-one")
ranks=$(OMP_NUM_THREADS=1 seconds "${mpi[@]}" "$cli" "${study[@]}" --shard mpi --out "$scratch/study-ranks")
plan1=$("$cli" "${study[@]}" --plan --ranks 1 --cores-per-rank 2 | sed -n 's/^predicted on 1 ranks[^:]*: \([0-9.]*\) s.*/\1/p')
plan2=$("$cli" "${study[@]}" --plan --ranks 2 --cores-per-rank 1 | sed -n 's/^predicted on 2 ranks[^:]*: \([0-9.]*\) s.*/\1/p')

"$cli" init --config "$here/data/bert_12x12_sst2.json" --out "$scratch/model-12x12" \
  --tokenizer "$DARKBERT_DATA/vocab/bert-base-uncased" --seed 1 > /dev/null
sweep=(sweep --model "$scratch/model-12x12" --task SST-2 --max-examples 200 --quiet)
sweep_one=$(OMP_NUM_THREADS=2 seconds "$cli" "${sweep[@]}" --out "$scratch/sweep-one")
sweep_ranks=$(OMP_NUM_THREADS=1 seconds "${mpi[@]}" "$cli" "${sweep[@]}" --shard mpi --out "$scratch/sweep-ranks")
for f in head_scores.csv layer_scores.csv; do
  cmp -s "$scratch/sweep-one/$f" "$scratch/sweep-ranks/$f" || { echo "the ranks' $f differs from one process's"; exit 1; }
done

printf '%-44s %10s %10s %9s\n' "run" "1 x 2 thr" "2 x 1 thr" "speed-up"
printf '%-44s %10.1f %10.1f %9.2f\n' "reproduce --quick --seeds 2 (s)" "$one" "$ranks" "$(echo "$one / $ranks" | bc -l)"
printf '%-44s %10.1f %10.1f %9.2f\n' "sweep 12 x 12, SST-2, 200 examples (s)" "$sweep_one" "$sweep_ranks" "$(echo "$sweep_one / $sweep_ranks" | bc -l)"
printf '%-44s %10.1f %10.1f\n' "reproduce --plan prediction (s)" "$plan1" "$plan2"
printf '%-44s %10.2f %10.2f\n' "measured / predicted" "$(echo "$one / $plan1" | bc -l)" "$(echo "$ranks / $plan2" | bc -l)"
