#include "worker/agent/nvml_inventory.h"

#include <string>

#include <gtest/gtest.h>

namespace bench::agent {
namespace {

TEST(NvmlInventoryTest, MissingLibraryIsNotFound) {
  auto gpus = ListNvmlGpus("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.status().code(), absl::StatusCode::kNotFound);
}

TEST(NvmlInventoryTest, LibraryWithoutNvmlSymbolsIsNotFound) {
  auto gpus = ListNvmlGpus("libm.so.6");
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(gpus.status().message().find("nvmlInit_v2"), absl::string_view::npos)
      << gpus.status();
}

TEST(NvmlInventoryTest, ListsGpusOfAFakeNvml) {
  auto gpus = ListNvmlGpus(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[0].index, 0);
  EXPECT_EQ((*gpus)[0].name, "Fake GPU 0");
  EXPECT_EQ((*gpus)[1].uuid, "GPU-fake-1");
  EXPECT_EQ((*gpus)[1].memory_bytes, 32LL << 30);
}

TEST(NvmlInventoryTest, InventoryCarriesTheDriverVersions) {
  InventoryOptions options;
  options.name = "dgx";
  options.controller = "127.0.0.1:1";
  options.nvml_library = FAKE_NVML_LIBRARY;
  benchfleet::v1::AgentInventory inventory = BuildInventory(options);
  ASSERT_EQ(inventory.gpus_size(), 2);
  EXPECT_EQ(inventory.versions().at("driver"), "fake");
  EXPECT_EQ(inventory.versions().at("nvml"), "12.550.fake");
  EXPECT_EQ(inventory.versions().at("cuda_driver"), "12.4");
}

TEST(NvmlInventoryTest, FallsBackToOneCpuSlotWithoutNvml) {
  InventoryOptions options;
  options.controller = "127.0.0.1:7000";
  options.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  auto inventory = BuildInventory(options);
  EXPECT_EQ(inventory.gpus_size(), 0);
  EXPECT_EQ(inventory.cpu_slots(), 1);
  EXPECT_EQ(inventory.name(), HostName());
  EXPECT_EQ(inventory.hostname(), HostName());
  EXPECT_EQ(inventory.address(), "127.0.0.1");
}

TEST(NvmlInventoryTest, OffersGpusFromNvml) {
  InventoryOptions options;
  options.name = "node-a";
  options.address = "10.0.0.5";
  options.controller = "controller:7000";
  options.nvml_library = FAKE_NVML_LIBRARY;
  auto inventory = BuildInventory(options);
  EXPECT_EQ(inventory.name(), "node-a");
  EXPECT_EQ(inventory.address(), "10.0.0.5");
  EXPECT_EQ(inventory.gpus_size(), 2);
  EXPECT_EQ(inventory.cpu_slots(), 0);
  EXPECT_EQ(inventory.gpus(1).name(), "Fake GPU 1");
}

// Each GPU's four fields (common/gpu_info.h, the type NVML's list and benchd share) reach
// the inventory's v1 Gpu messages.
TEST(NvmlInventoryTest, InventoryCarriesEveryGpuField) {
  InventoryOptions options;
  options.controller = "controller:7000";
  options.nvml_library = FAKE_NVML_LIBRARY;
  auto inventory = BuildInventory(options);
  ASSERT_EQ(inventory.gpus_size(), 2);
  for (int i = 0; i < 2; ++i) {
    const benchfleet::v1::Gpu& gpu = inventory.gpus(i);
    EXPECT_EQ(gpu.index(), i);
    EXPECT_EQ(gpu.name(), "Fake GPU " + std::to_string(i));
    EXPECT_EQ(gpu.uuid(), "GPU-fake-" + std::to_string(i));
    EXPECT_EQ(gpu.memory_bytes(), (16LL << 30) * (i + 1));
  }
}

TEST(NvmlInventoryTest, CpuSlotsFlagWinsOverGpus) {
  InventoryOptions options;
  options.cpu_slots = 3;
  options.controller = "controller:7000";
  options.nvml_library = FAKE_NVML_LIBRARY;
  auto inventory = BuildInventory(options);
  EXPECT_EQ(inventory.gpus_size(), 0);
  EXPECT_EQ(inventory.cpu_slots(), 3);
  EXPECT_EQ(inventory.address(), HostName());
}

TEST(NvmlInventoryTest, LoopbackTargets) {
  EXPECT_TRUE(IsLoopbackTarget("127.0.0.1:7000"));
  EXPECT_TRUE(IsLoopbackTarget("localhost:7000"));
  EXPECT_TRUE(IsLoopbackTarget("LOCALHOST:7000"));
  EXPECT_TRUE(IsLoopbackTarget("[::1]:7000"));
  EXPECT_TRUE(IsLoopbackTarget("dns:///localhost:7000"));
  EXPECT_TRUE(IsLoopbackTarget("ipv4:127.0.0.1:7000"));
  EXPECT_FALSE(IsLoopbackTarget("10.1.2.3:7000"));
  EXPECT_FALSE(IsLoopbackTarget("controller.example.com:7000"));
  EXPECT_EQ(DefaultAdvertisedAddress("127.0.0.1:1"), "127.0.0.1");
  EXPECT_EQ(DefaultAdvertisedAddress("benchd:1"), HostName());
}

}  // namespace
}  // namespace bench::agent
