// Writes the spool fuzz target's seed corpus: real spool directories made by Spool
// itself (records of each kind holding real protobufs, acknowledged partway, spread over
// several segments, a record cut short, a bad checksum), each packed into one file in the
// layout of spool_input.h. Usage: fuzz_make_spool_seeds OUT_DIR (tests/fuzz/corpus/spool).
// Built on demand only (cmake --build ... --target fuzz_make_spool_seeds).
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "benchfleet/v1/agent.pb.h"
#include "benchfleet/v1/types.pb.h"
#include "tests/fuzz/spool_input.h"
#include "worker/agent/spool.h"

namespace fs = std::filesystem;
using bench::agent::Spool;
using bench::agent::SpoolKind;
using bench::agent::SpoolOptions;

namespace {

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "make_spool_seeds: %s failed\n", what);
    std::exit(1);
  }
}

// Fills a fresh spool with `fill`, optionally damages its files, packs the directory.
void Seed(const fs::path& out_dir, const std::string& name, SpoolOptions options,
          const std::function<void(Spool&)>& fill,
          const std::function<void(const fs::path&)>& damage = nullptr) {
  std::string pattern = (fs::temp_directory_path() / "spool_seed.XXXXXX").string();
  Check(mkdtemp(pattern.data()) != nullptr, "mkdtemp");
  fs::path dir = fs::path(pattern) / "spool";
  {
    auto spool = Spool::Open(dir.string(), options);
    Check(spool.ok(), "Spool::Open");
    fill(**spool);
  }
  if (damage) damage(dir);

  bench::fuzz::SpoolInput input;
  std::vector<std::pair<uint64_t, fs::path>> segments;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string file = entry.path().filename().string();
    absl::string_view rest = file;
    uint64_t seq = 0;
    if (absl::ConsumePrefix(&rest, "seg-") && absl::SimpleAtoi(rest, &seq)) {
      segments.emplace_back(seq, entry.path());
    } else if (file == "ack") {
      input.ack = ReadAll(entry.path());
    }
  }
  std::sort(segments.begin(), segments.end());
  Check(!segments.empty() && segments.size() <= 4, "segment count");
  input.first_segment = segments.front().first;
  for (size_t i = 0; i < segments.size(); ++i) {
    Check(segments[i].first == input.first_segment + i, "consecutive segments");
    input.segments.push_back(ReadAll(segments[i].second));
  }
  std::ofstream(out_dir / name, std::ios::binary) << bench::fuzz::EncodeSpoolInput(input);
  fs::remove_all(pattern);
}

std::string Sample(int iteration) {
  benchfleet::v1::IterationSample sample;
  sample.set_job_id("j-0001");
  sample.set_attempt(1);
  sample.set_rank(iteration % 2);
  sample.set_iteration(iteration);
  sample.set_step_time_s(0.25);
  sample.set_images(32);
  sample.set_loss(6.9 - iteration * 0.01);
  sample.set_elapsed_s(iteration * 0.25);
  return sample.SerializeAsString();
}

std::string Gpu() {
  benchfleet::v1::GpuSample gpu;
  gpu.set_job_id("j-0001");
  gpu.set_attempt(1);
  gpu.set_gpu_uuid("GPU-5f3c2b1a-0000-1111-2222-333344445555");
  gpu.set_seq(7);
  return gpu.SerializeAsString();
}

std::string Report() {
  benchfleet::v1::ReportStatusRequest report;
  report.set_agent("node-a");
  report.set_job_id("j-0001");
  report.set_attempt(1);
  report.set_master_port(29500);
  return report.SerializeAsString();
}

void Append(Spool& spool, SpoolKind kind, const std::string& payload) {
  Check(spool.Append(kind, payload).ok(), "Spool::Append");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  fs::path out(argv[1]);
  fs::create_directories(out);
  SpoolOptions small;
  small.max_bytes = 32768;  // segments of 4096 bytes (max_bytes / 8, at least 4096)

  auto three_kinds = [](Spool& spool) {
    Append(spool, SpoolKind::kIterationSample, Sample(1));
    Append(spool, SpoolKind::kGpuSample, Gpu());
    Append(spool, SpoolKind::kReport, Report());
  };
  Seed(out, "seed-three-kinds", {}, three_kinds);
  Seed(out, "seed-acked-partway", {}, [&](Spool& spool) {
    three_kinds(spool);
    std::vector<bench::agent::SpoolRecord> records;
    spool.Read(spool.acked(), 2, &records);
    Check(records.size() == 2 && spool.Ack(records.back().end).ok(), "Spool::Ack");
  });
  Seed(out, "seed-all-acked", {}, [&](Spool& spool) {
    three_kinds(spool);
    Check(spool.Ack(spool.end()).ok(), "Spool::Ack");
  });
  Seed(out, "seed-segments", small, [&](Spool& spool) {
    for (int i = 1; i <= 120; ++i) Append(spool, SpoolKind::kIterationSample, Sample(i));
    std::vector<bench::agent::SpoolRecord> records;
    spool.Read(spool.acked(), 30, &records);
    Check(spool.Ack(records.back().end).ok(), "Spool::Ack");
  });
  auto last_segment = [](const fs::path& dir) {
    fs::path last;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().filename() != "ack" && fs::file_size(entry.path()) > 0 &&
          entry.path() > last) {
        last = entry.path();
      }
    }
    return last;
  };
  Seed(out, "seed-cut-short", {}, three_kinds, [&](const fs::path& dir) {
    fs::path segment = last_segment(dir);
    fs::resize_file(segment, fs::file_size(segment) - 5);
  });
  Seed(out, "seed-bad-checksum", {}, three_kinds, [&](const fs::path& dir) {
    fs::path segment = last_segment(dir);
    std::string bytes = ReadAll(segment);
    bytes[bytes.size() / 2] ^= 0x20;
    std::ofstream(segment, std::ios::binary) << bytes;
  });
  std::printf("wrote 6 seeds to %s\n", argv[1]);
  return 0;
}
