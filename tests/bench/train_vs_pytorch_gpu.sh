#!/usr/bin/env bash
# bench-train vs PyTorch eager on one GPU, in the same run (for the device machine of
# /work/shared/GPU.md: CUDA toolkit, CMake, ninja and a python3 with torch +
# torchvision; no network). Builds bench-train against that PyTorch's own CUDA
# libtorch, then for fp32 / tf32 / amp / bf16 at batch 64, 128 and 256 runs
# bench-train (its summary throughput; CUDA graphs on "auto": batch <= 128) and
# tests/bench/pytorch_eager_resnet.py (torchvision ResNet-50, channels_last,
# autocast, cudnn.benchmark, the same synthetic data, batch and recipe), alternating,
# REPEATS times each, and prints the medians as a Markdown table with the ratio.
# Also prints GPU, driver, CUDA, cuDNN and torch versions.
# Usage: tests/bench/train_vs_pytorch_gpu.sh [REPEATS]
#   env ITERS (default 120), WARMUP (default 40), BATCHES, PRECISIONS, OUT (a folder
#   for logs and the table), BUILD (default build-gpu), PY (default python3)
set -euo pipefail
cd "$(dirname "$0")/../.."
REPEATS=${1:-3}
ITERS=${ITERS:-120}
WARMUP=${WARMUP:-40}
BATCHES=${BATCHES:-"64 128 256"}
PRECISIONS=${PRECISIONS:-"fp32 tf32 amp bf16"}
BUILD=${BUILD:-build-gpu}
PY=${PY:-python3}
OUT=${OUT:-$BUILD/results}
mkdir -p "$OUT"

prefix=$("$PY" -c 'import torch;print(torch.utils.cmake_prefix_path)')
nccl_include=$("$PY" -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "include"))' 2>/dev/null || true)
if [ ! -x "$BUILD/bin/bench-train" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DBENCH_TRAINER_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
    -DBENCH_TRAIN_BUILD_TESTS=OFF -DCMAKE_PREFIX_PATH="$prefix" \
    ${nccl_include:+-DBENCH_NCCL_INCLUDE_DIR="$nccl_include"} >"$OUT/cmake.log" 2>&1 ||
    { tail -40 "$OUT/cmake.log"; exit 1; }
  cmake --build "$BUILD" -j"$(nproc)" >"$OUT/build.log" 2>&1 || { tail -60 "$OUT/build.log"; exit 1; }
fi
BIN=$BUILD/bin/bench-train

{
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
  "$PY" -c 'import torch, torchvision; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "torchvision", torchvision.__version__)'
  echo "bench-train versions: $("$BIN" --model resnet18 --image-size 32 --bs 2 --iters 2 --warmup 1 --device cuda:0 2>/dev/null | grep '"event":"start"' | sed 's/.*"versions":\({[^}]*}\).*/\1/')"
  echo "iters $ITERS, warm-up $WARMUP, median of $REPEATS"
} | tee "$OUT/versions.txt"

median() { sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]}'; }
ours() {  # precision bs
  "$BIN" --model resnet50 --device cuda:0 --precision "$1" --bs "$2" --iters "$ITERS" \
    --warmup "$WARMUP" 2>>"$OUT/bench-train.stderr" | tee -a "$OUT/bench-train.jsonl" |
    grep '"event":"summary"' | sed 's/.*"images_per_second":\([0-9.e+-]*\).*/\1/'
}
theirs() {
  "$PY" tests/bench/pytorch_eager_resnet.py --device cuda:0 --precision "$1" --bs "$2" \
    --iters "$ITERS" --warmup "$WARMUP" 2>>"$OUT/pytorch.stderr" | tee -a "$OUT/pytorch.jsonl" |
    sed 's/.*"images_per_second": \([0-9.e+-]*\).*/\1/'
}

{
  echo "| precision | batch | bench-train img/s | PyTorch eager img/s | ratio |"
  echo "|---|---:|---:|---:|---:|"
  for prec in $PRECISIONS; do
    for bs in $BATCHES; do
      a=(); b=()
      for _ in $(seq "$REPEATS"); do
        a+=("$(ours "$prec" "$bs")")
        b+=("$(theirs "$prec" "$bs")")
      done
      ma=$(printf '%s\n' "${a[@]}" | median)
      mb=$(printf '%s\n' "${b[@]}" | median)
      echo "| $prec | $bs | $ma | $mb | $(awk -v x="$ma" -v y="$mb" 'BEGIN{ if (y > 0) printf "%.2f", x/y; else print "n/a"}') |"
    done
  done
} | tee "$OUT/table.md"
