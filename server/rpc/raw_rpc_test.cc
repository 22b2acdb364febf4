// ParseRequest and SerializeMessage: raw bytes to messages and back, and the
// INVALID_ARGUMENT a request that does not parse gets (over real gRPC in
// controller_service_test.cc).
#include "server/rpc/raw_rpc.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "benchfleet/v1/controller.pb.h"

namespace bench {
namespace {

namespace v1 = benchfleet::v1;
using ::testing::HasSubstr;

grpc::ByteBuffer Bytes(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

std::string Dump(const grpc::ByteBuffer& raw) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(raw.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

TEST(ParseRequest, GarbageIsInvalidArgumentNamingTheMethodAndType) {
  v1::GetJobRequest request;
  request.set_job_id("left over");
  absl::Status status =
      ParseRequest(Bytes("\xff\xff\xff"), "benchfleet.v1.Controller", "GetJob", &request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "/benchfleet.v1.Controller/GetJob: the request did not parse as "
            "benchfleet.v1.GetJobRequest (3 bytes)");
  EXPECT_EQ(request.job_id(), "");  // nothing half-parsed is left
}

TEST(ParseRequest, ATruncatedFieldIsInvalidArgument) {
  // Field 1 (job_id, a string) announcing 5 bytes and carrying 2.
  const std::string truncated = {'\x0a', '\x05', 'a', 'b'};
  v1::GetJobRequest request;
  absl::Status status = ParseRequest(Bytes(truncated), "svc", "GetJob", &request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("did not parse"));
}

TEST(ParseRequest, NoMessageAtAllIsInvalidArgument) {
  v1::GetJobRequest request;
  absl::Status status = ParseRequest(grpc::ByteBuffer(), "svc", "GetJob", &request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "/svc/GetJob: no request message");
}

TEST(ParseRequest, EmptyBytesAreTheEmptyMessage) {
  v1::GetJobRequest request;
  request.set_job_id("stale");
  ASSERT_TRUE(ParseRequest(Bytes(""), "svc", "GetJob", &request).ok());
  EXPECT_EQ(request.job_id(), "");
}

TEST(ParseRequest, AWellFormedRequestRoundTripsAndTheBytesStay) {
  v1::SubmitJobRequest sent;
  sent.mutable_spec()->set_model("resnet50");
  sent.mutable_spec()->set_devices(4);
  sent.mutable_spec()->set_request_id("r-1");
  grpc::ByteBuffer raw = Bytes(sent.SerializeAsString());
  v1::SubmitJobRequest got;
  ASSERT_TRUE(ParseRequest(raw, "svc", "SubmitJob", &got).ok());
  EXPECT_EQ(got.SerializeAsString(), sent.SerializeAsString());
  EXPECT_EQ(Dump(raw), sent.SerializeAsString());  // parsing read a copy
}

TEST(SerializeMessage, SmallAndLargeMessagesComeBackIdentical) {
  for (size_t size : {size_t{0}, size_t{10}, size_t{1} << 20}) {
    v1::GetJobRequest message;
    message.set_job_id(std::string(size, 'j'));
    grpc::ByteBuffer raw;
    ASSERT_TRUE(SerializeMessage(message, &raw).ok());
    EXPECT_EQ(Dump(raw), message.SerializeAsString()) << size;
    v1::GetJobRequest back;
    ASSERT_TRUE(ParseRequest(raw, "svc", "GetJob", &back).ok());
    EXPECT_EQ(back.job_id().size(), size);
  }
}

}  // namespace
}  // namespace bench
