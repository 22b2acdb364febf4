#include "worker/train/image_folder.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <random>

#ifdef BENCH_WITH_JPEG
// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>
#include <jerror.h>
#endif

#include "common/log.h"

namespace bench_train {

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

namespace {

constexpr size_t kAlign = 64;

size_t AlignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

std::vector<std::string> ListDirectory(const std::string& path) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return names;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    names.push_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

// torchvision's IMG_EXTENSIONS: files with other names are not samples at all.
bool HasImageExtension(const std::string& name) {
  static const char* const kExtensions[] = {".jpg", ".jpeg", ".png", ".ppm", ".bmp",
                                            ".pgm", ".tif",  ".tiff", ".webp"};
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* ext : kExtensions) {
    const size_t n = std::strlen(ext);
    if (lower.size() > n && lower.compare(lower.size() - n, n, ext) == 0) return true;
  }
  return false;
}

// Image files under `dir`, recursively, sorted (as torchvision's make_dataset).
void CollectFiles(const std::string& dir, std::vector<std::string>* out) {
  for (const auto& name : ListDirectory(dir)) {
    const std::string path = dir + "/" + name;
    if (IsDirectory(path)) {
      CollectFiles(path, out);
    } else if (HasImageExtension(name) && IsRegularFile(path)) {
      out->push_back(path);
    }
  }
}

uint64_t Mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct CropBox {
  int x = 0, y = 0, w = 0, h = 0;
};

// torchvision.transforms.RandomResizedCrop.get_params.
CropBox RandomResizedCrop(int width, int height, std::mt19937_64& rng) {
  const double area = static_cast<double>(width) * height;
  std::uniform_real_distribution<double> scale(0.08, 1.0);
  std::uniform_real_distribution<double> log_ratio(std::log(3.0 / 4.0), std::log(4.0 / 3.0));
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * scale(rng);
    const double ratio = std::exp(log_ratio(rng));
    const int w = static_cast<int>(std::lround(std::sqrt(target * ratio)));
    const int h = static_cast<int>(std::lround(std::sqrt(target / ratio)));
    if (w > 0 && h > 0 && w <= width && h <= height) {
      std::uniform_int_distribution<int> y(0, height - h);
      std::uniform_int_distribution<int> x(0, width - w);
      CropBox box;
      box.y = y(rng);
      box.x = x(rng);
      box.w = w;
      box.h = h;
      return box;
    }
  }
  const double in_ratio = static_cast<double>(width) / height;
  CropBox box;
  if (in_ratio < 3.0 / 4.0) {
    box.w = width;
    box.h = std::min(height, static_cast<int>(std::lround(box.w / (3.0 / 4.0))));
  } else if (in_ratio > 4.0 / 3.0) {
    box.h = height;
    box.w = std::min(width, static_cast<int>(std::lround(box.h * (4.0 / 3.0))));
  } else {
    box.w = width;
    box.h = height;
  }
  box.y = (height - box.h) / 2;
  box.x = (width - box.w) / 2;
  return box;
}

#ifdef BENCH_WITH_JPEG
struct JpegError {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void OnJpegError(j_common_ptr cinfo) {
  auto* error = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, error->message);
  std::longjmp(error->jump, 1);
}

void OnJpegMessage(j_common_ptr /*cinfo*/) {}  // warnings are inspected, not printed

// Per-thread scratch buffers.
struct Scratch {
  std::vector<uint8_t> file;
  std::vector<uint8_t> row;    // one decoded row (3 or 4 components)
  std::vector<uint8_t> crop;   // decoded crop rows, RGB
};

