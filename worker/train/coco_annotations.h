// COCO-format detection annotations (annotations/instances_*.json), read into images and
// their ground-truth boxes the way MLPerf's SSD reference loader (COCODetection) does.
//
// Torch-free. Parsed with nlohmann/json (Debian's nlohmann-json3-dev, header-only): the
// trainer's include rule (b in docs/ARCHITECTURE.md, tests/include_rules.sh) refuses
// gRPC, protobuf, Abseil and the project's other folders, not a standard-library-only
// header library like this one.
//
// What is read:
//   - categories, in the file's order, become labels 1..N (COCO 2017: N = 80, its ids run
//     1..90 with gaps); label 0 is the background, as in MLPerf's label_map.
//   - images (id, file_name, width, height), in the file's order; an image with no
//     annotation is left out, as MLPerf's loader drops it (counted in
//     images_without_boxes).
//   - annotations: bbox [x, y, w, h] in pixels of its image becomes a box with
//     normalised [left, top, right, bottom] = [x/W, y/H, (x+w)/W, (y+h)/H], in the file's
//     order per image. A zero-width or zero-height box is dropped (counted in
//     empty_boxes): it has no extent to regress to.
//
// Errors (INVALID_ARGUMENT, each naming the file and what is wrong, e.g.
// "/data/coco/annotations/instances_val2017.json: annotations[12] (id 901): bbox
// [600, 10, 50, 20] is outside its image 3 (640x480)"): a file that cannot be read, is not
// JSON or is cut short; a missing or mistyped field; an image with a non-positive size or
// an id given twice; a category id given twice; an annotation of an unknown image or
// category; a bbox with other than four numbers, a negative size, or reaching more than
// kBoxSlackPixels beyond its image (boxes that overhang by rounding only are clamped).
//
// Pure functions; thread-safe.
#ifndef BENCHFLEET_WORKER_TRAIN_COCO_ANNOTATIONS_H_
#define BENCHFLEET_WORKER_TRAIN_COCO_ANNOTATIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "worker/train/status.h"

namespace bench_train {

// How far (pixels) a box may reach past its image's edge before it is an error.
inline constexpr double kBoxSlackPixels = 1.0;

struct CocoBox {
  // Normalised to the image: 0 <= left < right <= 1, 0 <= top < bottom <= 1.
  float left = 0;
  float top = 0;
  float right = 0;
  float bottom = 0;
  int label = 0;  // 1..categories (0 is the background)
};

struct CocoImage {
  int64_t id = 0;
  std::string file_name;  // relative to the images folder, e.g. "000000397133.jpg"
  int width = 0;
  int height = 0;
  std::vector<CocoBox> boxes;  // at least one
};

struct CocoAnnotations {
  std::vector<CocoImage> images;
  // category_ids[label - 1] is the COCO category id of `label`.
  std::vector<int64_t> category_ids;
  int64_t images_without_boxes = 0;  // left out
  int64_t empty_boxes = 0;           // zero width or height: dropped
  int num_classes() const { return static_cast<int>(category_ids.size()) + 1; }
};

// Parses `json`, the text of the file named `name` (used in error messages).
StatusOr<CocoAnnotations> ParseCocoAnnotations(const std::string& json, const std::string& name);

// Reads and parses the file at `path`.
StatusOr<CocoAnnotations> ReadCocoAnnotations(const std::string& path);

// The annotation file of a COCO folder: `root`/annotations/instances_*.json, the first
// in name order whose name contains `split` (e.g. "train2017"; "" for any). None there is
// INVALID_ARGUMENT naming the folder and what was looked for.
StatusOr<std::string> FindCocoAnnotationFile(const std::string& root, const std::string& split);

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_COCO_ANNOTATIONS_H_
