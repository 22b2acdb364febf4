#!/usr/bin/env bash
# First light: the whole GPU check in one go, on the GPU machine of /work/shared/GPU.md
# (one H100 or H200, 16 cores, PyTorch with its CUDA libtorch, CMake, a compiler; no
# gRPC, no network), in well under 10 minutes. docs/first-light.md says how to run it.
#
#   1 env          versions: GPU, driver, CUDA, cuDNN, NCCL, torch, compilers, OS
#   2 bundle       benchd, bench-agent, benchctl from the carried bundle (deploy/gpu/bundle.sh) start
#   3 build        bench-train against this machine's PyTorch libtorch (trainer only)
#   4 smoke        one short bench-train run on the device
#   5 matrix-amp   ResNet-50 AMP, bs 64 and 256, CUDA graphs on and off, against PyTorch
#                  eager in the same call (tests/bench/train_vs_pytorch_gpu.sh)
#   6 nccl-2rank   two NCCL ranks on the one GPU (NCCL_HOSTID per rank: NCCL refuses two
#                  ranks on one device of one host), throughput and clean exits
#   7 exit-hang    three short two-rank runs: every rank must exit within
#                  FIRST_LIGHT_EXIT_GRACE_S after its summary event
#   8 stack        benchd (temp SQLite), one bench-agent on the real NVML,
#                  benchctl submit --gpus 1 --amp --bs 256 --wait, results, status --format json
#   9 capture-fallback  a CUDA graph capture made to fail (BENCH_TRAIN_TEST_CAPTURE_FAILURE=1):
#                  the run must go on with eager steps, say why and train
#  10 data-vs-compute   an ImageFolder of JPEGs made at run time, --data-vs-compute with
#                  CUDA graphs on (the synthetic run captures a graph of its own)
#  11 ssd          SSD-ResNet34 on synthetic data, then on a COCO-format folder made at run
#                  time with --data-vs-compute
#  12 matrix-rest  tf32, bf16, fp32 at bs 64 and 256, graphs on and off, against eager
# Every step is time-boxed and recorded; a failing step does not stop the next. The order
# puts what the goals need first: when time runs out, the last steps are cut.
#
# Usage: tests/cuda/first_light.sh OUTDIR
# OUTDIR receives few files (the device tool brings back at most 8): summary.md (the table,
# the goals, the versions), summary.json, console.log and first_light.tar.gz (every log),
# all rewritten after each step, so a run cut short still leaves what it measured.
#
# Environment:
#   FIRST_LIGHT_DEVICE    cuda (default) | cpu: the dry run for a machine without a GPU:
#                         the same steps at 32 px with tiny batches, Gloo instead of NCCL,
#                         the agent on CPU slots (or on a fake NVML, FIRST_LIGHT_NVML)
#   FIRST_LIGHT_BUDGET_S  seconds for everything (default 540); each step gets at most
#                         what is left, less FIRST_LIGHT_RESERVE_S (default 15)
#   FIRST_LIGHT_BUNDLE    the bundle folder (default .gpu-bundle in the checkout)
#   FIRST_LIGHT_BUILD     bench-train's build folder (default build-gpu; cpu: build-fl)
#   FIRST_LIGHT_WORK      scratch folder for logs (default a new /tmp/first-light.*)
#   FIRST_LIGHT_STEPS     the steps to run, in order (default: all of the above)
#   FIRST_LIGHT_EXIT_GRACE_S  seconds a rank may take to exit after its summary (10)
#   FIRST_LIGHT_BUILD_S   the build's time box (default 330)
#   FIRST_LIGHT_NVML      cpu only: an NVML library for the agent (e.g. the fake one,
#                         build/tests/fake_nvml/libfake_nvml.so); its GPUs' ranks then run
#                         on the CPU (--gpu-ranks-on-cpu). Unset: --cpu-slots 1
#   PY                    a python3 with torch and torchvision (default python3)
#   JOBS                  build parallelism (default nproc)
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SELF=$ROOT/tests/cuda/first_light.sh

now() { date +%s; }
now_ms() { local t=${EPOCHREALTIME:-}; if [ -n "$t" ]; then t=${t/./}; echo $((t / 1000)); else date +%s%3N; fi; }
say() { echo "[first-light $(date -u +%H:%M:%S)] $*"; }
# A step's findings: KEY=VALUE lines in results/STEP.res, read by the summary.
res() { printf '%s=%s\n' "$1" "$2" >>"$FL_RES/$FL_STEP.res"; }
left_s() { echo $((FL_DEADLINE - $(now) - FL_RESERVE)); }
free_port() {
  local p
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 20000))
    (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo "$p"; return 0; }
  done
  return 1
}
json_field() {  # KEY: the first "KEY": value on stdin (numbers, true/false, "strings")
  sed -n "s/.*\"$1\": *\\(\"[^\"]*\"\\|[^,}]*\\).*/\\1/p" | head -1 | tr -d '"'
}

# --- steps (each runs as `first_light.sh --step NAME` under its own time box) ----------

# capture-fallback, data-vs-compute, ssd: bench-train's own runs (uses res, json_field).
# shellcheck source=tests/cuda/first_light_train.sh
. "$ROOT/tests/cuda/first_light_train.sh"

