// A folder of JPEG images in torchvision's ImageFolder layout (one sub-folder per
// class, classes in sorted order), decoded and augmented on worker threads.
//
// Torch-free. Each sample is decoded with libjpeg-turbo (DCT-domain downscaling
// and cropped decoding when the random crop allows), random-resized-cropped
// (torchvision semantics: scale 0.08..1, ratio 3/4..4/3, 10 tries then a centre
// crop) to image_size x image_size with bilinear interpolation, and flipped
// horizontally with probability 1/2. Batches are uint8 NHWC RGB (the trainer
// normalises with ImageNet's mean and std on the device, as NVIDIA DALI does),
// written into `num_slots` buffers that the caller allocates (e.g. pinned
// memory), so up to num_slots - 1 batches are prepared ahead of the consumer.
//
// Sampling: a fresh permutation of all files every epoch (seeded); rank r of w
// takes every w-th entry (the tail that does not divide evenly is dropped, as
// DistributedSampler(drop_last=True)). Augmentation draws from a generator seeded
// by (seed, rank, batch, position), so batches do not depend on thread timing.
//
// A file that fails to decode (corrupt, truncated header, not a JPEG, a colour
// space libjpeg cannot convert) is reported once on stderr, counted, never read
// again, and replaced by the next file of the permutation. Open() fails, naming
// the path, for a missing folder, a folder without class sub-folders, or no
// image files; Next() fails if every file turned out to be unreadable.
//
// The threads, the slot ring and the ordering are the prefetch engine's (prefetch.h).
//
// Thread-safety: Next() and Release() from one consumer thread; counters from
// any thread. The destructor stops and joins the workers.
#ifndef BENCHFLEET_WORKER_TRAIN_IMAGE_FOLDER_H_
#define BENCHFLEET_WORKER_TRAIN_IMAGE_FOLDER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "worker/train/prefetch.h"
#include "worker/train/status.h"

namespace bench_train {

// What `path` is, following symbolic links; false when it cannot be stat'ed. The data
// sources' folder checks (image folders, COCO folders).
bool IsDirectory(const std::string& path);
bool IsRegularFile(const std::string& path);

// Decodes the JPEG file at `path` whole (no crop, no flip) and resizes it with the
// loader's bilinear resampling to size x size x 3 uint8 RGB in `out` (the COCO source,
// coco_source.h). False with `why` set for a file that cannot be opened or read, is not
// a JPEG or fails to decode. Thread-safe (per-thread scratch).
bool DecodeJpegFileResized(const std::string& path, int size, uint8_t* out, std::string* why);

struct ImageFolderOptions {
  std::string root;
  int64_t batch_size = 32;
  int64_t image_size = 224;
  int threads = 4;
  int num_slots = 4;  // >= 2
  uint64_t seed = 1;
  int rank = 0;
  int world_size = 1;
};

// One decoded batch: `images` is [batch, size, size, 3] uint8, `labels` int64.
struct LoadedBatch {
  int64_t number = 0;  // 0-based, consecutive
  int slot = 0;
  uint8_t* images = nullptr;
  int64_t* labels = nullptr;
};

class ImageFolderLoader {
 public:
  // Returns `bytes` of memory for one slot, 64-byte aligned, valid for the
  // loader's lifetime (the caller keeps ownership). Called num_slots times in Open.
  using Allocator = std::function<void*(size_t bytes)>;

  static StatusOr<std::unique_ptr<ImageFolderLoader>> Open(const ImageFolderOptions& options,
                                                           const Allocator& allocate);
  ~ImageFolderLoader();
  ImageFolderLoader(const ImageFolderLoader&) = delete;
  ImageFolderLoader& operator=(const ImageFolderLoader&) = delete;

  // Blocks until the next batch (in order) is complete.
  StatusOr<LoadedBatch> Next();
  // Gives the batch's slot back to the workers (after its data has been copied,
  // e.g. once the copy's CUDA event has completed).
  void Release(const LoadedBatch& batch);

  int64_t num_files() const { return static_cast<int64_t>(files_.size()); }
  int64_t num_classes() const { return static_cast<int64_t>(classes_.size()); }
  const std::vector<std::string>& classes() const { return classes_; }
  int64_t corrupt_files() const { return corrupt_count_.load(); }
  static size_t SlotBytes(int64_t batch_size, int64_t image_size);

 private:
  struct File {
    std::string path;
    int64_t label = 0;
  };
  ImageFolderLoader() = default;
  // Decodes one sample of a batch into its slot (the prefetch engine's fill).
  Status FillSample(const PrefetchItem& item);
  // Decodes file `index` into `out` (size x size x 3); false if unreadable.
  bool LoadSample(int64_t index, uint64_t rng_seed, uint8_t* out);
  int64_t FileAt(int64_t position);  // position in this rank's endless stream
  const std::vector<int64_t>& Permutation(int64_t epoch);  // with perm_mu_ held

  ImageFolderOptions options_;
  std::vector<std::string> classes_;
  std::vector<File> files_;
  std::vector<uint8_t*> slots_;
  int64_t per_rank_ = 0;
  std::unique_ptr<std::atomic<bool>[]> bad_;
  std::atomic<int64_t> corrupt_count_{0};

  std::mutex perm_mu_;
  std::map<int64_t, std::vector<int64_t>> permutations_;

  std::unique_ptr<PrefetchEngine> engine_;  // last: its threads stop before the rest goes
};

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_IMAGE_FOLDER_H_
