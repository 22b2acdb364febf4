#!/usr/bin/env bash
# bench-train vs PyTorch eager on one GPU, in the same run (for the device machine of
# /work/shared/GPU.md: CUDA toolkit, CMake, ninja and a python3 with torch +
# torchvision; no network). Builds bench-train against that PyTorch's own CUDA
# libtorch (unless BIN names one already built), then for each precision and batch
# runs bench-train once per --cuda-graphs mode in GRAPHS (its summary throughput) and
# tests/bench/pytorch_eager_resnet.py (torchvision ResNet-50, channels_last, autocast,
# cudnn.benchmark, the same synthetic data, batch and recipe), alternating, REPEATS
# times each, and prints the medians as a Markdown table with the ratios.
# Also prints GPU, driver, CUDA, cuDNN, NCCL and torch versions.
# tests/cuda/first_light.sh runs it as one of its steps; it also runs alone.
#
# Usage: tests/bench/train_vs_pytorch_gpu.sh [REPEATS]        (REPEATS default 3)
#   env ITERS (120), WARMUP (40), BATCHES ("64 128 256"), PRECISIONS ("fp32 tf32 amp bf16"),
#   GRAPHS ("auto": bench-train's --cuda-graphs modes, one column each, e.g. "on off";
#     auto = on for batch <= 128), MODEL (resnet50), IMAGE_SIZE (224), DEVICE (cuda:0; cpu
#     runs the same comparison on the CPU, to check this script without a GPU), THREADS
#     (CPU only), RUN_TIMEOUT (seconds per run, 300), BUILD (build-gpu), BIN (a bench-train
#     to use instead of building one), PY (python3), OUT (folder for logs and tables,
#     default $BUILD/results), VERSIONS (1; 0 skips printing the versions: saves a
#     bench-train and a torch start-up)
# Writes OUT/versions.txt, OUT/table.md (a row as soon as its cell is measured),
# OUT/runs.tsv (one line per run: side, precision, batch, graphs mode, graphs in effect,
# repeat, img/s or "-", exit status, seconds), OUT/bench-train.jsonl, OUT/pytorch.jsonl
# and the stderr of both. A run that fails or times out counts as "no data".
set -euo pipefail
cd "$(dirname "$0")/../.."
REPEATS=${1:-3}
ITERS=${ITERS:-120}
WARMUP=${WARMUP:-40}
BATCHES=${BATCHES:-"64 128 256"}
PRECISIONS=${PRECISIONS:-"fp32 tf32 amp bf16"}
GRAPHS=${GRAPHS:-auto}
MODEL=${MODEL:-resnet50}
IMAGE_SIZE=${IMAGE_SIZE:-224}
DEVICE=${DEVICE:-cuda:0}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}
BUILD=${BUILD:-build-gpu}
PY=${PY:-python3}
OUT=${OUT:-$BUILD/results}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

eval "$("$PY" tests/bench/torch_paths.py)"  # TORCH_CMAKE_PREFIX, TORCH_LD_PATH, TORCH_NCCL_INCLUDE
if [ -z "${BIN:-}" ]; then
  if [ ! -x "$BUILD/bin/bench-train" ]; then
    # The trainer-only build of tests/cuda/build_check.sh and the GPU container.
    TORCH_CMAKE_PREFIX=$TORCH_CMAKE_PREFIX TORCH_NCCL_INCLUDE=${TORCH_NCCL_INCLUDE:-} \
      bash deploy/gpu/build-trainer.sh "$BUILD" -DBENCH_TRAIN_BUILD_TESTS=OFF >"$OUT/build.log" 2>&1 ||
      { tail -60 "$OUT/build.log"; exit 1; }
  fi
  BIN=$BUILD/bin/bench-train
fi
# bench-train loads the same CUDA libraries (pip's cuDNN, cuBLAS, NCCL) as Python's torch.
TRAIN_LD=$TORCH_LD_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cpu=0; [ "$DEVICE" = cpu ] && cpu=1
threads=()
if [ $cpu = 1 ]; then threads=(--threads "${THREADS:-$(nproc)}"); fi

