// A bounded, acknowledged, on-disk FIFO of records: the agent's spool for samples and
// status reports that the controller has not acknowledged yet, so that they survive a
// controller outage and an agent restart (kill -9 included).
//
// On disk: a directory of segment files "seg-NNNNNNNNNNNNNNNNNNNN" (20-digit sequence
// number, increasing) plus a file "ack" ("SEGMENT OFFSET\n": everything before that
// position is acknowledged). Each record in a segment is
//   u32 length (little-endian) | u32 crc32 (zlib) of the body | body (length bytes)
// where the body is one kind byte (SpoolKind) followed by a serialized protobuf. A
// segment is closed at segment_bytes and a new one opened; Open() always starts a new
// segment, so an old segment is never appended to. A segment wholly before the ack
// position is deleted; "ack" is replaced atomically (write + rename).
//
// Durability: Append() hands the record to the kernel with write(2) before it returns,
// so it survives the agent being killed; Sync() (fdatasync of the segments written
// since the last Sync, and of the directory when a segment was created) makes it
// survive a power loss. Callers Sync() at batch boundaries (the SampleUploader before
// each upload, the StatusReporter after each report). The ack file is not synced: after
// a power loss some acknowledged records may be sent again (the controller dedupes).
//
// Bound: the segment files together never exceed max_bytes; an Append that would pass
// it fails with RESOURCE_EXHAUSTED (the caller drops, counts and logs). Acknowledged
// records free their space when their whole segment is acknowledged, so a segment is
// at most max_bytes / 8 (and at most segment_bytes) to keep that granularity fine.
//
// Corruption (a record cut short by a kill mid-write, a bad checksum, an impossible
// length) is logged with the file and offset and the rest of that segment is skipped;
// it is never fatal. Segment numbers stay at most 2^62: a file or an ack naming a larger
// one is not this spool's and is ignored (logged; the ack then reads as unreadable). A
// spool whose numbers reach 2^62 (one per segment or per Open: never in practice) fails
// Open and Append with RESOURCE_EXHAUSTED rather than wrap.
//
// Thread-safe: every method takes the spool's lock.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace bench::agent {

// The first byte of a record's body: what the protobuf after it is.
enum class SpoolKind : uint8_t {
  kIterationSample = 1,  // benchfleet.v1.IterationSample
  kGpuSample = 2,        // benchfleet.v1.GpuSample
  kReport = 3,           // benchfleet.v1.ReportStatusRequest
};

// A place in the spool: the byte offset within a segment. Records are ordered by
// (segment, offset).
struct SpoolPosition {
  uint64_t segment = 0;
  uint64_t offset = 0;
  bool operator<(const SpoolPosition& other) const {
    return segment != other.segment ? segment < other.segment : offset < other.offset;
  }
  bool operator==(const SpoolPosition& other) const {
    return segment == other.segment && offset == other.offset;
  }
};

struct SpoolRecord {
  SpoolKind kind = SpoolKind::kIterationSample;
  std::string payload;  // the serialized protobuf
  SpoolPosition end;    // just after this record: Ack(end) acknowledges it
};

struct SpoolOptions {
  uint64_t max_bytes = uint64_t{1} << 30;    // all segment files together
  uint64_t segment_bytes = uint64_t{8} << 20;  // close a segment at this size
};

class Spool {
 public:
  // Opens (creating it, and its parents, if missing) the spool in `dir`. Fails with a
  // message naming `dir` if it cannot be created or written. Segments wholly
  // acknowledged are deleted; the others are scanned (corrupt records logged).
  static absl::StatusOr<std::unique_ptr<Spool>> Open(const std::string& dir,
                                                     SpoolOptions options = {});
  ~Spool();
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;

  // Writes one record (write(2), no fsync) and returns the position just after it.
  // RESOURCE_EXHAUSTED if it would pass max_bytes; another error if the write failed
  // (the record is then not in the spool).
  absl::StatusOr<SpoolPosition> Append(SpoolKind kind, absl::string_view payload);
  // fdatasync of what was appended since the last Sync (Append does not wait for it).
  absl::Status Sync();

  // Up to `max_records` unacknowledged records from `from` on (in order), appended to
  // `out`. Returns the position after the last one returned (== `from` if none). Records
  // that turn out to be unreadable are logged and skipped; `*skipped` (if not null) is
  // increased by how many records were lost that way (known from the count kept per
  // segment).
  SpoolPosition Read(SpoolPosition from, size_t max_records, std::vector<SpoolRecord>* out,
                     uint64_t* skipped = nullptr);
  // Acknowledges every record before `through`: deletes the segments wholly before it
  // and records the position in "ack". Positions before the current ack are ignored.
  absl::Status Ack(SpoolPosition through);

  // The acknowledged position: where unacknowledged records start.
  SpoolPosition acked() const;
  // Just after the last record appended: Ack(end()) acknowledges every record.
  SpoolPosition end() const;
  // Unacknowledged records found by Open() (readable ones plus those lost in corrupt
  // tails): what a new owner replays. Later appends and acks do not change it.
  uint64_t pending_at_open() const { return pending_at_open_; }
  // Bytes of all segment files.
  uint64_t bytes() const;
  const std::string& dir() const { return dir_; }
  uint64_t max_bytes() const { return options_.max_bytes; }

 private:
  struct Segment {
    uint64_t seq = 0;
    uint64_t size = 0;       // bytes in the file
    uint64_t valid_end = 0;  // readable records end here (== size unless corrupt)
    uint64_t count_base = 0;  // `records` counts the records from this offset on
    uint64_t records = 0;     // records written (or found readable by Open)
    int fd = -1;             // read/write descriptor
  };

  Spool(std::string dir, SpoolOptions options);
  absl::Status OpenExisting();
  absl::Status StartSegment() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string SegmentPath(uint64_t seq) const;
  absl::Status WriteAckFile(SpoolPosition position) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Scans `segment` from `offset`: readable records until the first corrupt one (logged
  // unless `quiet`). Returns the end of the last good record; counts them in *records.
  uint64_t Scan(const Segment& segment, uint64_t offset, uint64_t* records, bool quiet) const;

  const std::string dir_;
  const SpoolOptions options_;

  mutable absl::Mutex mu_;
  std::vector<Segment> segments_ ABSL_GUARDED_BY(mu_);  // by seq; the last is written to
  SpoolPosition acked_ ABSL_GUARDED_BY(mu_);
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int> unsynced_ ABSL_GUARDED_BY(mu_);  // fds written to since the last Sync
  bool dir_unsynced_ ABSL_GUARDED_BY(mu_) = false;
  std::string write_buffer_ ABSL_GUARDED_BY(mu_);  // reused by Append
  uint64_t pending_at_open_ = 0;
};

}  // namespace bench::agent
