#include "worker/train/image_folder.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "worker/train/test_jpeg.h"

namespace bench_train {
namespace {

void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/bench_train_images_XXXXXX";
    path_ = ::mkdtemp(pattern);
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }
  std::string Mkdir(const std::string& name) const {
    const std::string dir = path_ + "/" + name;
    ::mkdir(dir.c_str(), 0755);
    return dir;
  }

 private:
  std::string path_;
};

constexpr uint8_t kRed[3] = {230, 20, 20};
constexpr uint8_t kBlue[3] = {20, 20, 230};

// ImageFolder: cat/ holds red images (one grayscale-free set of sizes), dog/ blue
// ones, plus a corrupt JPEG, a truncated JPEG, a PNG-named non-image and a text
// file (not a sample at all).
void MakeFolder(const TempDir& dir) {
  const std::string cat = dir.Mkdir("cat");
  const std::string dog = dir.Mkdir("dog");
  WriteFile(cat + "/a.jpg", EncodeTestJpeg(SolidTestJpeg(64, 48, kRed)));
  WriteFile(cat + "/b.JPEG", EncodeTestJpeg(SolidTestJpeg(300, 200, kRed)));
  WriteFile(cat + "/c.jpeg", EncodeTestJpeg(SolidTestJpeg(40, 90, kRed)));
  WriteFile(dog + "/a.jpg", EncodeTestJpeg(SolidTestJpeg(128, 128, kBlue)));
  WriteFile(dog + "/b.jpg", EncodeTestJpeg(SolidTestJpeg(500, 375, kBlue)));
  WriteFile(dog + "/c.jpg", EncodeTestJpeg(SolidTestJpeg(33, 61, kBlue)));
  std::vector<uint8_t> garbage(4000);
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<uint8_t>(i * 7919 % 251);
  garbage[0] = 0xFF;  // starts like a JPEG, then nonsense
  garbage[1] = 0xD8;
  WriteFile(dog + "/corrupt.jpg", garbage);
  std::vector<uint8_t> truncated = EncodeTestJpeg(SolidTestJpeg(200, 200, kBlue));
  truncated.resize(300);  // inside the tables: no image can come out
  WriteFile(dog + "/truncated.jpg", truncated);
  WriteFile(cat + "/fake.png", std::vector<uint8_t>{0x89, 'P', 'N', 'G', 1, 2, 3, 4});
  WriteFile(cat + "/notes.txt", std::vector<uint8_t>{'h', 'i'});
}

struct Slots {
  std::vector<std::unique_ptr<uint8_t[]>> memory;
  ImageFolderLoader::Allocator allocator() {
    return [this](size_t bytes) -> void* {
      memory.emplace_back(new uint8_t[bytes + 64]);
      auto address = reinterpret_cast<uintptr_t>(memory.back().get());
      return reinterpret_cast<void*>((address + 63) / 64 * 64);
    };
  }
};

ImageFolderOptions Options(const std::string& root, int threads) {
  ImageFolderOptions options;
  options.root = root;
  options.batch_size = 4;
  options.image_size = 32;
  options.threads = threads;
  options.num_slots = 3;
  options.seed = 5;
  return options;
}

TEST(ImageFolderLoaderTest, DecodesBatchesWithLabelsAndSkipsUnreadableFiles) {
  TempDir dir;
  MakeFolder(dir);
  Slots slots;
  auto loader = ImageFolderLoader::Open(Options(dir.path(), 2), slots.allocator());
  ASSERT_TRUE(loader.ok()) << loader.status().message();
  EXPECT_EQ((*loader)->num_classes(), 2);
  EXPECT_EQ((*loader)->num_files(), 9);  // 6 good, corrupt, truncated, fake.png
  std::vector<int> seen(2, 0);
  for (int b = 0; b < 8; ++b) {  // 32 samples: more than three epochs
    auto batch = (*loader)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status().message();
    EXPECT_EQ(batch->number, b);
    for (int i = 0; i < 4; ++i) {
      const int64_t label = batch->labels[i];
      ASSERT_TRUE(label == 0 || label == 1) << label;
      ++seen[label];
      // Every pixel of the sample keeps its class's colour.
      const uint8_t* image = batch->images + static_cast<size_t>(i) * 32 * 32 * 3;
      for (int p = 0; p < 32 * 32; p += 97) {
        const uint8_t r = image[p * 3];
        const uint8_t blue = image[p * 3 + 2];
        if (label == 0) {
          EXPECT_GT(r, 200);
          EXPECT_LT(blue, 60);
        } else {
          EXPECT_GT(blue, 200);
          EXPECT_LT(r, 60);
        }
      }
    }
    (*loader)->Release(*batch);
  }
  EXPECT_GT(seen[0], 0);
  EXPECT_GT(seen[1], 0);
  EXPECT_EQ((*loader)->corrupt_files(), 3);
}

TEST(ImageFolderLoaderTest, BatchesDoNotDependOnTheNumberOfThreads) {
  TempDir dir;
  MakeFolder(dir);
  std::vector<std::vector<uint8_t>> runs;
  for (int threads : {1, 3}) {
    Slots slots;
    auto loader = ImageFolderLoader::Open(Options(dir.path(), threads), slots.allocator());
    ASSERT_TRUE(loader.ok());
    std::vector<uint8_t> bytes;
    for (int b = 0; b < 3; ++b) {
      auto batch = (*loader)->Next();
      ASSERT_TRUE(batch.ok());
      bytes.insert(bytes.end(), batch->images, batch->images + 4 * 32 * 32 * 3);
      for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<uint8_t>(batch->labels[i]));
      (*loader)->Release(*batch);
    }
    runs.push_back(bytes);
  }
  EXPECT_TRUE(runs[0] == runs[1]);
}

TEST(ImageFolderLoaderTest, MissingOrEmptyFolderIsAClearError) {
  Slots slots;
  auto missing = ImageFolderLoader::Open(Options("/nonexistent/imagenet", 1), slots.allocator());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/imagenet"), std::string::npos);

  TempDir dir;
  auto no_classes = ImageFolderLoader::Open(Options(dir.path(), 1), slots.allocator());
  ASSERT_FALSE(no_classes.ok());
  EXPECT_NE(no_classes.status().message().find("class sub-folders"), std::string::npos);

  dir.Mkdir("cat");
  dir.Mkdir("dog");
  auto empty = ImageFolderLoader::Open(Options(dir.path(), 1), slots.allocator());
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("no image files"), std::string::npos);
  EXPECT_NE(empty.status().message().find(dir.path()), std::string::npos);
}

TEST(ImageFolderLoaderTest, OnlyUnreadableFilesIsAnErrorNotAHang) {
  TempDir dir;
  WriteFile(dir.Mkdir("cat") + "/x.jpg", std::vector<uint8_t>{1, 2, 3, 4, 5});
  Slots slots;
  auto loader = ImageFolderLoader::Open(Options(dir.path(), 2), slots.allocator());
  ASSERT_TRUE(loader.ok());
  auto batch = (*loader)->Next();
  ASSERT_FALSE(batch.ok());
  EXPECT_NE(batch.status().message().find("could be decoded"), std::string::npos);
  EXPECT_EQ((*loader)->corrupt_files(), 1);
}

}  // namespace
}  // namespace bench_train
