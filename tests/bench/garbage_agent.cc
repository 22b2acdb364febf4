// garbage_agent: one misbehaving node (issue 27's faults). With a valid agent certificate
// (mutual TLS) it sends benchd, as fast as benchd answers, for --duration or until SIGTERM
// or SIGINT, by turns on each of --threads threads:
//
//   raw        a TLS connection (ALPN h2) to the gRPC port carrying random bytes instead of
//              HTTP/2; what benchd did: GOAWAY_<error> (a GOAWAY frame, then closed),
//              CLOSED, RESET, TIMEOUT (still open after --rpc_timeout), HANDSHAKE_FAILED;
//   protobuf   well-formed gRPC calls to the agent methods (and one that does not exist)
//              whose request is random bytes (grpc::GenericStub);
//   oversized  UploadSamples over 4 MiB (benchd's limit: RESOURCE_EXHAUSTED expected);
//   impossible UploadSamples with impossible values, by turns: NaN and negative step times,
//              negative iterations and images, ranks of --forge_job that are not placed on
//              this node, an unknown job, 100,000 samples in one call, GPU readings with
//              negative power, and samples in the name of another node (--impersonate).
//
// Every answer is counted by kind and status code; an OK UploadSamples also adds what
// benchd says it stored, took as duplicates and rejected. The summary goes to stdout and,
// with --summary_json, to a file. Exit 0 when nothing sent was stored, 1 when benchd
// stored any of it (or took any as a duplicate of what it had), 2 for a usage error.
// It never registers, so benchd never places ranks on it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <future>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "benchfleet/v1/agent.grpc.pb.h"

ABSL_FLAG(std::string, target, "127.0.0.1:7600", "benchd's gRPC address (IPv4 HOST:PORT)");
ABSL_FLAG(std::string, tls_ca, "", "the fleet's CA (PEM), to verify benchd");
ABSL_FLAG(std::string, tls_cert, "", "this node's agent certificate (PEM)");
ABSL_FLAG(std::string, tls_key, "", "its key (PEM)");
ABSL_FLAG(std::string, agent, "garbage", "the node name its requests carry (its certificate's)");
ABSL_FLAG(std::string, forge_job, "job-none", "the job id its forged samples claim");
ABSL_FLAG(std::string, impersonate, "", "also upload in this node's name (another agent)");
ABSL_FLAG(std::string, kinds, "raw,protobuf,oversized,impossible", "what to send, by turns");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(10), "how long (SIGTERM/SIGINT end it early)");
ABSL_FLAG(int, threads, 2, "senders at once");
ABSL_FLAG(absl::Duration, rpc_timeout, absl::Seconds(30), "deadline of each call or read");
ABSL_FLAG(std::string, summary_json, "", "also write the summary here (JSON)");
ABSL_FLAG(uint64_t, seed, 27, "random seed");

namespace v1 = benchfleet::v1;

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

const std::vector<std::string> kKinds = {"raw", "protobuf", "oversized", "impossible"};

// Answers by kind, then by code.
struct Tally {
  absl::Mutex mu;
  std::map<std::string, std::map<std::string, int64_t>> codes;
  int64_t stored = 0, duplicates = 0, gpu_stored = 0, gpu_duplicates = 0, rejected = 0;
  int64_t samples_sent = 0;

