// The COCO source on a tiny COCO-format folder written at test time: JPEGs of one colour
// each (libjpeg) and a hand-written instances_train2017.json.
#include "worker/train/coco_source.h"

#include <ATen/ATen.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "worker/train/data_source.h"
#include "worker/train/detection.h"
#include "worker/train/test_jpeg.h"

namespace bench_train {
namespace {

struct Box {
  float x, y, w, h;  // pixels, as COCO's bbox
  int64_t label;     // contiguous: 1 for category 3, 2 for category 7
};
struct Image {
  const char* file;
  int width, height;
  uint8_t rgb[3];
  std::vector<Box> boxes;
};

const std::vector<Image>& Images() {
  static const std::vector<Image> kImages = {
      {"a.jpg", 200, 100, {230, 20, 20}, {{20, 10, 100, 50, 1}}},
      {"b.jpg", 120, 160, {20, 20, 230}, {{0, 0, 60, 80, 2}, {60, 80, 60, 80, 1}}},
      {"c.jpg", 300, 300, {20, 230, 20}, {{100, 100, 50, 50, 2}}},
  };
  return kImages;
}

constexpr char kAnnotations[] = R"json({
  "images": [
    {"id": 1, "file_name": "a.jpg", "width": 200, "height": 100},
    {"id": 2, "file_name": "b.jpg", "width": 120, "height": 160},
    {"id": 3, "file_name": "c.jpg", "width": 300, "height": 300}
  ],
  "categories": [{"id": 3, "name": "car"}, {"id": 7, "name": "train"}],
  "annotations": [
    {"id": 10, "image_id": 1, "category_id": 3, "bbox": [20, 10, 100, 50]},
    {"id": 11, "image_id": 2, "category_id": 7, "bbox": [0, 0, 60, 80]},
    {"id": 12, "image_id": 2, "category_id": 3, "bbox": [60, 80, 60, 80]},
    {"id": 13, "image_id": 3, "category_id": 7, "bbox": [100, 100, 50, 50]}
  ]
})json";

class CocoSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/bench_train_coco_XXXXXX";
    root_ = ::mkdtemp(pattern);
    ::mkdir((root_ + "/annotations").c_str(), 0755);
    ::mkdir((root_ + "/train2017").c_str(), 0755);
    std::ofstream(annotations()) << kAnnotations;
    for (const Image& image : Images()) {
      ASSERT_TRUE(WriteTestJpeg(root_ + "/train2017/" + image.file,
                                SolidTestJpeg(image.width, image.height, image.rgb)));
    }
  }
  void TearDown() override { std::system(("rm -rf '" + root_ + "'").c_str()); }
  std::string annotations() const { return root_ + "/annotations/instances_train2017.json"; }

  TrainOptions Options() const {
    TrainOptions options;
    options.model = "ssd_resnet34";
    options.image_size = 300;
    options.num_classes = 81;
    options.batch_size = 3;
    options.data = "coco";
    options.data_dir = root_;
    options.loader_threads = 2;
    return options;
  }

  std::string root_;
};

EncodedTargets Expected(const Image& image, const at::Tensor& default_boxes) {
  const int64_t m = static_cast<int64_t>(image.boxes.size());
  at::Tensor ltrb = at::empty({m, 4}, at::kFloat);
  at::Tensor classes = at::empty({m}, at::kLong);
  for (int64_t i = 0; i < m; ++i) {
    const Box& b = image.boxes[static_cast<size_t>(i)];
    ltrb[i][0] = b.x / image.width;
    ltrb[i][1] = b.y / image.height;
    ltrb[i][2] = (b.x + b.w) / image.width;
    ltrb[i][3] = (b.y + b.h) / image.height;
    classes[i] = b.label;
  }
  return EncodeTargets(ltrb, classes, default_boxes);
}

// Which test image a decoded 300x300 row is, by its colour (one colour per image).
int ImageOf(const at::Tensor& row) {
  const at::Tensor pixel = row[150][150].to(at::kInt);
  for (size_t i = 0; i < Images().size(); ++i) {
    bool same = true;
    for (int c = 0; c < 3; ++c) {
      same = same && std::abs(pixel[c].item<int>() - Images()[i].rgb[c]) <= 8;
    }
    if (same) return static_cast<int>(i);
  }
  return -1;
}

