#include "worker/train/detection.h"

#include <ATen/ATen.h>

#include <cmath>
#include <utility>

namespace bench_train {

at::Tensor MakeDefaultBoxes(const DefaultBoxesSpec& spec) {
  std::vector<float> boxes;
  for (size_t k = 0; k < spec.feature_sizes.size(); ++k) {
    const double cells_per_side = spec.figure_size / spec.steps[k];
    const double small = spec.scales[k] / spec.figure_size;
    const double large = spec.scales[k + 1] / spec.figure_size;
    const double between = std::sqrt(small * large);
    std::vector<std::pair<double, double>> sizes = {{small, small}, {between, between}};
    for (const double ratio : spec.aspect_ratios[k]) {
      const double w = small * std::sqrt(ratio);
      const double h = small / std::sqrt(ratio);
      sizes.emplace_back(w, h);
      sizes.emplace_back(h, w);
    }
    const int64_t side = spec.feature_sizes[k];
    for (const auto& [w, h] : sizes) {
      for (int64_t i = 0; i < side; ++i) {
        for (int64_t j = 0; j < side; ++j) {
          boxes.push_back(static_cast<float>((j + 0.5) / cells_per_side));
          boxes.push_back(static_cast<float>((i + 0.5) / cells_per_side));
          boxes.push_back(static_cast<float>(w));
          boxes.push_back(static_cast<float>(h));
        }
      }
    }
  }
  const int64_t count = static_cast<int64_t>(boxes.size() / 4);
  return at::tensor(boxes, at::kFloat).view({count, 4}).clamp_(0, 1);
}

std::vector<int64_t> BoxesPerCell(const DefaultBoxesSpec& spec) {
  std::vector<int64_t> per_cell;
  for (const auto& ratios : spec.aspect_ratios) {
    per_cell.push_back(2 + 2 * static_cast<int64_t>(ratios.size()));
  }
  return per_cell;
}

at::Tensor XywhToLtrb(const at::Tensor& xywh) {
  const at::Tensor centre = xywh.narrow(-1, 0, 2);
  const at::Tensor half = xywh.narrow(-1, 2, 2) * 0.5;
  return at::cat({centre - half, centre + half}, -1);
}

at::Tensor BoxIou(const at::Tensor& a_ltrb, const at::Tensor& b_ltrb) {
  const at::Tensor a = a_ltrb.unsqueeze(1);  // [M, 1, 4]
  const at::Tensor b = b_ltrb.unsqueeze(0);  // [1, B, 4]
  const at::Tensor left_top = at::max(a.narrow(-1, 0, 2), b.narrow(-1, 0, 2));
  const at::Tensor right_bottom = at::min(a.narrow(-1, 2, 2), b.narrow(-1, 2, 2));
  const at::Tensor extent = (right_bottom - left_top).clamp_min(0);
  const at::Tensor intersection = extent.select(-1, 0) * extent.select(-1, 1);
  auto area = [](const at::Tensor& ltrb) {
    const at::Tensor wh = ltrb.narrow(-1, 2, 2) - ltrb.narrow(-1, 0, 2);
    return wh.select(-1, 0) * wh.select(-1, 1);
  };
  return intersection / (area(a) + area(b) - intersection);
}

EncodedTargets EncodeTargets(const at::Tensor& boxes_ltrb, const at::Tensor& classes,
                             const at::Tensor& default_xywh, double iou_threshold) {
  const at::Tensor default_ltrb = XywhToLtrb(default_xywh);
  const at::Tensor iou = BoxIou(boxes_ltrb, default_ltrb);  // [M, B]
  auto [best_truth_iou, best_truth] = iou.max(/*dim=*/0);   // per default box
  const at::Tensor best_default = std::get<1>(iou.max(/*dim=*/1));  // per ground truth
  // Each ground truth keeps its best default box, whatever else overlaps it.
  best_truth_iou.index_fill_(0, best_default, 2.0);
  best_truth.index_put_({best_default},
                        at::arange(boxes_ltrb.size(0), best_truth.options()));
  const at::Tensor positive = best_truth_iou > iou_threshold;

  EncodedTargets targets;
  targets.labels = at::where(positive, classes.index_select(0, best_truth),
                             at::zeros_like(best_truth));
  const at::Tensor matched_ltrb =
      at::where(positive.unsqueeze(1), boxes_ltrb.index_select(0, best_truth), default_ltrb);
  const at::Tensor matched_wh = matched_ltrb.narrow(1, 2, 2) - matched_ltrb.narrow(1, 0, 2);
  const at::Tensor matched_xy = (matched_ltrb.narrow(1, 0, 2) + matched_ltrb.narrow(1, 2, 2)) * 0.5;
  const at::Tensor default_xy = default_xywh.narrow(1, 0, 2);
  const at::Tensor default_wh = default_xywh.narrow(1, 2, 2);
  const at::Tensor offset_xy = (matched_xy - default_xy) / default_wh / kBoxScaleXy;
  const at::Tensor offset_wh = (matched_wh / default_wh).log() / kBoxScaleWh;
  targets.offsets = at::cat({offset_xy, offset_wh}, 1).t().contiguous();  // [4, B]
  return targets;
}

at::Tensor SsdLossMask(const at::Tensor& per_box_cross_entropy, const at::Tensor& labels) {
  const at::Tensor positive = labels > 0;
  const at::Tensor positives = positive.sum(/*dim=*/1, /*keepdim=*/true);
  // Rank the negatives by their cross-entropy, highest first (positives rank last).
  const at::Tensor negative_loss = per_box_cross_entropy.masked_fill(positive, 0);
  const at::Tensor order = std::get<1>(negative_loss.sort(/*dim=*/1, /*descending=*/true));
  const at::Tensor rank = std::get<1>(order.sort(/*dim=*/1));
  const at::Tensor kept_negatives =
      (kNegativesPerPositive * positives).clamp_max(labels.size(1));
  return positive.logical_or(rank < kept_negatives);
}

at::Tensor SsdLoss(const at::Tensor& locations, const at::Tensor& scores,
                   const at::Tensor& offsets, const at::Tensor& labels) {
  const at::Tensor positive = labels > 0;
  const at::Tensor positive_f = positive.to(at::kFloat);
  const at::Tensor positives = positive_f.sum(/*dim=*/1);  // [N]

  const at::Tensor box_loss =
      at::smooth_l1_loss(locations.to(at::kFloat), offsets, at::Reduction::None, /*beta=*/1.0)
          .sum(/*dim=*/1);  // [N, B]
  const at::Tensor location_loss = (box_loss * positive_f).sum(/*dim=*/1);

  const at::Tensor cross_entropy = at::cross_entropy_loss(
      scores.to(at::kFloat), labels, /*weight=*/{}, at::Reduction::None);  // [N, B]
  // The mining ranks by values only: no gradient flows through the choice.
  const at::Tensor counted = SsdLossMask(cross_entropy.detach(), labels).to(at::kFloat);
  const at::Tensor class_loss = (cross_entropy * counted).sum(/*dim=*/1);

  const at::Tensor has_positive = (positives > 0).to(at::kFloat);
  return ((location_loss + class_loss) * has_positive / positives.clamp_min(1e-6)).mean();
}

}  // namespace bench_train
