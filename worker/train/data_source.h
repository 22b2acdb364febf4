// Where a rank's batches come from.
//
// OpenDataSource gives, for options.data:
//   "synthetic"    one random batch made once on the device (measures compute alone);
//                  for a detection model (common/names.h) each image also gets 1 to
//                  kMaxSyntheticObjects random boxes and classes, encoded against the
//                  default boxes once (detection.h, EncodeTargets) and replayed every
//                  step, as NVIDIA's synthetic mode does;
//   "imagefolder"  JPEGs decoded on loader threads (image_folder.h) into host slots
//                  (pinned on CUDA); on CUDA each batch is copied asynchronously into
//                  one device buffer, and a slot goes back to the loader once the step
//                  that used it is known to be complete (Done);
//   "coco"         a COCO-format folder for detection models (coco_source.h): JPEGs
//                  decoded and their boxes encoded on loader threads, the same slots.
// A missing or empty folder is an error here, before any training. Used by one
// thread (the rank's training loop).
#ifndef BENCHFLEET_WORKER_TRAIN_DATA_SOURCE_H_
#define BENCHFLEET_WORKER_TRAIN_DATA_SOURCE_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>

#include "worker/train/options.h"
#include "worker/train/status.h"

namespace bench_train {

// A batch's images and the targets its model's loss reads (models.h, TrainableModel).
// Classification: `labels` [N] int64, `boxes` undefined. Detection: `labels` [N, B]
// int64 per default box (0: background), `boxes` [N, 4, B] fp32 encoded offsets
// (detection.h, EncodeTargets); a real detection source (COCO-format folders) encodes
// its images' ground truths the same way and fills the same two tensors.
struct DeviceBatch {
  int64_t number = 0;
  at::Tensor images;  // float NCHW or uint8 NHWC, on the device
  at::Tensor labels;
  at::Tensor boxes;
};

class DataSource {
 public:
  virtual ~DataSource() = default;
  // The next batch, on the device (for CUDA: the copy is enqueued on the
  // current stream). The host time spent here is the step's data time.
  virtual StatusOr<DeviceBatch> Next() = 0;
  // The step that used batch `number` has completed on the device.
  virtual void Done(int64_t number) { (void)number; }
  virtual int64_t corrupt_files() const { return 0; }
  // imagefolder: files and class folders found, decode threads; 0 otherwise.
  virtual int64_t dataset_images() const { return 0; }
  virtual int64_t dataset_classes() const { return 0; }
  virtual int loader_threads() const { return 0; }
};

// Synthetic detection data: objects per image, drawn uniformly from 1..this.
inline constexpr int kMaxSyntheticObjects = 5;

// Host slots an image-folder source keeps in flight: enough for the steps whose
// reading lags behind (one) plus the loader's prefetch.
inline constexpr int kImageFolderSlots = 4;

StatusOr<std::unique_ptr<DataSource>> OpenDataSource(const TrainOptions& options,
                                                     const c10::Device& device);

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_DATA_SOURCE_H_
