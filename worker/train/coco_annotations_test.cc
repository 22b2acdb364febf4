#include "worker/train/coco_annotations.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace bench_train {
namespace {

// Two images, three categories with COCO's gappy ids in the file's order (MLPerf maps
// them to 1, 2, 3 in that order), one image without boxes.
constexpr char kSmall[] = R"json({
  "info": {"description": "tiny"},
  "images": [
    {"id": 397133, "file_name": "000000397133.jpg", "width": 640, "height": 480},
    {"id": 7, "file_name": "a/7.jpg", "width": 100, "height": 50},
    {"id": 8, "file_name": "8.jpg", "width": 10, "height": 10}
  ],
  "categories": [
    {"id": 1, "name": "person", "supercategory": "person"},
    {"id": 90, "name": "toothbrush"},
    {"id": 18, "name": "dog"}
  ],
  "annotations": [
    {"id": 1, "image_id": 397133, "category_id": 18, "bbox": [64, 48, 320, 240],
     "area": 76800, "iscrowd": 0},
    {"id": 2, "image_id": 7, "category_id": 90, "bbox": [0, 0, 100, 50]},
    {"id": 3, "image_id": 397133, "category_id": 1, "bbox": [600.5, 400, 40, 80.4]},
    {"id": 4, "image_id": 7, "category_id": 1, "bbox": [10, 10, 0, 5]}
  ]
})json";

