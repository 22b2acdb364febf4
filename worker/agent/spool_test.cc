#include "worker/agent/spool.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "worker/agent/temp_dir.h"

namespace bench::agent {
namespace {

using ::testing::HasSubstr;

class SpoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(root_.ok());
    dir_ = root_.path() + "/state/spool";  // parents are created too
  }

  std::unique_ptr<Spool> Open(SpoolOptions options = {}) {
    return OpenSpoolIn(root_, "state/spool", options);
  }
  static std::string Payload(int i, size_t size = 20) {
    std::string text = absl::StrCat("record-", i, "-");
    text.resize(std::max(size, text.size()), 'x');
    return text;
  }
  static std::vector<std::string> Payloads(const std::vector<SpoolRecord>& records) {
    std::vector<std::string> out;
    for (const auto& record : records) out.push_back(record.payload);
    return out;
  }
  std::vector<std::string> ReadAll(Spool* spool, uint64_t* skipped = nullptr) {
    std::vector<SpoolRecord> records;
    spool->Read(spool->acked(), 1000000, &records, skipped);
    return Payloads(records);
  }
  std::vector<std::string> Segments() {
    std::vector<std::string> names;
    DIR* d = opendir(dir_.c_str());
    while (dirent* entry = d == nullptr ? nullptr : readdir(d)) {
      std::string name = entry->d_name;
      if (name.rfind("seg-", 0) == 0) names.push_back(name);
    }
    if (d != nullptr) closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }
  off_t FileSize(const std::string& name) {
    struct stat st;
    return stat((dir_ + "/" + name).c_str(), &st) == 0 ? st.st_size : -1;
  }

  TempDir root_{"spool_test_"};  // dir_'s grandparent, removed with it
  std::string dir_;
};

TEST_F(SpoolTest, AppendReadAckAndReplayAfterReopen) {
  std::vector<std::string> expected;
  SpoolPosition after_fourth;
  {
    auto spool = Open();
    ASSERT_NE(spool, nullptr);
    EXPECT_EQ(spool->pending_at_open(), 0u);
    for (int i = 1; i <= 10; ++i) {
      auto end = spool->Append(SpoolKind::kIterationSample, Payload(i));
      ASSERT_TRUE(end.ok()) << end.status();
      if (i == 4) after_fourth = *end;
      expected.push_back(Payload(i));
    }
    ASSERT_TRUE(spool->Sync().ok());
    EXPECT_EQ(ReadAll(spool.get()), expected);

    // Reading in pieces continues where the last piece ended.
    std::vector<SpoolRecord> first, second;
    SpoolPosition next = spool->Read(spool->acked(), 3, &first);
    spool->Read(next, 3, &second);
    ASSERT_EQ(first.size(), 3u);
    ASSERT_EQ(second.size(), 3u);
    EXPECT_EQ(second[0].payload, Payload(4));
    EXPECT_EQ(second[0].end, after_fourth);
    EXPECT_EQ(second[0].kind, SpoolKind::kIterationSample);

    ASSERT_TRUE(spool->Ack(after_fourth).ok());
    EXPECT_EQ(spool->acked(), after_fourth);
    EXPECT_EQ(ReadAll(spool.get()), std::vector<std::string>(expected.begin() + 4, expected.end()));
  }
  // A new owner (the agent restarted) finds the six unacknowledged records.
  auto spool = Open();
  ASSERT_NE(spool, nullptr);
  EXPECT_EQ(spool->pending_at_open(), 6u);
  EXPECT_EQ(ReadAll(spool.get()), std::vector<std::string>(expected.begin() + 4, expected.end()));
  // New records follow the old ones; acknowledging everything leaves nothing to replay.
  auto end = spool->Append(SpoolKind::kGpuSample, Payload(11));
  ASSERT_TRUE(end.ok());
  std::vector<std::string> all = ReadAll(spool.get());
  ASSERT_EQ(all.size(), 7u);
  EXPECT_EQ(all.back(), Payload(11));
  ASSERT_TRUE(spool->Ack(*end).ok());
  EXPECT_TRUE(ReadAll(spool.get()).empty());
  spool.reset();
  spool = Open();
  EXPECT_EQ(spool->pending_at_open(), 0u);
  EXPECT_TRUE(ReadAll(spool.get()).empty());
}

