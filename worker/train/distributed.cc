#include "worker/train/distributed.h"

#include <chrono>
#include <cstdio>
#include <exception>
#include <map>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "common/log.h"

#ifdef BENCH_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef BENCH_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace bench_train {
namespace {

// What this libtorch's c10d offers, detected from its headers (the API moved between
// 1.13 and 2.x, and libtorch has no feature macros for it).
//
// TCPStoreOptions::useLibUV: since 2.2; defaults to true since 2.4, and a libtorch
// built without libuv (Debian's) then throws "use_libuv was requested but PyTorch was
// build without libuv support" on every rank.
template <typename T, typename = void>
struct HasUseLibUV : std::false_type {};
template <typename T>
struct HasUseLibUV<T, std::void_t<decltype(std::declval<T&>().useLibUV)>> : std::true_type {};

template <typename Options>
void UseClassicStoreServer(Options& options) {
  if constexpr (HasUseLibUV<Options>::value) options.useLibUV = false;
}

// ProcessGroupNCCL::shutdown() (2.2 on) and abort() (2.1 on); 1.13 has neither.
template <typename T, typename = void>
struct HasShutdown : std::false_type {};
template <typename T>
struct HasShutdown<T, std::void_t<decltype(std::declval<T&>().shutdown())>> : std::true_type {};
template <typename T, typename = void>
struct HasAbort : std::false_type {};
template <typename T>
struct HasAbort<T, std::void_t<decltype(std::declval<T&>().abort())>> : std::true_type {};

// Ends an NCCL group's communicators before the group is released (1.13: its
// destructor does that).
template <typename Group>
void EndNcclGroup(Group& group) {
  if constexpr (HasShutdown<Group>::value) {
    group.shutdown();
  } else if constexpr (HasAbort<Group>::value) {
    group.abort();
  } else {
    (void)group;
  }
}

// Wraps a concrete c10d process group (a ProcessGroup in libtorch 1.x, a Backend
// in 2.x; both offer allreduce/broadcast on std::vector<at::Tensor>&). `end`, if
// set, runs on the group in Shutdown() before it is released.
template <typename Group>
class ProcessGroupCommunicator : public Communicator {
 public:
  using EndFn = void (*)(Group&);

  ProcessGroupCommunicator(c10::intrusive_ptr<c10d::Store> store, c10::intrusive_ptr<Group> group,
                           int rank, int world_size, const char* name, EndFn end = nullptr)
      : store_(std::move(store)),
        group_(std::move(group)),
        rank_(rank),
        world_size_(world_size),
        name_(name),
        end_(end) {}
  ~ProcessGroupCommunicator() override { Shutdown(); }
  ProcessGroupCommunicator(const ProcessGroupCommunicator&) = delete;
  ProcessGroupCommunicator& operator=(const ProcessGroupCommunicator&) = delete;

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  const char* backend_name() const override { return name_; }
  bool is_shut_down() const override { return shut_down_; }

  void Shutdown() override {
    if (shut_down_) return;
    shut_down_ = true;
    if (end_ != nullptr && group_.defined()) {
      try {
        end_(*group_);
      } catch (const std::exception& e) {
        bench::Log("rank ", rank_, ": ", name_, " process group shutdown: ", e.what());
      } catch (...) {
        bench::Log("rank ", rank_, ": ", name_, " process group shutdown failed");
      }
    }
    // The group first: its threads may still talk to the store.
    try {
      group_.reset();
      store_.reset();
    } catch (...) {
      bench::Log("rank ", rank_, ": releasing the ", name_, " process group failed");
    }
  }

  void AllReduceSum(const std::vector<at::Tensor>& tensors) override {
    CheckOpen();
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp::SUM;
    Run(tensors, [&](std::vector<at::Tensor>& one) { return group_->allreduce(one, options); });
  }

  std::function<void()> StartAllReduceSum(const at::Tensor& tensor) override {
    CheckOpen();
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp::SUM;
    auto input = std::make_shared<std::vector<at::Tensor>>(std::vector<at::Tensor>{tensor});
    auto work = group_->allreduce(*input, options);
    return [input, work]() { work->wait(); };
  }

  void Broadcast(const std::vector<at::Tensor>& tensors, int root) override {
    CheckOpen();
    c10d::BroadcastOptions options;
    options.rootRank = root;
    options.rootTensor = 0;
    Run(tensors, [&](std::vector<at::Tensor>& one) { return group_->broadcast(one, options); });
  }

 private:
  void CheckOpen() const {
    if (shut_down_) {
      throw std::logic_error(std::string("bench-train: a collective on the ") + name_ +
                             " process group after Shutdown()");
    }
  }

