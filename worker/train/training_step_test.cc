// TrainingStep and its parts on the CPU: the device loss scaler, the flat SGD
// against libtorch's SGD, the LR schedule, zero-init-residual, and two Gloo
// ranks with the overlapped bucketed all-reduce against one process on the
// concatenated batch over several steps.
#include "worker/train/training_step.h"

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <torch/nn.h>
#include <torch/optim/sgd.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "worker/train/two_ranks.h"

namespace bench_train {
namespace {

const c10::Device kCpu(c10::kCPU);

float Value(const at::Tensor& t) { return t.item<float>(); }

TEST(LossScalerTest, UnscalesAndFindsNoInfOnCleanGradients) {
  LossScaler scaler(kCpu, LossScalerOptions{1024.0, 2.0, 0.5, 2000});
  std::vector<at::Tensor> grads = {torch::full({5}, 2048.0), torch::full({2, 2}, -1024.0)};
  scaler.UnscaleAndCheck(grads);
  EXPECT_TRUE(torch::allclose(grads[0], torch::full({5}, 2.0)));
  EXPECT_TRUE(torch::allclose(grads[1], torch::full({2, 2}, -1.0)));
  EXPECT_EQ(Value(scaler.found_inf()), 0.0f);
  EXPECT_EQ(Value(scaler.Scale(torch::tensor(3.0f))), 3072.0f);
}

TEST(LossScalerTest, HalvesTheScaleAndSkipsTheStepOnInfOrNan) {
  torch::manual_seed(3);
  torch::nn::Linear layer(4, 3);
  FlatSgd sgd(*layer, SgdOptions{});
  for (float bad : {INFINITY, NAN}) {
    LossScaler scaler(kCpu);
    const at::Tensor params_before = torch::cat({sgd.groups()[0].params, sgd.groups()[1].params});
    const at::Tensor momentum_before =
        torch::cat({sgd.groups()[0].momentum, sgd.groups()[1].momentum});
    sgd.ZeroGrad();
    layer->weight.grad().fill_(1.0);
    layer->weight.grad()[1][2] = bad;
    scaler.UnscaleAndCheck(sgd.flat_grads());
    EXPECT_EQ(Value(scaler.found_inf()), 1.0f);
    sgd.StepWithTensorOps(torch::tensor(0.5f), scaler.found_inf());  // the CUDA path
    scaler.Update();
    EXPECT_TRUE(torch::equal(torch::cat({sgd.groups()[0].params, sgd.groups()[1].params}),
                             params_before));
    EXPECT_TRUE(torch::equal(torch::cat({sgd.groups()[0].momentum, sgd.groups()[1].momentum}),
                             momentum_before));
    EXPECT_EQ(Value(scaler.scale()), 32768.0f);
    EXPECT_EQ(Value(scaler.skipped_steps()), 1.0f);
  }
}

TEST(LossScalerTest, GrowsTheScaleAfterGrowthIntervalCleanSteps) {
  LossScaler scaler(kCpu, LossScalerOptions{8.0, 2.0, 0.5, 3});
  std::vector<at::Tensor> clean = {torch::ones({3})};
  auto step = [&](bool overflow) {
    clean[0].fill_(overflow ? INFINITY : 1.0);
    scaler.UnscaleAndCheck(clean);
    scaler.Update();
  };
  step(false);
  step(false);
  EXPECT_EQ(Value(scaler.scale()), 8.0f);
  step(false);
  EXPECT_EQ(Value(scaler.scale()), 16.0f);  // third clean step in a row
  step(false);
  step(true);
  EXPECT_EQ(Value(scaler.scale()), 8.0f);  // backoff resets the count
  step(false);
  step(false);
  EXPECT_EQ(Value(scaler.scale()), 8.0f);
  step(false);
  EXPECT_EQ(Value(scaler.scale()), 16.0f);
  EXPECT_EQ(Value(scaler.skipped_steps()), 1.0f);
}

// With weight decay on every parameter, FlatSgd follows torch::optim::SGD.
TEST(FlatSgdTest, MatchesLibtorchSgd) {
  auto make = [] {
    torch::manual_seed(11);
    return torch::nn::Sequential(torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 4, 3)),
                                 torch::nn::BatchNorm2d(4), torch::nn::Flatten(),
                                 torch::nn::Linear(4 * 6 * 6, 5));
  };
  auto ours = make();
  auto theirs = make();
  SgdOptions options;
  options.momentum = 0.875;
  options.weight_decay = 0.01;
  options.bn_weight_decay = true;
  FlatSgd flat(*ours, options);
  torch::optim::SGD reference(theirs->parameters(),
                              torch::optim::SGDOptions(0.1).momentum(0.875).weight_decay(0.01));
  torch::manual_seed(12);
  for (int step = 0; step < 4; ++step) {
    const at::Tensor x = torch::randn({2, 3, 8, 8});
    flat.ZeroGrad();
    ours->forward(x).square().mean().backward();
    flat.Step(torch::tensor(0.1f), at::Tensor());
    reference.zero_grad();
    theirs->forward(x).square().mean().backward();
    reference.step();
  }
  const auto expected = theirs->named_parameters();
  for (const auto& item : ours->named_parameters()) {
    // Float rounding differs (the CPU path is one fused loop): a few ulps per step.
    EXPECT_TRUE(torch::allclose(item.value(), expected[item.key()], 1e-4, 1e-5))
        << item.key() << " max abs diff "
        << (item.value() - expected[item.key()]).abs().max().item<float>();
  }
}