  void Count(const std::string& kind, const std::string& code) {
    absl::MutexLock lock(&mu);
    ++codes[kind][code];
  }
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string RandomBytes(std::mt19937_64& rng, size_t n) {
  std::string bytes(n, '\0');
  for (char& c : bytes) c = static_cast<char>(rng() & 0xff);
  return bytes;
}

// --- raw: random bytes inside TLS, no HTTP/2 ---------------------------------------------

const char* Http2ErrorName(uint32_t code) {
  static const char* const kNames[] = {"NO_ERROR",
                                       "PROTOCOL_ERROR",
                                       "INTERNAL_ERROR",
                                       "FLOW_CONTROL_ERROR",
                                       "SETTINGS_TIMEOUT",
                                       "STREAM_CLOSED",
                                       "FRAME_SIZE_ERROR",
                                       "REFUSED_STREAM",
                                       "CANCEL",
                                       "COMPRESSION_ERROR",
                                       "CONNECT_ERROR",
                                       "ENHANCE_YOUR_CALM",
                                       "INADEQUATE_SECURITY",
                                       "HTTP_1_1_REQUIRED"};
  return code < sizeof(kNames) / sizeof(kNames[0]) ? kNames[code] : "UNKNOWN";
}

// The first GOAWAY frame's error name in what the server sent, or "".
std::string GoawayIn(const std::string& received) {
  size_t at = 0;
  while (at + 9 <= received.size()) {
    const auto* p = reinterpret_cast<const unsigned char*>(received.data() + at);
    const size_t length = (size_t{p[0]} << 16) | (size_t{p[1]} << 8) | p[2];
    if (p[3] == 0x7 && at + 9 + 8 <= received.size()) {
      const unsigned char* e = p + 9 + 4;
      return Http2ErrorName((uint32_t{e[0]} << 24) | (uint32_t{e[1]} << 16) |
                            (uint32_t{e[2]} << 8) | e[3]);
    }
    at += 9 + length;
  }
  return "";
}

class RawSender {
 public:
  // Empty error() when the context is ready.
  RawSender() {
    ctx_ = SSL_CTX_new(TLS_client_method());
    const std::string ca = absl::GetFlag(FLAGS_tls_ca), cert = absl::GetFlag(FLAGS_tls_cert),
                      key = absl::GetFlag(FLAGS_tls_key);
    static const unsigned char kAlpn[] = {2, 'h', '2'};
    if (ctx_ == nullptr || SSL_CTX_load_verify_locations(ctx_, ca.c_str(), nullptr) != 1 ||
        SSL_CTX_use_certificate_chain_file(ctx_, cert.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx_, key.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_set_alpn_protos(ctx_, kAlpn, sizeof(kAlpn)) != 0) {
      char text[256];
      ERR_error_string_n(ERR_get_error(), text, sizeof(text));
      error_ = absl::StrCat("cannot load --tls_ca/--tls_cert/--tls_key: ", text);
      return;
    }
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    std::vector<std::string> parts = absl::StrSplit(absl::GetFlag(FLAGS_target), ':');
    int port = 0;
    addr_.sin_family = AF_INET;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &port) ||
        inet_pton(AF_INET, parts[0].c_str(), &addr_.sin_addr) != 1) {
      error_ = "--target must be an IPv4 HOST:PORT for raw connections";
      return;
    }
    addr_.sin_port = htons(static_cast<uint16_t>(port));
  }
  ~RawSender() { SSL_CTX_free(ctx_); }
  const std::string& error() const { return error_; }