  template <typename Start>
  void Run(const std::vector<at::Tensor>& tensors, Start start) {
    // One tensor per collective: c10d reads a vector as one tensor per device.
    std::vector<std::vector<at::Tensor>> inputs;
    inputs.reserve(tensors.size());
    for (const auto& tensor : tensors) inputs.push_back({tensor});
    std::vector<decltype(start(inputs.front()))> works;
    works.reserve(inputs.size());
    for (auto& input : inputs) works.push_back(start(input));
    for (auto& work : works) work->wait();
  }

  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<Group> group_;  // declared after store_: destroyed first
  int rank_;
  int world_size_;
  const char* name_;
  EndFn end_;
  bool shut_down_ = false;
};

bool IsLoopback(const std::string& address) {
  return address == "localhost" || address.rfind("127.", 0) == 0 || address == "::1";
}

std::string ErrorText(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) {
    return c10_error->what_without_backtrace();
  }
  return e.what();
}

// Flat buckets of same-dtype, same-device tensors, at most `bucket_bytes` each.
struct Bucket {
  std::vector<at::Tensor> tensors;
  int64_t bytes = 0;
};

std::vector<Bucket> MakeBuckets(const std::vector<at::Tensor>& tensors, int64_t bucket_bytes) {
  std::vector<Bucket> buckets;
  std::map<std::pair<at::ScalarType, std::string>, size_t> open;  // key -> index in buckets
  for (const auto& tensor : tensors) {
    const auto key = std::make_pair(tensor.scalar_type(), tensor.device().str());
    const int64_t bytes = tensor.numel() * static_cast<int64_t>(tensor.element_size());
    auto it = open.find(key);
    if (it == open.end() || buckets[it->second].bytes + bytes > bucket_bytes) {
      buckets.emplace_back();
      open[key] = buckets.size() - 1;
      it = open.find(key);
    }
    Bucket& bucket = buckets[it->second];
    bucket.tensors.push_back(tensor);
    bucket.bytes += bytes;
  }
  return buckets;
}

at::Tensor Flatten(const Bucket& bucket) {
  std::vector<at::Tensor> flat;
  flat.reserve(bucket.tensors.size());
  for (const auto& tensor : bucket.tensors) flat.push_back(tensor.reshape({-1}));
  return at::cat(flat);
}

void Unflatten(const at::Tensor& flat, const Bucket& bucket) {
  int64_t offset = 0;
  for (const auto& tensor : bucket.tensors) {
    const int64_t n = tensor.numel();
    tensor.copy_(flat.narrow(0, offset, n).view(tensor.sizes()));
    offset += n;
  }
}

}  // namespace

StatusOr<std::unique_ptr<Communicator>> ConnectProcessGroup(const RendezvousOptions& rendezvous,
                                                            Backend backend) {
  if (!rendezvous.distributed()) {
    return InvalidArgumentError("ConnectProcessGroup needs world_size > 1");
  }
  const std::chrono::milliseconds timeout(int64_t{rendezvous.timeout_s} * 1000);
  const std::string where = rendezvous.master_addr + ":" + std::to_string(rendezvous.master_port);

  c10::intrusive_ptr<c10d::Store> store;
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(rendezvous.master_port);
    options.isServer = rendezvous.rank == 0;
    options.numWorkers = static_cast<size_t>(rendezvous.world_size);
    options.waitWorkers = true;
    options.timeout = timeout;
    UseClassicStoreServer(options);
    store = c10::make_intrusive<c10d::TCPStore>(rendezvous.master_addr, options);
  } catch (const std::exception& e) {
    return UnavailableError("rendezvous at " + where + " (rank " + std::to_string(rendezvous.rank) +
                            " of " + std::to_string(rendezvous.world_size) + ", timeout " +
                            std::to_string(rendezvous.timeout_s) + " s) failed: " + ErrorText(e));
  }

  try {
    if (backend == Backend::kGloo) {
#ifdef BENCH_WITH_GLOO
      auto options = c10d::ProcessGroupGloo::Options::create(timeout);
      if (!rendezvous.gloo_interface.empty()) {
        options->devices.push_back(
            c10d::ProcessGroupGloo::createDeviceForInterface(rendezvous.gloo_interface));
      } else if (IsLoopback(rendezvous.master_addr)) {
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      } else {
        options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      }
      auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rendezvous.rank,
                                                               rendezvous.world_size, options);
      return std::unique_ptr<Communicator>(new ProcessGroupCommunicator<c10d::ProcessGroupGloo>(
          store, std::move(group), rendezvous.rank, rendezvous.world_size, "gloo"));
#else
      return UnimplementedError("this bench-train was built without Gloo (c10d ProcessGroupGloo)");
#endif
    }