// The CPU's fused loop and the device's tensor ops (masked or not) agree.
TEST(FlatSgdTest, FusedCpuStepEqualsTheDeviceTensorOps) {
  auto make = [] {
    torch::manual_seed(21);
    return torch::nn::Sequential(torch::nn::Linear(7, 9), torch::nn::BatchNorm1d(9),
                                 torch::nn::Linear(9, 3));
  };
  auto a = make();
  auto b = make();
  auto c = make();
  auto e = make();
  SgdOptions options;
  options.weight_decay = 0.05;
  FlatSgd fused(*a, options);
  FlatSgd tensor_ops(*b, options);
  FlatSgd masked(*c, options);
  FlatSgd own_grads(*e, options);
  own_grads.UseGradsAsViews(false);
  torch::manual_seed(22);
  for (int step = 0; step < 3; ++step) {
    const at::Tensor x = torch::randn({4, 7});
    const at::Tensor lr = torch::tensor(0.3f - 0.1f * step);
    for (auto* flat : {&fused, &tensor_ops, &masked, &own_grads}) flat->ZeroGrad();
    e->forward(x).square().mean().backward();
    own_grads.StepFusedCpu(lr, at::Tensor());
    a->forward(x).square().mean().backward();
    b->forward(x).square().mean().backward();
    c->forward(x).square().mean().backward();
    fused.StepFusedCpu(lr, at::Tensor());
    tensor_ops.StepWithTensorOps(lr, at::Tensor());
    masked.StepWithTensorOps(lr, torch::tensor(0.0f));
  }
  for (size_t g = 0; g < 2; ++g) {
    const auto& want = tensor_ops.groups()[g];
    EXPECT_TRUE(torch::allclose(fused.groups()[g].params, want.params, 1e-4, 1e-5)) << g;
    EXPECT_TRUE(torch::allclose(fused.groups()[g].momentum, want.momentum, 1e-4, 1e-5)) << g;
    EXPECT_TRUE(torch::equal(masked.groups()[g].params, want.params)) << g;
    EXPECT_TRUE(torch::equal(own_grads.groups()[g].params, fused.groups()[g].params)) << g;
  }
  // A skipped step changes nothing on either path.
  const at::Tensor before = fused.groups()[0].params.clone();
  fused.StepFusedCpu(torch::tensor(0.1f), torch::tensor(1.0f));
  EXPECT_TRUE(torch::equal(fused.groups()[0].params, before));
}

TEST(FlatSgdTest, NoWeightDecayOnBatchNormAndBiasesAndChannelsLastViews) {
  torch::nn::Sequential net(torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 4, 3)),
                            torch::nn::BatchNorm2d(4));
  SgdOptions options;
  options.channels_last = true;
  FlatSgd flat(*net, options);
  ASSERT_EQ(flat.groups().size(), 2u);
  EXPECT_EQ(flat.groups()[0].slots.size(), 1u);  // 0.weight
  EXPECT_EQ(flat.groups()[0].slots[0].name, "0.weight");
  EXPECT_EQ(flat.groups()[1].slots.size(), 3u);  // 0.bias, 1.weight, 1.bias
  EXPECT_EQ(flat.groups()[1].weight_decay, 0.0);
  const at::Tensor weight = net->named_parameters()["0.weight"];
  EXPECT_TRUE(weight.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_EQ(weight.data_ptr(), flat.groups()[0].params.data_ptr());
  EXPECT_EQ(weight.grad().data_ptr(), flat.groups()[0].grads.data_ptr());
}

