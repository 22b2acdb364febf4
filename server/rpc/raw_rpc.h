// The gRPC adapters' methods are raw (bytes in, bytes out); this file turns those bytes
// into messages and back, so that a request that does not parse is answered
// INVALID_ARGUMENT naming the method, not UNIMPLEMENTED.
//
// Why raw: with the generated typed callback methods gRPC parses the request itself, and
// when that fails its handler (grpcpp/impl/codegen/server_callback_handlers.h in 1.51;
// later releases read the same) never calls the service: it finishes the call with its
// "unimplemented" reactor, UNIMPLEMENTED and no message, which reads as "benchd has no
// such method". A server interceptor sees only a null message at POST_RECV_MESSAGE and
// cannot answer the call; a custom SerializationTraits would change parsing for every
// protobuf in the process. So the adapters derive from the generated
// WithRawCallbackMethod_* classes, authorize, then parse here.
//
// Trade-offs: the adapters name their request and response types (UnaryCall<Request,
// Response>, the message a stream pushes) where gRPC deduced them, so a mismatch with the
// .proto would still compile: the service tests call every method over real gRPC, typed
// and raw. A unary call's messages live in its UnaryCall on the heap, not in gRPC's call
// arena, and a stream's message is serialized when queued (a latest-only stream may
// serialize a snapshot it then drops). A server interceptor (benchd has none) would see
// grpc::ByteBuffer messages. Parsing and serializing are protobuf's, as in gRPC's code.
//
// Thread-safety: the functions are pure; a UnaryCall is one RPC's reactor (see below).
#pragma once

#include <string_view>

#include <google/protobuf/message_lite.h>
#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "common/grpc_status.h"
#include "server/rpc/queued_writer.h"

namespace bench {

// Parses `raw` into `request` (cleared first). INVALID_ARGUMENT
// "/<service>/<method>: the request did not parse as <type> (<n> bytes)" when it is not
// that message's encoding, or "...: no request message" when the call carried none.
// `raw` is left as it was. An empty buffer is a valid request (every field unset).
absl::Status ParseRequest(const grpc::ByteBuffer& raw, std::string_view service,
                          std::string_view method, google::protobuf::MessageLite* request);

// Serializes `message` into `raw`; INTERNAL when protobuf cannot (over 2 GiB).
grpc::Status SerializeMessage(const google::protobuf::MessageLite& message, grpc::ByteBuffer* raw);

// Queues `message` serialized on a raw server stream; closes the stream with the error
// instead when it cannot be serialized.
void PushMessage(QueuedWriter<grpc::ByteBuffer>* writer,
                 const google::protobuf::MessageLite& message);

// One unary RPC served raw: the parsed request, the response to fill, and Reply, which
// serializes the response (when the status is OK) into the call's response bytes and
// finishes the call. It is the call's reactor: create it with `new`, return it from the
// method; it deletes itself when the RPC is done. Reply exactly once, from any thread,
// also before the method has returned it (gRPC holds the Finish until then); after
// Reply, touch nothing of it.
template <class Request, class Response>
class UnaryCall final : public grpc::ServerUnaryReactor {
 public:
  // `raw_response` is gRPC's (the raw method's argument); it outlives the reactor.
  explicit UnaryCall(grpc::ByteBuffer* raw_response) : raw_response_(raw_response) {}

  const Request& request() const { return request_; }
  Request* mutable_request() { return &request_; }
  Response* response() { return &response_; }

  grpc::ServerUnaryReactor* Reply(const absl::Status& status) {
    Finish(status.ok() ? SerializeMessage(response_, raw_response_) : ToGrpcStatus(status));
    return this;
  }

 private:
  void OnDone() override { delete this; }

  grpc::ByteBuffer* const raw_response_;
  Request request_;
  Response response_;
};

}  // namespace bench
