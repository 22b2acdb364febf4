#!/usr/bin/env bash
# Checks the bundle of deploy/gpu/bundle.sh the way the GPU machine will use it: benchd,
# one bench-agent (1 CPU slot) and `benchctl submit --wait`, `results`, `status --format json`,
# all from the bundle with a scrubbed environment, with a stand-in trainer (a shell script
# that prints bench-train's events, docs/trainer-events.md), so no libtorch is needed.
#
# Usage: deploy/gpu/check_bundle.sh [ROOTFS]
#   ROOTFS: a minimal root file system to run it in with chroot (needs root), e.g. a copy of
#   a debootstrap --variant=minbase tree; only ROOTFS/fl is written, /proc is mounted for the
#   run and unmounted after. Without ROOTFS it runs on this machine.
#   env BUNDLE (default .gpu-bundle), BENCH_BUNDLE_COMPAT=1 to use the bundle's own glibc
#   (needed where the root file system's glibc or libstdc++ is older than the bundle's MANIFEST says).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUNDLE=${BUNDLE:-$PWD/.gpu-bundle}
ROOTFS=${1:-}
[ -x "$BUNDLE/bin/benchd" ] || { echo "check_bundle: no bundle at $BUNDLE (deploy/gpu/bundle.sh)" >&2; exit 1; }

if [ -n "$ROOTFS" ]; then
  base=$ROOTFS/fl
  inside=/fl
else
  base=$(mktemp -d /tmp/check-bundle.XXXXXX)
  inside=$base
fi
rm -rf "$base"; mkdir -p "$base"
cp -a "$BUNDLE" "$base/bundle"

cat >"$base/fake-train.sh" <<'EOF'
#!/bin/bash
# A stand-in bench-train: the event contract, nothing trained.
iters=4 warm=1 bs=8 size=32
while [ $# -gt 0 ]; do
  case $1 in --iters) iters=$2; shift ;; --warmup) warm=$2; shift ;; --bs) bs=$2; shift ;;
    --image-size) size=$2; shift ;; esac; shift
done
r=${RANK:-0}
echo "{\"event\":\"start\",\"rank\":$r,\"model\":\"resnet50\",\"parameters\":25557032,\"precision\":\"fp32\",\"device\":\"cpu\",\"world_size\":${WORLD_SIZE:-1},\"local_rank\":0,\"batch_size\":$bs,\"image_size\":$size,\"iterations\":$iters,\"warmup_iterations\":$warm,\"backend\":\"none\",\"versions\":{\"bench_train\":\"stand-in\",\"torch\":\"none\"}}"
for i in $(seq "$iters"); do
  w=false; [ "$i" -le "$warm" ] && w=true
  echo "{\"event\":\"iter\",\"rank\":$r,\"iteration\":$i,\"step_time_s\":0.1,\"images\":$bs,\"loss\":6.9,\"data_time_s\":0.0,\"elapsed_s\":0.$i,\"warmup\":$w}"
  sleep 0.1
done
m=$((iters - warm))
echo "{\"event\":\"summary\",\"rank\":$r,\"measured_iterations\":$m,\"measured_images\":$((m * bs)),\"window_s\":0.$m,\"images_per_second\":$((bs * 10)),\"step_time_median_s\":0.1}"
EOF

cat >"$base/stack.sh" <<EOF
#!/bin/bash
# benchd, an agent with 1 CPU slot and the stand-in trainer, one job.
set -u
B=$inside/bundle/bin
run=$inside/run
rm -rf \$run; mkdir -p \$run
port=\$((20000 + RANDOM % 20000))
export BENCH_SERVER=127.0.0.1:\$port
\$B/benchd --listen \$BENCH_SERVER --http 127.0.0.1:\$((port + 1)) --db \$run/bench.db 2>\$run/benchd.log & d=\$!
\$B/bench-agent --controller \$BENCH_SERVER --name check-node --cpu-slots 1 --state-dir \$run/agent \\
  --bench-train $inside/fake-train.sh 2>\$run/agent.log & a=\$!
for i in \$(seq 100); do \$B/benchctl agents 2>/dev/null | grep -q check-node && break; sleep 0.1; done
\$B/benchctl agents
\$B/benchctl submit --gpus 1 --amp --bs 8 --image-size 32 --iters 5 --warmup 1 --wait; rc=\$?
\$B/benchctl results
\$B/benchctl status job-000001 --format json | grep -o '"state":"[A-Z_]*"' | head -1
kill \$a \$d; wait
echo "libc: \$(ldd --version 2>&1 | head -1)"
exit \$rc
EOF
chmod +x "$base/fake-train.sh" "$base/stack.sh"

rc=0
if [ -n "$ROOTFS" ]; then
  mount -t proc proc "$ROOTFS/proc"
  env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin BENCH_BUNDLE_COMPAT="${BENCH_BUNDLE_COMPAT:-0}" \
    /usr/sbin/chroot "$ROOTFS" "$inside/stack.sh" || rc=$?
  umount "$ROOTFS/proc"
else
  env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin BENCH_BUNDLE_COMPAT="${BENCH_BUNDLE_COMPAT:-0}" \
    "$inside/stack.sh" || rc=$?
  rm -rf "$base"
fi
echo "check_bundle: $([ $rc = 0 ] && echo ok || echo "FAILED (exit $rc)")"
exit $rc