[ "${VERSIONS:-1}" = 1 ] && {
  if [ $cpu = 0 ]; then
    echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id --format=csv,noheader 2>&1 | head -1)"
  else
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), threads ${THREADS:-$(nproc)}"
  fi
  echo "python side: $("$PY" tests/bench/torch_paths.py --versions 2>&1 | tail -1)"
  echo "bench-train: $BIN; start event versions: $(LD_LIBRARY_PATH=$TRAIN_LD timeout 120 "$BIN" \
    --model resnet18 --image-size 32 --bs 2 --iters 2 --warmup 1 --device "$DEVICE" 2>/dev/null |
    grep '"event":"start"' | sed 's/.*"versions":\({[^}]*}\).*/\1/')"
  echo "model $MODEL, image $IMAGE_SIZE px, iters $ITERS, warm-up $WARMUP, median of $REPEATS; graphs modes: $GRAPHS"
} | tee "$OUT/versions.txt"

median() { sort -g | awk '{a[NR]=$1} END {if (NR) printf "%.1f", a[int((NR+1)/2)]; else print "no data"}'; }
ratio() { awk -v x="$1" -v y="$2" 'BEGIN{ if (x+0 > 0 && y+0 > 0) printf "%.2f", x/y; else print "no data"}'; }
field() { sed -n "s/.*\"$1\": *\\([^,}]*\\).*/\\1/p" | head -1; }
: >"$OUT/runs.tsv"
record() {  # side prec bs mode in_effect repeat ips rc seconds
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$OUT/runs.tsv"
}
ours() {  # prec bs graphs repeat -> img/s on stdout ("" if the run failed)
  local t0=$SECONDS out rc=0 ips graphs
  out=$(LD_LIBRARY_PATH=$TRAIN_LD timeout --foreground -k 10 "$RUN_TIMEOUT" "$BIN" --model "$MODEL" \
    --device "$DEVICE" --precision "$1" --bs "$2" --image-size "$IMAGE_SIZE" --iters "$ITERS" \
    --warmup "$WARMUP" --cuda-graphs "$3" "${threads[@]}" 2>>"$OUT/bench-train.stderr") || rc=$?
  printf '%s\n' "$out" >>"$OUT/bench-train.jsonl"
  ips=$(grep '"event":"summary"' <<<"$out" | field images_per_second || true)
  graphs=$(grep '"event":"start"' <<<"$out" | field cuda_graphs || true)
  [ "$rc" = 0 ] || ips=""
  record bench-train "$1" "$2" "$3" "${graphs:--}" "$4" "${ips:--}" "$rc" $((SECONDS - t0))
  echo "$ips"
}
theirs() {  # prec bs repeat
  local t0=$SECONDS out rc=0 ips
  out=$(env OMP_NUM_THREADS="${THREADS:-$(nproc)}" timeout --foreground -k 10 "$RUN_TIMEOUT" "$PY" \
    tests/bench/pytorch_eager_resnet.py --model "$MODEL" --device "$DEVICE" --precision "$1" \
    --bs "$2" --image-size "$IMAGE_SIZE" --iters "$ITERS" --warmup "$WARMUP" "${threads[@]}" \
    2>>"$OUT/pytorch.stderr") || rc=$?
  printf '%s\n' "$out" >>"$OUT/pytorch.jsonl"
  ips=$(field images_per_second <<<"$out" || true)
  [ "$rc" = 0 ] || ips=""
  record pytorch "$1" "$2" eager - "$3" "${ips:--}" "$rc" $((SECONDS - t0))
  echo "$ips"
}

read -ra modes <<<"$GRAPHS"
{
  header="| precision | batch |"; rule="|---|---:|"
  for m in "${modes[@]}"; do header+=" bench-train graphs $m img/s |"; rule+="---:|"; done
  header+=" PyTorch eager img/s |"; rule+="---:|"
  for m in "${modes[@]}"; do header+=" ratio (graphs $m) |"; rule+="---:|"; done
  echo "$header"; echo "$rule"
} | tee "$OUT/table.md"
for prec in $PRECISIONS; do
  for bs in $BATCHES; do
    declare -A a=(); b=()
    for r in $(seq "$REPEATS"); do
      for m in "${modes[@]}"; do a[$m]+="$(ours "$prec" "$bs" "$m" "$r") "; done
      b+=("$(theirs "$prec" "$bs" "$r")")
    done
    mb=$(printf '%s\n' "${b[@]}" | grep . | median || true)
    row="| $prec | $bs |"; ratios=""
    for m in "${modes[@]}"; do
      ma=$(tr ' ' '\n' <<<"${a[$m]}" | grep . | median || true)
      row+=" $ma |"; ratios+=" $(ratio "$ma" "$mb") |"
    done
    echo "$row $mb |$ratios" | tee -a "$OUT/table.md"
    unset a
  done
done
