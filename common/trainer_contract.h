// The contract between bench-agent and bench-train, every name defined once: the flags
// the agent launches a rank with (worker/agent/rank_supervisor.cc `BuildRankLaunch`, parsed
// by worker/train/flags.cc), the environment it sets (read by worker/train/options.cc
// `RendezvousFromEnv`), and the JSON-lines events the trainer writes on stdout
// (worker/train/event_writer.cc, read by worker/agent/trainer_event_parser.cc). What the
// fields mean is docs/trainer-events.md; their names are these. Both sides write and match
// a name only through its constant here (help text and error messages name flags in prose).
//
// Standard library only (no Abseil, no protobuf): bench-train, which builds against
// libtorch alone, includes it (include rule b2). Constants only; nothing to call.
#pragma once

namespace bench::trainer_contract {

// --- The flags of a rank's launch (bench-train --help describes them) -------------------
inline constexpr char kFlagModel[] = "--model";                   // a name of common/names.h
inline constexpr char kFlagPrecision[] = "--precision";           // fp32, tf32, amp, bf16
inline constexpr char kFlagBatchSize[] = "--bs";                  // per rank
inline constexpr char kFlagIterations[] = "--iters";              // warm-up included
inline constexpr char kFlagWarmup[] = "--warmup";                 // warm-up iterations
inline constexpr char kFlagImageSize[] = "--image-size";          // square side in pixels
inline constexpr char kFlagData[] = "--data";                     // synthetic, imagefolder, coco
inline constexpr char kFlagDataDir[] = "--data-dir";              // the data folder (before --data)
inline constexpr char kFlagLoaderThreads[] = "--loader-threads";  // decode threads per rank
inline constexpr char kFlagDataVsCompute[] = "--data-vs-compute";  // no value
inline constexpr char kFlagDevice[] = "--device";                  // cpu, cuda:N
inline constexpr char kFlagThreads[] = "--threads";                // intra-op CPU threads
// Fault injection for tests and demonstrations (docs/diagnosis.md): a scenario file
// (common/fault_scenario.h) whose rank rules slow this rank's compute or stall its data.
// Never passed by the agent unless its own --fault-scenario is set; never on by default.
inline constexpr char kFlagFaultScenario[] = "--fault-scenario";

// Every flag the agent may pass, in the order it passes them. bench-train accepts each
// (worker/train/flags_test.cc); the agent passes no other (worker/agent/rank_launch_test.cc).
inline constexpr const char* kLaunchFlags[] = {
    kFlagModel,         kFlagPrecision,     kFlagBatchSize, kFlagIterations,
    kFlagWarmup,        kFlagImageSize,     kFlagDataDir,   kFlagData,
    kFlagLoaderThreads, kFlagDataVsCompute, kFlagDevice,    kFlagThreads};
// The ones that take no value.
inline constexpr const char* kLaunchSwitches[] = {kFlagDataVsCompute};

// --device's values: "cpu", or "cuda:" and the device index.
inline constexpr char kDeviceCpu[] = "cpu";
inline constexpr char kDeviceCudaPrefix[] = "cuda:";

// --- torchrun's environment, set by the agent for every rank ----------------------------
inline constexpr char kEnvRank[] = "RANK";
inline constexpr char kEnvWorldSize[] = "WORLD_SIZE";
inline constexpr char kEnvLocalRank[] = "LOCAL_RANK";
inline constexpr char kEnvLocalWorldSize[] = "LOCAL_WORLD_SIZE";
inline constexpr char kEnvMasterAddr[] = "MASTER_ADDR";
inline constexpr char kEnvMasterPort[] = "MASTER_PORT";
// Not torchrun's: the agent's name (its --name), set by bench-agent for every rank, so
// that a rank knows its node (the simulated trainer and fault scenarios select by it).
inline constexpr char kEnvNodeName[] = "BENCH_NODE_NAME";

// --- The events: one JSON object per line on stdout -------------------------------------
// Every event has kFieldEvent (one of the names below) and kFieldRank.
inline constexpr char kFieldEvent[] = "event";
inline constexpr char kFieldRank[] = "rank";

inline constexpr char kEventStart[] = "start";
inline constexpr char kEventIter[] = "iter";
inline constexpr char kEventSummary[] = "summary";
inline constexpr char kEventError[] = "error";

// `start`'s fields.
inline constexpr char kFieldModel[] = "model";
inline constexpr char kFieldParameters[] = "parameters";
inline constexpr char kFieldPrecision[] = "precision";  // in effect
inline constexpr char kFieldDevice[] = "device";
inline constexpr char kFieldWorldSize[] = "world_size";
inline constexpr char kFieldLocalRank[] = "local_rank";
inline constexpr char kFieldBatchSize[] = "batch_size";
inline constexpr char kFieldImageSize[] = "image_size";
inline constexpr char kFieldIterations[] = "iterations";
inline constexpr char kFieldWarmupIterations[] = "warmup_iterations";
inline constexpr char kFieldBackend[] = "backend";
inline constexpr char kFieldVersions[] = "versions";  // an object of strings
inline constexpr char kFieldRequestedPrecision[] = "requested_precision";
inline constexpr char kFieldLossScaling[] = "loss_scaling";
inline constexpr char kFieldData[] = "data";
inline constexpr char kFieldDatasetImages[] = "dataset_images";
inline constexpr char kFieldDatasetClasses[] = "dataset_classes";
inline constexpr char kFieldLoaderThreads[] = "loader_threads";
inline constexpr char kFieldChannelsLast[] = "channels_last";
inline constexpr char kFieldCudaGraphs[] = "cuda_graphs";
inline constexpr char kFieldCudaGraphsFallback[] = "cuda_graphs_fallback";
inline constexpr char kFieldHostMemoryCache[] = "host_memory_cache";
inline constexpr char kFieldLr[] = "lr";  // also in `iter`
inline constexpr char kFieldLrWarmupIterations[] = "lr_warmup_iterations";
inline constexpr char kFieldMomentum[] = "momentum";
inline constexpr char kFieldWeightDecay[] = "weight_decay";
inline constexpr char kFieldBnWeightDecay[] = "bn_weight_decay";
inline constexpr char kFieldLabelSmoothing[] = "label_smoothing";
inline constexpr char kFieldZeroInitResidual[] = "zero_init_residual";
inline constexpr char kFieldAllreduceBuckets[] = "allreduce_buckets";
inline constexpr char kFieldBroadcastBuffers[] = "broadcast_buffers";
inline constexpr char kFieldModelKind[] = "model_kind";
// true only from a simulated trainer (bench-sim-train): every figure of the run is simulated.
inline constexpr char kFieldSimulated[] = "simulated";

// `iter`'s fields (and kFieldLr).
inline constexpr char kFieldIteration[] = "iteration";  // 1-based
inline constexpr char kFieldStepTime[] = "step_time_s";
inline constexpr char kFieldImages[] = "images";
inline constexpr char kFieldLoss[] = "loss";
inline constexpr char kFieldDataTime[] = "data_time_s";
inline constexpr char kFieldElapsed[] = "elapsed_s";
inline constexpr char kFieldWarmup[] = "warmup";
inline constexpr char kFieldComputeTime[] = "compute_time_s";
inline constexpr char kFieldLossScale[] = "loss_scale";
// The step split (docs/trainer-events.md): forward and backward, the time blocked on the
// gradient all-reduce beyond what overlapped with backward, the optimizer step.
inline constexpr char kFieldForwardBackwardTime[] = "forward_backward_time_s";
inline constexpr char kFieldAllreduceWaitTime[] = "allreduce_wait_time_s";
inline constexpr char kFieldOptimizerTime[] = "optimizer_time_s";

// `summary`'s fields.
inline constexpr char kFieldMeasuredIterations[] = "measured_iterations";
inline constexpr char kFieldMeasuredImages[] = "measured_images";
inline constexpr char kFieldWindow[] = "window_s";
inline constexpr char kFieldImagesPerSecond[] = "images_per_second";
inline constexpr char kFieldStepTimeMedian[] = "step_time_median_s";
inline constexpr char kFieldStepTimeP50[] = "step_time_p50_s";
inline constexpr char kFieldStepTimeP90[] = "step_time_p90_s";
inline constexpr char kFieldStepTimeP99[] = "step_time_p99_s";
inline constexpr char kFieldDataTimeTotal[] = "data_time_total_s";
inline constexpr char kFieldComputeTimeTotal[] = "compute_time_total_s";
inline constexpr char kFieldComputeImagesPerSecond[] = "compute_images_per_second";
inline constexpr char kFieldSkippedSteps[] = "skipped_steps";
inline constexpr char kFieldNonfiniteLosses[] = "nonfinite_losses";
inline constexpr char kFieldCorruptFiles[] = "corrupt_files";
inline constexpr char kFieldPeakMemoryBytes[] = "peak_memory_bytes";
inline constexpr char kFieldSyntheticImagesPerSecond[] = "synthetic_images_per_second";
inline constexpr char kFieldDataVsCompute[] = "data_vs_compute";
inline constexpr char kFieldMaxRssBytes[] = "max_rss_bytes";

// `error`'s field.
inline constexpr char kFieldMessage[] = "message";

}  // namespace bench::trainer_contract