// Decodes the part of the JPEG in `data` that covers a random resized crop (the
// whole image when `rng` is null) and resamples it into `out` (size x size x 3).
// Locals that live across setjmp are plain data or owned by the caller. Returns
// false with `why` set on failure.
bool DecodeCrop(const uint8_t* data, size_t bytes, int size, std::mt19937_64* rng, bool flip,
                Scratch& scratch, uint8_t* out, std::string* why) {
  jpeg_decompress_struct cinfo;
  JpegError error;
  cinfo.err = jpeg_std_error(&error.manager);
  error.manager.error_exit = OnJpegError;
  error.manager.output_message = OnJpegMessage;
  error.message[0] = '\0';
  if (setjmp(error.jump)) {
    jpeg_destroy_decompress(&cinfo);
    *why = error.message;
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, const_cast<unsigned char*>(data), static_cast<unsigned long>(bytes));
  jpeg_read_header(&cinfo, TRUE);
  const int width = static_cast<int>(cinfo.image_width);
  const int height = static_cast<int>(cinfo.image_height);
  CropBox box;
  if (rng != nullptr) {
    box = RandomResizedCrop(width, height, *rng);
  } else {
    box.w = width;
    box.h = height;
  }

  // The smallest DCT scale (n/8) that keeps the crop at least `size` pixels wide
  // and high, so the bilinear resample never shrinks by more than about 2x.
  int scale = 8;
  for (int n = 1; n < 8; ++n) {
    if (box.w * n / 8 >= size && box.h * n / 8 >= size) {
      scale = n;
      break;
    }
  }
  cinfo.scale_num = static_cast<unsigned int>(scale);
  cinfo.scale_denom = 8;
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  jpeg_start_decompress(&cinfo);
  const int components = static_cast<int>(cinfo.output_components);
  const double fx = static_cast<double>(cinfo.output_width) / width;
  const double fy = static_cast<double>(cinfo.output_height) / height;
  const double sx0 = box.x * fx;
  const double sy0 = box.y * fy;
  const double sw = box.w * fx;
  const double sh = box.h * fy;
  const int out_h = static_cast<int>(cinfo.output_height);
  const int row0 = std::max(0, static_cast<int>(std::floor(sy0)));
  const int row1 = std::min(out_h, static_cast<int>(std::ceil(sy0 + sh)) + 1);
  JDIMENSION col0 = static_cast<JDIMENSION>(std::max(0, static_cast<int>(std::floor(sx0))));
  JDIMENSION cols = static_cast<JDIMENSION>(
      std::min(static_cast<int>(cinfo.output_width), static_cast<int>(std::ceil(sx0 + sw)) + 1) -
      static_cast<int>(col0));
  jpeg_crop_scanline(&cinfo, &col0, &cols);  // widens to iMCU boundaries
  const int crop_rows = row1 - row0;
  if (row0 > 0) jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(row0));
  scratch.row.resize(static_cast<size_t>(cols) * components);
  scratch.crop.resize(static_cast<size_t>(cols) * 3 * crop_rows);
  for (int r = 0; r < crop_rows; ++r) {
    JSAMPROW row = scratch.row.data();
    if (jpeg_read_scanlines(&cinfo, &row, 1) != 1) break;
    uint8_t* dst = scratch.crop.data() + static_cast<size_t>(r) * cols * 3;
    if (components == 3) {
      std::memcpy(dst, row, static_cast<size_t>(cols) * 3);
    } else if (components == 4) {  // Adobe (inverted) CMYK, as PIL converts it
      for (JDIMENSION c = 0; c < cols; ++c) {
        const int k = row[c * 4 + 3];
        for (int ch = 0; ch < 3; ++ch) dst[c * 3 + ch] = static_cast<uint8_t>(row[c * 4 + ch] * k / 255);
      }
    } else {
      for (JDIMENSION c = 0; c < cols; ++c) dst[c * 3] = dst[c * 3 + 1] = dst[c * 3 + 2] = row[c];
    }
  }
  const bool truncated = error.manager.num_warnings > 0 && error.manager.last_jpeg_message == JWRN_JPEG_EOF;
  jpeg_abort_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  if (truncated) {
    *why = "premature end of JPEG data";
    return false;
  }

  // Bilinear (half-pixel centres, like align_corners=False) from the crop rows
  // into size x size, mirrored when `flip`.
  const double x_origin = sx0 - static_cast<double>(col0);
  const double y_origin = sy0 - row0;
  std::vector<int> xi(static_cast<size_t>(size) * 2);
  std::vector<float> xw(static_cast<size_t>(size));
  for (int x = 0; x < size; ++x) {
    double src = x_origin + (x + 0.5) * sw / size - 0.5;
    src = std::min(std::max(src, 0.0), static_cast<double>(cols) - 1);
    const int i0 = static_cast<int>(src);
    const int i1 = std::min(i0 + 1, static_cast<int>(cols) - 1);
    const int dst = flip ? size - 1 - x : x;
    xi[dst * 2] = i0 * 3;
    xi[dst * 2 + 1] = i1 * 3;
    xw[dst] = static_cast<float>(src - i0);
  }
  for (int y = 0; y < size; ++y) {
    double src = y_origin + (y + 0.5) * sh / size - 0.5;
    src = std::min(std::max(src, 0.0), static_cast<double>(crop_rows) - 1);
    const int j0 = static_cast<int>(src);
    const int j1 = std::min(j0 + 1, crop_rows - 1);
    const float wy = static_cast<float>(src - j0);
    const uint8_t* r0 = scratch.crop.data() + static_cast<size_t>(j0) * cols * 3;
    const uint8_t* r1 = scratch.crop.data() + static_cast<size_t>(j1) * cols * 3;
    uint8_t* dst = out + static_cast<size_t>(y) * size * 3;
    for (int x = 0; x < size; ++x) {
      const int a = xi[x * 2];
      const int b = xi[x * 2 + 1];
      const float wx = xw[x];
      for (int ch = 0; ch < 3; ++ch) {
        const float top = r0[a + ch] + (r0[b + ch] - r0[a + ch]) * wx;
        const float bottom = r1[a + ch] + (r1[b + ch] - r1[a + ch]) * wx;
        dst[x * 3 + ch] = static_cast<uint8_t>(top + (bottom - top) * wy + 0.5f);
      }
    }
  }
  return true;
}
#else
struct Scratch {
  std::vector<uint8_t> file;
};
bool DecodeCrop(const uint8_t*, size_t, int, std::mt19937_64*, bool, Scratch&, uint8_t*,
                std::string* why) {
  *why = "this bench-train was built without libjpeg";
  return false;
}
#endif

