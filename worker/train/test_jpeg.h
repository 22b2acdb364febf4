// Test helper: small JPEGs made with libjpeg at test time, for the data tests
// (image_folder_test, coco_source_test, bench_train_e2e_test here and
// tests/e2e/data_test.cc). Torch-free. Header-only, so that each test compiles it with
// its own flags (tests/e2e is built without libtorch's ABI flags) and links only
// JPEG::JPEG, as it already does. libjpeg's default error handler exits the process on
// an encoder error, which a test's inputs never cause.
#ifndef BENCHFLEET_WORKER_TRAIN_TEST_JPEG_H_
#define BENCHFLEET_WORKER_TRAIN_TEST_JPEG_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

// jpeglib.h needs size_t and FILE declared before it.
#include <jpeglib.h>

namespace bench_train {

struct TestJpeg {
  int width = 0;
  int height = 0;
  int components = 3;  // 3: RGB, 1: grey
  int quality = 95;    // libjpeg's scale; its default is 75
  // The value of component `c` of the pixel at column `x`, row `y`.
  std::function<uint8_t(int x, int y, int c)> sample;
};

// One colour everywhere: rgb[c] for component c (a grey image takes rgb[0]).
inline TestJpeg SolidTestJpeg(int width, int height, const uint8_t rgb[3], int components = 3) {
  return {width, height, components, 95,
          [r = rgb[0], g = rgb[1], b = rgb[2]](int, int, int c) -> uint8_t {
            return c == 0 ? r : c == 1 ? g : b;
          }};
}

// `image` encoded as a JPEG file's bytes.
inline std::vector<uint8_t> EncodeTestJpeg(const TestJpeg& image) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr error;
  cinfo.err = jpeg_std_error(&error);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(image.width);
  cinfo.image_height = static_cast<JDIMENSION>(image.height);
  cinfo.input_components = image.components;
  cinfo.in_color_space = image.components == 3 ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, image.quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  std::vector<uint8_t> row(static_cast<size_t>(image.width) * image.components);
  while (cinfo.next_scanline < cinfo.image_height) {
    const int y = static_cast<int>(cinfo.next_scanline);
    for (int x = 0; x < image.width; ++x) {
      for (int c = 0; c < image.components; ++c) {
        row[static_cast<size_t>(x) * image.components + c] = image.sample(x, y, c);
      }
    }
    JSAMPROW pointer = row.data();
    jpeg_write_scanlines(&cinfo, &pointer, 1);
  }
  jpeg_finish_compress(&cinfo);
  std::vector<uint8_t> bytes(buffer, buffer + size);
  jpeg_destroy_compress(&cinfo);
  std::free(buffer);
  return bytes;
}

// Writes `image` as a JPEG file at `path`; false if the file cannot be written.
inline bool WriteTestJpeg(const std::string& path, const TestJpeg& image) {
  const std::vector<uint8_t> bytes = EncodeTestJpeg(image);
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return false;
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  return std::fclose(file) == 0 && written;
}

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_TEST_JPEG_H_