TEST(LrScheduleTest, LinearWarmupThenCosineOnTheDevice) {
  LrSchedule schedule(0.4, 3, 10, kCpu);
  for (int step = 0; step < 10; ++step) {
    EXPECT_NEAR(Value(schedule.Next()), LrSchedule::At(0.4, 3, 10, step), 1e-6) << step;
  }
  EXPECT_NEAR(LrSchedule::At(0.4, 3, 10, 0), 0.4 / 3, 1e-12);
  EXPECT_NEAR(LrSchedule::At(0.4, 3, 10, 3), 0.4, 1e-12);
  EXPECT_NEAR(LrSchedule::At(0.4, 3, 10, 10), 0.0, 1e-12);
}

TEST(ModelsTest, ZeroInitResidualZeroesTheLastNormOfEachBlock) {
  ModelOptions options;
  options.num_classes = 10;
  options.zero_init_residual = true;
  auto model = MakeModel("resnet50", options);
  ASSERT_TRUE(model.ok());
  const auto params = (*model)->named_parameters();
  EXPECT_EQ(params["layer1.0.bn3.weight"].abs().sum().item<float>(), 0.0f);
  EXPECT_EQ(params["layer4.2.bn3.weight"].abs().sum().item<float>(), 0.0f);
  EXPECT_EQ(params["layer1.0.bn2.weight"].min().item<float>(), 1.0f);
  auto basic = MakeModel("resnet18", options);
  ASSERT_TRUE(basic.ok());
  EXPECT_EQ((*basic)->named_parameters()["layer2.1.bn2.weight"].abs().sum().item<float>(), 0.0f);
}

StepOptions SmallStep() {
  StepOptions options;
  options.lr = 0.2;
  options.lr_warmup = 2;
  options.total_steps = 4;
  options.bucket_bytes = 1 << 20;  // several buckets for resnet18
  return options;
}

std::shared_ptr<ImageClassifier> EvalModel(uint64_t seed) {
  torch::manual_seed(seed);
  auto model = MakeClassifier("resnet18", 10);
  EXPECT_TRUE(model.ok());
  (*model)->eval();  // BN on running stats: per-sample independent, so shards add up
  return *model;
}

// Two ranks (threads, real TCPStore + Gloo), each on half of every batch, with
// the all-reduce started from gradient hooks during backward, must end where one
// process on the whole batches ends, after several steps of the full recipe
// (label smoothing, momentum, no decay on BN and biases, warm-up + cosine).
TEST(TrainingStepTest, TwoRanksWithOverlappedBucketsEqualOneProcess) {
  constexpr int kSteps = 4;
  torch::manual_seed(99);
  std::vector<at::Tensor> images;
  std::vector<at::Tensor> labels;
  for (int s = 0; s < kSteps; ++s) {
    images.push_back(torch::randn({4, 3, 32, 32}));
    labels.push_back(torch::randint(0, 10, {4}, torch::kLong));
  }
  auto reference = EvalModel(7);
  {
    TrainingStep step(reference, SmallStep(), nullptr);
    for (int s = 0; s < kSteps; ++s) step.Run(images[s], labels[s]);
  }

  std::vector<std::shared_ptr<ImageClassifier>> ranks = {EvalModel(7), EvalModel(8)};
  std::vector<int64_t> overlapped(2, 0);
  std::vector<size_t> buckets(2, 0);
  const std::vector<Status> statuses = RunTwoRanks([&](int rank, Communicator& communicator) {
    ImageClassifier& model = *ranks[rank];
    std::vector<at::Tensor> state = model.parameters();
    for (const auto& buffer : model.buffers()) state.push_back(buffer);
    BroadcastTensors(state, communicator, /*root=*/0);
    TrainingStep step(ranks[rank], SmallStep(), &communicator);
    for (int s = 0; s < kSteps; ++s) {
      step.Run(images[s].narrow(0, 2 * rank, 2), labels[s].narrow(0, 2 * rank, 2));
      overlapped[rank] += step.reducer()->started_during_backward();
    }
    buckets[rank] = step.reducer()->num_buckets();
  });
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(statuses[rank].ok()) << "rank " << rank << ": " << statuses[rank].message();
    EXPECT_GT(buckets[rank], 3u);
    // Every bucket but the last-ready ones starts inside backward.
    EXPECT_GE(overlapped[rank], kSteps * 2) << "rank " << rank;
  }
  const auto expected = reference->named_parameters();
  int compared = 0;
  for (int rank = 0; rank < 2; ++rank) {
    for (const auto& item : ranks[rank]->named_parameters()) {
      const at::Tensor& want = expected[item.key()];
      EXPECT_TRUE(torch::allclose(item.value(), want, /*rtol=*/1e-4, /*atol=*/1e-5))
          << "rank " << rank << " " << item.key() << " max abs diff "
          << (item.value() - want).abs().max().item<double>();
      ++compared;
    }
  }
  EXPECT_EQ(compared, 2 * 62);
  // Training moved the weights.
  EXPECT_FALSE(torch::allclose(expected["fc.weight"], EvalModel(7)->named_parameters()["fc.weight"]));
}

