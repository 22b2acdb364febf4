#!/usr/bin/env bash
# bench-train's JPEG loader alone (decode + random-resized-crop 224 + flip, uint8
# batches) against torchvision's ImageFolder with PIL in one process, on the same
# folder. The folder (made once, kept in DATA): CLASSES x PER_CLASS JPEGs of 500x375
# at quality 90 (ImageNet's typical size), smooth random fields with fine noise, so
# that files weigh about what ImageNet's do (~110 KB); the script prints their mean.
# Usage: tests/bench/jpeg_loader.sh [REPEATS]   (env BIN, DATA, THREADS_LIST)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-build/bin}
DATA=${DATA:-/tmp/benchfleet-jpeg-folder-v2}
REPEATS=${1:-3}
THREADS_LIST=${THREADS_LIST:-"1 $(nproc)"}
PY=/usr/bin/python3  # Debian's python: python3-torch, python3-torchvision, python3-pil
if ! "$PY" -c 'import torch, torchvision, PIL, numpy' 2>/dev/null; then
  apt-get install -y --no-install-recommends python3-torch python3-torchvision python3-pil \
    python3-numpy >&2
fi
if [ ! -f "$DATA/.complete" ]; then
  rm -rf "$DATA"
  "$PY" - "$DATA" <<'PYEOF'
import os, sys
import numpy as np
from PIL import Image
root = sys.argv[1]
rng = np.random.default_rng(1)
for c in range(10):
    os.makedirs(f"{root}/class{c:02d}")
    for i in range(50):
        coarse = rng.uniform(0, 255, (12, 16, 3)).astype(np.uint8)
        field = np.asarray(Image.fromarray(coarse).resize((500, 375), Image.BICUBIC), np.float32)
        field += rng.normal(0, 26, field.shape)
        Image.fromarray(np.clip(field, 0, 255).astype(np.uint8)).save(
            f"{root}/class{c:02d}/{i:03d}.jpg", quality=90)
open(f"{root}/.complete", "w").close()
PYEOF
fi
files=$(find "$DATA" -name '*.jpg' | wc -l)
mean_kb=$(find "$DATA" -name '*.jpg' -printf '%s\n' | awk '{s+=$1} END {printf "%.0f", s/NR/1024}')
echo "folder: $DATA, $files JPEGs of 500x375, mean $mean_kb KiB; cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo
median() { sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]}'; }
ips() { sed 's/.*"images_per_second": *\([0-9.]*\).*/\1/'; }
echo "| loader | threads / processes | images/s (median of $REPEATS) |"
echo "|---|---:|---:|"
for t in $THREADS_LIST; do
  v=$(for _ in $(seq "$REPEATS"); do
        "$BIN/jpeg_loader_bench" --root "$DATA" --threads "$t" --bs 64 --batches 10 --warmup 1 | ips
      done | median)
  echo "| bench-train (libjpeg-turbo) | $t thread(s) | $v |"
done
v=$(for _ in $(seq "$REPEATS"); do "$PY" tests/bench/pytorch_loader.py --root "$DATA" | ips; done | median)
echo "| torchvision ImageFolder (PIL) | 1 process | $v |"