TEST(CocoAnnotationsTest, ReadsImagesBoxesAndContiguousLabels) {
  auto parsed = ParseCocoAnnotations(kSmall, "instances_tiny.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const CocoAnnotations& coco = *parsed;
  EXPECT_EQ(coco.category_ids, (std::vector<int64_t>{1, 90, 18}));
  EXPECT_EQ(coco.num_classes(), 4);  // background + 3
  ASSERT_EQ(coco.images.size(), 2u);
  EXPECT_EQ(coco.images_without_boxes, 1);  // image 8, as MLPerf's loader drops it
  EXPECT_EQ(coco.empty_boxes, 1);           // annotation 4: zero width

  const CocoImage& first = coco.images[0];
  EXPECT_EQ(first.id, 397133);
  EXPECT_EQ(first.file_name, "000000397133.jpg");
  EXPECT_EQ(first.width, 640);
  EXPECT_EQ(first.height, 480);
  ASSERT_EQ(first.boxes.size(), 2u);
  EXPECT_FLOAT_EQ(first.boxes[0].left, 0.1f);
  EXPECT_FLOAT_EQ(first.boxes[0].top, 0.1f);
  EXPECT_FLOAT_EQ(first.boxes[0].right, 0.6f);
  EXPECT_FLOAT_EQ(first.boxes[0].bottom, 0.6f);
  EXPECT_EQ(first.boxes[0].label, 3);  // category 18 is the third listed
  // Overhangs by 0.5 px and 0.4 px (rounding): clamped to the image.
  EXPECT_FLOAT_EQ(first.boxes[1].left, 600.5f / 640);
  EXPECT_FLOAT_EQ(first.boxes[1].right, 1.0f);
  EXPECT_FLOAT_EQ(first.boxes[1].bottom, 1.0f);
  EXPECT_EQ(first.boxes[1].label, 1);

  const CocoImage& second = coco.images[1];
  EXPECT_EQ(second.file_name, "a/7.jpg");
  ASSERT_EQ(second.boxes.size(), 1u);
  EXPECT_FLOAT_EQ(second.boxes[0].right, 1.0f);
  EXPECT_EQ(second.boxes[0].label, 2);
}

std::string Error(const std::string& json) {
  auto parsed = ParseCocoAnnotations(json, "/data/coco/annotations/instances_val2017.json");
  EXPECT_FALSE(parsed.ok());
  if (parsed.ok()) return "";
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  return parsed.status().message();
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(CocoAnnotationsTest, ACorruptOrTruncatedFileNamesTheFile) {
  const std::string text = kSmall;
  std::string message = Error(text.substr(0, text.size() / 2));
  EXPECT_EQ(message.rfind("/data/coco/annotations/instances_val2017.json: not valid JSON", 0), 0u)
      << message;
  message = Error("\x89PNG garbage");
  EXPECT_NE(message.find("not valid JSON"), std::string::npos) << message;
  message = Error("[1, 2]");
  EXPECT_NE(message.find("its top level is array"), std::string::npos) << message;
  message = Error(R"({"images": [], "categories": []})");
  EXPECT_NE(message.find("the file has no \"annotations\""), std::string::npos) << message;
  message = Error(Replace(kSmall, R"("width": 100)", R"("width": "100")"));
  EXPECT_NE(message.find("images[1]: \"width\" is string, not an integer"), std::string::npos)
      << message;
}

TEST(CocoAnnotationsTest, ABoxOutsideItsImageIsAnError) {
  std::string message =
      Error(Replace(kSmall, "[0, 0, 100, 50]", "[60, 10, 50, 20]"));  // right edge at 110
  EXPECT_EQ(message,
            "/data/coco/annotations/instances_val2017.json: annotations[1] (id 2): bbox "
            "[60, 10, 50, 20] is outside its image 7 (100x50)");
  message = Error(Replace(kSmall, "[0, 0, 100, 50]", "[-3, 0, 10, 10]"));
  EXPECT_NE(message.find("is outside its image 7"), std::string::npos) << message;
  message = Error(Replace(kSmall, "[0, 0, 100, 50]", "[0, 0, -1, 10]"));
  EXPECT_NE(message.find("negative or non-finite size"), std::string::npos) << message;
  message = Error(Replace(kSmall, "[0, 0, 100, 50]", "[0, 0, 100]"));
  EXPECT_NE(message.find("bbox [0,0,100] is not four numbers"), std::string::npos) << message;
}

TEST(CocoAnnotationsTest, UnknownImagesAndCategoriesAreErrors) {
  std::string message = Error(Replace(kSmall, R"("image_id": 7, "category_id": 90)",
                                      R"("image_id": 70, "category_id": 90)"));
  EXPECT_EQ(message,
            "/data/coco/annotations/instances_val2017.json: annotations[1] (id 2): unknown "
            "image id 70 (not in \"images\")");
  message = Error(Replace(kSmall, R"("image_id": 7, "category_id": 90)",
                          R"("image_id": 7, "category_id": 91)"));
  EXPECT_NE(message.find("unknown category id 91"), std::string::npos) << message;
  message = Error(Replace(kSmall, R"({"id": 7, "file_name")", R"({"id": 397133, "file_name")"));
  EXPECT_NE(message.find("images[1]: image id 397133 given twice"), std::string::npos) << message;
  message = Error(Replace(kSmall, R"("width": 100)", R"("width": 0)"));
  EXPECT_NE(message.find("size 0x50 is not a positive image size"), std::string::npos) << message;
}

TEST(CocoAnnotationsTest, FindsAndReadsTheFileOfAFolder) {
  char pattern[] = "/tmp/coco_annotations_test_XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string root = pattern;
  auto missing = FindCocoAnnotationFile(root, "");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no annotations folder"), std::string::npos);
  ASSERT_EQ(mkdir((root + "/annotations").c_str(), 0755), 0);
  std::ofstream(root + "/annotations/captions_val2017.json") << "{}";
  std::ofstream(root + "/annotations/instances_val2017.json") << kSmall;
  std::ofstream(root + "/annotations/instances_train2017.json") << "{\"images\": [";
  auto train = FindCocoAnnotationFile(root, "train2017");
  ASSERT_TRUE(train.ok()) << train.status().message();
  EXPECT_EQ(*train, root + "/annotations/instances_train2017.json");
  auto truncated = ReadCocoAnnotations(*train);
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.status().message().rfind(*train + ": not valid JSON", 0), 0u);
  auto val = FindCocoAnnotationFile(root, "val2017");
  ASSERT_TRUE(val.ok()) << val.status().message();
  auto read = ReadCocoAnnotations(*val);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->images.size(), 2u);
  auto none = FindCocoAnnotationFile(root, "test2017");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("instances_*test2017*.json"), std::string::npos);
  auto unreadable = ReadCocoAnnotations(root + "/annotations/nope.json");
  ASSERT_FALSE(unreadable.ok());
  EXPECT_NE(unreadable.status().message().find("nope.json: cannot open"), std::string::npos);
  std::system(("rm -rf '" + root + "'").c_str());
}

}  // namespace
}  // namespace bench_train
