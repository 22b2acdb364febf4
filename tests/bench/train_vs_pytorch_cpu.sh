#!/usr/bin/env bash
# bench-train vs PyTorch eager (Debian's python3-torch + python3-torchvision, the same
# libtorch 1.13.1) on this CPU: ResNet-50, synthetic data, same threads, batch, image
# size and recipe (tests/bench/pytorch_eager_resnet.py). Per side: the median over
# REPEATS runs of the throughput (images in the measured window / its wall time), and
# "best step" = batch / the fastest measured step over all runs (on a shared, noisy
# machine the fastest step is the least disturbed view of the code's own speed).
# The runs of the two alternate so that drift hits both.
# bench-train keeps freed host memory for reuse on the CPU (--host-memory-cache, on by
# default there); PyTorch runs with glibc's defaults, as people run it, and once more
# with the same malloc policy set through glibc's environment (MALLOC_MMAP_MAX_=0,
# MALLOC_TRIM_THRESHOLD_ huge), which shows how much of the difference is the heap.
# MODEL=ssd_resnet34 compares SSD-ResNet34 the same way against
# tests/bench/pytorch_eager_ssd.py (the MLPerf SSD reference's model, loss and SGD, which
# bench-train is given by flags; 1-5 random boxes per image encoded once and replayed), at
# 300 x 300.
# Usage: tests/bench/train_vs_pytorch_cpu.sh [REPEATS]
#   env THREADS (default nproc), BIN (default build-train/bin), MODEL (resnet50 or
#   ssd_resnet34), CASES (see below)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-build-train/bin}
REPEATS=${1:-3}
THREADS=${THREADS:-$(nproc)}
PY=/usr/bin/python3  # Debian's python, not a pyenv one: it has python3-torch
if ! "$PY" -c 'import torch, torchvision' 2>/dev/null; then
  apt-get install -y --no-install-recommends python3-torch python3-torchvision >&2
fi
MODEL=${MODEL:-resnet50}
SCRIPT=tests/bench/pytorch_eager_resnet.py
OURS_ARGS=()
if [ "$MODEL" = ssd_resnet34 ]; then
  SCRIPT=tests/bench/pytorch_eager_ssd.py
  OURS_ARGS=(--momentum 0.9 --weight-decay 5e-4 --bn-weight-decay)  # the SSD reference's SGD
fi
# "image batch precision iters warmup" per case.
DEFAULT_CASES="64 16 fp32 13 3;64 16 amp 13 3;224 16 fp32 6 2;224 16 amp 6 2"
[ "$MODEL" = ssd_resnet34 ] && DEFAULT_CASES="300 4 fp32 14 4;300 4 amp 14 4"
CASES=${CASES:-$DEFAULT_CASES}

median() { sort -n | awk '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)]}'; }
min() { sort -g | head -1; }
best() { local n=$1; shift; printf '%s\n' "$@" | min | awk -v n="$n" '{printf "%.2f", n/$1}'; }  # img/s of the fastest step
ratio() { awk -v x="$1" -v y="$2" 'BEGIN{printf "%.2f", x/y}'; }
ours() {  # size bs precision iters warmup -> "img/s min_step_s"
  local out
  out=$("$BIN/bench-train" --model "$MODEL" --image-size "$1" --bs "$2" --precision "$3" \
    --iters "$4" --warmup "$5" --threads "$THREADS" "${OURS_ARGS[@]}" 2>/dev/null)
  echo "$(grep '"event":"summary"' <<< "$out" | sed 's/.*"images_per_second":\([0-9.e+-]*\).*/\1/')" \
       "$(grep '"warmup":false' <<< "$out" | sed 's/.*"step_time_s":\([0-9.e+-]*\).*/\1/' | min)"
}
theirs() {  # size bs precision iters warmup [env assignments...]
  local out
  out=$(env OMP_NUM_THREADS="$THREADS" "${@:6}" "$PY" "$SCRIPT" --model "$MODEL" --device cpu \
    --image-size "$1" --bs "$2" --precision "$3" --iters "$4" --warmup "$5" \
    --threads "$THREADS" 2>/dev/null)
  echo "$(sed 's/.*"images_per_second": \([0-9.e+-]*\).*/\1/' <<< "$out")" \
       "$(sed 's/.*"step_time_min_s": \([0-9.e+-]*\).*/\1/' <<< "$out")"
}

echo "model: $MODEL"
echo "torch (python): $("$PY" -c 'import torch,torchvision;print(torch.__version__, "torchvision", torchvision.__version__)')"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), threads $THREADS"
echo
KEEP_HEAP=(MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=1099511627776)
echo "| image | batch | threads | precision | bench-train img/s | PyTorch eager img/s | ratio | bench-train best step img/s | PyTorch best step img/s | ratio | PyTorch, kept heap, img/s | ratio | PyTorch, kept heap, best step img/s | ratio |"
echo "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
IFS=';' read -ra cases <<< "$CASES"
for c in "${cases[@]}"; do
  read -r size bs prec iters warm <<< "$c"
  a=(); b=(); c=(); sa=(); sb=(); sc=()
  for _ in $(seq "$REPEATS"); do
    read -r ips step <<< "$(ours "$size" "$bs" "$prec" "$iters" "$warm")"; a+=("$ips"); sa+=("$step")
    read -r ips step <<< "$(theirs "$size" "$bs" "$prec" "$iters" "$warm")"; b+=("$ips"); sb+=("$step")
    read -r ips step <<< "$(theirs "$size" "$bs" "$prec" "$iters" "$warm" "${KEEP_HEAP[@]}")"
    c+=("$ips"); sc+=("$step")
  done
  ma=$(printf '%s\n' "${a[@]}" | median)
  mb=$(printf '%s\n' "${b[@]}" | median)
  mc=$(printf '%s\n' "${c[@]}" | median)
  ba=$(best "$bs" "${sa[@]}"); bb=$(best "$bs" "${sb[@]}"); bc=$(best "$bs" "${sc[@]}")
  label=$prec; [ "$prec" = amp ] && label="amp (bf16)"
  echo "| $size | $bs | $THREADS | $label | $ma | $mb | $(ratio "$ma" "$mb") | $ba | $bb | $(ratio "$ba" "$bb") | $mc | $(ratio "$ma" "$mc") | $bc | $(ratio "$ba" "$bc") |"
done