TEST_F(CocoSourceTest, BatchesHoldDecodedImagesAndTheirBoxesEncodedAgainstTheDefaultBoxes) {
  auto folder = LocateCocoFolder(root_);
  ASSERT_TRUE(folder.ok()) << folder.status().message();
  EXPECT_EQ(folder->annotations_file, annotations());
  EXPECT_EQ(folder->images_dir, root_ + "/train2017");

  auto opened = OpenDataSource(Options(), c10::Device(c10::kCPU));
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  DataSource& data = **opened;
  EXPECT_EQ(data.dataset_images(), 3);
  EXPECT_EQ(data.dataset_classes(), 2);
  EXPECT_EQ(data.loader_threads(), 2);

  const at::Tensor default_boxes = MakeDefaultBoxes();
  const int64_t boxes = default_boxes.size(0);
  ASSERT_EQ(boxes, 8732);
  std::set<std::vector<int>> orders;
  for (int64_t step = 0; step < 6; ++step) {  // one batch = one epoch of the 3 images
    auto batch = data.Next();
    ASSERT_TRUE(batch.ok()) << batch.status().message();
    EXPECT_EQ(batch->number, step);
    EXPECT_EQ(batch->images.sizes(), (std::vector<int64_t>{3, 300, 300, 3}));
    EXPECT_EQ(batch->images.scalar_type(), at::kByte);
    EXPECT_EQ(batch->labels.sizes(), (std::vector<int64_t>{3, boxes}));
    EXPECT_EQ(batch->labels.scalar_type(), at::kLong);
    EXPECT_EQ(batch->boxes.sizes(), (std::vector<int64_t>{3, 4, boxes}));
    EXPECT_EQ(batch->boxes.scalar_type(), at::kFloat);
    std::vector<int> order;
    for (int64_t j = 0; j < 3; ++j) {
      const int which = ImageOf(batch->images[j]);
      ASSERT_GE(which, 0) << "row " << j << " of batch " << step << " is no test image";
      order.push_back(which);
      const EncodedTargets expected = Expected(Images()[static_cast<size_t>(which)], default_boxes);
      EXPECT_TRUE(at::equal(batch->labels[j], expected.labels)) << Images()[which].file;
      EXPECT_TRUE(at::allclose(batch->boxes[j], expected.offsets, 1e-5, 1e-5))
          << Images()[which].file;
      // The box's classes are there: at least one positive per ground truth's class.
      for (const Box& box : Images()[static_cast<size_t>(which)].boxes) {
        EXPECT_GT(batch->labels[j].eq(box.label).sum().item<int64_t>(), 0);
      }
    }
    EXPECT_EQ(std::set<int>(order.begin(), order.end()).size(), 3u) << "an epoch per batch";
    orders.insert(order);
    data.Done(batch->number);
  }
  EXPECT_GT(orders.size(), 1u) << "the order is shuffled every epoch";
}

TEST_F(CocoSourceTest, TwoRanksTakeDisjointImages) {
  TrainOptions options = Options();
  options.batch_size = 1;
  options.rendezvous.world_size = 2;
  std::set<int> seen;
  for (int rank = 0; rank < 2; ++rank) {
    options.rendezvous.rank = rank;
    auto opened = OpenDataSource(options, c10::Device(c10::kCPU));
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    auto batch = (*opened)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status().message();
    seen.insert(ImageOf(batch->images[0]));
  }
  EXPECT_EQ(seen.size(), 2u);
}

TEST_F(CocoSourceTest, AMissingImageFailsBeforeTrainingNamingTheFile) {
  ASSERT_EQ(std::remove((root_ + "/train2017/b.jpg").c_str()), 0);
  auto opened = OpenDataSource(Options(), c10::Device(c10::kCPU));
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(opened.status().message().find(root_ + "/train2017/b.jpg"), std::string::npos)
      << opened.status().message();
  EXPECT_NE(opened.status().message().find("does not exist"), std::string::npos);
}

TEST_F(CocoSourceTest, ACorruptAnnotationFileFailsNamingIt) {
  std::ofstream(annotations()) << std::string(kAnnotations).substr(0, 120);
  auto opened = OpenDataSource(Options(), c10::Device(c10::kCPU));
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().message().rfind("--data coco: " + annotations() + ": ", 0), 0u)
      << opened.status().message();
}

TEST_F(CocoSourceTest, AFolderWithoutAnnotationsFailsNamingIt) {
  std::system(("rm -rf '" + root_ + "/annotations'").c_str());
  auto opened = OpenDataSource(Options(), c10::Device(c10::kCPU));
  ASSERT_FALSE(opened.ok());
  EXPECT_NE(opened.status().message().find(root_ + "/annotations"), std::string::npos)
      << opened.status().message();
}

TEST_F(CocoSourceTest, ImagesBesideTheAnnotationsWhenThereIsNoSplitFolder) {
  for (const Image& image : Images()) {
    const std::string from = root_ + "/train2017/" + image.file;
    ASSERT_EQ(std::rename(from.c_str(), (root_ + "/" + image.file).c_str()), 0);
  }
  ::rmdir((root_ + "/train2017").c_str());
  auto folder = LocateCocoFolder(root_);
  ASSERT_TRUE(folder.ok()) << folder.status().message();
  EXPECT_EQ(folder->images_dir, root_);
  auto opened = OpenDataSource(Options(), c10::Device(c10::kCPU));
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  EXPECT_TRUE((*opened)->Next().ok());
}

TEST_F(CocoSourceTest, AnUndecodableImageStopsTrainingNamingIt) {
  std::ofstream(root_ + "/train2017/a.jpg") << "not a jpeg";
  auto opened = OpenDataSource(Options(), c10::Device(c10::kCPU));
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  auto batch = (*opened)->Next();
  ASSERT_FALSE(batch.ok());
  EXPECT_NE(batch.status().message().find(root_ + "/train2017/a.jpg: not a JPEG file"),
            std::string::npos)
      << batch.status().message();
}

}  // namespace
}  // namespace bench_train