// Reads the file at `path` into scratch.file and checks the JPEG signature.
bool ReadJpegFile(const std::string& path, Scratch& scratch, std::string* why) {
  bool ok = false;
  if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
    std::fseek(f, 0, SEEK_END);
    const long size = std::ftell(f);
    std::fseek(f, 0, SEEK_SET);
    if (size > 0) {
      scratch.file.resize(static_cast<size_t>(size));
      ok = std::fread(scratch.file.data(), 1, scratch.file.size(), f) == scratch.file.size();
    }
    std::fclose(f);
    if (!ok) *why = "cannot read the file";
  } else {
    *why = std::string("cannot open: ") + std::strerror(errno);
  }
  if (ok && (scratch.file.size() < 4 || scratch.file[0] != 0xFF || scratch.file[1] != 0xD8)) {
    ok = false;
    *why = "not a JPEG file";
  }
  return ok;
}

}  // namespace

bool DecodeJpegFileResized(const std::string& path, int size, uint8_t* out, std::string* why) {
  thread_local Scratch scratch;
  return ReadJpegFile(path, scratch, why) &&
         DecodeCrop(scratch.file.data(), scratch.file.size(), size, nullptr, /*flip=*/false,
                    scratch, out, why);
}

size_t ImageFolderLoader::SlotBytes(int64_t batch_size, int64_t image_size) {
  return AlignUp(static_cast<size_t>(batch_size * image_size * image_size * 3)) +
         AlignUp(static_cast<size_t>(batch_size) * sizeof(int64_t));
}

StatusOr<std::unique_ptr<ImageFolderLoader>> ImageFolderLoader::Open(
    const ImageFolderOptions& options, const Allocator& allocate) {
  if (options.batch_size <= 0 || options.image_size <= 0 || options.threads <= 0 ||
      options.num_slots < 2 || options.world_size < 1 || options.rank < 0 ||
      options.rank >= options.world_size) {
    return InvalidArgumentError("image folder loader: bad options");
  }
  if (!IsDirectory(options.root)) {
    return InvalidArgumentError("--data imagefolder: '" + options.root +
                                "' does not exist or is not a folder");
  }
#ifndef BENCH_WITH_JPEG
  return UnimplementedError("--data imagefolder: this bench-train was built without libjpeg "
                            "(install libjpeg62-turbo-dev or libjpeg-dev and rebuild)");
#endif
  std::unique_ptr<ImageFolderLoader> loader(new ImageFolderLoader());
  loader->options_ = options;
  for (const auto& name : ListDirectory(options.root)) {
    const std::string path = options.root + "/" + name;
    if (!IsDirectory(path)) continue;
    const int64_t label = static_cast<int64_t>(loader->classes_.size());
    loader->classes_.push_back(name);
    std::vector<std::string> files;
    CollectFiles(path, &files);
    for (auto& file : files) loader->files_.push_back(File{std::move(file), label});
  }
  if (loader->classes_.empty()) {
    return InvalidArgumentError("--data imagefolder: '" + options.root +
                                "' has no class sub-folders (expected ROOT/CLASS/IMAGE.jpg)");
  }
  if (loader->files_.empty()) {
    return InvalidArgumentError("--data imagefolder: no image files under '" + options.root +
                                "' (" + std::to_string(loader->classes_.size()) +
                                " class folders, all empty)");
  }
  loader->per_rank_ = static_cast<int64_t>(loader->files_.size()) / options.world_size;
  if (loader->per_rank_ == 0) {
    return InvalidArgumentError("--data imagefolder: " + std::to_string(loader->files_.size()) +
                                " images under '" + options.root + "' for " +
                                std::to_string(options.world_size) + " ranks");
  }
  loader->bad_.reset(new std::atomic<bool>[loader->files_.size()]);
  for (size_t i = 0; i < loader->files_.size(); ++i) loader->bad_[i] = false;
  const size_t bytes = SlotBytes(options.batch_size, options.image_size);
  for (int s = 0; s < options.num_slots; ++s) {
    void* memory = allocate(bytes);
    if (memory == nullptr) return InternalError("image folder loader: allocation failed");
    loader->slots_.push_back(static_cast<uint8_t*>(memory));
  }
  PrefetchOptions prefetch;
  prefetch.batch_size = options.batch_size;
  prefetch.num_slots = options.num_slots;
  prefetch.threads = options.threads;
  ImageFolderLoader* raw = loader.get();
  auto engine = PrefetchEngine::Start(
      prefetch, [raw](const PrefetchItem& item) { return raw->FillSample(item); });
  if (!engine.ok()) return engine.status();
  loader->engine_ = std::move(engine).value();
  return loader;
}

