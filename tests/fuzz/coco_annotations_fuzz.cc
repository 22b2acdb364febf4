// Fuzz target: the COCO annotation reader. The bytes are the text of an
// annotations/instances_*.json (a dataset someone downloaded or made: untrusted) handed to
// ParseCocoAnnotations (worker/train/coco_annotations.h; Torch-free, nlohmann-json).
// Besides no crash, leak, uncaught exception or sanitizer report, it checks the header's
// contract: a refusal is INVALID_ARGUMENT naming the file; an accepted file has labels
// 1..N for its N categories, only images with a positive size and at least one box, each
// box normalised with 0 <= left < right <= 1 and 0 <= top < bottom <= 1; parsing twice
// gives the same result.
#include <cstdint>
#include <set>
#include <string>

#include "tests/fuzz/fuzz_check.h"
#include "worker/train/coco_annotations.h"

using bench_train::CocoAnnotations;
using bench_train::CocoBox;
using bench_train::CocoImage;

namespace {

bool SameBoxes(const CocoAnnotations& a, const CocoAnnotations& b) {
  if (a.images.size() != b.images.size() || a.category_ids != b.category_ids ||
      a.images_without_boxes != b.images_without_boxes || a.empty_boxes != b.empty_boxes) {
    return false;
  }
  for (size_t i = 0; i < a.images.size(); ++i) {
    const CocoImage& x = a.images[i];
    const CocoImage& y = b.images[i];
    if (x.id != y.id || x.file_name != y.file_name || x.boxes.size() != y.boxes.size()) {
      return false;
    }
    for (size_t j = 0; j < x.boxes.size(); ++j) {
      const CocoBox& p = x.boxes[j];
      const CocoBox& q = y.boxes[j];
      if (p.left != q.left || p.top != q.top || p.right != q.right || p.bottom != q.bottom ||
          p.label != q.label) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string name = "fuzz/instances_val2017.json";
  auto parsed = bench_train::ParseCocoAnnotations(text, name);
  if (!parsed.ok()) {
    FUZZ_CHECK(parsed.status().code() == bench_train::StatusCode::kInvalidArgument);
    FUZZ_CHECK(parsed.status().message().rfind(name + ": ", 0) == 0);
    return 0;
  }
  const CocoAnnotations& coco = *parsed;
  FUZZ_CHECK(coco.num_classes() == static_cast<int>(coco.category_ids.size()) + 1);
  FUZZ_CHECK(std::set<int64_t>(coco.category_ids.begin(), coco.category_ids.end()).size() ==
             coco.category_ids.size());
  FUZZ_CHECK(coco.images_without_boxes >= 0 && coco.empty_boxes >= 0);
  std::set<int64_t> ids;
  for (const CocoImage& image : coco.images) {
    FUZZ_CHECK(ids.insert(image.id).second);
    FUZZ_CHECK(image.width > 0 && image.height > 0);
    FUZZ_CHECK(!image.boxes.empty());
    for (const CocoBox& box : image.boxes) {
      FUZZ_CHECK(0 <= box.left && box.left < box.right && box.right <= 1);
      FUZZ_CHECK(0 <= box.top && box.top < box.bottom && box.bottom <= 1);
      FUZZ_CHECK(box.label >= 1 && box.label < coco.num_classes());
    }
  }
  auto again = bench_train::ParseCocoAnnotations(text, name);
  FUZZ_CHECK(again.ok() && SameBoxes(coco, *again));
  return 0;
}
