#include "worker/agent/spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/log.h"
#include "worker/agent/state_dir.h"

namespace bench::agent {
namespace {

constexpr size_t kHeader = 8;  // u32 length, u32 crc32
constexpr char kSegmentPrefix[] = "seg-";
constexpr size_t kReadChunk = 1 << 20;
// The largest segment number a spool uses. Numbers start at 1 and grow by one per
// segment, so a real spool never comes near it; a file or ack naming a larger one is not
// ours (a name beyond it, e.g. seg-18446744073709551615, once made the next number wrap
// to 0, and records appended after it were never read back).
constexpr uint64_t kMaxSegmentSeq = uint64_t{1} << 62;

uint32_t Crc(const char* data, size_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (size > 0) {
    uInt n = static_cast<uInt>(std::min<size_t>(size, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data), n);
    data += n;
    size -= n;
  }
  return static_cast<uint32_t>(crc);
}

void PutU32(char* out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

uint32_t GetU32(const char* in) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value |= static_cast<uint32_t>(static_cast<uint8_t>(in[i])) << (8 * i);
  return value;
}

std::string ErrnoText(int error) { return std::strerror(error); }

bool PreadAll(int fd, char* out, size_t size, uint64_t offset) {
  while (size > 0) {
    ssize_t n = pread(fd, out, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    out += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

// Calls `on_record(kind, payload, end)` for each good record of `fd` in [offset, end),
// at most `max` of them. Returns the offset after the last good record; on a bad record
// sets *why (empty when the range ended cleanly or `max` was reached).
uint64_t ParseRecords(
    int fd, uint64_t offset, uint64_t end, size_t max,
    const std::function<void(SpoolKind, absl::string_view, uint64_t)>& on_record,
    std::string* why) {
  why->clear();
  std::string buffer;
  size_t count = 0;
  while (offset < end && count < max) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(end - offset, kReadChunk));
    if (want < kHeader) {
      *why = absl::StrCat("a record cut short (", want, " bytes left of a header)");
      return offset;
    }
    buffer.resize(want);
    if (!PreadAll(fd, buffer.data(), want, offset)) {
      *why = absl::StrCat("read failed: ", ErrnoText(errno));
      return offset;
    }
    size_t at = 0;
    while (at + kHeader <= want && count < max) {
      uint32_t length = GetU32(buffer.data() + at);
      uint32_t crc = GetU32(buffer.data() + at + 4);
      uint64_t record_end = offset + at + kHeader + length;
      if (length == 0) {
        *why = "a record of length 0";
        return offset + at;
      }
      if (record_end > end) {
        *why = absl::StrCat("a record of ", length, " bytes cut short (",
                            end - (offset + at + kHeader), " present)");
        return offset + at;
      }
      if (at + kHeader + length > want) {
        if (at == 0) {  // larger than the chunk: read it whole
          buffer.resize(kHeader + length);
          if (!PreadAll(fd, buffer.data(), buffer.size(), offset)) {
            *why = absl::StrCat("read failed: ", ErrnoText(errno));
            return offset;
          }
          want = buffer.size();
          continue;
        }
        break;  // the next chunk starts with it
      }
      const char* body = buffer.data() + at + kHeader;
      if (Crc(body, length) != crc) {
        *why = "a bad checksum";
        return offset + at;
      }
      uint8_t kind = static_cast<uint8_t>(body[0]);
      if (kind < 1 || kind > 3) {
        *why = absl::StrCat("an unknown record kind ", static_cast<int>(kind));
        return offset + at;
      }
      on_record(static_cast<SpoolKind>(kind), absl::string_view(body + 1, length - 1),
                record_end);
      ++count;
      at += kHeader + length;
    }
    if (at == 0 && count < max) {  // not even one header fitted: the tail is short
      *why = absl::StrCat("a record cut short (", want, " bytes left of a header)");
      return offset;
    }
    offset += at;
  }
  return offset;
}

}  // namespace

Spool::Spool(std::string dir, SpoolOptions options)
    : dir_(std::move(dir)), options_(options) {}

Spool::~Spool() {
  absl::MutexLock lock(&mu_);
  for (auto& segment : segments_) {
    if (segment.fd >= 0) close(segment.fd);
  }
}

std::string Spool::SegmentPath(uint64_t seq) const {
  return absl::StrFormat("%s/%s%020u", dir_, kSegmentPrefix, seq);
}

absl::StatusOr<std::unique_ptr<Spool>> Spool::Open(const std::string& dir,
                                                   SpoolOptions options) {
  if (dir.empty()) return absl::InvalidArgumentError("spool directory not set");
  if (options.max_bytes == 0) return absl::InvalidArgumentError("spool max bytes is 0");
  absl::Status made = MakeWritableDirectory(dir);
  if (!made.ok()) return made;
  std::unique_ptr<Spool> spool(new Spool(dir, options));
  absl::Status opened = spool->OpenExisting();
  if (!opened.ok()) return opened;
  return spool;
}

absl::Status Spool::OpenExisting() {
  absl::MutexLock lock(&mu_);
  std::vector<uint64_t> seqs;
  DIR* d = opendir(dir_.c_str());
  if (d == nullptr) {
    return absl::PermissionDeniedError(absl::StrCat("cannot read ", dir_, ": ", ErrnoText(errno)));
  }
  while (dirent* entry = readdir(d)) {
    absl::string_view name = entry->d_name;
    uint64_t seq = 0;
    if (absl::ConsumePrefix(&name, kSegmentPrefix) && absl::SimpleAtoi(name, &seq)) {
      if (seq > kMaxSegmentSeq) {
        Log("spool ", dir_, "/", entry->d_name, ": segment number past ", kMaxSegmentSeq,
            "; ignored");
        continue;
      }
      seqs.push_back(seq);
    }
  }
  closedir(d);
  std::sort(seqs.begin(), seqs.end());

  {
    std::string text;
    int fd = open((dir_ + "/ack").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      char buffer[128];
      ssize_t n = read(fd, buffer, sizeof(buffer) - 1);
      close(fd);
      if (n > 0) text.assign(buffer, static_cast<size_t>(n));
      std::vector<std::string> parts =
          absl::StrSplit(text, absl::ByAnyChar(" \n"), absl::SkipEmpty());
      if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &acked_.segment) ||
          !absl::SimpleAtoi(parts[1], &acked_.offset) || acked_.segment > kMaxSegmentSeq) {
        Log("spool ", dir_, "/ack: unreadable (\"", text,
                              "\"); replaying the whole spool");
        acked_ = SpoolPosition{};
      }
    }
  }