  // One connection: handshake, random bytes, read until benchd closes it.
  std::string Send(std::mt19937_64& rng) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return "SOCKET_FAILED";
    const int64_t timeout_us = absl::ToInt64Microseconds(absl::GetFlag(FLAGS_rpc_timeout));
    timeval tv{static_cast<time_t>(timeout_us / 1000000),
               static_cast<suseconds_t>(timeout_us % 1000000)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    std::string outcome;
    SSL* ssl = nullptr;
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr_), sizeof(addr_)) != 0) {
      outcome = "CONNECT_FAILED";
    } else {
      ssl = SSL_new(ctx_);
      SSL_set_fd(ssl, fd);
      if (SSL_connect(ssl) != 1) {
        outcome = "HANDSHAKE_FAILED";
      } else {
        outcome = Exchange(ssl, RandomBytes(rng, 1 + rng() % 65536));
      }
    }
    if (ssl != nullptr) SSL_free(ssl);
    close(fd);
    return outcome;
  }

 private:
  static std::string Exchange(SSL* ssl, const std::string& garbage) {
    bool write_failed = SSL_write(ssl, garbage.data(), static_cast<int>(garbage.size())) <= 0;
    std::string received;
    char buffer[16384];
    while (true) {
      errno = 0;
      int n = SSL_read(ssl, buffer, sizeof(buffer));
      if (n > 0) {
        received.append(buffer, n);
        continue;
      }
      const int error = SSL_get_error(ssl, n);
      std::string goaway = GoawayIn(received);
      if (!goaway.empty()) return "GOAWAY_" + goaway;
      if (error == SSL_ERROR_ZERO_RETURN) return "CLOSED";
      if (error == SSL_ERROR_SYSCALL && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return "TIMEOUT";
      }
      if (error == SSL_ERROR_SYSCALL && errno == ECONNRESET) return "RESET";
      // EOF without close_notify (errno 0) or a TLS error after the bytes: closed.
      return write_failed ? "CLOSED_BEFORE_WRITE" : "CLOSED";
    }
  }

  SSL_CTX* ctx_ = nullptr;
  sockaddr_in addr_{};
  std::string error_;
};

// --- gRPC kinds ---------------------------------------------------------------------------

std::string CodeName(grpc::StatusCode code) {  // gRPC's codes are absl's
  const int i = static_cast<int>(code);
  return i >= 0 && i < 17 ? absl::StatusCodeToString(static_cast<absl::StatusCode>(i))
                          : absl::StrCat("CODE_", i);
}

class GrpcSender {
 public:
  GrpcSender(std::shared_ptr<grpc::Channel> channel, Tally* tally)
      : generic_(channel), stub_(v1::AgentService::NewStub(channel)), tally_(tally) {}