step_env() {
  local ok=1
  {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -a)"
    (. /etc/os-release 2>/dev/null && echo "os: $PRETTY_NAME")
    echo "glibc: $(ldd --version 2>&1 | head -1)"
    echo "cpus: $(nproc); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
    echo "memory: $(free -g 2>/dev/null | awk '/^Mem/ {print $2 " GiB"}')"
    echo "disk: $(df -h "$ROOT" | tail -1)"
    for tool in nvcc cmake ninja c++ gcc git; do
      printf '%s: ' "$tool"
      if command -v "$tool" >/dev/null; then
        if [ "$tool" = nvcc ]; then nvcc --version 2>&1 | tail -n 2 | tr '\n' ' '
        else "$tool" --version 2>&1 | head -1 | tr '\n' ' '; fi
        echo "($(command -v "$tool"))"
      else echo "not found"; fi
    done
    echo "python: $PY ($("$PY" --version 2>&1))"
    echo "pip packages: $("$PY" -m pip list 2>/dev/null | grep -iE '^(torch|torchvision|nvidia-(nccl|cudnn|cuda-runtime|cublas)[^ ]*) ' | awk '{print $1 "=" $2}' | tr '\n' ' ')"
  } | tee "$FL_WORK/env.txt"
  "$PY" "$ROOT/tests/bench/torch_paths.py" --versions >"$FL_WORK/torch_versions.json" 2>"$FL_LOGS/torch_versions.stderr" ||
    { ok=0; echo "torch versions: failed"; cat "$FL_LOGS/torch_versions.stderr"; }
  echo "torch: $(cat "$FL_WORK/torch_versions.json")"
  if [ "$FL_DEVICE" = cuda ]; then
    if nvidia-smi >"$FL_LOGS/nvidia-smi.txt" 2>&1; then
      cat "$FL_LOGS/nvidia-smi.txt"
      nvidia-smi -q >"$FL_LOGS/nvidia-smi-q.txt" 2>&1 || true
      local q=name,driver_version,pci.bus_id,memory.total,power.limit,clocks.max.sm,clocks.max.mem,vbios_version,persistence_mode,pstate,temperature.gpu
      nvidia-smi --query-gpu="$q,compute_cap,mig.mode.current" --format=csv >"$FL_WORK/gpu.csv" 2>&1 ||
        nvidia-smi --query-gpu="$q" --format=csv >"$FL_WORK/gpu.csv" 2>&1 || true
      cat "$FL_WORK/gpu.csv"
      nvidia-smi topo -m >"$FL_LOGS/nvidia-smi-topo.txt" 2>&1 || true
    else
      ok=0; echo "nvidia-smi failed:"; cat "$FL_LOGS/nvidia-smi.txt"
    fi
    grep -q '"cuda_available": true' "$FL_WORK/torch_versions.json" || { ok=0; echo "torch sees no CUDA device"; }
  fi
  res note "$(sed -n 's/.*"gpu": "\([^"]*\)".*/\1/p' "$FL_WORK/torch_versions.json") torch $(json_field torch <"$FL_WORK/torch_versions.json")"
  [ $ok = 1 ]
}

step_bundle() {
  [ -d "$FL_BUNDLE/bin" ] || { echo "no bundle at $FL_BUNDLE (deploy/gpu/bundle.sh, then carry it)"; return 1; }
  # In case the copy to this machine dropped the modes.
  chmod u+x "$FL_BUNDLE"/bin/* "$FL_BUNDLE"/libexec/* "$FL_BUNDLE"/compat/ld-linux* 2>/dev/null
  cat "$FL_BUNDLE/MANIFEST" 2>/dev/null
  local p mode=native out flag
  for p in benchd bench-agent benchctl; do
    flag=--version; [ $p != benchctl ] || flag=--help
    if ! out=$("$FL_BUNDLE/bin/$p" $flag 2>&1); then
      echo "$p $flag failed with the machine's glibc and libstdc++: $out"
      if BENCH_BUNDLE_COMPAT=1 "$FL_BUNDLE/bin/$p" $flag >/dev/null 2>&1; then
        mode=compat
      else
        echo "$p does not start, not even with the bundle's own glibc:"
        BENCH_BUNDLE_COMPAT=1 "$FL_BUNDLE/bin/$p" $flag 2>&1 | tail -5
        return 1
      fi
    else
      echo "$p: $(head -1 <<<"$out")"
    fi
  done
  echo "$mode" >"$FL_WORK/bundle_mode"
  echo "bundle mode: $mode"
  res note "libraries: $mode"
}

step_build() {
  eval "$("$PY" "$ROOT/tests/bench/torch_paths.py")"
  [ -n "$TORCH_CMAKE_PREFIX" ] || { echo "no TorchConfig.cmake (torch at '$TORCH_DIR')"; return 1; }
  local nvcc arch
  if [ "$FL_DEVICE" = cuda ]; then
    # TorchConfig finds the CUDA toolkit through nvcc: on PATH, else CUDA's usual place.
    nvcc=$(command -v nvcc || true)
    if [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ]; then
      nvcc=/usr/local/cuda/bin/nvcc
      export PATH=/usr/local/cuda/bin:$PATH CUDACXX=$nvcc
    fi
    # We compile no CUDA code; naming the GPU's architecture spares TorchConfig's probe.
    arch=$(json_field capability 2>/dev/null <"$FL_WORK/torch_versions.json")
    if [ -n "$arch" ] && [ "$arch" != null ]; then export TORCH_CUDA_ARCH_LIST=$arch; fi
  fi
  echo "torch cmake prefix: $TORCH_CMAKE_PREFIX; nccl.h: ${TORCH_NCCL_INCLUDE:-none}; nvcc: ${nvcc:-none}"
  local t0=$SECONDS nccl_args=() tried_without_nccl=0 rc
  : >>"$FL_LOGS/cmake.log"; : >>"$FL_LOGS/ninja.log"
  while :; do
    rc=0
    # The trainer-only build of tests/cuda/build_check.sh and the GPU container.
    TORCH_CMAKE_PREFIX=$TORCH_CMAKE_PREFIX TORCH_NCCL_INCLUDE=${TORCH_NCCL_INCLUDE:-} \
      bash "$ROOT/deploy/gpu/build-trainer.sh" --configure-only "$FL_BUILD" \
      -DBENCH_TRAIN_BUILD_TESTS=OFF "${nccl_args[@]}" >>"$FL_LOGS/cmake.log" 2>&1 || rc=1
    if [ $rc = 1 ]; then
      tail -60 "$FL_LOGS/cmake.log"
    else
      grep 'bench-train: torch' "$FL_LOGS/cmake.log" | tail -1
      res configure_s $((SECONDS - t0))
      cmake --build "$FL_BUILD" --target bench-train -j"$JOBS" >>"$FL_LOGS/ninja.log" 2>&1 || rc=2
      [ $rc = 0 ] || { grep -m20 -B2 -A8 'error' "$FL_LOGS/ninja.log" | head -80; tail -20 "$FL_LOGS/ninja.log"; }
    fi
    [ $rc != 0 ] || break
    # A build without NCCL still measures one GPU; nccl-2rank then reports why it fails.
    if [ $tried_without_nccl = 0 ] && [ "$FL_DEVICE" = cuda ] && (($(left_s) > 150)) &&
       cat "$FL_LOGS/cmake.log" "$FL_LOGS/ninja.log" 2>/dev/null | grep -i -A4 'error' | grep -qi 'nccl'; then
      echo "=== the build failed with NCCL in its errors: trying again with -DBENCH_TRAIN_NCCL=OFF"
      tried_without_nccl=1; nccl_args=(-DBENCH_TRAIN_NCCL=OFF)
      echo "=== again with -DBENCH_TRAIN_NCCL=OFF" | tee -a "$FL_LOGS/cmake.log" >>"$FL_LOGS/ninja.log"
      continue
    fi
    res note "$([ $rc = 1 ] && echo "cmake failed" || echo "build failed")${nccl_args:+ (also without NCCL)}"
    return 1
  done
  [ -x "$FL_TRAIN" ] || { echo "no $FL_TRAIN after the build"; return 1; }
  res note "$(sed -n 's/.*bench-train: \(torch .*\)/\1/p' "$FL_LOGS/cmake.log" | tail -1)${nccl_args:+ (NCCL turned off after a failed build)}; $((SECONDS - t0)) s"
  LD_LIBRARY_PATH=$FL_TORCH_LD ldd "$FL_TRAIN" >"$FL_LOGS/bench-train.ldd" 2>&1
  if grep -q 'not found' "$FL_LOGS/bench-train.ldd"; then grep 'not found' "$FL_LOGS/bench-train.ldd"; return 1; fi
  "$FL_TRAIN" --help >/dev/null 2>&1 || LD_LIBRARY_PATH=$FL_TORCH_LD "$FL_TRAIN" --help >/dev/null
}

step_smoke() {
  local out rc=0 args
  if [ "$FL_DEVICE" = cuda ]; then
    args=(--model resnet50 --precision amp --bs 32 --iters 12 --warmup 4 --cuda-graphs off)
  else
    args=(--model resnet18 --image-size 32 --bs 4 --iters 4 --warmup 1 --threads "$FL_THREADS")
  fi
  out=$(LD_LIBRARY_PATH=$FL_TORCH_LD timeout --foreground -k 5 120 "$FL_TRAIN" --device "$FL_DEV" "${args[@]}" \
        2>"$FL_LOGS/smoke.stderr") || rc=$?
  printf '%s\n' "$out" >"$FL_LOGS/smoke.jsonl"
  grep '"event":"start"' <<<"$out" | head -1
  grep '"event":"summary"' <<<"$out" | head -1
  [ $rc = 0 ] || { echo "bench-train exited $rc"; tail -30 "$FL_LOGS/smoke.stderr"; return 1; }
  grep '"event":"start"' <<<"$out" | sed -n 's/.*"versions":\({[^}]*}\).*/\1/p' | head -1 >"$FL_WORK/bench_train_versions.json"
  res ips "$(grep '"event":"summary"' <<<"$out" | json_field images_per_second)"
  res note "versions $(cat "$FL_WORK/bench_train_versions.json")"
}

matrix() {  # PRECISIONS -> runs tests/bench/train_vs_pytorch_gpu.sh into logs/$FL_STEP
  local out=$FL_LOGS/$FL_STEP t
  t=$(left_s)
  OUT=$out BIN=$FL_TRAIN PY=$PY DEVICE=$FL_DEV PRECISIONS="$1" BATCHES="$FL_BATCHES" \
    GRAPHS="$FL_GRAPHS" ITERS=$FL_ITERS WARMUP=$FL_WARMUP IMAGE_SIZE=$FL_IMAGE THREADS=$FL_THREADS \
    RUN_TIMEOUT=$(( t < 240 ? t : 240 )) VERSIONS=0 bash "$ROOT/tests/bench/train_vs_pytorch_gpu.sh" 1
  local rc=$?
  # Every run must have given a figure.
  if awk -F'\t' '$7 == "-" {bad=1} END {exit !bad}' "$out/runs.tsv" 2>/dev/null; then
    echo "runs without a figure:"; awk -F'\t' '$7 == "-"' "$out/runs.tsv"; return 1
  fi
  return $rc
}
step_matrix-amp() {
  matrix amp
  local rc=$? big=${FL_BATCHES##* } mode=${FL_GRAPHS##* }  # "off" on CUDA: the default at bs 256
  res ips "$(awk -F'\t' -v b="$big" -v m="$mode" '$1 == "bench-train" && $2 == "amp" && $3 == b && $4 == m {print $7}' "$FL_LOGS/$FL_STEP/runs.tsv" | head -1)"
  res note "img/s: amp bs $big, graphs $mode"
  return $rc
}
step_matrix-rest() { matrix "$FL_REST_PRECISIONS"; }

# run_ranks DIR WORLD GRACE_S TIMEOUT_S BENCH-TRAIN-ARGS...: WORLD ranks of bench-train on
# this machine (torchrun's variables; on CUDA all on cuda:0 with their own NCCL_HOSTID),
# watched every 100 ms: when each printed its summary and when it exited. A rank still
# running GRACE_S after its summary is hung: killed and counted. Writes DIR/ranks.tsv
# (rank, exit status, summary seen, exit delay ms, hung, measured images, window s,
# backend) and returns 0 when every rank summarised and exited 0 within the grace.
run_ranks() {
  local dir=$1 world=$2 grace=$3 tbox=$4; shift 4
  mkdir -p "$dir"
  local port r start pid st
  port=$(free_port) || { echo "no free port"; return 1; }
  local -a pids=() sum_at=() exit_at=() rcs=() hung=()
  for ((r = 0; r < world; r++)); do
    local extra=()
    if [ "$FL_DEVICE" = cuda ]; then
      extra=(NCCL_HOSTID="first-light-rank$r" NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1
             NCCL_DEBUG="${NCCL_DEBUG:-WARN}")
    fi
    (exec env RANK=$r WORLD_SIZE="$world" LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" \
       LD_LIBRARY_PATH="$FL_TORCH_LD" "${extra[@]}" "$FL_TRAIN" --device "$FL_DEV" "$@" \
       >"$dir/rank$r.jsonl" 2>"$dir/rank$r.stderr") &
    pids[r]=$!
  done
  start=$(now_ms)
  while :; do
    local alive=0 t
    t=$(now_ms)
    for ((r = 0; r < world; r++)); do
      [ -z "${exit_at[r]:-}" ] || continue
      if [ -z "${sum_at[r]:-}" ] && grep -q '"event":"summary"' "$dir/rank$r.jsonl" 2>/dev/null; then
        sum_at[r]=$t
      fi
      pid=${pids[r]}
      st=gone; read -r _ _ st _ 2>/dev/null <"/proc/$pid/stat"
      if [ "$st" = Z ] || [ "$st" = gone ]; then
        wait "$pid" 2>/dev/null; rcs[r]=$?; exit_at[r]=$t
        continue
      fi
      alive=1
      if [ -n "${sum_at[r]:-}" ] && [ -z "${hung[r]:-}" ] && ((t - sum_at[r] > grace * 1000)); then
        hung[r]=1; echo "rank $r still running ${grace}s after its summary: killing it"
        kill -9 "$pid" 2>/dev/null
      fi
    done
    [ $alive = 1 ] || break
    if ((t - start > tbox * 1000)); then
      echo "ranks still running after ${tbox}s: killing them"
      for ((r = 0; r < world; r++)); do [ -n "${exit_at[r]:-}" ] || kill -9 "${pids[r]}" 2>/dev/null; done
    fi
    sleep 0.1
  done
  local ok=0 images window backend delay total_images=0 max_window=0
  : >"$dir/ranks.tsv"
  for ((r = 0; r < world; r++)); do
    images=$(grep '"event":"summary"' "$dir/rank$r.jsonl" | json_field measured_images)
    window=$(grep '"event":"summary"' "$dir/rank$r.jsonl" | json_field window_s)
    backend=$(grep '"event":"start"' "$dir/rank$r.jsonl" | json_field backend)
    delay=-; [ -z "${sum_at[r]:-}" ] || delay=$((exit_at[r] - sum_at[r]))
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "${rcs[r]}" "$([ -n "${sum_at[r]:-}" ] && echo yes || echo no)" \
      "$delay" "${hung[r]:-0}" "${images:--}" "${window:--}" "${backend:--}" >>"$dir/ranks.tsv"
    echo "rank $r: exit ${rcs[r]}, summary $([ -n "${sum_at[r]:-}" ] && echo "seen, exit ${delay} ms later" || echo "missing"), backend ${backend:--}$([ -n "${hung[r]:-}" ] && echo ", HUNG")"
    if [ "${rcs[r]}" != 0 ] || [ -z "${sum_at[r]:-}" ] || [ -n "${hung[r]:-}" ]; then
      ok=1; echo "--- rank $r stderr (tail)"; tail -15 "$dir/rank$r.stderr"
    fi
    [ -z "$images" ] || total_images=$((total_images + images))
    [ -z "$window" ] || max_window=$(awk -v a="$max_window" -v b="$window" 'BEGIN{print (b > a) ? b : a}')
  done
  awk -v n="$total_images" -v w="$max_window" 'BEGIN{ if (w > 0) printf "%.1f\n", n / w; else print "-" }' >"$dir/images_per_second"
  return $ok
}

step_nccl-2rank() {
  local args
  if [ "$FL_DEVICE" = cuda ]; then
    args=(--model resnet50 --precision amp --bs 64 --iters 40 --warmup 15)
  else
    args=(--model resnet50 --image-size 32 --precision fp32 --bs 4 --iters 6 --warmup 2 --threads 1)
  fi
  args+=(--rendezvous-timeout-s 30)
  NCCL_DEBUG=INFO run_ranks "$FL_LOGS/nccl-2rank" 2 "$FL_EXIT_GRACE" 100 "${args[@]}"
  local rc=$? backend
  backend=$(awk -F'\t' '{print $8}' "$FL_LOGS/nccl-2rank/ranks.tsv" | sort -u | tr '\n' ' ')
  grep -h 'NCCL INFO.*\(Using network\|via NET\|NCCL version\|Channel 00\)' "$FL_LOGS"/nccl-2rank/rank0.stderr 2>/dev/null | head -5
  res ips "$(cat "$FL_LOGS/nccl-2rank/images_per_second")"
  res note "backend ${backend% }; ${args[*]}; 2 ranks on $FL_DEV; max exit delay $(awk -F'\t' '$4 != "-" && ($4 > m || m == "") {m = $4} END {print (m == "") ? "-" : m}' "$FL_LOGS/nccl-2rank/ranks.tsv") ms"
  if [ "$FL_DEVICE" = cuda ] && [ "${backend% }" != nccl ]; then echo "backend is '${backend% }', not nccl"; return 1; fi
  return $rc
}

step_exit-hang() {
  local i failed=0 delays=() args
  if [ "$FL_DEVICE" = cuda ]; then
    args=(--model resnet50 --precision amp --bs 32 --iters 8 --warmup 2)
  else
    args=(--model resnet18 --image-size 32 --precision fp32 --bs 2 --iters 3 --warmup 1 --threads 1)
  fi
  args+=(--rendezvous-timeout-s 30)
  for i in 1 2 3; do
    if (($(left_s) < 20)); then echo "no time for run $i"; break; fi
    run_ranks "$FL_LOGS/exit-hang/run$i" 2 "$FL_EXIT_GRACE" 60 "${args[@]}" || failed=$((failed + 1))
    delays+=("$(awk -F'\t' '$4 != "-" && ($4 > m || m == "") {m = $4} END {print (m == "") ? "-" : m}' "$FL_LOGS/exit-hang/run$i/ranks.tsv")")
    if ! grep -q yes <(cut -f3 "$FL_LOGS/exit-hang/run$i/ranks.tsv"); then
      echo "run $i: no rank got to its summary, so there is no exit to time (see nccl-2rank); not repeating"
      break
    fi
  done
  res note "${#delays[@]} runs x 2 ranks, $failed failed; exit delays after summary (max per run, ms): ${delays[*]}; grace ${FL_EXIT_GRACE}s"
  [ $failed = 0 ] && [ ${#delays[@]} = 3 ]
}

step_stack() {
  local d=$FL_LOGS/stack port http rc=0 job agent_args=() submit_args=()
  STACK_PIDS=()
  mkdir -p "$d"
  [ "$(cat "$FL_WORK/bundle_mode" 2>/dev/null)" != compat ] || export BENCH_BUNDLE_COMPAT=1
  port=$(free_port) && http=$(free_port) || { echo "no free port"; return 1; }
  export BENCH_SERVER=127.0.0.1:$port
  # The agent's ranks get PyTorch's library path, not the bundle's.
  cat >"$d/bench-train.sh" <<EOF
#!/bin/sh
LD_LIBRARY_PATH='$FL_TORCH_LD' exec '$FL_TRAIN' "\$@"
EOF
  chmod +x "$d/bench-train.sh"
  local B=$FL_BUNDLE/bin
  stop() {
    local p
    for p in "${STACK_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for _ in $(seq 50); do
      local alive=0
      for p in "${STACK_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
      [ $alive = 1 ] || break; sleep 0.1
    done
    for p in "${STACK_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    wait 2>/dev/null
  }
  trap stop EXIT
  trap 'stop; exit 143' TERM
  "$B/benchd" --listen "$BENCH_SERVER" --http "127.0.0.1:$http" --db "$d/bench.db" 2>"$d/benchd.log" &
  STACK_PIDS+=($!)
  if [ "$FL_DEVICE" = cuda ]; then
    agent_args=()
    submit_args=(--gpus 1 --amp --bs 256 --name first-light)
  elif [ -n "${FIRST_LIGHT_NVML:-}" ]; then
    agent_args=(--nvml-library "$FIRST_LIGHT_NVML" --gpu-ranks-on-cpu)
    export FAKE_NVML_GPUS=1
    submit_args=(--gpus 1 --amp --bs 8 --image-size 32 --iters 6 --warmup 2 --name first-light)
  else
    agent_args=(--cpu-slots 1)
    submit_args=(--gpus 1 --amp --bs 8 --image-size 32 --iters 6 --warmup 2 --name first-light)
  fi
  "$B/bench-agent" --controller "$BENCH_SERVER" --name first-light-node --state-dir "$d/agent-state" \
    --bench-train "$d/bench-train.sh" "${agent_args[@]}" 2>"$d/agent.log" &
  STACK_PIDS+=($!)
  local up=0
  for _ in $(seq 200); do
    if "$B/benchctl" agents >"$d/agents.txt" 2>&1 && grep -q first-light-node "$d/agents.txt"; then up=1; break; fi
    sleep 0.1
  done
  cat "$d/agents.txt"
  [ $up = 1 ] || { echo "the agent did not register"; tail -20 "$d/benchd.log" "$d/agent.log"; return 1; }
  "$B/benchctl" agents --format json >"$d/agents.json" 2>&1 || true
  if [ "$FL_DEVICE" = cuda ] && ! grep -q '"gpus": *\[ *{' "$d/agents.json"; then
    # Without NVML the agent offers a CPU slot, and the job would train on the CPU.
    echo "the agent found no GPU through NVML:"; cat "$d/agents.json"; tail -20 "$d/agent.log"
    res note "the agent found no GPU (NVML)"; return 1
  fi
  echo "+ benchctl submit ${submit_args[*]} --wait"
  timeout --foreground -k 5 $(( $(left_s) - 20 > 30 ? $(left_s) - 20 : 30 )) \
    "$B/benchctl" submit "${submit_args[@]}" --wait >"$d/submit.out" 2>"$d/submit.err" || rc=$?
  cat "$d/submit.out"; tail -5 "$d/submit.err"
  job=$(head -1 "$d/submit.out")
  echo "submit exited $rc; job ${job:-none}"
  local c
  for c in "results" "results --format markdown" "list" "agents" \
           "status JOB" "status JOB --format json" "logs JOB --format dllogger"; do
    if [[ $c == *JOB* ]]; then [ -n "$job" ] || continue; c=${c/JOB/$job}; fi
    echo "+ benchctl $c" >>"$d/benchctl.txt"
    # shellcheck disable=SC2086
    timeout --foreground 30 "$B/benchctl" $c >>"$d/benchctl.txt" 2>&1 || echo "(exit $?)" >>"$d/benchctl.txt"
  done
  [ -z "$job" ] || timeout --foreground 30 "$B/benchctl" status "$job" --format json >"$d/status.json" 2>"$d/status.err"
  [ -z "$job" ] || timeout --foreground 30 "$B/benchctl" logs "$job" --format jsonl >"$d/job.jsonl" 2>/dev/null
  timeout --foreground 30 "$B/benchctl" results --format json >"$d/results.json" 2>&1
  "$PY" -c 'import sys,urllib.request;sys.stdout.write(urllib.request.urlopen(sys.argv[1],timeout=10).read().decode())' \
    "http://127.0.0.1:$http/metrics" >"$d/metrics.txt" 2>&1 || echo "GET /metrics failed" >>"$d/metrics.txt"
  sed -n '/^+ benchctl results$/,/^+ benchctl results --format markdown/p' "$d/benchctl.txt" | head -30
  stop; trap - EXIT
  eval "$("$PY" - "$d/status.json" "$d/agents.json" <<'PYEOF'
import json, shlex, sys
def load(path):
    try:
        text = open(path).read().strip()
        return json.loads(text) if text else None
    except (OSError, ValueError):
        return None
s = load(sys.argv[1]) or {}
a = load(sys.argv[2])
agents = a if isinstance(a, list) else (a or {}).get("agents", []) if isinstance(a, dict) else []
gpus = [g.get("name", "") for ag in agents for g in (ag.get("inventory") or {}).get("gpus", [])]
tel = s.get("gpu_telemetry") or []
def p50(field):
    return tel[0].get(field, {}).get("p50") if tel else None
out = {"state": s.get("state", ""), "ips": s.get("images_per_second"),
       "energy": s.get("energy_per_image_j"), "gpus": ",".join(gpus),
       "power_p50": p50("power_w"), "sm_clock_p50": p50("sm_clock_mhz"),
       "temp_p50": p50("temperature_c"), "telemetry_note": s.get("telemetry_note", ""),
       "precision": s.get("effective_precision", ""),
       "versions": json.dumps((s.get("environment") or {}).get("versions", {}), sort_keys=True)}
for k, v in out.items():
    print("st_%s=%s" % (k, shlex.quote("" if v is None else str(v))))
PYEOF
)"
  res ips "$st_ips"
  res note "job ${job:-none} ${st_state:-no state}, ${st_precision:-?}; agent GPUs: ${st_gpus:-none}; energy/image ${st_energy:-none} J, power p50 ${st_power_p50:-none} W, SM clock p50 ${st_sm_clock_p50:-none} MHz${st_telemetry_note:+ (${st_telemetry_note})}; $(grep -c '^bench' "$d/metrics.txt") metric lines"
  echo "state ${st_state:-none}, img/s ${st_ips:-none}, energy per image ${st_energy:-none} J, versions $st_versions"
  [ $rc = 0 ] && [ "$st_state" = JOB_STATE_SUCCEEDED ] && [ -n "$st_ips" ] || return 1
  if [ "$FL_DEVICE" = cuda ]; then
    [ -n "$st_gpus" ] || { echo "the agent reported no GPU"; return 1; }
    [ -n "$st_energy" ] || { echo "no GPU telemetry joined to the job"; return 1; }
  fi
}

# --- the summary ---------------------------------------------------------------------

write_summary() {
  "$PY" - "$FL_WORK" "$FL_OUT" "$FL_DEVICE" <<'PYEOF' || echo "summary: failed (python)"
import csv, glob, json, os, sys
work, out, device = sys.argv[1:4]
def read(path, default=""):
    try:
        with open(path) as f: return f.read()
    except OSError: return default
def fnum(s):
    try: return float(s)
    except (TypeError, ValueError): return None
def fmt(x, nd=1):
    return "no data" if x is None else ("%.*f" % (nd, x))
steps = []
for line in read(os.path.join(work, "results", "steps.tsv")).splitlines():
    name, status, secs, rc = (line.split("\t") + ["", "", "", ""])[:4]
    r = {}
    for kv in read(os.path.join(work, "results", name + ".res")).splitlines():
        if "=" in kv:
            k, v = kv.split("=", 1); r[k] = v
    steps.append({"step": name, "result": status, "seconds": int(secs or 0), "exit": rc,
                  "images_per_second": fnum(r.get("ips")), "note": r.get("note", "")})
# The matrix: every runs.tsv of the matrix steps.
runs = []
for path in sorted(glob.glob(os.path.join(work, "logs", "matrix-*", "runs.tsv"))):
    for row in csv.reader(open(path), delimiter="\t"):
        if len(row) >= 9:
            runs.append({"side": row[0], "precision": row[1], "batch": int(row[2]), "graphs": row[3],
                         "graphs_in_effect": row[4], "repeat": row[5], "images_per_second": fnum(row[6]),
                         "exit": row[7], "seconds": int(row[8])})
def med(xs):
    xs = sorted(x for x in xs if x is not None)
    return xs[(len(xs) - 1) // 2] if xs else None
cells = {}
for r in runs:
    key = (r["precision"], r["batch"])
    col = "eager" if r["side"] == "pytorch" else "graphs " + r["graphs"]
    cells.setdefault(key, {}).setdefault(col, []).append(r["images_per_second"])
modes = sorted({c for v in cells.values() for c in v if c != "eager"}, reverse=True)
order = {"amp": 0, "tf32": 1, "bf16": 2, "fp32": 3}
matrix = []
for (prec, bs) in sorted(cells, key=lambda k: (order.get(k[0], 9), k[1])):
    v = cells[(prec, bs)]
    e = med(v.get("eager", []))
    row = {"precision": prec, "batch": bs, "eager": e}
    for m in modes:
        x = med(v.get(m, []))
        row[m] = x
        row["ratio " + m] = (x / e) if (x and e) else None
    matrix.append(row)
def cell(prec, bs, col):
    for row in matrix:
        if row["precision"] == prec and row["batch"] == bs: return row.get(col)
    return None
versions = {}
try: versions = json.loads(read(os.path.join(work, "torch_versions.json"), "{}") or "{}")
except ValueError: pass
gpu_csv = read(os.path.join(work, "gpu.csv")).strip().splitlines()
gpu = dict(zip([h.strip() for h in gpu_csv[0].split(",")], [x.strip() for x in gpu_csv[1].split(",")])) if len(gpu_csv) > 1 else {}
smi = read(os.path.join(work, "logs", "nvidia-smi.txt"))
cuda_driver = None
if "CUDA Version:" in smi: cuda_driver = smi.split("CUDA Version:")[1].split()[0]
bt_versions = {}
try: bt_versions = json.loads(read(os.path.join(work, "bench_train_versions.json"), "{}") or "{}")
except ValueError: pass
big, small = 256, 64
if device != "cuda":
    bs_all = sorted({r["batch"] for r in runs})
    if bs_all: big, small = bs_all[-1], bs_all[0]
# On CUDA bench-train's default at bs 256 is graphs off (auto: on up to 128); the dry run
# has only "auto".
big_col = "graphs off" if "graphs off" in modes else "graphs auto"
small_col = "graphs on" if "graphs on" in modes else "graphs auto"
amp_big_off = cell("amp", big, big_col); amp_big_on = cell("amp", big, "graphs on")
amp_big_e = cell("amp", big, "eager")
amp_small_on = cell("amp", small, small_col); amp_small_e = cell("amp", small, "eager")
def goal(value, target, label):
    if value is None: verdict = "no data"
    elif device != "cuda": verdict = "n/a (CPU dry run)"
    else: verdict = "met" if value >= target else "NOT met"
    return {"goal": label, "target": target, "value": value, "verdict": verdict}
goals = [
    goal(amp_big_off, 5000, "AMP bs %d img/s (%s, the default)" % (big, big_col)),
    goal((amp_big_off / amp_big_e) if (amp_big_off and amp_big_e) else None, 1.10, "AMP bs %d vs PyTorch eager (%s)" % (big, big_col)),
    goal((amp_small_on / amp_small_e) if (amp_small_on and amp_small_e) else None, 1.25, "AMP bs %d with CUDA graphs (%s) vs PyTorch eager" % (small, small_col)),
]
if amp_big_on is not None and big_col != "graphs on":
    goals.append({"goal": "(for reference) AMP bs %d with graphs on" % big, "target": None,
                  "value": amp_big_on, "verdict": "ratio %s" % fmt(amp_big_on / amp_big_e, 2) if amp_big_e else "no data"})
doc = {"device": device, "gpu": gpu, "cuda_driver_api": cuda_driver, "torch": versions,
       "bench_train_versions": bt_versions, "steps": steps, "matrix": matrix, "goals": goals,
       "env": read(os.path.join(work, "env.txt"))}
with open(os.path.join(out, "summary.json.tmp"), "w") as f: json.dump(doc, f, indent=1)
os.replace(os.path.join(out, "summary.json.tmp"), os.path.join(out, "summary.json"))
L = []
L.append("# First light (%s)" % ("GPU" if device == "cuda" else "CPU dry run: FIRST_LIGHT_DEVICE=cpu"))
L.append("")
g = gpu.get("name") or versions.get("gpu") or "no GPU"
L.append("- GPU: %s; driver %s; CUDA (driver) %s; compute capability %s; power limit %s; max SM clock %s" % (
    g, gpu.get("driver_version", "-"), cuda_driver or "-", gpu.get("compute_cap", versions.get("capability") or "-"),
    gpu.get("power.limit [W]", "-"), gpu.get("clocks.max.sm [MHz]", "-")))
cudnn = versions.get("cudnn")
if isinstance(cudnn, int) and cudnn >= 10000:  # cuDNN 9: 91300 = 9.13.0
    versions["cudnn"] = "%d.%d.%d (%d)" % (cudnn // 10000, cudnn % 10000 // 100, cudnn % 100, cudnn)
L.append("- torch %s (CUDA %s, cuDNN %s, NCCL %s), torchvision %s, python %s" % tuple(
    str(versions.get(k) if versions.get(k) is not None else "-") for k in ("torch", "torch_cuda", "cudnn", "nccl", "torchvision", "python")))
L.append("- bench-train start event versions: %s" % (json.dumps(bt_versions) if bt_versions else "no data"))
for line in doc["env"].splitlines():
    if line.split(":")[0] in ("os", "glibc", "cpus", "nvcc", "cmake"): L.append("- " + line)
L.append("")
L.append("| step | result | img/s | seconds | notes |")
L.append("|---|---|---:|---:|---|")
for s in steps:
    L.append("| %s | %s | %s | %d | %s |" % (s["step"], s["result"], fmt(s["images_per_second"]), s["seconds"],
                                            s["note"].replace("|", "/")))
L.append("| total | | | %d | |" % sum(s["seconds"] for s in steps))
L.append("")
if matrix:
    L.append("bench-train vs PyTorch eager, ResNet-50, img/s (one run each, same call, alternating):")
    L.append("")
    hdr = "| precision | batch |" + "".join(" bench-train %s |" % m for m in modes) + " PyTorch eager |" + "".join(" ratio (%s) |" % m for m in modes)
    L.append(hdr)
    L.append("|---|---:|" + "---:|" * (2 * len(modes) + 1))
    for row in matrix:
        L.append("| %s | %d |" % (row["precision"], row["batch"]) + "".join(" %s |" % fmt(row[m]) for m in modes) +
                 " %s |" % fmt(row["eager"]) + "".join(" %s |" % fmt(row["ratio " + m], 2) for m in modes))
    L.append("")
L.append("Goals (H100, AMP):")
L.append("")
L.append("| goal | target | measured | verdict |")
L.append("|---|---:|---:|---|")
for gl in goals:
    L.append("| %s | %s | %s | %s |" % (gl["goal"], "-" if gl["target"] is None else gl["target"],
                                        fmt(gl["value"], 2 if (gl["target"] or 100) < 100 else 1), gl["verdict"]))
if device == "cuda" and g != "no GPU" and "H100" not in g:
    L.append("")
    L.append("Note: the goals are stated for an H100; this GPU is %s." % g)
L.append("")
with open(os.path.join(out, "summary.md.tmp"), "w") as f: f.write("\n".join(L) + "\n")
os.replace(os.path.join(out, "summary.md.tmp"), os.path.join(out, "summary.md"))
PYEOF
}

pack() {
  tar -czf "$FL_OUT/first_light.tar.gz.tmp" -C "$FL_WORK" . 2>/dev/null &&
    mv "$FL_OUT/first_light.tar.gz.tmp" "$FL_OUT/first_light.tar.gz"
}

# Processes a step leaves behind (the agent's ranks run in process groups of their own;
# a step killed at its time box leaves them): every process whose environment holds
# FL_STEP_MARK=MARK, the mark that step was started with.
kill_strays() {  # MARK
  local d pid
  for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    grep -qzxF "FL_STEP_MARK=$1" "$d/environ" 2>/dev/null || continue
    say "killing a leftover process of the step: $pid $(tr '\0' ' ' <"$d/cmdline" 2>/dev/null | cut -c1-100)"
    kill -9 "$pid" 2>/dev/null
  done
}

run_step() {  # NAME MAX_SECONDS
  local name=$1 max=$2 left t t0 rc status
  left=$(left_s)
  if ((left < 15)); then
    printf '%s\tskipped (no time left)\t0\t-\n' "$name" >>"$FL_RES/steps.tsv"
    say "$name: skipped, no time left"; return
  fi
  t=$((max < left ? max : left))
  say "$name (time box ${t}s, ${left}s left)"
  t0=$SECONDS
  # timeout runs the step in a process group of its own (pgid = its pid); on_signal
  # stops that group if this script is interrupted.
  # Every process of the step carries FL_STEP_MARK, so kill_strays finds those that left
  # the group (the agent's ranks have process groups of their own).
  FL_STEP_MARK=$FL_WORK:$name timeout -k 10 "$t" bash "$SELF" --step "$name" >"$FL_LOGS/$name.log" 2>&1 &
  FL_STEP_PID=$! FL_STEP_NAME=$name
  wait "$FL_STEP_PID"
  rc=$?
  FL_STEP_PID=
  kill_strays "$FL_WORK:$name"
  case $rc in
    0) status=pass ;;
    124|137) status="fail (timed out after ${t}s)" ;;
    *) status="fail (exit $rc)" ;;
  esac
  printf '%s\t%s\t%s\t%s\n' "$name" "$status" $((SECONDS - t0)) "$rc" >>"$FL_RES/steps.tsv"
  say "$name: $status in $((SECONDS - t0))s"
  [ "$status" = pass ] || tail -n 25 "$FL_LOGS/$name.log" | sed 's/^/    /'
  write_summary
  pack
}

# --- main ----------------------------------------------------------------------------

if [ "${1:-}" = --step ]; then
  FL_STEP=$2
  cd "$ROOT" || exit 1
  "step_$2"
  exit $?
fi

[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
mkdir -p "$1" || exit 2
export FL_OUT; FL_OUT=$(cd "$1" && pwd)
export FL_DEVICE=${FIRST_LIGHT_DEVICE:-cuda}
export FL_BUNDLE=${FIRST_LIGHT_BUNDLE:-$ROOT/.gpu-bundle}
export FL_WORK=${FIRST_LIGHT_WORK:-$(mktemp -d /tmp/first-light.XXXXXX)}
export FL_LOGS=$FL_WORK/logs FL_RES=$FL_WORK/results
export FL_EXIT_GRACE=${FIRST_LIGHT_EXIT_GRACE_S:-10}
export FL_RESERVE=${FIRST_LIGHT_RESERVE_S:-15}
export FL_DEADLINE=$(($(now) + ${FIRST_LIGHT_BUDGET_S:-540}))
export JOBS=${JOBS:-$(nproc)}
export PY=${PY:-python3}
mkdir -p "$FL_LOGS" "$FL_RES"
: >"$FL_RES/steps.tsv"
exec > >(tee -a "$FL_OUT/console.log") 2>&1

if [ "$FL_DEVICE" = cuda ]; then
  export FL_BUILD=${FIRST_LIGHT_BUILD:-$ROOT/build-gpu} FL_DEV=cuda:0
  export FL_BATCHES="64 256" FL_GRAPHS="on off" FL_ITERS=60 FL_WARMUP=20 FL_IMAGE=224
  export FL_REST_PRECISIONS="tf32 bf16 fp32" FL_THREADS=0
else
  # The dry run: the same steps, small. Debian's python3-torch if this python has no torch.
  "$PY" -c 'import torch' 2>/dev/null || PY=/usr/bin/python3
  export FL_BUILD=${FIRST_LIGHT_BUILD:-$ROOT/build-fl} FL_DEV=cpu
  export FL_BATCHES="4 8" FL_GRAPHS="auto" FL_ITERS=8 FL_WARMUP=3 FL_IMAGE=32
  # One thread per run: a busy 2-core machine makes OpenMP's spinning threads crawl.
  export FL_REST_PRECISIONS="bf16 fp32" FL_THREADS=${FIRST_LIGHT_THREADS:-1}
fi
export FL_TRAIN=$FL_BUILD/bin/bench-train
eval "$("$PY" "$ROOT/tests/bench/torch_paths.py" 2>/dev/null)"
export FL_TORCH_LD=${TORCH_LD_PATH:-}

FL_STEP_PID= FL_STEP_NAME=
on_signal() {
  say "interrupted: stopping the running step"
  [ -z "$FL_STEP_PID" ] || kill -TERM -- "-$FL_STEP_PID" 2>/dev/null
  sleep 1; [ -z "$FL_STEP_PID" ] || kill -KILL -- "-$FL_STEP_PID" 2>/dev/null
  [ -z "$FL_STEP_NAME" ] || kill_strays "$FL_WORK:$FL_STEP_NAME"; write_summary; pack
  exit 130
}
trap on_signal INT TERM
say "device $FL_DEVICE; out $FL_OUT; logs $FL_WORK; budget ${FIRST_LIGHT_BUDGET_S:-540}s; python $PY"
cd "$ROOT" || exit 1
for s in ${FIRST_LIGHT_STEPS:-env bundle build smoke matrix-amp nccl-2rank exit-hang stack capture-fallback data-vs-compute ssd matrix-rest}; do
  case $s in
    env) run_step env 60 ;;
    bundle) run_step bundle 30 ;;
    build) run_step build "${FIRST_LIGHT_BUILD_S:-330}" ;;
    smoke) run_step smoke 90 ;;
    matrix-amp) run_step matrix-amp 150 ;;
    nccl-2rank) run_step nccl-2rank 120 ;;
    exit-hang) run_step exit-hang 120 ;;
    stack) run_step stack 180 ;;
    capture-fallback) run_step capture-fallback 90 ;;
    data-vs-compute) run_step data-vs-compute 120 ;;
    ssd) run_step ssd 180 ;;
    matrix-rest) run_step matrix-rest 400 ;;
    *) say "unknown step $s"; printf '%s\tunknown\t0\t-\n' "$s" >>"$FL_RES/steps.tsv" ;;
  esac
done
# After the load: clocks, power, temperatures and throttle reasons, and no process left.
[ "$FL_DEVICE" != cuda ] || { nvidia-smi; nvidia-smi -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE; } >"$FL_LOGS/nvidia-smi-end.txt" 2>&1
write_summary
pack
echo
cat "$FL_OUT/summary.md"
say "done: $FL_OUT/summary.md, $FL_OUT/first_light.tar.gz (logs: $FL_WORK)"
awk -F'\t' '$2 != "pass" {bad = 1} END {exit bad}' "$FL_RES/steps.tsv"