  for (uint64_t seq : seqs) {
    std::string path = SegmentPath(seq);
    struct stat st;
    if (seq < acked_.segment || (stat(path.c_str(), &st) == 0 && st.st_size == 0)) {
      unlink(path.c_str());  // acknowledged, or empty (a previous life wrote nothing)
      continue;
    }
    Segment segment;
    segment.seq = seq;
    segment.fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (segment.fd < 0) {
      Log("spool ", path, ": cannot open (", ErrnoText(errno),
                            "); skipped");
      continue;
    }
    if (fstat(segment.fd, &st) != 0) st.st_size = 0;
    segment.size = static_cast<uint64_t>(st.st_size);
    uint64_t from = 0;
    if (seq == acked_.segment) {
      from = acked_.offset;
      if (from > segment.size) {
        Log("spool ", path, ": acknowledged offset ", from,
                              " is past its end (", segment.size, " bytes)");
        from = segment.size;
      }
    }
    segment.count_base = from;
    segment.valid_end = Scan(segment, from, &segment.records, /*quiet=*/false);
    pending_at_open_ += segment.records;
    bytes_ += segment.size;
    segments_.push_back(std::move(segment));
  }
  if (!segments_.empty() && acked_ < SpoolPosition{segments_.front().seq, 0}) {
    acked_ = SpoolPosition{segments_.front().seq, 0};
  }
  return StartSegment();
}

