#!/usr/bin/env bash
# Writes the seed corpora of the proto-fed fuzz targets (corpus/spec_validation/ and
# corpus/inventory_validation/) from the text-format messages below, with
# `protoc --encode`. The bytes are committed; run this again only to change the seeds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
proto_root=$here/../../proto

encode() {  # encode MESSAGE OUT TEXT
  mkdir -p "$(dirname "$2")"
  printf '%s\n' "$3" | protoc -I"$proto_root" --encode="benchfleet.v1.$1" \
    benchfleet/v1/types.proto >"$2"
}

spec=$here/corpus/spec_validation
encode JobSpec "$spec/seed-minimal" 'model: "resnet50" devices: 1 precision: PRECISION_FP32 batch_size: 2 iterations: 5 warmup_iterations: 1 image_size: 64'
encode JobSpec "$spec/seed-full" 'model: "resnet50" devices: 4 precision: PRECISION_AMP batch_size: 64 iterations: 100 warmup_iterations: 10 image_size: 224 data: DATA_SOURCE_SYNTHETIC name: "nightly resnet50 amp" labels { key: "team" value: "vision" } labels { key: "ticket" value: "BF-15" } request_id: "req-7f3a" nodes: 2 devices_per_node: 2 allowed_nodes: "node-a" allowed_nodes: "node-b.lab" node_labels { key: "rack" value: "r1" } wall_time_limit_s: 3600 hang_timeout_s: 120'
encode JobSpec "$spec/seed-shape-only" 'model: "resnet18" precision: PRECISION_BF16 batch_size: 1 iterations: 2 image_size: 33 nodes: 3 devices_per_node: 5'
encode JobSpec "$spec/seed-shape-mismatch" 'model: "resnet50" devices: 7 precision: PRECISION_TF32 batch_size: 8 iterations: 10 image_size: 128 nodes: 2 devices_per_node: 2'
encode JobSpec "$spec/seed-bad-text" 'model: "resnet50\n" devices: 1 precision: PRECISION_FP32 batch_size: 2 iterations: 5 image_size: 64 name: "a\x1fb" labels { key: "k=v" value: "x\ry" }'
encode JobSpec "$spec/seed-extremes" 'model: "resnet50" devices: 2147483647 precision: PRECISION_FP32 batch_size: -2147483648 iterations: 10000000 warmup_iterations: 9999999 image_size: 1024 nodes: 65536 devices_per_node: 65536 wall_time_limit_s: -1 hang_timeout_s: 2592001'
encode JobSpec "$spec/seed-bad-node" 'model: "resnet50" devices: 1 precision: PRECISION_FP32 batch_size: 2 iterations: 5 image_size: 32 allowed_nodes: "" allowed_nodes: "-node" allowed_nodes: "n\xc3\xa9"'
encode JobSpec "$spec/seed-unknown-data" 'model: "resnet50" devices: 1 precision: PRECISION_FP32 batch_size: 2 iterations: 5 image_size: 64 data: 2'

inv=$here/corpus/inventory_validation
encode AgentInventory "$inv/seed-gpu-node" 'name: "gpu-node-1" address: "10.0.0.5" hostname: "gpu-node-1.lab" gpus { index: 0 name: "NVIDIA H100 80GB HBM3" uuid: "GPU-5f3c2b1a-0000-1111-2222-333344445555" memory_bytes: 85899345920 } gpus { index: 1 name: "NVIDIA H100 80GB HBM3" uuid: "GPU-5f3c2b1a-0000-1111-2222-333344445556" memory_bytes: 85899345920 } versions { key: "driver" value: "550.54.15" } versions { key: "cuda_driver" value: "12.4" } labels { key: "rack" value: "r1" }'
encode AgentInventory "$inv/seed-cpu-node" 'name: "cpu0" address: "127.0.0.1" hostname: "localhost" cpu_slots: 2'
encode AgentInventory "$inv/seed-duplicate-gpu" 'name: "n" gpus { index: 0 uuid: "GPU-a" } gpus { index: 0 uuid: "GPU-a" }'
encode AgentInventory "$inv/seed-bad-text" 'name: "node\n" address: "a\x7f" cpu_slots: -1 gpus { index: -3 uuid: "" memory_bytes: -1 } labels { key: "" value: "v" }'
