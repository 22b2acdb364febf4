// SSD300's default boxes, target encoding and loss, as in MLPerf's SSD reference
// (mlcommons/training single_stage_detector/ssd, v0.7-v1.0: utils.py DefaultBoxes and
// Encoder, base_model.py Loss).
//
// Boxes are in image-relative coordinates, [0, 1]: "ltrb" is (left, top, right, bottom),
// "xywh" is (centre x, centre y, width, height). A box index b runs over the feature
// maps in order, within one map over its default-box shapes, then rows, then columns:
// the order of the model's heads (models.h, ssd_resnet34).
//
// Pure functions of tensors; nothing here holds state. EncodeTargets runs on the CPU
// once at start (synthetic data replays its result); SsdLoss runs on the device inside
// the training step without reading anything back to the host.
#ifndef BENCHFLEET_WORKER_TRAIN_DETECTION_H_
#define BENCHFLEET_WORKER_TRAIN_DETECTION_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace bench_train {

// The reference's dboxes300_coco: 8,732 boxes over feature maps 38, 19, 10, 5, 3, 1.
struct DefaultBoxesSpec {
  double figure_size = 300;
  std::vector<int64_t> feature_sizes = {38, 19, 10, 5, 3, 1};
  std::vector<double> steps = {8, 16, 32, 64, 100, 300};
  std::vector<double> scales = {21, 45, 99, 153, 207, 261, 315};  // one more than maps
  std::vector<std::vector<double>> aspect_ratios = {{2}, {2, 3}, {2, 3}, {2, 3}, {2}, {2}};
};

// Box offsets are divided by these (the reference's scale_xy and scale_wh).
inline constexpr double kBoxScaleXy = 0.1;
inline constexpr double kBoxScaleWh = 0.2;
// A default box is a positive when its IoU with a ground truth exceeds this.
inline constexpr double kMatchIouThreshold = 0.5;
// Hard-negative mining keeps this many negatives per positive.
inline constexpr int64_t kNegativesPerPositive = 3;

// [B, 4] fp32 xywh on the CPU, each coordinate clamped to [0, 1]; per map: sizes
// (s_k, s_k), (s', s') with s' = sqrt(s_k s_k+1), then (s_k sqrt(a), s_k / sqrt(a)) and
// its transpose for each aspect ratio a; centres at ((j + 0.5) / f_k, (i + 0.5) / f_k)
// with f_k = figure_size / step_k.
at::Tensor MakeDefaultBoxes(const DefaultBoxesSpec& spec = {});

// Per-feature-map default boxes per cell, as the heads need them: 2 + 2 x ratios.
std::vector<int64_t> BoxesPerCell(const DefaultBoxesSpec& spec = {});

at::Tensor XywhToLtrb(const at::Tensor& xywh);  // [..., 4] -> [..., 4]

// [M, B] intersection over union of ltrb boxes [M, 4] and [B, 4].
at::Tensor BoxIou(const at::Tensor& a_ltrb, const at::Tensor& b_ltrb);

// One image's training targets against the default boxes.
struct EncodedTargets {
  at::Tensor offsets;  // [4, B] fp32: ((x - dx) / dw / 0.1, (y - dy) / dh / 0.1,
                       //  log(w / dw) / 0.2, log(h / dh) / 0.2) of the matched box
  at::Tensor labels;   // [B] int64: the matched box's class, 0 (background) if none
};

// The reference's Encoder.encode followed by its Loss._loc_vec: each default box takes
// the ground truth it overlaps most; each ground truth's best default box is forced to
// it; boxes whose IoU is above `iou_threshold` (forced ones always are) are positives.
// A negative's offsets encode the default box itself (zeros up to rounding).
// `boxes_ltrb` [M, 4] fp32 (M >= 1), `classes` [M] int64 in 1..C-1, `default_xywh` [B, 4].
EncodedTargets EncodeTargets(const at::Tensor& boxes_ltrb, const at::Tensor& classes,
                             const at::Tensor& default_xywh,
                             double iou_threshold = kMatchIouThreshold);

// The reference's Loss, in fp32 on the device: per image, smooth L1 (beta 1) summed
// over the four offsets of its positives, plus cross-entropy over its positives and
// its 3 x positives hardest negatives (highest cross-entropy; all boxes if fewer),
// divided by its number of positives; images without a positive count 0; the mean is
// over all N images (as the reference: (loss * [pos > 0] / pos).mean()).
// `locations` [N, 4, B], `scores` [N, C, B] (any float type), `offsets` [N, 4, B],
// `labels` [N, B]. Returns a 0-dim fp32 tensor.
at::Tensor SsdLoss(const at::Tensor& locations, const at::Tensor& scores,
                   const at::Tensor& offsets, const at::Tensor& labels);

// Which boxes SsdLoss's cross-entropy counts: [N, B] bool, positives and the mined
// negatives (for tests and inspection; SsdLoss uses the same rule).
at::Tensor SsdLossMask(const at::Tensor& per_box_cross_entropy, const at::Tensor& labels);

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_DETECTION_H_
