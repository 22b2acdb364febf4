#include "common/configuration_key.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace bench {
namespace {

ConfigurationKey Resnet50(int devices) {
  return ConfigurationKey{"resnet50",    devices, Precision::kFp32, 256, DeviceKind::kCuda,
                          "NVIDIA A100", 224};
}

TEST(ConfigurationKeyTest, EqualOnlyWhenEveryFieldIs) {
  const ConfigurationKey key = Resnet50(8);
  EXPECT_EQ(key, Resnet50(8));
  std::vector<ConfigurationKey> others(8, key);
  others[0].model = "resnet18";
  others[1].devices = 4;
  others[2].precision = Precision::kAmp;
  others[3].batch_size = 128;
  others[4].device_kind = DeviceKind::kCpu;
  others[5].gpu_model = "NVIDIA H100";
  others[6].image_size = 160;
  others[7].simulated = true;
  for (const ConfigurationKey& other : others) {
    EXPECT_NE(key, other) << other.ToString();
    EXPECT_TRUE(key < other || other < key) << other.ToString();
  }
}

// benchd's results cells and baselines are listed in this order (results.h, baseline.h):
// model, devices, precision (its enum's order), batch size, device kind (its enum's
// order), GPU model, image size.
TEST(ConfigurationKeyTest, OrdersByModelDevicesPrecisionBatchKindGpuImageSize) {
  auto key = [](std::string model, int devices, Precision precision, int batch, DeviceKind kind,
                std::string gpu, int image_size) {
    return ConfigurationKey{model, devices, precision, batch, kind, gpu, image_size};
  };
  const std::vector<ConfigurationKey> ordered = {
      key("resnet18", 8, Precision::kBf16, 512, DeviceKind::kCpu, "", 224),
      key("resnet50", 1, Precision::kBf16, 512, DeviceKind::kCpu, "", 224),
      key("resnet50", 2, Precision::kUnspecified, 512, DeviceKind::kCpu, "", 224),
      key("resnet50", 2, Precision::kFp32, 512, DeviceKind::kCpu, "", 224),
      key("resnet50", 2, Precision::kAmp, 64, DeviceKind::kCpu, "", 224),
      key("resnet50", 2, Precision::kAmp, 128, DeviceKind::kNone, "", 224),
      key("resnet50", 2, Precision::kAmp, 128, DeviceKind::kCuda, "A100", 224),
      key("resnet50", 2, Precision::kAmp, 128, DeviceKind::kCuda, "H100", 160),
      key("resnet50", 2, Precision::kAmp, 128, DeviceKind::kCuda, "H100", 224),
      key("resnet50", 2, Precision::kAmp, 128, DeviceKind::kCpu, "", 224),
  };
  for (size_t i = 0; i + 1 < ordered.size(); ++i) {
    EXPECT_TRUE(ordered[i] < ordered[i + 1]) << i << ": " << ordered[i].ToString();
    EXPECT_FALSE(ordered[i + 1] < ordered[i]) << i << ": " << ordered[i].ToString();
  }
  std::vector<ConfigurationKey> shuffled(ordered.rbegin(), ordered.rend());
  std::sort(shuffled.begin(), shuffled.end());
  EXPECT_EQ(shuffled, ordered);
  // A map keyed by it groups equal keys into one entry.
  std::map<ConfigurationKey, int> counts;
  for (int i = 0; i < 3; ++i) ++counts[Resnet50(1)];
  ++counts[Resnet50(2)];
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_EQ(counts[Resnet50(1)], 3);
}

TEST(ConfigurationKeyTest, ToStringNamesEveryField) {
  EXPECT_EQ(Resnet50(8).ToString(),
            "model=\"resnet50\" devices=8 precision=fp32 batch_size=256 device_kind=cuda "
            "gpu_model=\"NVIDIA A100\" image_size=224");
  EXPECT_EQ(ConfigurationKey{}.ToString(),
            "model=\"\" devices=0 precision=unspecified batch_size=0 device_kind=\"\" "
            "gpu_model=\"\" image_size=0");
  ConfigurationKey odd = Resnet50(1);
  odd.model = "a\"b\n";
  EXPECT_EQ(odd.ToString().substr(0, 16), "model=\"a\\\"b\\x0a\"");
}

TEST(ConfigurationFilterTest, AnEmptyFilterMatchesEverything) {
  const ConfigurationFilter any;
  EXPECT_TRUE(any.empty());
  EXPECT_TRUE(any.Matches(Resnet50(8)));
  EXPECT_TRUE(any.Matches(ConfigurationKey{}));
  EXPECT_EQ(any.ToString(), "any configuration");
}

// Simulated figures (issue 26) are never mixed with real ones: every filter, the empty one
// included, selects one kind.
TEST(ConfigurationFilterTest, RealAndSimulatedNeverMatchEachOther) {
  ConfigurationKey simulated = Resnet50(8);
  simulated.simulated = true;
  const ConfigurationFilter real_only;
  EXPECT_FALSE(real_only.Matches(simulated));
  EXPECT_TRUE(real_only.Matches(Resnet50(8)));
  ConfigurationFilter simulated_only;
  simulated_only.simulated = true;
  EXPECT_TRUE(simulated_only.empty());
  EXPECT_TRUE(simulated_only.Matches(simulated));
  EXPECT_FALSE(simulated_only.Matches(Resnet50(8)));
  EXPECT_TRUE(ConfigurationFilter::Exactly(simulated).Matches(simulated));
  EXPECT_FALSE(ConfigurationFilter::Exactly(simulated).Matches(Resnet50(8)));
  EXPECT_EQ(simulated.ToString(),
            "model=\"resnet50\" devices=8 precision=fp32 batch_size=256 device_kind=cuda "
            "gpu_model=\"NVIDIA A100\" image_size=224 simulated");
  EXPECT_EQ(simulated_only.ToString(), "simulated");
}

TEST(ConfigurationFilterTest, SetFieldsMustAllMatch) {
  ConfigurationFilter filter;  // "all configurations with model=resnet50 and gpus=8"
  filter.model = "resnet50";
  filter.devices = 8;
  EXPECT_FALSE(filter.empty());
  EXPECT_EQ(filter.ToString(), "model=\"resnet50\" devices=8");
  EXPECT_TRUE(filter.Matches(Resnet50(8)));
  ConfigurationKey amp = Resnet50(8);
  amp.precision = Precision::kAmp;
  amp.gpu_model = "NVIDIA H100";
  EXPECT_TRUE(filter.Matches(amp));  // unset fields match anything
  EXPECT_FALSE(filter.Matches(Resnet50(4)));
  ConfigurationKey other = Resnet50(8);
  other.model = "resnet18";
  EXPECT_FALSE(filter.Matches(other));

  filter.precision = Precision::kAmp;
  EXPECT_TRUE(filter.Matches(amp));
  EXPECT_FALSE(filter.Matches(Resnet50(8)));
}

TEST(ConfigurationFilterTest, AnEmptyGpuModelIsAValue) {
  ConfigurationFilter filter;
  filter.gpu_model = "";
  ConfigurationKey cpu = Resnet50(2);
  cpu.device_kind = DeviceKind::kCpu;
  cpu.gpu_model = "";
  EXPECT_TRUE(filter.Matches(cpu));
  EXPECT_FALSE(filter.Matches(Resnet50(2)));
  EXPECT_EQ(filter.ToString(), "gpu_model=\"\"");
}

TEST(ConfigurationFilterTest, ExactlyMatchesOnlyItsKey) {
  const ConfigurationKey key = Resnet50(8);
  const ConfigurationFilter exactly = ConfigurationFilter::Exactly(key);
  EXPECT_TRUE(exactly.Matches(key));
  ConfigurationKey other = key;
  other.image_size = 299;
  EXPECT_FALSE(exactly.Matches(other));
  other = key;
  other.device_kind = DeviceKind::kNone;
  EXPECT_FALSE(exactly.Matches(other));
  EXPECT_EQ(exactly.ToString(), key.ToString());
}

TEST(ConfigurationKeyTest, NamesRoundTrip) {
  for (Precision p : {Precision::kFp32, Precision::kAmp, Precision::kTf32, Precision::kBf16}) {
    EXPECT_EQ(PrecisionFromText(PrecisionText(p)), p) << PrecisionText(p);
  }
  EXPECT_EQ(PrecisionText(Precision::kUnspecified), std::string("unspecified"));
  EXPECT_EQ(PrecisionFromText("unspecified"), std::nullopt);
  EXPECT_EQ(PrecisionFromText("FP32"), std::nullopt);  // the stored names are exact
  for (DeviceKind kind : {DeviceKind::kNone, DeviceKind::kCuda, DeviceKind::kCpu}) {
    EXPECT_EQ(DeviceKindFromText(DeviceKindText(kind)), kind);
  }
  EXPECT_EQ(DeviceKindFromText("rocm"), DeviceKind::kNone);
}

}  // namespace
}  // namespace bench