  // Random bytes to one method, by turns.
  void Protobuf(std::mt19937_64& rng) {
    static const std::vector<std::string> kMethods = {
        "Register",   "Heartbeat",          "ReportStatus", "UploadSamples",
        "Deregister", "RequestCertificate", "NoSuchMethod"};
    const std::string method =
        absl::StrCat("/benchfleet.v1.AgentService/", kMethods[rng() % kMethods.size()]);
    const std::string bytes = RandomBytes(rng, 1 + rng() % 4096);
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1), response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         absl::ToChronoSeconds(absl::GetFlag(FLAGS_rpc_timeout)));
    std::promise<grpc::Status> done;
    generic_.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                       [&done](grpc::Status status) { done.set_value(std::move(status)); });
    tally_->Count("protobuf", CodeName(done.get_future().get().error_code()));
  }

  void Oversized(std::mt19937_64& rng) {
    v1::UploadSamplesRequest request;
    request.set_agent(absl::GetFlag(FLAGS_agent));
    request.set_batch_id(static_cast<int64_t>(rng() >> 1));
    // Each sample carries a 1 KiB job id: 4,608 of them are 4.5 MiB.
    const std::string long_id =
        absl::StrCat(absl::GetFlag(FLAGS_forge_job), "-", std::string(1024, 'x'));
    for (int i = 0; i < 4608; ++i) {
      v1::IterationSample* s = request.add_samples();
      s->set_job_id(long_id);
      s->set_rank(i % 8);
      s->set_iteration(i + 1);
      s->set_step_time_s(0.1);
    }
    Upload("oversized", request);
  }

  void Impossible(std::mt19937_64& rng, int turn) {
    v1::UploadSamplesRequest request;
    request.set_agent(absl::GetFlag(FLAGS_agent));
    request.set_batch_id(turn);
    const std::string job = absl::GetFlag(FLAGS_forge_job);
    auto sample = [&](const std::string& id, int rank, int iteration) {
      v1::IterationSample* s = request.add_samples();
      s->set_job_id(id);
      s->set_attempt(1);
      s->set_rank(rank);
      s->set_iteration(iteration);
      s->set_step_time_s(0.1);
      s->set_images(256);
      s->set_loss(1.0);
      s->set_received_unix_ns(absl::GetCurrentTimeNanos());
      return s;
    };
    const std::string impersonate = absl::GetFlag(FLAGS_impersonate);
    switch (turn % (impersonate.empty() ? 7 : 8)) {
      case 0:  // NaN and negative step times
        for (int i = 1; i <= 64; ++i) {
          sample(job, i % 8, i)->set_step_time_s(i % 2 ? std::nan("") : -1.0);
        }
        break;
      case 1:  // negative iterations and images
        for (int i = 1; i <= 64; ++i) sample(job, i % 8, -i)->set_images(-256);
        break;
      case 2:  // the forged job's ranks, sane values, but not placed on this node
        for (int i = 1; i <= 64; ++i) sample(job, i % 8, 1000000 + i + turn);
        break;
      case 3:  // an unknown job, an impossible rank
        for (int i = 1; i <= 64; ++i) sample(absl::StrCat("job-no-such-", turn), 99999, i);
        break;
      case 4:  // 100,000 samples in one call
        for (int i = 1; i <= 100000; ++i) {
          v1::IterationSample* s = request.add_samples();
          s->set_job_id(job);
          s->set_rank(i % 8);
          s->set_iteration(i);
          s->set_step_time_s(0.1);
        }
        break;
      case 5:  // GPU readings with impossible values
        for (int i = 1; i <= 64; ++i) {
          v1::GpuSample* g = request.add_gpu_samples();
          g->set_job_id(job);
          g->set_attempt(1);
          g->set_rank(i % 8);
          g->set_seq(i % 2 ? -i : i + turn);
          g->set_time_unix_ns(absl::GetCurrentTimeNanos());
          g->set_power_w(-300);
          g->set_temperature_c(std::nan(""));
        }
        break;
      case 6:  // random values everywhere (printable ids: invalid UTF-8 is the protobuf kind's)
        for (int i = 1; i <= 64; ++i) {
          std::string id = RandomBytes(rng, 1 + rng() % 40);
          for (char& c : id) c = static_cast<char>(' ' + static_cast<unsigned char>(c) % 95);
          v1::IterationSample* s = sample(id, static_cast<int>(rng()), static_cast<int>(rng()));
          s->set_step_time_s(static_cast<double>(static_cast<int64_t>(rng())));
          s->set_elapsed_s(-1e300);
        }
        break;
      default:  // in another node's name
        request.set_agent(impersonate);
        for (int i = 1; i <= 64; ++i) sample(job, i % 8, 1000000 + i + turn);
        break;
    }
    Upload("impossible", request);
  }

 private:
  void Upload(const std::string& kind, const v1::UploadSamplesRequest& request) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         absl::ToChronoSeconds(absl::GetFlag(FLAGS_rpc_timeout)));
    v1::UploadSamplesResponse response;
    grpc::Status status = stub_->UploadSamples(&context, request, &response);
    tally_->Count(kind, CodeName(status.error_code()));
    absl::MutexLock lock(&tally_->mu);
    tally_->samples_sent += request.samples_size() + request.gpu_samples_size();
    if (status.ok()) {
      tally_->stored += response.stored();
      tally_->duplicates += response.duplicates();
      tally_->gpu_stored += response.gpu_stored();
      tally_->gpu_duplicates += response.gpu_duplicates();
      tally_->rejected += response.rejected();
    }
  }

  grpc::GenericStub generic_;
  std::unique_ptr<v1::AgentService::Stub> stub_;
  Tally* tally_;
};