uint64_t Spool::Scan(const Segment& segment, uint64_t offset, uint64_t* records,
                     bool quiet) const {
  std::string why;
  uint64_t count = 0;
  uint64_t end = ParseRecords(
      segment.fd, offset, segment.size, SIZE_MAX,
      [&](SpoolKind, absl::string_view, uint64_t) { ++count; }, &why);
  if (!why.empty() && !quiet) {
    Log("spool ", SegmentPath(segment.seq), ": ", why, " at offset ", end,
                          "; skipping the rest of the file (", segment.size - end,
                          " bytes)");
  }
  *records = count;
  return end;
}

absl::Status Spool::StartSegment() {
  uint64_t seq = segments_.empty() ? std::max<uint64_t>(acked_.segment + 1, 1)
                                   : segments_.back().seq + 1;
  if (seq > kMaxSegmentSeq) {
    return absl::ResourceExhaustedError(
        absl::StrCat("spool ", dir_, ": segment numbers exhausted (", seq - 1, ")"));
  }
  Segment segment;
  segment.seq = seq;
  std::string path = SegmentPath(seq);
  segment.fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (segment.fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write in ", dir_, ": ", path, ": ", ErrnoText(errno)));
  }
  if (segments_.empty() && acked_.segment == 0) acked_ = SpoolPosition{seq, 0};
  segments_.push_back(std::move(segment));
  dir_unsynced_ = true;
  return absl::OkStatus();
}

absl::StatusOr<SpoolPosition> Spool::Append(SpoolKind kind, absl::string_view payload) {
  const uint64_t length = payload.size() + 1;
  const uint64_t record = kHeader + length;
  if (length > UINT32_MAX) return absl::InvalidArgumentError("spool record too large");
  absl::MutexLock lock(&mu_);
  if (bytes_ + record > options_.max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "spool ", dir_, " is full (", bytes_, " of ", options_.max_bytes, " bytes)"));
  }
  const uint64_t segment_limit = std::max<uint64_t>(
      4096, std::min(options_.segment_bytes, options_.max_bytes / 8));
  if (segments_.back().size > 0 && segments_.back().size + record > segment_limit) {
    absl::Status started = StartSegment();
    if (!started.ok()) return started;
  }
  Segment& segment = segments_.back();
  std::string& buffer = write_buffer_;
  buffer.resize(record);
  buffer[kHeader] = static_cast<char>(kind);
  std::memcpy(buffer.data() + kHeader + 1, payload.data(), payload.size());
  PutU32(buffer.data(), static_cast<uint32_t>(length));
  PutU32(buffer.data() + 4, Crc(buffer.data() + kHeader, length));
  size_t written = 0;
  while (written < buffer.size()) {
    ssize_t n = pwrite(segment.fd, buffer.data() + written, buffer.size() - written,
                       static_cast<off_t>(segment.size + written));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int error = errno;
      if (ftruncate(segment.fd, static_cast<off_t>(segment.size)) != 0) {
        // The partial record stays; a later Open reports and skips it.
      }
      return absl::InternalError(absl::StrCat("cannot write to ", SegmentPath(segment.seq),
                                              ": ", ErrnoText(error)));
    }
    written += static_cast<size_t>(n);
  }
  segment.size += record;
  segment.valid_end = segment.size;
  ++segment.records;
  bytes_ += record;
  if (std::find(unsynced_.begin(), unsynced_.end(), segment.fd) == unsynced_.end()) {
    unsynced_.push_back(segment.fd);
  }
  return SpoolPosition{segment.seq, segment.size};
}

