// bench-train's JPEG ImageFolder loader alone: decode, random-resized-crop, flip
// into uint8 NHWC batches, with no training behind it. Pulls `--batches` batches
// after `--warmup` and prints one JSON line: images per second over the measured
// batches (the loader's ceiling: a trainer consuming faster than this waits on data).
// Usage: jpeg_loader_bench --root DIR [--threads N] [--bs N] [--image-size N]
//                          [--batches N] [--warmup N]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "worker/train/image_folder.h"

namespace {

using bench_train::ImageFolderLoader;
using bench_train::ImageFolderOptions;

int Usage(const char* why) {
  std::fprintf(stderr, "jpeg_loader_bench: %s\n", why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  ImageFolderOptions options;
  options.threads = 1;
  options.batch_size = 64;
  int batches = 20;
  int warmup = 2;
  if (argc % 2 == 0) return Usage("flags come in pairs: --flag value");
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--root") {
      options.root = value;
    } else if (flag == "--threads") {
      options.threads = std::atoi(value.c_str());
    } else if (flag == "--bs") {
      options.batch_size = std::atoll(value.c_str());
    } else if (flag == "--image-size") {
      options.image_size = std::atoll(value.c_str());
    } else if (flag == "--batches") {
      batches = std::atoi(value.c_str());
    } else if (flag == "--warmup") {
      warmup = std::atoi(value.c_str());
    } else {
      return Usage(("unknown flag " + flag).c_str());
    }
  }
  if (options.root.empty() || options.threads < 1 || options.batch_size < 1 || batches < 1 ||
      warmup < 0) {
    return Usage("needs --root DIR, and --threads, --bs, --batches >= 1");
  }

  std::vector<std::unique_ptr<void, decltype(&std::free)>> slots;
  auto opened = ImageFolderLoader::Open(options, [&slots](size_t bytes) -> void* {
    slots.emplace_back(std::aligned_alloc(64, (bytes + 63) / 64 * 64), &std::free);
    return slots.back().get();
  });
  if (!opened.ok()) return Usage(opened.status().message().c_str());
  std::unique_ptr<ImageFolderLoader> loader = std::move(opened).value();

  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  for (int i = 0; i < warmup + batches; ++i) {
    if (i == warmup) start = Clock::now();
    auto batch = loader->Next();
    if (!batch.ok()) return Usage(batch.status().message().c_str());
    loader->Release(batch.value());
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double images = static_cast<double>(batches) * static_cast<double>(options.batch_size);
  std::printf(
      "{\"threads\":%d,\"batch_size\":%lld,\"image_size\":%lld,\"files\":%lld,"
      "\"measured_images\":%.0f,\"seconds\":%.3f,\"images_per_second\":%.1f,"
      "\"corrupt_files\":%lld}\n",
      options.threads, static_cast<long long>(options.batch_size),
      static_cast<long long>(options.image_size), static_cast<long long>(loader->num_files()),
      images, seconds, images / seconds, static_cast<long long>(loader->corrupt_files()));
  return 0;
}
