#include "worker/train/data_source.h"

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "common/names.h"
#include "worker/train/coco_source.h"
#include "worker/train/detection.h"
#include "worker/train/image_folder.h"

namespace bench_train {
namespace {

// One image's random ground truth: 1..kMaxSyntheticObjects boxes with sides of 5% to
// 50% of the image, anywhere inside it, and classes 1..num_classes-1.
EncodedTargets SyntheticImageTargets(int64_t num_classes, const at::Tensor& default_boxes) {
  const int64_t objects = at::randint(1, kMaxSyntheticObjects + 1, {1}).item<int64_t>();
  const at::Tensor size = at::rand({objects, 2}) * 0.45 + 0.05;
  const at::Tensor left_top = at::rand({objects, 2}) * (1 - size);
  const at::Tensor boxes = at::cat({left_top, left_top + size}, 1);
  const at::Tensor classes = at::randint(1, num_classes, {objects}, at::kLong);
  return EncodeTargets(boxes, classes, default_boxes);
}

class SyntheticData : public DataSource {
 public:
  SyntheticData(const TrainOptions& options, const c10::Device& device) {
    torch::manual_seed(options.seed + 1 + static_cast<uint64_t>(options.rendezvous.rank));
    const auto on_device = at::TensorOptions().device(device);
    images_ = at::randn({options.batch_size, 3, options.image_size, options.image_size},
                        on_device.dtype(at::kFloat));
    const bench::ModelInfo* model = bench::FindModel(options.model);
    if (model != nullptr && model->data_kind == bench::DataKind::kDetection) {
      const at::Tensor default_boxes = MakeDefaultBoxes();
      std::vector<at::Tensor> labels, boxes;
      for (int64_t i = 0; i < options.batch_size; ++i) {
        EncodedTargets targets = SyntheticImageTargets(options.num_classes, default_boxes);
        labels.push_back(targets.labels);
        boxes.push_back(targets.offsets);
      }
      labels_ = at::stack(labels).to(device);
      boxes_ = at::stack(boxes).to(device);
    } else {
      labels_ =
          at::randint(0, options.num_classes, {options.batch_size}, on_device.dtype(at::kLong));
    }
  }
  StatusOr<DeviceBatch> Next() override {
    return DeviceBatch{next_++, images_, labels_, boxes_};
  }

 private:
  int64_t next_ = 0;
  at::Tensor images_;
  at::Tensor labels_;
  at::Tensor boxes_;
};

class ImageFolderData : public DataSource {
 public:
  static StatusOr<std::unique_ptr<DataSource>> Open(const TrainOptions& options,
                                                    const c10::Device& device) {
    std::unique_ptr<ImageFolderData> data(new ImageFolderData());
    data->device_ = device;
    data->batch_size_ = options.batch_size;
    data->image_size_ = options.image_size;
    data->threads_ = options.loader_threads > 0
                         ? options.loader_threads
                         : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    ImageFolderOptions loader;
    loader.root = options.data_dir;
    loader.batch_size = options.batch_size;
    loader.image_size = options.image_size;
    loader.threads = data->threads_;
    loader.num_slots = kImageFolderSlots;
    loader.seed = options.seed;
    loader.rank = options.rendezvous.rank;
    loader.world_size = options.rendezvous.world_size;
    ImageFolderData* raw = data.get();
    auto opened = ImageFolderLoader::Open(loader, [raw, device](size_t bytes) -> void* {
      at::Tensor slot = at::empty({static_cast<int64_t>(bytes)},
                                  at::TensorOptions(at::kByte).pinned_memory(device.is_cuda()));
      raw->slot_memory_.push_back(slot);
      return slot.data_ptr();
    });
    if (!opened.ok()) return opened.status();
    data->loader_ = std::move(opened).value();

    const int64_t classes = data->loader_->num_classes();
    if (classes > options.num_classes) {
      return InvalidArgumentError("--data imagefolder: " + std::to_string(classes) +
                                  " classes under '" + options.data_dir +
                                  "' but --num-classes is " + std::to_string(options.num_classes));
    }
    if (classes != options.num_classes) {
      bench::Log("rank ", options.rendezvous.rank, ": note: ", classes, " class folders, ",
                 options.num_classes, " classifier outputs (--num-classes)");
    }
    if (device.is_cuda()) {
      const auto on_device = at::TensorOptions().device(device);
      data->device_images_ =
          at::empty({options.batch_size, options.image_size, options.image_size, 3},
                    on_device.dtype(at::kByte));
      data->device_labels_ = at::empty({options.batch_size}, on_device.dtype(at::kLong));
    }
    return std::unique_ptr<DataSource>(std::move(data));
  }

  StatusOr<DeviceBatch> Next() override {
    auto next = loader_->Next();
    if (!next.ok()) return next.status();
    const LoadedBatch batch = next.value();
    in_flight_[batch.number] = batch;
    const at::Tensor images = at::from_blob(
        batch.images, {batch_size_, image_size_, image_size_, 3}, at::TensorOptions(at::kByte));
    const at::Tensor labels =
        at::from_blob(batch.labels, {batch_size_}, at::TensorOptions(at::kLong));
    if (!device_.is_cuda()) return DeviceBatch{batch.number, images, labels, at::Tensor()};
    device_images_.copy_(images, /*non_blocking=*/true);
    device_labels_.copy_(labels, /*non_blocking=*/true);
    return DeviceBatch{batch.number, device_images_, device_labels_, at::Tensor()};
  }

  void Done(int64_t number) override {
    auto it = in_flight_.find(number);
    if (it == in_flight_.end()) return;
    loader_->Release(it->second);
    in_flight_.erase(it);
  }

  int64_t corrupt_files() const override { return loader_->corrupt_files(); }
  int64_t dataset_images() const override { return loader_->num_files(); }
  int64_t dataset_classes() const override { return loader_->num_classes(); }
  int loader_threads() const override { return threads_; }

 private:
  ImageFolderData() = default;
  c10::Device device_ = c10::Device(c10::kCPU);
  int64_t batch_size_ = 0;
  int64_t image_size_ = 0;
  int threads_ = 0;
  std::vector<at::Tensor> slot_memory_;  // declared before loader_: outlives it
  std::unique_ptr<ImageFolderLoader> loader_;
  std::map<int64_t, LoadedBatch> in_flight_;
  at::Tensor device_images_;
  at::Tensor device_labels_;
};

}  // namespace

StatusOr<std::unique_ptr<DataSource>> OpenDataSource(const TrainOptions& options,
                                                     const c10::Device& device) {
  if (options.data == kDataImageFolder) return ImageFolderData::Open(options, device);
  if (options.data == bench::kDataCoco) {
#ifdef BENCH_WITH_COCO
    return OpenCocoSource(options, device);
#else
    return UnimplementedError("--data coco: this bench-train was built without nlohmann-json "
                              "(install nlohmann-json3-dev and rebuild)");
#endif
  }
  return std::unique_ptr<DataSource>(new SyntheticData(options, device));
}

}  // namespace bench_train