absl::Status Spool::Sync() {
  // fdatasync without the lock, so that appends (trainers' samples) never wait for the
  // disk: on duplicates, since Ack may close a segment meanwhile.
  std::vector<int> fds;
  bool sync_dir = false;
  {
    absl::MutexLock lock(&mu_);
    for (int fd : unsynced_) {
      int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
      if (copy >= 0) fds.push_back(copy);
    }
    unsynced_.clear();
    sync_dir = dir_unsynced_;
    dir_unsynced_ = false;
  }
  absl::Status status;
  for (int fd : fds) {
    if (fdatasync(fd) != 0 && status.ok()) {
      status = absl::InternalError(absl::StrCat("fdatasync in ", dir_, ": ", ErrnoText(errno)));
    }
    close(fd);
  }
  if (sync_dir) {
    int fd = open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
      fsync(fd);
      close(fd);
    }
  }
  return status;
}

SpoolPosition Spool::Read(SpoolPosition from, size_t max_records,
                          std::vector<SpoolRecord>* out, uint64_t* skipped) {
  absl::MutexLock lock(&mu_);
  SpoolPosition pos = from < acked_ ? acked_ : from;
  size_t count = 0;
  for (size_t i = 0; i < segments_.size() && count < max_records; ++i) {
    Segment& segment = segments_[i];
    if (segment.seq < pos.segment) continue;
    if (segment.seq > pos.segment) pos = SpoolPosition{segment.seq, 0};
    if (pos.offset < segment.valid_end) {
      std::string why;
      uint64_t end = ParseRecords(
          segment.fd, pos.offset, segment.valid_end, max_records - count,
          [&](SpoolKind kind, absl::string_view payload, uint64_t record_end) {
            out->push_back(SpoolRecord{kind, std::string(payload),
                                       SpoolPosition{segment.seq, record_end}});
            ++count;
          },
          &why);
      pos.offset = end;
      if (!why.empty()) {
        uint64_t before = 0;
        Scan(segment, segment.count_base, &before, /*quiet=*/true);
        uint64_t lost = segment.records > before ? segment.records - before : 0;
        Log("spool ", SegmentPath(segment.seq), ": ", why, " at offset ",
                              end, "; skipping the rest of the file (", lost,
                              " records)");
        if (skipped != nullptr) *skipped += lost;
        segment.valid_end = end;
        segment.records = before;
      }
    }
    if (pos.offset < segment.valid_end) break;  // max_records reached
  }
  return pos;
}

absl::Status Spool::Ack(SpoolPosition through) {
  absl::MutexLock lock(&mu_);
  if (!(acked_ < through)) return absl::OkStatus();
  acked_ = through;
  while (segments_.size() > 1) {
    Segment& first = segments_.front();
    bool done = first.seq < through.segment ||
                (first.seq == through.segment && through.offset >= first.valid_end);
    if (!done) break;
    unsynced_.erase(std::remove(unsynced_.begin(), unsynced_.end(), first.fd),
                    unsynced_.end());
    close(first.fd);
    unlink(SegmentPath(first.seq).c_str());
    bytes_ -= first.size;
    segments_.erase(segments_.begin());
  }
  return WriteAckFile(through);
}

absl::Status Spool::WriteAckFile(SpoolPosition position) {
  std::string text = absl::StrCat(position.segment, " ", position.offset, "\n");
  std::string tmp = dir_ + "/ack.tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot write ", tmp, ": ", ErrnoText(errno)));
  }
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!ok || rename(tmp.c_str(), (dir_ + "/ack").c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot write ", dir_, "/ack: ", ErrnoText(errno)));
  }
  return absl::OkStatus();
}

SpoolPosition Spool::acked() const {
  absl::MutexLock lock(&mu_);
  return acked_;
}

SpoolPosition Spool::end() const {
  absl::MutexLock lock(&mu_);
  if (segments_.empty()) return acked_;
  return SpoolPosition{segments_.back().seq, segments_.back().size};
}

uint64_t Spool::bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

}  // namespace bench::agent
