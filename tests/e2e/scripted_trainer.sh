#!/bin/sh
# A bench-train stand-in whose steps take a fixed time, for tests that compare step times
# across nodes (e2e.VariabilityTest): a busy machine slows a real trainer by any amount
# (its CPU threads wait for each other), so no bound on real step times holds under
# load, while these do. It speaks bench-train's event stream (docs/trainer-events.md):
# a start event, one iter event per iteration and a summary, every step reported as
# exactly $BENCH_SCRIPTED_STEP_S seconds (default 0.1; each is also slept, so the rank
# runs about that long and its GPU is sampled meanwhile), with a fixed step split:
# compute = the step, forward-backward 7/8 of it (3/4 with more than one rank), all-reduce
# wait 0 (1/8 with more than one rank), optimizer 1/8. It reads --model, --precision,
# --bs, --iters, --warmup and --image-size from its arguments (bench-train's flags, as
# the agent passes them; others are ignored) and RANK, WORLD_SIZE and LOCAL_RANK from
# its environment, and exits 0.
model=resnet18 precision=fp32 bs=1 iters=1 warmup=0 size=224
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model=$2; shift ;;
    --precision) precision=$2; shift ;;
    --bs) bs=$2; shift ;;
    --iters) iters=$2; shift ;;
    --warmup) warmup=$2; shift ;;
    --image-size) size=$2; shift ;;
  esac
  shift
done
exec awk -v step="${BENCH_SCRIPTED_STEP_S:-0.1}" -v model="$model" -v precision="$precision" \
  -v bs="$bs" -v iters="$iters" -v warmup="$warmup" -v size="$size" \
  -v rank="${RANK:-0}" -v world="${WORLD_SIZE:-1}" -v local_rank="${LOCAL_RANK:-0}" '
BEGIN {
  in_effect = precision
  if (precision == "amp" || precision == "bf16") in_effect = "amp_bf16"
  printf "{\"event\":\"start\",\"rank\":%d,\"model\":\"%s\",\"parameters\":1,\"precision\":\"%s\",\"requested_precision\":\"%s\",\"device\":\"cpu\",\"world_size\":%d,\"local_rank\":%d,\"batch_size\":%d,\"image_size\":%d,\"iterations\":%d,\"warmup_iterations\":%d,\"backend\":\"none\",\"data\":\"synthetic\",\"versions\":{\"torch\":\"scripted\",\"bench_train\":\"scripted\",\"bench_train_build\":\"scripted\"}}\n", rank, model, in_effect, precision, world, local_rank, bs, size, iters, warmup
  fflush()
  wait_s = world > 1 ? step / 8 : 0
  fb_s = step * 7 / 8 - wait_s
  for (i = 1; i <= iters; i++) {
    system("sleep " step)
    printf "{\"event\":\"iter\",\"rank\":%d,\"iteration\":%d,\"step_time_s\":%s,\"compute_time_s\":%s,\"forward_backward_time_s\":%.9f,\"allreduce_wait_time_s\":%.9f,\"optimizer_time_s\":%.9f,\"images\":%d,\"loss\":1.0,\"data_time_s\":0,\"elapsed_s\":%.6f,\"warmup\":%s}\n", rank, i, step, step, fb_s, wait_s, step / 8, bs, i * step, i <= warmup ? "true" : "false"
    fflush()
  }
  measured = iters - warmup
  printf "{\"event\":\"summary\",\"rank\":%d,\"measured_iterations\":%d,\"measured_images\":%d,\"window_s\":%.6f,\"images_per_second\":%.6f,\"step_time_median_s\":%s,\"skipped_steps\":0,\"nonfinite_losses\":0}\n", rank, measured, measured * bs, measured * step, bs / step, step
  fflush()
}'