ImageFolderLoader::~ImageFolderLoader() {
  engine_.reset();  // stops and joins the threads while the files and slots are still here
}

const std::vector<int64_t>& ImageFolderLoader::Permutation(int64_t epoch) {
  auto it = permutations_.find(epoch);
  if (it != permutations_.end()) return it->second;
  while (!permutations_.empty() && permutations_.begin()->first < epoch - 1) {
    permutations_.erase(permutations_.begin());
  }
  std::vector<int64_t> order(files_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::mt19937_64 rng(Mix(options_.seed * 1000003ULL + static_cast<uint64_t>(epoch)));
  std::shuffle(order.begin(), order.end(), rng);
  return permutations_.emplace(epoch, std::move(order)).first->second;
}

int64_t ImageFolderLoader::FileAt(int64_t position) {
  const int64_t epoch = position / per_rank_;
  const int64_t k = position % per_rank_;
  std::lock_guard<std::mutex> lock(perm_mu_);
  return Permutation(epoch)[k * options_.world_size + options_.rank];
}

bool ImageFolderLoader::LoadSample(int64_t index, uint64_t rng_seed, uint8_t* out) {
  thread_local Scratch scratch;
  const File& file = files_[index];
  std::string why;
  bool ok = ReadJpegFile(file.path, scratch, &why);
  if (ok) {
    std::mt19937_64 rng(rng_seed);
    const bool flip = std::uniform_int_distribution<int>(0, 1)(rng) == 1;
    ok = DecodeCrop(scratch.file.data(), scratch.file.size(), static_cast<int>(options_.image_size),
                    &rng, flip, scratch, out, &why);
  }
  if (!ok && !bad_[index].exchange(true)) {
    corrupt_count_.fetch_add(1);
    bench::Log("warning: skipping unreadable image ", file.path, ": ", why);
  }
  return ok;
}

Status ImageFolderLoader::FillSample(const PrefetchItem& item) {
  const size_t image_bytes = static_cast<size_t>(options_.image_size * options_.image_size * 3);
  const size_t labels_offset = AlignUp(static_cast<size_t>(options_.batch_size) * image_bytes);
  uint8_t* images = slots_[static_cast<size_t>(item.slot)];
  auto* labels = reinterpret_cast<int64_t*>(images + labels_offset);
  const int64_t total = static_cast<int64_t>(files_.size());
  for (int64_t attempt = 0; attempt < total; ++attempt) {
    const int64_t index = FileAt(item.index + attempt);
    if (bad_[index].load()) continue;
    const uint64_t seed = Mix(Mix(options_.seed + 0x51ULL * static_cast<uint64_t>(options_.rank)) ^
                              static_cast<uint64_t>(item.index + attempt));
    if (LoadSample(index, seed, images + static_cast<size_t>(item.position) * image_bytes)) {
      labels[item.position] = files_[index].label;
      return Status();
    }
  }
  return InternalError("--data imagefolder: none of the " + std::to_string(total) +
                       " images under '" + options_.root + "' could be decoded");
}

StatusOr<LoadedBatch> ImageFolderLoader::Next() {
  auto next = engine_->Next();
  if (!next.ok()) return next.status();
  const size_t slot = static_cast<size_t>(next->slot);
  LoadedBatch batch;
  batch.number = next->number;
  batch.slot = next->slot;
  batch.images = slots_[slot];
  batch.labels = reinterpret_cast<int64_t*>(
      slots_[slot] + AlignUp(static_cast<size_t>(options_.batch_size * options_.image_size *
                                                 options_.image_size * 3)));
  return batch;
}

void ImageFolderLoader::Release(const LoadedBatch& batch) { engine_->Release(batch.number); }

}  // namespace bench_train