#ifdef BENCH_WITH_NCCL
    // NCCL communicators are created lazily, on the first collective, on the
    // current CUDA device; the store's timeout bounds that exchange too.
    auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
    nccl_options->timeout = timeout;  // bounds each collective, as for Gloo
    auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(
        store, rendezvous.rank, rendezvous.world_size, nccl_options);
    return std::unique_ptr<Communicator>(new ProcessGroupCommunicator<c10d::ProcessGroupNCCL>(
        store, std::move(group), rendezvous.rank, rendezvous.world_size, "nccl",
        &EndNcclGroup<c10d::ProcessGroupNCCL>));
#else
    return UnimplementedError("this bench-train was built without NCCL (c10d ProcessGroupNCCL)");
#endif
  } catch (const std::exception& e) {
    return UnavailableError(std::string("process group setup (") +
                            (backend == Backend::kGloo ? "gloo" : "nccl") + ", rank " +
                            std::to_string(rendezvous.rank) + " of " +
                            std::to_string(rendezvous.world_size) + ", timeout " +
                            std::to_string(rendezvous.timeout_s) + " s) via " + where +
                            " failed; are all ranks running? " + ErrorText(e));
  }
}

void AverageGradients(const std::vector<at::Tensor>& parameters, Communicator& communicator,
                      int64_t bucket_bytes) {
  if (communicator.world_size() == 1) return;
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> grads;
  grads.reserve(parameters.size());
  for (const auto& parameter : parameters) {
    at::Tensor& grad = parameter.mutable_grad();
    if (!grad.defined()) grad = at::zeros_like(parameter);
    grads.push_back(grad);
  }
  const std::vector<Bucket> buckets = MakeBuckets(grads, bucket_bytes);
  std::vector<at::Tensor> flats;
  flats.reserve(buckets.size());
  for (const auto& bucket : buckets) flats.push_back(Flatten(bucket));
  communicator.AllReduceSum(flats);
  for (size_t i = 0; i < buckets.size(); ++i) {
    flats[i].div_(communicator.world_size());
    Unflatten(flats[i], buckets[i]);
  }
}

GradientReducer::GradientReducer(std::vector<GradientBucket> buckets, Communicator& communicator)
    : communicator_(communicator), buckets_(std::move(buckets)), pending_(buckets_.size(), 0) {
  for (size_t b = 0; b < buckets_.size(); ++b) {
    for (const auto& parameter : buckets_[b].parameters) {
      Hook hook;
      hook.accumulator = torch::autograd::impl::grad_accumulator(parameter);
      hook.key = hook.accumulator->add_post_hook(
          std::make_unique<torch::autograd::utils::LambdaPostHook>(
              [this, b](const torch::autograd::variable_list& outputs,
                        const torch::autograd::variable_list& /*inputs*/) {
                OnGradReady(b);
                return outputs;
              }));
      hooks_.push_back(std::move(hook));
    }
  }
}

GradientReducer::~GradientReducer() {
  for (auto& hook : hooks_) hook.accumulator->del_post_hook(hook.key);
}

void GradientReducer::Prepare() {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    pending_[b] = static_cast<int64_t>(buckets_[b].parameters.size());
  }
  next_to_start_ = 0;
  in_backward_ = true;
  started_in_backward_ = 0;
  waiters_.clear();
}

void GradientReducer::OnGradReady(size_t bucket) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!in_backward_) return;
  if (--pending_[bucket] == 0) StartReadyBuckets();
}

void GradientReducer::StartReadyBuckets() {
  while (next_to_start_ < buckets_.size() && pending_[next_to_start_] <= 0) {
    waiters_.push_back(communicator_.StartAllReduceSum(buckets_[next_to_start_].flat));
    ++next_to_start_;
    if (in_backward_) ++started_in_backward_;
  }
}

void GradientReducer::Finish() {
  std::vector<std::function<void()>> waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_backward_ = false;
    for (auto& pending : pending_) pending = 0;  // a parameter without a gradient adds 0
    StartReadyBuckets();
    waiters.swap(waiters_);
  }
  at::NoGradGuard no_grad;
  for (size_t b = 0; b < waiters.size(); ++b) {
    waiters[b]();
    buckets_[b].flat.div_(communicator_.world_size());
  }
}

void BroadcastTensors(const std::vector<at::Tensor>& tensors, Communicator& communicator, int root,
                      int64_t bucket_bytes) {
  if (communicator.world_size() == 1) return;
  at::NoGradGuard no_grad;
  const std::vector<Bucket> buckets = MakeBuckets(tensors, bucket_bytes);
  std::vector<at::Tensor> flats;
  flats.reserve(buckets.size());
  for (const auto& bucket : buckets) flats.push_back(Flatten(bucket));
  communicator.Broadcast(flats, root);
  for (size_t i = 0; i < buckets.size(); ++i) Unflatten(flats[i], buckets[i]);
}

}  // namespace bench_train
