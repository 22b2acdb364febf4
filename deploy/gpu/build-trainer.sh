#!/usr/bin/env bash
# The trainer-only build of bench-train (-DBENCH_TRAINER_ONLY=ON, Release: no gRPC, only
# Torch) against a given libtorch. The one build that every CUDA build of the trainer runs:
# tests/cuda/build_check.sh (Debian 13's CUDA libtorch, link-checked without a GPU),
# tests/cuda/first_light.sh and tests/bench/train_vs_pytorch_gpu.sh (PyTorch's CUDA libtorch
# on the GPU machine) and deploy/compose/Dockerfile.gpu (NVIDIA's PyTorch container).
#
# Usage: deploy/gpu/build-trainer.sh [--configure-only] BUILD_DIR [CMAKE_ARG...]
#   BUILD_DIR         CMake's build folder; the binary is BUILD_DIR/bin/bench-train
#   CMAKE_ARG         more -D options after the common ones (e.g. -DBENCH_TRAIN_BUILD_TESTS=OFF,
#                     -DBENCH_TRAIN_NCCL=OFF, linker flags)
#   --configure-only  configure, do not build (a caller that builds more than bench-train)
# Environment:
#   TORCH_CMAKE_PREFIX  the folder holding Torch/TorchConfig.cmake (required): for a pip or
#                       conda PyTorch `python3 -c 'import torch;print(torch.utils.cmake_prefix_path)'`
#                       (tests/bench/torch_paths.py prints it), for Debian's libtorch
#                       /usr/lib/x86_64-linux-gnu/cmake
#   TORCH_NCCL_INCLUDE  the folder of nccl.h, where CMake's own search misses it (optional;
#                       worker/train/CMakeLists.txt says where it looks)
#   JOBS                build parallelism (default: nproc)
# CMake's output goes to stdout, with its summary line "bench-train: torch V cuda=ON|OFF
# gloo=1|0 nccl=ON|OFF". Exit status: 2 for a usage error, else CMake's.
set -euo pipefail

usage() {
  echo "build-trainer.sh: $*" >&2
  echo "usage: deploy/gpu/build-trainer.sh [--configure-only] BUILD_DIR [CMAKE_ARG...]" >&2
  exit 2
}
configure_only=0
if [ "${1:-}" = --configure-only ]; then
  configure_only=1
  shift
fi
[ $# -ge 1 ] && [ -n "$1" ] || usage "no BUILD_DIR given"
build_dir=$1
shift
[ -n "${TORCH_CMAKE_PREFIX:-}" ] || usage "TORCH_CMAKE_PREFIX is not set (the folder holding Torch/TorchConfig.cmake)"
[ -f "$TORCH_CMAKE_PREFIX/Torch/TorchConfig.cmake" ] ||
  usage "TORCH_CMAKE_PREFIX=$TORCH_CMAKE_PREFIX holds no Torch/TorchConfig.cmake"
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
cmake -S "$source_dir" -B "$build_dir" "${generator[@]}" -DBENCH_TRAINER_ONLY=ON \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$TORCH_CMAKE_PREFIX" \
  ${TORCH_NCCL_INCLUDE:+-DBENCH_NCCL_INCLUDE_DIR="$TORCH_NCCL_INCLUDE"} "$@"
if [ "$configure_only" = 0 ]; then
  cmake --build "$build_dir" --target bench-train -j "${JOBS:-$(nproc)}"
fi
