#include "worker/train/coco_source.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <exception>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "common/log.h"
#include "worker/train/coco_annotations.h"
#include "worker/train/detection.h"
#include "worker/train/image_folder.h"
#include "worker/train/prefetch.h"

namespace bench_train {
namespace {

uint64_t Mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class CocoData : public DataSource {
 public:
  static StatusOr<std::unique_ptr<DataSource>> Open(const TrainOptions& options,
                                                    const c10::Device& device);
  ~CocoData() override;

  StatusOr<DeviceBatch> Next() override;
  void Done(int64_t number) override;
  int64_t dataset_images() const override { return static_cast<int64_t>(images_.size()); }
  int64_t dataset_classes() const override { return classes_; }
  int loader_threads() const override { return engine_->options().threads; }

 private:
  struct Slot {
    at::Tensor images;   // [N, S, S, 3] uint8
    at::Tensor labels;   // [N, B] int64
    at::Tensor offsets;  // [N, 4, B] fp32
  };
  CocoData() = default;
  // Decodes one sample and encodes its boxes into its slot (the prefetch engine's fill).
  Status FillSample(const PrefetchItem& item);
  bool LoadSample(int64_t item, Slot& slot, std::string* why);
  int64_t ImageAt(int64_t position);

  c10::Device device_ = c10::Device(c10::kCPU);
  int64_t batch_size_ = 0;
  int image_size_ = 0;
  uint64_t seed_ = 1;
  int rank_ = 0;
  int world_size_ = 1;
  int64_t per_rank_ = 0;
  int64_t classes_ = 0;
  std::string images_dir_;
  std::vector<CocoImage> images_;
  at::Tensor default_boxes_;

  std::mutex perm_mu_;
  std::map<int64_t, std::vector<int64_t>> permutations_;

  std::vector<Slot> slots_;
  at::Tensor device_images_, device_labels_, device_offsets_;
  std::unique_ptr<PrefetchEngine> engine_;  // last: its threads stop before the rest goes
};

StatusOr<std::unique_ptr<DataSource>> CocoData::Open(const TrainOptions& options,
                                                     const c10::Device& device) {
  BENCH_TRAIN_ASSIGN_OR_RETURN(CocoFolder folder, LocateCocoFolder(options.data_dir));
  auto read = ReadCocoAnnotations(folder.annotations_file);
  if (!read.ok()) return InvalidArgumentError("--data coco: " + read.status().message());
  CocoAnnotations annotations = std::move(read).value();
  const std::string where = "--data coco: " + folder.annotations_file;
  if (annotations.images.empty()) {
    return InvalidArgumentError(where + ": no image with a box");
  }
  if (annotations.num_classes() > options.num_classes) {
    return InvalidArgumentError(
        where + ": " + std::to_string(annotations.num_classes() - 1) +
        " categories, but --num-classes is " + std::to_string(options.num_classes) +
        " (the background and at most " + std::to_string(options.num_classes - 1) + " categories)");
  }
  for (const CocoImage& image : annotations.images) {
    const std::string path = folder.images_dir + "/" + image.file_name;
    if (!IsRegularFile(path)) {
      return InvalidArgumentError("--data coco: image " + path + " (id " +
                                  std::to_string(image.id) + " in " + folder.annotations_file +
                                  ") does not exist or is not a file");
    }
  }
  const int world = options.rendezvous.world_size;
  const int64_t per_rank = static_cast<int64_t>(annotations.images.size()) / world;
  if (per_rank == 0) {
    return InvalidArgumentError(where + ": " + std::to_string(annotations.images.size()) +
                                " images with boxes for " + std::to_string(world) + " ranks");
  }

  std::unique_ptr<CocoData> data(new CocoData());
  data->device_ = device;
  data->batch_size_ = options.batch_size;
  data->image_size_ = static_cast<int>(options.image_size);
  data->seed_ = options.seed;
  data->rank_ = options.rendezvous.rank;
  data->world_size_ = world;
  data->per_rank_ = per_rank;
  data->classes_ = annotations.num_classes() - 1;
  data->images_dir_ = folder.images_dir;
  data->images_ = std::move(annotations.images);
  data->default_boxes_ = MakeDefaultBoxes();
  const int64_t boxes = data->default_boxes_.size(0);
  const auto host = at::TensorOptions().pinned_memory(device.is_cuda());
  const int64_t n = options.batch_size;
  const int64_t s = options.image_size;
  for (int i = 0; i < kImageFolderSlots; ++i) {
    Slot slot;
    slot.images = at::empty({n, s, s, 3}, host.dtype(at::kByte));
    slot.labels = at::empty({n, boxes}, host.dtype(at::kLong));
    slot.offsets = at::empty({n, 4, boxes}, host.dtype(at::kFloat));
    data->slots_.push_back(std::move(slot));
  }
  if (device.is_cuda()) {
    const auto on_device = at::TensorOptions().device(device);
    data->device_images_ = at::empty({n, s, s, 3}, on_device.dtype(at::kByte));
    data->device_labels_ = at::empty({n, boxes}, on_device.dtype(at::kLong));
    data->device_offsets_ = at::empty({n, 4, boxes}, on_device.dtype(at::kFloat));
  }
  PrefetchOptions prefetch;
  prefetch.batch_size = options.batch_size;
  prefetch.num_slots = kImageFolderSlots;
  prefetch.threads = options.loader_threads > 0
                         ? options.loader_threads
                         : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  CocoData* raw = data.get();
  auto engine = PrefetchEngine::Start(
      prefetch, [raw](const PrefetchItem& item) { return raw->FillSample(item); });
  if (!engine.ok()) return engine.status();
  data->engine_ = std::move(engine).value();
  return std::unique_ptr<DataSource>(std::move(data));
}

CocoData::~CocoData() {
  engine_.reset();  // stops and joins the threads while the images and slots are still here
}

int64_t CocoData::ImageAt(int64_t position) {
  const int64_t epoch = position / per_rank_;
  const int64_t k = position % per_rank_;
  std::lock_guard<std::mutex> lock(perm_mu_);
  auto it = permutations_.find(epoch);
  if (it == permutations_.end()) {
    while (!permutations_.empty() && permutations_.begin()->first < epoch - 1) {
      permutations_.erase(permutations_.begin());
    }
    std::vector<int64_t> order(images_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
    std::mt19937_64 rng(Mix(seed_ * 1000003ULL + static_cast<uint64_t>(epoch)));
    std::shuffle(order.begin(), order.end(), rng);
    it = permutations_.emplace(epoch, std::move(order)).first;
  }
  return it->second[k * world_size_ + rank_];
}

bool CocoData::LoadSample(int64_t item, Slot& slot, std::string* why) {
  const CocoImage& image = images_[ImageAt(item)];
  const int64_t j = item % batch_size_;
  const std::string path = images_dir_ + "/" + image.file_name;
  const size_t image_bytes = static_cast<size_t>(image_size_) * image_size_ * 3;
  uint8_t* out = slot.images.data_ptr<uint8_t>() + static_cast<size_t>(j) * image_bytes;
  std::string decode_error;
  if (!DecodeJpegFileResized(path, image_size_, out, &decode_error)) {
    *why = "--data coco: image " + path + ": " + decode_error;
    return false;
  }
  const int64_t m = static_cast<int64_t>(image.boxes.size());
  at::Tensor ltrb = at::empty({m, 4}, at::kFloat);
  at::Tensor classes = at::empty({m}, at::kLong);
  auto box = ltrb.accessor<float, 2>();
  auto label = classes.accessor<int64_t, 1>();
  for (int64_t i = 0; i < m; ++i) {
    const CocoBox& b = image.boxes[static_cast<size_t>(i)];
    box[i][0] = b.left;
    box[i][1] = b.top;
    box[i][2] = b.right;
    box[i][3] = b.bottom;
    label[i] = b.label;
  }
  const EncodedTargets targets = EncodeTargets(ltrb, classes, default_boxes_);
  slot.labels[j].copy_(targets.labels);
  slot.offsets[j].copy_(targets.offsets);
  return true;
}

Status CocoData::FillSample(const PrefetchItem& item) {
  std::string why;
  try {
    if (LoadSample(item.index, slots_[static_cast<size_t>(item.slot)], &why)) return Status();
  } catch (const std::exception& e) {
    why = std::string("--data coco: encoding an image's boxes: ") + e.what();
  }
  return InvalidArgumentError(why);
}

StatusOr<DeviceBatch> CocoData::Next() {
  auto next = engine_->Next();
  if (!next.ok()) return next.status();
  const int64_t number = next->number;
  Slot* slot = &slots_[static_cast<size_t>(next->slot)];
  if (!device_.is_cuda()) return DeviceBatch{number, slot->images, slot->labels, slot->offsets};
  device_images_.copy_(slot->images, /*non_blocking=*/true);
  device_labels_.copy_(slot->labels, /*non_blocking=*/true);
  device_offsets_.copy_(slot->offsets, /*non_blocking=*/true);
  return DeviceBatch{number, device_images_, device_labels_, device_offsets_};
}

void CocoData::Done(int64_t number) { engine_->Release(number); }

}  // namespace

StatusOr<CocoFolder> LocateCocoFolder(const std::string& root) {
  auto found = FindCocoAnnotationFile(root, "train");
  if (!found.ok()) found = FindCocoAnnotationFile(root, "");
  if (!found.ok()) return InvalidArgumentError("--data coco: " + found.status().message());
  CocoFolder folder;
  folder.annotations_file = found.value();
  const std::string name = folder.annotations_file.substr(folder.annotations_file.rfind('/') + 1);
  const std::string split = name.substr(10, name.size() - 10 - 5);  // instances_<split>.json
  folder.images_dir = !split.empty() && IsDirectory(root + "/" + split) ? root + "/" + split : root;
  return folder;
}

StatusOr<std::unique_ptr<DataSource>> OpenCocoSource(const TrainOptions& options,
                                                     const c10::Device& device) {
  return CocoData::Open(options, device);
}

}  // namespace bench_train