// Records the phase marks a step makes (the step split, training_step.h).
class RecordingMarker : public StepPhaseMarker {
 public:
  void Mark(StepPhase phase) override {
    marks.push_back(phase == StepPhase::kForwardBackward ? "forward_backward" : "rank_wait");
  }
  std::vector<std::string> marks;
};

// One rank marks only the end of backward (no wait for anyone); two ranks mark the wait
// for rank 0's buffers (with broadcast_buffers) and the all-reduce wait after backward.
TEST(TrainingStepTest, MarksTheEndOfEachPhaseInOrder) {
  torch::manual_seed(3);
  const at::Tensor images = torch::randn({2, 3, 32, 32});
  const at::Tensor labels = torch::randint(0, 10, {2}, torch::kLong);
  {
    RecordingMarker marker;
    TrainingStep step(EvalModel(7), SmallStep(), nullptr);
    step.set_phase_marker(&marker);
    step.Run(images, labels);
    EXPECT_EQ(marker.marks, std::vector<std::string>{"forward_backward"});
  }
  for (const bool broadcast_buffers : {true, false}) {
    std::vector<RecordingMarker> markers(2);
    StepOptions options = SmallStep();
    options.broadcast_buffers = broadcast_buffers;
    const std::vector<Status> statuses = RunTwoRanks([&](int rank, Communicator& communicator) {
      auto model = EvalModel(7);
      model->train();  // BatchNorm buffers to broadcast
      TrainingStep step(model, options, &communicator);
      step.set_phase_marker(&markers[rank]);
      step.Run(images, labels);
    });
    const std::vector<std::string> expected =
        broadcast_buffers ? std::vector<std::string>{"forward_backward", "rank_wait",
                                                     "forward_backward", "rank_wait"}
                          : std::vector<std::string>{"forward_backward", "rank_wait"};
    for (int rank = 0; rank < 2; ++rank) {
      ASSERT_TRUE(statuses[rank].ok()) << "rank " << rank << ": " << statuses[rank].message();
      EXPECT_EQ(markers[rank].marks, expected)
          << "rank " << rank << ", broadcast_buffers " << broadcast_buffers;
    }
  }
}

// Trains two ranks in BatchNorm's training mode for kSteps steps on different
// data per rank, then one step on the same batch on both; returns each rank's
// buffers (running statistics) afterwards.
std::vector<std::vector<at::Tensor>> BuffersAfterDivergentThenSharedBatches(
    bool broadcast_buffers) {
  constexpr int kSteps = 3;
  torch::manual_seed(5);
  std::vector<at::Tensor> images;
  for (int s = 0; s < 2 * kSteps + 1; ++s) {
    images.push_back(torch::randn({2, 3, 32, 32}) * (s + 1));
  }
  const at::Tensor labels = torch::randint(0, 10, {2}, torch::kLong);
  std::vector<std::shared_ptr<ImageClassifier>> models;
  for (int rank = 0; rank < 2; ++rank) {
    models.push_back(EvalModel(7));  // the same weights on both ranks
    models.back()->train();          // BatchNorm on batch statistics, updating its buffers
  }
  StepOptions options = SmallStep();
  options.broadcast_buffers = broadcast_buffers;
  std::vector<std::vector<at::Tensor>> buffers(2);
  const std::vector<Status> statuses = RunTwoRanks([&](int rank, Communicator& communicator) {
    TrainingStep step(models[rank], options, &communicator);
    for (int s = 0; s < kSteps; ++s) step.Run(images[2 * s + rank], labels);
    step.Run(images[2 * kSteps], labels);  // the same batch on both ranks
    for (const auto& buffer : models[rank]->buffers()) buffers[rank].push_back(buffer.clone());
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(statuses[rank].ok()) << "rank " << rank << ": " << statuses[rank].message();
  }
  return buffers;
}

bool SameBuffers(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.empty() || a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!torch::allclose(a[i].to(torch::kDouble), b[i].to(torch::kDouble), 1e-6, 1e-7)) {
      return false;
    }
  }
  return true;
}

