// A stand-in libnvidia-ml for nvml_inventory_test: two GPUs, NVML's C ABI.
#include <cstdio>
#include <cstring>

namespace {
struct FakeDevice {
  int index;
};
FakeDevice devices[2] = {{0}, {1}};
int init_count = 0;
}  // namespace

extern "C" {

struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

int nvmlInit_v2() {
  ++init_count;
  return 0;
}
int nvmlShutdown() {
  --init_count;
  return 0;
}
int nvmlDeviceGetCount_v2(unsigned* count) {
  if (init_count <= 0) return 1;  // NVML_ERROR_UNINITIALIZED
  *count = 2;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  if (index >= 2) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = &devices[index];
  return 0;
}
int nvmlDeviceGetName(void* device, char* name, unsigned length) {
  std::snprintf(name, length, "Fake GPU %d", static_cast<FakeDevice*>(device)->index);
  return 0;
}
int nvmlDeviceGetUUID(void* device, char* uuid, unsigned length) {
  std::snprintf(uuid, length, "GPU-fake-%d", static_cast<FakeDevice*>(device)->index);
  return 0;
}
int nvmlDeviceGetMemoryInfo(void* device, nvmlMemory_t* memory) {
  memory->total = (16ULL << 30) * (static_cast<FakeDevice*>(device)->index + 1);
  memory->free = memory->total;
  memory->used = 0;
  return 0;
}
const char* nvmlErrorString(int) { return "fake error"; }

}  // extern "C"