TEST_F(SpoolTest, AcknowledgedSegmentsAreDeleted) {
  SpoolOptions options;
  options.max_bytes = 64 * 1024;  // segments of max_bytes / 8 = 8 KiB
  auto spool = Open(options);
  SpoolPosition last;
  for (int i = 1; i <= 40; ++i) {
    auto end = spool->Append(SpoolKind::kIterationSample, Payload(i, 1000));
    ASSERT_TRUE(end.ok()) << i << ": " << end.status();
    last = *end;
  }
  EXPECT_GE(Segments().size(), 5u);
  for (const auto& name : Segments()) EXPECT_LE(FileSize(name), 8192) << name;
  EXPECT_LE(spool->bytes(), options.max_bytes);
  ASSERT_TRUE(spool->Ack(last).ok());
  EXPECT_EQ(Segments().size(), 1u) << "only the segment being written is kept";
  EXPECT_LE(spool->bytes(), 8192u);
}

TEST_F(SpoolTest, TheBoundIsNeverPassedAndAcksFreeSpace) {
  SpoolOptions options;
  options.max_bytes = 16 * 1024;
  auto spool = Open(options);
  int appended = 0;
  SpoolPosition last;
  absl::Status failure;
  for (int i = 1; i <= 100; ++i) {
    auto end = spool->Append(SpoolKind::kIterationSample, Payload(i, 500));
    if (!end.ok()) {
      failure = end.status();
      break;
    }
    last = *end;
    ++appended;
  }
  EXPECT_TRUE(absl::IsResourceExhausted(failure)) << failure;
  EXPECT_THAT(std::string(failure.message()), HasSubstr(dir_));
  EXPECT_GT(appended, 20);
  EXPECT_LE(spool->bytes(), options.max_bytes);
  // Still full: a second try fails too, and nothing already in is harmed.
  EXPECT_FALSE(spool->Append(SpoolKind::kIterationSample, Payload(0, 500)).ok());
  EXPECT_EQ(ReadAll(spool.get()).size(), static_cast<size_t>(appended));
  ASSERT_TRUE(spool->Ack(last).ok());
  EXPECT_TRUE(spool->Append(SpoolKind::kIterationSample, Payload(101, 500)).ok());
  EXPECT_EQ(ReadAll(spool.get()), std::vector<std::string>{Payload(101, 500)});
}

TEST_F(SpoolTest, ATruncatedRecordIsLoggedAndSkipped) {
  {
    auto spool = Open();
    for (int i = 1; i <= 5; ++i) {
      ASSERT_TRUE(spool->Append(SpoolKind::kIterationSample, Payload(i)).ok());
    }
  }
  ASSERT_EQ(Segments().size(), 1u);
  std::string segment = Segments()[0];
  off_t size = FileSize(segment);
  ASSERT_GT(size, 3);
  // The agent was killed in the middle of writing the fifth record.
  ASSERT_EQ(truncate((dir_ + "/" + segment).c_str(), size - 3), 0);
  ::testing::internal::CaptureStderr();
  auto spool = Open();
  std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_NE(spool, nullptr);
  EXPECT_THAT(log, HasSubstr(dir_ + "/" + segment));
  const uint64_t fifth = static_cast<uint64_t>(size) / 5 * 4;  // records of equal size
  EXPECT_THAT(log, HasSubstr(absl::StrCat("at offset ", fifth)));
  EXPECT_EQ(spool->pending_at_open(), 4u);
  std::vector<std::string> expected = {Payload(1), Payload(2), Payload(3), Payload(4)};
  EXPECT_EQ(ReadAll(spool.get()), expected);
  // The spool goes on: new records are read after the good old ones.
  ASSERT_TRUE(spool->Append(SpoolKind::kReport, Payload(6)).ok());
  expected.push_back(Payload(6));
  EXPECT_EQ(ReadAll(spool.get()), expected);
}

