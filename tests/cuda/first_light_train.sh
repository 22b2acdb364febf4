# shellcheck shell=bash
# Sourced by tests/cuda/first_light.sh (docs/first-light.md): its steps that check
# bench-train's own paths with short runs on $FL_DEV, each with data made at run time:
#   capture-fallback  a CUDA graph capture made to fail (BENCH_TRAIN_TEST_CAPTURE_FAILURE=1)
#   data-vs-compute   --data-vs-compute on an ImageFolder of JPEGs, CUDA graphs on
#   ssd               SSD-ResNet34 on synthetic data and on a COCO-format folder
# Uses first_light.sh's FL_* variables, PY, res and json_field; writes logs/NAME.jsonl and
# logs/NAME.stderr per run and the step's results through res.

# train_once NAME TIMEOUT_S [VAR=VALUE...] -- BENCH-TRAIN-ARGS...: one bench-train run on
# $FL_DEV with those environment variables, its events in logs/NAME.jsonl and its stderr in
# logs/NAME.stderr. Prints its start and summary (or error) events; fails if it exited
# non-zero or wrote no summary.
train_once() {
  local name=$1 t=$2 rc=0 envs=()
  shift 2
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  echo "+ ${envs[*]} bench-train --device $FL_DEV $*"
  env "${envs[@]}" LD_LIBRARY_PATH="$FL_TORCH_LD" timeout --foreground -k 5 "$t" \
    "$FL_TRAIN" --device "$FL_DEV" "$@" >"$FL_LOGS/$name.jsonl" 2>"$FL_LOGS/$name.stderr" || rc=$?
  grep '"event":"start"' "$FL_LOGS/$name.jsonl" | head -1
  grep '"event":"\(summary\|error\)"' "$FL_LOGS/$name.jsonl" | head -1
  [ $rc = 0 ] || { echo "bench-train ($name) exited $rc"; tail -20 "$FL_LOGS/$name.stderr"; return 1; }
  grep -q '"event":"summary"' "$FL_LOGS/$name.jsonl" || { echo "$name: no summary event"; return 1; }
  if grep '"event":"iter"' "$FL_LOGS/$name.jsonl" | grep -q '"loss":"'; then
    echo "$name: a non-finite loss:"; grep '"event":"iter"' "$FL_LOGS/$name.jsonl" | grep '"loss":"' | head -3
    return 1
  fi
}
event_field() {  # NAME EVENT KEY: KEY of the first EVENT event of logs/NAME.jsonl
  grep "\"event\":\"$2\"" "$FL_LOGS/$1.jsonl" | head -1 | json_field "$3"
}

