// benchctl's one way to call benchd: a Controller stub, the server's address and the
// deadline of each unary call. Every command goes through Call (unary RPCs) or Watch
// (WatchJob's stream); neither builds a grpc::ClientContext of its own. Failures come
// back as absl::Status through RpcError, so the message is what benchctl prints after
// "benchctl: " and RunCommand turns any of them into exit code 1. Thread-compatible:
// const methods may be called from one thread at a time per Client.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "benchfleet/v1/controller.grpc.pb.h"
#include "common/grpc_credentials.h"
#include "ctl/args.h"

namespace bench::ctl {

// A failed RPC as benchctl reports it: UNAVAILABLE and DEADLINE_EXCEEDED become
// "cannot reach benchd at <server>: <detail>" (code kept); UNAUTHENTICATED becomes
// "benchd at <server> wants credentials (UNAUTHENTICATED): <detail> (how to give them)"
// and PERMISSION_DENIED "benchd at <server> refused (PERMISSION_DENIED): <detail>";
// anything else keeps the server's code and message (the code's name, e.g.
// "UNIMPLEMENTED", where it sent none).
absl::Status RpcError(const grpc::Status& status, const std::string& server);

// The credential environment variables ("" when unset): BENCH_TOKEN, BENCH_TOKEN_FILE,
// BENCH_TLS_CA, BENCH_TLS_CERT, BENCH_TLS_KEY.
struct CredentialEnv {
  std::string token;
  std::string token_file;
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
};

// What to dial with: each flag wins over its variable; the token is --token-file's, else
// $BENCH_TOKEN, else $BENCH_TOKEN_FILE's (reads that file); --insecure lets Dial send it
// without TLS to a server that is not loopback. Errors (INVALID_ARGUMENT) name the flag or
// variable and the file.
absl::StatusOr<ClientCredentialOptions> ResolveCredentials(const ConnectionFlags& flags,
                                                           const CredentialEnv& env);

class Client {
 public:
  using Stub = benchfleet::v1::Controller::StubInterface;
  static constexpr absl::Duration kDefaultRpcTimeout = absl::Seconds(10);

  // Dials `server` (HOST:PORT, insecure; a whole job's log may come in one answer, so
  // the receive limit is 512 MiB). The channel and stub are the Client's.
  static std::unique_ptr<Client> Dial(const std::string& server);
  // The same with credentials (TLS, client certificate, bearer token); errors name the
  // flag or variable and the file that could not be read, or refuse a token that would go
  // in the clear to a server that is not loopback (common/grpc_credentials.h DialChannel).
  static absl::StatusOr<std::unique_ptr<Client>> Dial(const std::string& server,
                                                      const ClientCredentialOptions& credentials);
  // Over a stub owned by the caller (an in-process server or a mock in tests).
  Client(Stub* stub, std::string server, absl::Duration rpc_timeout = kDefaultRpcTimeout);

  const std::string& server() const { return server_; }

  // One unary RPC with the deadline set, e.g. Call(&Client::Stub::GetJob, request).
  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(
      grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&, Response*),
      const typename std::common_type<Request>::type& request) const {
    grpc::ClientContext rpc;
    rpc.set_deadline(std::chrono::system_clock::now() +
                     absl::ToChronoMilliseconds(rpc_timeout_));
    Response response;
    grpc::Status status = (stub_->*method)(&rpc, request, &response);
    if (!status.ok()) return RpcError(status, server_);
    return response;
  }

  // WatchJob with no deadline (a job may run for hours): `on_update` sees each status in
  // turn and returns false to stop reading, which cancels the stream and returns OK.
  // Otherwise returns how the stream ended (OK when the server closed it cleanly).
  absl::Status Watch(const std::string& job_id,
                     const std::function<bool(const benchfleet::v1::JobStatus&)>& on_update)
      const;

 private:
  std::shared_ptr<void> owned_;  // the channel and stub, when Dial made them
  Stub* stub_;
  std::string server_;
  absl::Duration rpc_timeout_;
};

}  // namespace bench::ctl