// As DDP's broadcast_buffers: both ranks start the last step from rank 0's running
// statistics, so one shared batch leaves them equal; without the broadcast each
// rank keeps the history of its own data.
TEST(TrainingStepTest, RankZerosBatchNormStatisticsAreBroadcastBeforeEachForward) {
  const auto broadcast = BuffersAfterDivergentThenSharedBatches(/*broadcast_buffers=*/true);
  ASSERT_EQ(broadcast[0].size(), 3u * 20);  // resnet18: 20 BatchNorms x (mean, var, count)
  EXPECT_TRUE(SameBuffers(broadcast[0], broadcast[1]));
  const auto own = BuffersAfterDivergentThenSharedBatches(/*broadcast_buffers=*/false);
  ASSERT_EQ(own[0].size(), 3u * 20);
  EXPECT_FALSE(SameBuffers(own[0], own[1]));
}

}  // namespace
}  // namespace bench_train

namespace bench_train {
namespace {

std::vector<at::Tensor> Snapshot(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> copies;
  for (const auto& tensor : tensors) copies.push_back(tensor.clone());
  return copies;
}

bool AllEqual(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (!torch::equal(a[i], b[i])) return false;
  }
  return a.size() == b.size();
}

std::vector<at::Tensor> Momenta(TrainingStep& step) {
  std::vector<at::Tensor> momenta;
  for (const auto& group : step.optimizer().groups()) momenta.push_back(group.momentum);
  return momenta;
}

// The whole fp16-style step on CPU tensors: scaled backward, unscale and
// overflow check, masked update, scale update and the skipped-step count, with
// an inf injected into one batch.
TEST(TrainingStepTest, LossScaledStepSkipsAnOverflowAndBacksOffThenGrows) {
  torch::manual_seed(5);
  const at::Tensor images = torch::randn({2, 3, 32, 32});
  const at::Tensor labels = torch::randint(0, 10, {2}, torch::kLong);
  at::Tensor poisoned = images.clone();
  poisoned[0][1][7][7] = std::numeric_limits<float>::infinity();

  StepOptions options = SmallStep();
  options.loss_scaling = true;
  options.scaler = LossScalerOptions{1024.0, 2.0, 0.5, /*growth_interval=*/2};
  auto scaled_model = EvalModel(11);
  TrainingStep scaled(scaled_model, options, nullptr);

  // Step 1, clean: the same update as an unscaled step from the same weights.
  auto plain_model = EvalModel(11);
  StepOptions plain_options = SmallStep();
  TrainingStep plain(plain_model, plain_options, nullptr);
  EXPECT_TRUE(std::isfinite(Value(scaled.Run(images, labels))));
  plain.Run(images, labels);
  const auto expected = plain_model->named_parameters();
  for (const auto& item : scaled_model->named_parameters()) {
    EXPECT_TRUE(torch::allclose(item.value(), expected[item.key()], 1e-5, 1e-6)) << item.key();
  }
  EXPECT_EQ(Value(scaled.scaler()->scale()), 1024.0f);
  EXPECT_EQ(Value(scaled.scaler()->found_inf()), 0.0f);

  // Step 2, an inf in the batch: the loss is not finite, nothing is updated
  // (weights and momentum), the scale halves and the step counts as skipped.
  const auto weights_before = Snapshot(scaled_model->parameters());
  const auto momenta_before = Snapshot(Momenta(scaled));
  EXPECT_FALSE(std::isfinite(Value(scaled.Run(poisoned, labels))));
  EXPECT_EQ(Value(scaled.scaler()->found_inf()), 1.0f);
  EXPECT_TRUE(AllEqual(scaled_model->parameters(), weights_before));
  EXPECT_TRUE(AllEqual(Momenta(scaled), momenta_before));
  EXPECT_EQ(Value(scaled.scaler()->scale()), 512.0f);
  EXPECT_EQ(Value(scaled.scaler()->skipped_steps()), 1.0f);

  // Steps 3 and 4, clean: updates resume, and after growth_interval clean steps
  // in a row the scale doubles; the skipped count stays.
  EXPECT_TRUE(std::isfinite(Value(scaled.Run(images, labels))));
  EXPECT_FALSE(AllEqual(scaled_model->parameters(), weights_before));
  EXPECT_EQ(Value(scaled.scaler()->scale()), 512.0f);
  scaled.Run(images, labels);
  EXPECT_EQ(Value(scaled.scaler()->scale()), 1024.0f);
  EXPECT_EQ(Value(scaled.scaler()->skipped_steps()), 1.0f);
  for (const auto& weight : scaled_model->parameters()) {
    EXPECT_TRUE(torch::isfinite(weight).all().item<bool>());
  }
}

}  // namespace
}  // namespace bench_train
