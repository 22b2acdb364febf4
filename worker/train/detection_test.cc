#include "worker/train/detection.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>
#include <torch/types.h>

namespace bench_train {
namespace {

TEST(DefaultBoxesTest, Ssd300HasTheReference8732BoxesInItsOrder) {
  const torch::Tensor boxes = MakeDefaultBoxes();
  ASSERT_EQ(boxes.sizes().vec(), (std::vector<int64_t>{8732, 4}));
  EXPECT_EQ(BoxesPerCell(), (std::vector<int64_t>{4, 6, 6, 6, 4, 4}));
  EXPECT_GE(boxes.min().item<float>(), 0.0f);
  EXPECT_LE(boxes.max().item<float>(), 1.0f);
  // The first box: the 38x38 map's top-left cell (f = 300 / 8 = 37.5), size 21 / 300.
  EXPECT_NEAR(boxes[0][0].item<float>(), 0.5 / 37.5, 1e-6);
  EXPECT_NEAR(boxes[0][1].item<float>(), 0.5 / 37.5, 1e-6);
  EXPECT_NEAR(boxes[0][2].item<float>(), 0.07, 1e-6);
  // The 38x38 map's second shape starts after its first 1444 boxes: sqrt(21 * 45) / 300.
  EXPECT_NEAR(boxes[1444][2].item<float>(), std::sqrt(21.0 * 45.0) / 300.0, 1e-6);
  // Row then column: box 1 is one column to the right of box 0.
  EXPECT_NEAR(boxes[1][0].item<float>(), 1.5 / 37.5, 1e-6);
  EXPECT_NEAR(boxes[1][1].item<float>(), 0.5 / 37.5, 1e-6);
  // The last box: the 1x1 map's ratio-2 transpose, width 261/300/sqrt(2), height clamped
  // from 261/300*sqrt(2) = 1.23 to 1.
  const torch::Tensor last = boxes[8731];
  EXPECT_NEAR(last[0].item<float>(), 0.5, 1e-6);
  EXPECT_NEAR(last[2].item<float>(), 261.0 / 300.0 / std::sqrt(2.0), 1e-6);
  EXPECT_NEAR(last[3].item<float>(), 1.0, 1e-6);
}

// Three default boxes (xywh): A the top-left quarter, B the bottom-right quarter, C a
// small centre box. Ground truth 1 (class 3) covers most of A (IoU 0.8); ground truth 2
// (class 7) overlaps C with IoU 0.39 only, but C is its best box, so C is forced to it;
// B overlaps nothing above 0.5 and stays background.
TEST(EncodeTargetsTest, MatchesByIouAndForcesEachTruthsBestBox) {
  const torch::Tensor defaults = torch::tensor({0.25f, 0.25f, 0.5f, 0.5f,  // A
                                                0.75f, 0.75f, 0.5f, 0.5f,  // B
                                                0.5f, 0.5f, 0.2f, 0.2f})   // C
                                     .view({3, 4});
  const torch::Tensor truths = torch::tensor({0.0f, 0.0f, 0.5f, 0.4f,      // 1
                                              0.45f, 0.45f, 0.65f, 0.65f})  // 2
                                   .view({2, 4});
  const torch::Tensor classes = torch::tensor({3, 7}, torch::kLong);

  const torch::Tensor iou = BoxIou(truths, XywhToLtrb(defaults));
  EXPECT_NEAR(iou[0][0].item<float>(), 0.8, 1e-6);
  EXPECT_NEAR(iou[1][2].item<float>(), 0.0225 / 0.0575, 1e-6);

  const EncodedTargets targets = EncodeTargets(truths, classes, defaults);
  ASSERT_EQ(targets.labels.sizes().vec(), (std::vector<int64_t>{3}));
  ASSERT_EQ(targets.offsets.sizes().vec(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(targets.labels[0].item<int64_t>(), 3);
  EXPECT_EQ(targets.labels[1].item<int64_t>(), 0);
  EXPECT_EQ(targets.labels[2].item<int64_t>(), 7);
  // A <- truth 1, xywh (0.25, 0.2, 0.5, 0.4): ((0.2 - 0.25) / 0.5 / 0.1, log(0.4 / 0.5) / 0.2).
  EXPECT_NEAR(targets.offsets[0][0].item<float>(), 0.0, 1e-5);
  EXPECT_NEAR(targets.offsets[1][0].item<float>(), -1.0, 1e-5);
  EXPECT_NEAR(targets.offsets[2][0].item<float>(), 0.0, 1e-5);
  EXPECT_NEAR(targets.offsets[3][0].item<float>(), std::log(0.8) / 0.2, 1e-5);
  // C <- truth 2, xywh (0.55, 0.55, 0.2, 0.2): 0.05 / 0.2 / 0.1 = 2.5; same size.
  EXPECT_NEAR(targets.offsets[0][2].item<float>(), 2.5, 1e-5);
  EXPECT_NEAR(targets.offsets[1][2].item<float>(), 2.5, 1e-5);
  EXPECT_NEAR(targets.offsets[2][2].item<float>(), 0.0, 1e-5);
  EXPECT_NEAR(targets.offsets[3][2].item<float>(), 0.0, 1e-5);
  // B, background, encodes itself.
  EXPECT_NEAR(targets.offsets.select(1, 1).abs().max().item<float>(), 0.0, 1e-5);
}

// Cross-entropy of logits (a, 0, 0) for class 0: log(1 + 2 exp(-a)).
double BackgroundCrossEntropy(double a) { return std::log(1 + 2 * std::exp(-a)); }

// One image, six boxes, three classes: box 0 is the one positive (class 2), so 3 of the
// five negatives are kept, the ones with the highest cross-entropy: boxes 5, 3 and 1.
TEST(SsdLossTest, HardNegativeMiningAndLossOnAHandComputedCase) {
  const torch::Tensor labels = torch::tensor({2, 0, 0, 0, 0, 0}, torch::kLong).view({1, 6});
  // Background logits of boxes 1..5: 0, 2, -1, 1, -2; box 0's logits are (0, 0, 1).
  torch::Tensor scores = torch::zeros({1, 3, 6});
  const std::vector<float> background = {0, 0, 2, -1, 1, -2};
  for (int b = 1; b < 6; ++b) scores[0][0][b] = background[b];
  scores[0][2][0] = 1;
  // Box 0 predicts (0.5, -2, 0, 0) for (0, 0, 0.3, 0): smooth L1 0.125 + 1.5 + 0.045 + 0.
  // The negatives' locations are far off and must not count.
  torch::Tensor locations = torch::full({1, 4, 6}, 50.0f);
  locations[0][0][0] = 0.5f;
  locations[0][1][0] = -2.0f;
  locations[0][2][0] = 0.0f;
  locations[0][3][0] = 0.0f;
  torch::Tensor offsets = torch::zeros({1, 4, 6});
  offsets[0][2][0] = 0.3f;

  const torch::Tensor per_box = torch::tensor(
      {static_cast<float>(std::log(1 + 2 / std::exp(1.0))), static_cast<float>(BackgroundCrossEntropy(0)),
       static_cast<float>(BackgroundCrossEntropy(2)), static_cast<float>(BackgroundCrossEntropy(-1)),
       static_cast<float>(BackgroundCrossEntropy(1)), static_cast<float>(BackgroundCrossEntropy(-2))})
                                .view({1, 6});
  const torch::Tensor counted = SsdLossMask(per_box, labels);
  EXPECT_TRUE(torch::equal(counted, torch::tensor({true, true, false, true, false, true})
                                         .view({1, 6})))
      << counted;

  const double location_loss = 0.125 + 1.5 + 0.045;
  const double class_loss = std::log(1 + 2 / std::exp(1.0)) + BackgroundCrossEntropy(-2) +
                            BackgroundCrossEntropy(-1) + BackgroundCrossEntropy(0);
  const double expected = (location_loss + class_loss) / 1;  // one positive
  EXPECT_NEAR(SsdLoss(locations, scores, offsets, labels).item<double>(), expected, 1e-5);

  // A second image without any positive counts 0 but still divides: the mean is over
  // every image, as the reference's (loss * [pos > 0] / pos).mean().
  const torch::Tensor two_labels = torch::cat({labels, torch::zeros_like(labels)});
  const torch::Tensor two_loss =
      SsdLoss(torch::cat({locations, locations}), torch::cat({scores, scores}),
              torch::cat({offsets, offsets}), two_labels);
  EXPECT_NEAR(two_loss.item<double>(), expected / 2, 1e-5);

  // bf16 outputs (autocast) are lifted to fp32 for the loss.
  EXPECT_EQ(SsdLoss(locations.to(torch::kBFloat16), scores.to(torch::kBFloat16), offsets, labels)
                .scalar_type(),
            torch::kFloat);
}

// With more negatives wanted than there are boxes, every box counts.
TEST(SsdLossTest, MiningKeepsAtMostEveryBox) {
  const torch::Tensor labels = torch::tensor({1, 1, 0}, torch::kLong).view({1, 3});
  const torch::Tensor counted = SsdLossMask(torch::tensor({0.1f, 0.2f, 0.3f}).view({1, 3}), labels);
  EXPECT_TRUE(counted.all().item<bool>());
}

}  // namespace
}  // namespace bench_train
