// Replays fuzz inputs without libFuzzer: runs every regular file of the directories (or
// the files) named on the command line through the target's LLVMFuzzerTestOneInput, in
// sorted order, after LLVMFuzzerInitialize if the target defines one. Built with each
// target by the normal compiler, it makes the seed corpora and the inputs the fuzzers
// found regression tests (ctest: fuzz.<name>.replay). Exits 1 when an argument cannot be
// read, when no input was found at all, or when the target returns anything but 0 or -1
// (libFuzzer's "keep" and "reject"); a crash or an abort() in the target ends it at once.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

bool ReadFile(const std::filesystem::path& path, std::string* bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  bytes->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);

  std::vector<std::filesystem::path> inputs;
  bool ok = true;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path arg(argv[i]);
    std::error_code error;
    if (std::filesystem::is_directory(arg, error)) {
      for (const auto& entry : std::filesystem::directory_iterator(arg, error)) {
        if (entry.is_regular_file()) inputs.push_back(entry.path());
      }
      if (error) {
        std::fprintf(stderr, "cannot list %s: %s\n", argv[i], error.message().c_str());
        ok = false;
      }
    } else if (std::filesystem::is_regular_file(arg, error)) {
      inputs.push_back(arg);
    } else {
      std::fprintf(stderr, "no such file or directory: %s\n", argv[i]);
      ok = false;
    }
  }
  std::sort(inputs.begin(), inputs.end());

  size_t replayed = 0;
  std::string bytes;
  for (const auto& path : inputs) {
    if (!ReadFile(path, &bytes)) {
      std::fprintf(stderr, "cannot read %s\n", path.c_str());
      ok = false;
      continue;
    }
    int rc = LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()),
                                    bytes.size());
    if (rc != 0 && rc != -1) {
      std::fprintf(stderr, "%s: LLVMFuzzerTestOneInput returned %d\n", path.c_str(), rc);
      ok = false;
    }
    ++replayed;
  }
  std::printf("replayed %zu inputs\n", replayed);
  if (replayed == 0) {
    std::fprintf(stderr, "no inputs found\n");
    return 1;
  }
  return ok ? 0 : 1;
}
