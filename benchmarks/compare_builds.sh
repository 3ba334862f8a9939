#!/usr/bin/env bash
# Times `darkbert bench forward` of two builds side by side, interleaved (A B A B ...), and prints each
# build's best and median ms per sequence and the ratio B / A of the bests. Used for the run-time
# kernel dispatch: a default-flags build (B) against a -march=native build (A).
#
#   benchmarks/compare_builds.sh build/native/examples/darkbert build/portable/examples/darkbert 3 --batch 8
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 DARKBERT_A DARKBERT_B [ROUNDS=3] [bench forward options...]" >&2
  exit 2
fi
a=$1 b=$2 rounds=${3:-3}
shift $(( $# >= 3 ? 3 : 2 ))
declare -A runs=([A]="" [B]="")
for ((i = 1; i <= rounds; ++i)); do
  for which in A B; do
    bin=$a; [[ $which == B ]] && bin=$b
    line=$("$bin" bench forward "$@")
    ms=$(sed -n 's/.*ms_per_seq=\([0-9.]*\).*/\1/p' <<<"$line")
    echo "round $i $which: $line"
    runs[$which]+="$ms "
  done
done
summary() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{v[NR]=$1} END {printf "best %.2f median %.2f", v[1], v[int((NR+1)/2)]}'; }
best() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | head -1; }
echo "A ($a): ms/seq $(summary "${runs[A]}")"
echo "B ($b): ms/seq $(summary "${runs[B]}")"
awk -v a="$(best "${runs[A]}")" -v b="$(best "${runs[B]}")" 'BEGIN {printf "ratio B/A (best): %.3f\n", b / a}'