# make_data imagefolder DIR CLASSES PER_CLASS | coco DIR IMAGES: JPEGs of random content
# written at run time (torchvision.io, else PIL): an ImageFolder (DIR/cNN/NNN.jpg), or a
# COCO-format folder (DIR/annotations/instances_train2017.json, DIR/train2017/NNNN.jpg,
# 1 to 3 boxes per image in categories 1, 3 and 7).
make_data() {
  "$PY" - "$@" <<'PYEOF'
import json, os, random, sys
kind, root = sys.argv[1], sys.argv[2]
rng = random.Random(1)
try:
    import torch, torchvision.io as tio
    def write(path, w, h):
        coarse = torch.randint(0, 256, (1, 3, h // 16 + 1, w // 16 + 1), dtype=torch.uint8)
        img = torch.nn.functional.interpolate(coarse.float(), size=(h, w), mode="bilinear")
        tio.write_jpeg(img[0].clamp(0, 255).to(torch.uint8), path, quality=90)
except ImportError:
    from PIL import Image
    def write(path, w, h):
        Image.new("RGB", (w, h), tuple(rng.randrange(256) for _ in range(3))).save(path, quality=90)
sizes = [(320, 240), (300, 300), (240, 320), (400, 300)]
if kind == "imagefolder":
    classes, per_class = int(sys.argv[3]), int(sys.argv[4])
    for c in range(classes):
        os.makedirs("%s/c%02d" % (root, c), exist_ok=True)
        for i in range(per_class):
            write("%s/c%02d/%03d.jpg" % (root, c, i), *rng.choice(sizes))
else:
    n = int(sys.argv[3])
    os.makedirs(root + "/annotations", exist_ok=True)
    os.makedirs(root + "/train2017", exist_ok=True)
    images, annotations = [], []
    for i in range(n):
        w, h = rng.choice(sizes)
        name = "%04d.jpg" % i
        write(root + "/train2017/" + name, w, h)
        images.append({"id": i + 1, "file_name": name, "width": w, "height": h})
        for _ in range(rng.randint(1, 3)):
            bw, bh = rng.uniform(0.1, 0.5) * w, rng.uniform(0.1, 0.5) * h
            x, y = rng.uniform(0, w - bw), rng.uniform(0, h - bh)
            annotations.append({"id": len(annotations) + 1, "image_id": i + 1,
                                "category_id": rng.choice([1, 3, 7]), "bbox": [x, y, bw, bh],
                                "area": bw * bh, "iscrowd": 0})
    categories = [{"id": 1, "name": "person"}, {"id": 3, "name": "car"}, {"id": 7, "name": "train"}]
    with open(root + "/annotations/instances_train2017.json", "w") as f:
        json.dump({"images": images, "annotations": annotations, "categories": categories}, f)
PYEOF
}

# A CUDA graph capture that fails for real (BENCH_TRAIN_TEST_CAPTURE_FAILURE=1: every step
# reads its loss on the host, which a capture does not allow): the run must go on with eager
# steps, say why in its start event, and train (finite losses, a summary).
step_capture-fallback() {
  local args graphs reason
  if [ "$FL_DEVICE" = cuda ]; then
    args=(--model resnet50 --precision amp --bs 32 --iters 16 --warmup 6 --cuda-graphs on)
  else
    args=(--model resnet18 --image-size 32 --bs 2 --iters 4 --warmup 1 --threads "$FL_THREADS")
  fi
  train_once capture-fallback 120 BENCH_TRAIN_TEST_CAPTURE_FAILURE=1 -- "${args[@]}" || return 1
  graphs=$(event_field capture-fallback start cuda_graphs)
  reason=$(event_field capture-fallback start cuda_graphs_fallback)
  res ips "$(event_field capture-fallback summary images_per_second)"
  res note "forced capture failure: cuda_graphs ${graphs:-?}; fallback: ${reason:-none}"
  [ "$graphs" = false ] || { echo "cuda_graphs is '$graphs', not false"; return 1; }
  if [ "$FL_DEVICE" = cuda ] && [[ $reason != "CUDA graph capture failed"* ]]; then
    echo "no cuda_graphs_fallback in the start event"; return 1
  fi
}

# --data-vs-compute on an ImageFolder of JPEGs made here: the real run (uint8 NHWC batches),
# then the synthetic one (float NCHW), each with its own CUDA graph on CUDA.
step_data-vs-compute() {
  local dir=$FL_WORK/imagefolder args graphs synthetic ratio
  make_data imagefolder "$dir" 4 16 || { echo "could not write the JPEGs"; return 1; }
  if [ "$FL_DEVICE" = cuda ]; then
    args=(--model resnet50 --precision amp --bs 32 --iters 24 --warmup 8 --cuda-graphs on)
  else
    args=(--model resnet18 --image-size 32 --bs 4 --iters 4 --warmup 1 --threads "$FL_THREADS"
          --loader-threads 1)
  fi
  train_once data-vs-compute 150 -- "${args[@]}" --data "imagefolder:$dir" --data-vs-compute ||
    return 1
  graphs=$(event_field data-vs-compute start cuda_graphs)
  synthetic=$(event_field data-vs-compute summary synthetic_images_per_second)
  ratio=$(event_field data-vs-compute summary data_vs_compute)
  res ips "$(event_field data-vs-compute summary images_per_second)"
  res note "imagefolder $(event_field data-vs-compute start dataset_images) JPEGs; synthetic ${synthetic:-none} img/s; ratio ${ratio:-none}; cuda_graphs ${graphs:-?}"
  if [ -z "$synthetic" ] || [ -z "$ratio" ]; then echo "no synthetic figure in the summary"; return 1; fi
  if [ "$FL_DEVICE" = cuda ] && [ "$graphs" != true ]; then
    echo "the real run was not graphed: $(event_field data-vs-compute start cuda_graphs_fallback)"
    return 1
  fi
}

# SSD-ResNet34 on synthetic data, then on a COCO-format folder made here with
# --data-vs-compute (CUDA graphs by default on CUDA at this batch).
step_ssd() {
  local dir=$FL_WORK/coco args failed=0
  make_data coco "$dir" 24 || { echo "could not write the COCO folder"; return 1; }
  if [ "$FL_DEVICE" = cuda ]; then
    args=(--model ssd_resnet34 --precision amp --bs 8 --iters 16 --warmup 6)
  else
    args=(--model ssd_resnet34 --precision fp32 --bs 2 --iters 3 --warmup 1 --threads "$FL_THREADS")
  fi
  train_once ssd-synthetic 150 -- "${args[@]}" || failed=1
  train_once ssd-coco 150 -- "${args[@]}" --data "coco:$dir" --loader-threads 2 --data-vs-compute ||
    failed=1
  res ips "$(event_field ssd-synthetic summary images_per_second)"
  res note "synthetic: cuda_graphs $(event_field ssd-synthetic start cuda_graphs); coco: $(event_field ssd-coco summary images_per_second) img/s, cuda_graphs $(event_field ssd-coco start cuda_graphs), data_vs_compute $(event_field ssd-coco summary data_vs_compute)"
  [ $failed = 0 ] && [ -n "$(event_field ssd-coco summary data_vs_compute)" ]
}
