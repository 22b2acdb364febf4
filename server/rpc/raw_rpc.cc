#include "server/rpc/raw_rpc.h"

#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/proto_buffer_writer.h>

#include "absl/strings/str_cat.h"

namespace bench {

absl::Status ParseRequest(const grpc::ByteBuffer& raw, std::string_view service,
                          std::string_view method, google::protobuf::MessageLite* request) {
  request->Clear();
  // "/<service>/<method>", made only for an error. (Debian's Abseil has its own
  // string_view, which StrCat does not take from std's.)
  auto path = [&] { return "/" + std::string(service) + "/" + std::string(method); };
  if (!raw.Valid()) return absl::InvalidArgumentError(path() + ": no request message");
  grpc::ByteBuffer copy(raw);  // shares the slices; the reader needs a non-const buffer
  grpc::ProtoBufferReader reader(&copy);
  if (reader.status().ok() && request->ParseFromZeroCopyStream(&reader)) return absl::OkStatus();
  request->Clear();
  return absl::InvalidArgumentError(absl::StrCat(path(), ": the request did not parse as ",
                                                 request->GetTypeName(), " (", raw.Length(),
                                                 " bytes)"));
}

grpc::Status SerializeMessage(const google::protobuf::MessageLite& message, grpc::ByteBuffer* raw) {
  bool own_buffer = false;  // always true for a ByteBuffer; gRPC's own serializer needs it
  return grpc::GenericSerialize<grpc::ProtoBufferWriter, google::protobuf::MessageLite>(
      message, raw, &own_buffer);
}

void PushMessage(QueuedWriter<grpc::ByteBuffer>* writer,
                 const google::protobuf::MessageLite& message) {
  grpc::ByteBuffer raw;
  grpc::Status serialized = SerializeMessage(message, &raw);
  if (serialized.ok()) {
    writer->Push(std::move(raw));
  } else {
    writer->Close(serialized);
  }
}

}  // namespace bench
