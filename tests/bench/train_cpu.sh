#!/usr/bin/env bash
# bench-train alone on this CPU: ResNet-50 images/s at 64x64 and 224x224, fp32 and amp
# (bf16 autocast). Each figure is bench-train's own summary (images in the measured
# window / window wall time), median of REPEATS runs.
# Usage: tests/bench/train_cpu.sh [REPEATS] (env THREADS, default nproc)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-build/bin}
[ -x "$BIN/bench-train" ] || BIN=build-train/bin
REPEATS=${1:-3}
THREADS=${THREADS:-$(nproc)}
run() {  # size bs precision iters warmup
  for _ in $(seq "$REPEATS"); do
    "$BIN/bench-train" --model resnet50 --image-size "$1" --bs "$2" --precision "$3" \
      --iters "$4" --warmup "$5" --threads "$THREADS" 2>/dev/null |
      grep '"event":"summary"' | sed 's/.*"images_per_second":\([0-9.]*\).*/\1/'
  done | sort -n | awk '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)]}'
}
echo "| image | batch | threads | fp32 img/s | amp (bf16) img/s |"
echo "|---:|---:|---:|---:|---:|"
echo "| 64 | 16 | $THREADS | $(run 64 16 fp32 13 3) | $(run 64 16 amp 13 3) |"
echo "| 224 | 16 | $THREADS | $(run 224 16 fp32 6 2) | $(run 224 16 amp 6 2) |"