std::string SummaryJson(Tally& tally, double seconds) {
  absl::MutexLock lock(&tally.mu);
  std::vector<std::string> kinds;
  for (const auto& [kind, codes] : tally.codes) {
    std::vector<std::string> entries;
    int64_t calls = 0;
    for (const auto& [code, n] : codes) {
      entries.push_back(absl::StrCat("\"", code, "\":", n));
      calls += n;
    }
    kinds.push_back(absl::StrCat("\"", kind, "\":{\"calls\":", calls, ",\"codes\":{",
                                 absl::StrJoin(entries, ","), "}}"));
  }
  return absl::StrCat("{\"seconds\":", seconds, ",\"kinds\":{", absl::StrJoin(kinds, ","),
                      "},\"samples_sent\":", tally.samples_sent, ",\"stored\":", tally.stored,
                      ",\"duplicates\":", tally.duplicates, ",\"gpu_stored\":", tally.gpu_stored,
                      ",\"gpu_duplicates\":", tally.gpu_duplicates,
                      ",\"rejected\":", tally.rejected, "}");
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "one misbehaving agent: garbage, oversized and impossible "
      "messages at full speed (see the top of garbage_agent.cc)");
  absl::ParseCommandLine(argc, argv);
  std::vector<std::string> kinds = absl::StrSplit(absl::GetFlag(FLAGS_kinds), ',');
  for (const std::string& kind : kinds) {
    if (std::find(kKinds.begin(), kKinds.end(), kind) == kKinds.end()) {
      std::fprintf(stderr, "garbage_agent: unknown kind '%s' in --kinds (want %s)\n", kind.c_str(),
                   absl::StrJoin(kKinds, ",").c_str());
      return 2;
    }
  }
  if (absl::GetFlag(FLAGS_tls_ca).empty() || absl::GetFlag(FLAGS_tls_cert).empty() ||
      absl::GetFlag(FLAGS_tls_key).empty() || absl::GetFlag(FLAGS_threads) < 1) {
    std::fprintf(stderr,
                 "garbage_agent: --tls_ca, --tls_cert, --tls_key are required "
                 "(an agent certificate: mutual TLS), --threads at least 1\n");
    return 2;
  }
  RawSender raw;
  if (!raw.error().empty()) {
    std::fprintf(stderr, "garbage_agent: %s\n", raw.error().c_str());
    return 2;
  }
  grpc::SslCredentialsOptions tls;
  tls.pem_root_certs = ReadFile(absl::GetFlag(FLAGS_tls_ca));
  tls.pem_cert_chain = ReadFile(absl::GetFlag(FLAGS_tls_cert));
  tls.pem_private_key = ReadFile(absl::GetFlag(FLAGS_tls_key));
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel(absl::GetFlag(FLAGS_target), grpc::SslCredentials(tls));
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  signal(SIGPIPE, SIG_IGN);

  Tally tally;
  GrpcSender sender(channel, &tally);
  const absl::Time start = absl::Now();
  const absl::Time end = start + absl::GetFlag(FLAGS_duration);
  std::vector<std::thread> threads;
  for (int t = 0; t < absl::GetFlag(FLAGS_threads); ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(absl::GetFlag(FLAGS_seed) + t);
      for (int turn = t; !g_stop.load() && absl::Now() < end; ++turn) {
        const std::string& kind = kinds[turn % kinds.size()];
        if (kind == "raw") {
          tally.Count("raw", raw.Send(rng));
        } else if (kind == "protobuf") {
          sender.Protobuf(rng);
        } else if (kind == "oversized") {
          sender.Oversized(rng);
        } else {
          sender.Impossible(rng, static_cast<int>(turn / kinds.size()));
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const std::string json = SummaryJson(tally, absl::ToDoubleSeconds(absl::Now() - start));
  std::printf("%s\n", json.c_str());
  if (const std::string path = absl::GetFlag(FLAGS_summary_json); !path.empty()) {
    std::ofstream(path) << json << "\n";
  }
  const bool took_any =
      tally.stored + tally.duplicates + tally.gpu_stored + tally.gpu_duplicates > 0;
  if (took_any) std::fprintf(stderr, "garbage_agent: benchd stored some of the garbage\n");
  return took_any ? 1 : 0;
}