TEST_F(SpoolTest, ABadChecksumSkipsTheRestOfThatSegmentOnly) {
  {
    auto spool = Open();
    for (int i = 1; i <= 5; ++i) {
      ASSERT_TRUE(spool->Append(SpoolKind::kIterationSample, Payload(i)).ok());
    }
  }
  std::string first_segment = Segments()[0];
  off_t size = FileSize(first_segment);
  // Flip a byte inside the third record's payload.
  int fd = open((dir_ + "/" + first_segment).c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  off_t third = size / 5 * 2 + 12;
  char byte = 0;
  ASSERT_EQ(pread(fd, &byte, 1, third), 1);
  byte ^= 0x55;
  ASSERT_EQ(pwrite(fd, &byte, 1, third), 1);
  close(fd);
  {
    // A second life writes another segment.
    ::testing::internal::CaptureStderr();
    auto spool = Open();
    std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_THAT(log, HasSubstr("bad checksum"));
    EXPECT_THAT(log, HasSubstr(absl::StrCat("at offset ", size / 5 * 2)));
    EXPECT_EQ(spool->pending_at_open(), 2u);
    ASSERT_TRUE(spool->Append(SpoolKind::kIterationSample, Payload(6)).ok());
  }
  ::testing::internal::CaptureStderr();
  auto spool = Open();
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(spool->pending_at_open(), 3u);
  EXPECT_EQ(ReadAll(spool.get()), (std::vector<std::string>{Payload(1), Payload(2), Payload(6)}));
}

TEST_F(SpoolTest, GarbageAfterTheLastRecordIsSkipped) {
  {
    auto spool = Open();
    ASSERT_TRUE(spool->Append(SpoolKind::kIterationSample, Payload(1)).ok());
  }
  std::string segment = dir_ + "/" + Segments()[0];
  int fd = open(segment.c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  const char garbage[] = "\xff\xff\xff\x7f garbage";
  ASSERT_GT(write(fd, garbage, sizeof(garbage)), 0);
  close(fd);
  ::testing::internal::CaptureStderr();
  auto spool = Open();
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr(segment));
  EXPECT_EQ(ReadAll(spool.get()), std::vector<std::string>{Payload(1)});
}

// Found by tests/fuzz/spool_fuzz.cc (corpus/spool/crash-segment-number-wraps): a segment
// named with the largest uint64 made the next segment number wrap to 0, and what was
// appended after it was never read back.
TEST_F(SpoolTest, ASegmentNumberPastTheRangeIsIgnored) {
  {
    auto spool = Open();
    ASSERT_TRUE(spool->Append(SpoolKind::kIterationSample, Payload(1)).ok());
  }
  {
    std::ofstream junk(dir_ + "/seg-18446744073709551615", std::ios::binary);
    junk << "not a spool segment";
  }
  ::testing::internal::CaptureStderr();
  auto spool = Open();
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr("seg-18446744073709551615: segment number past"));
  ASSERT_NE(spool, nullptr);
  auto appended = spool->Append(SpoolKind::kReport, Payload(2));
  ASSERT_TRUE(appended.ok());
  EXPECT_EQ(ReadAll(spool.get()), (std::vector<std::string>{Payload(1), Payload(2)}));
  ASSERT_TRUE(spool->Ack(*appended).ok());
  spool.reset();
  EXPECT_EQ(Open()->pending_at_open(), 0u);
}

// Found by tests/fuzz/spool_fuzz.cc (corpus/spool/crash-segment-numbers-exhausted).
TEST_F(SpoolTest, SegmentNumbersExhaustedIsAnErrorNotAWrap) {
  {
    auto spool = Open();
    ASSERT_TRUE(spool->Append(SpoolKind::kIterationSample, Payload(1)).ok());
  }
  {
    std::ofstream last(dir_ + "/seg-04611686018427387904", std::ios::binary);  // 2^62
    last << "not a spool segment";
  }
  auto spool = Spool::Open(dir_);
  ASSERT_FALSE(spool.ok());
  EXPECT_EQ(spool.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(spool.status().message()), HasSubstr(dir_));
  EXPECT_THAT(std::string(spool.status().message()), HasSubstr("segment numbers exhausted"));
}

TEST_F(SpoolTest, AnAckPastTheSegmentRangeReplaysTheWholeSpool) {
  {
    auto spool = Open();
    ASSERT_TRUE(spool->Append(SpoolKind::kIterationSample, Payload(1)).ok());
  }
  {
    std::ofstream ack(dir_ + "/ack", std::ios::binary | std::ios::trunc);
    ack << "18446744073709551615 0\n";
  }
  ::testing::internal::CaptureStderr();
  auto spool = Open();
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr("replaying the whole spool"));
  ASSERT_NE(spool, nullptr);
  ASSERT_TRUE(spool->Append(SpoolKind::kReport, Payload(2)).ok());
  EXPECT_EQ(ReadAll(spool.get()), (std::vector<std::string>{Payload(1), Payload(2)}));
}

TEST_F(SpoolTest, AnUnwritableDirectoryIsAClearError) {
  auto spool = Spool::Open("/proc/no-such-dir/spool");
  ASSERT_FALSE(spool.ok());
  EXPECT_THAT(std::string(spool.status().message()), HasSubstr("/proc/no-such-dir"));
}

}  // namespace
}  // namespace bench::agent
