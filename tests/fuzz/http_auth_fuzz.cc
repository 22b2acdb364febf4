// Fuzz target: the web port's authentication gate, reached before anyone is
// authenticated: HttpAuthenticator (server/http/http_auth.h) over a request's Authorization
// and Cookie headers, and CookieValue, which reads the page's `bench_token` cookie.
// The gate runs with security on against a real --tokens file (server/auth/token_file.h,
// written once per process) holding a view token and an agent token, and no TLS front.
//
// Input: byte 0 holds flags (bit 0: a Cookie header, bit 1: an Authorization header,
// bit 2: security off); the rest is the Cookie header's value, a line break, and the
// Authorization header's value.
//
// Besides no crash, leak or sanitizer report, it checks: CookieValue's result is never
// longer than the header; with security off every request may read; with it on the answer
// is OK, UNAUTHENTICATED or PERMISSION_DENIED, and it is OK exactly when the credential
// the headers carry is the view token: "Bearer <token>" (the scheme in any letter case,
// RFC 6750) when there is an Authorization header (a cookie then does not count),
// otherwise the percent-decoded bench_token cookie.
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "httpd/http_server.h"
#include "server/auth/auth.h"
#include "server/auth/token_file.h"
#include "server/http/http_auth.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

constexpr std::string_view kViewToken = "view-token-0123456789";
constexpr std::string_view kAgentToken = "agent-token-0123456789";

// The token file, written in a scratch directory removed at exit, opened once. Never
// destroyed (a function-local static pointer keeps it reachable for LeakSanitizer).
bench::TokenFile* Tokens() {
  static bench::TokenFile* tokens = [] {
    const char* tmp = getenv("TMPDIR");
    static std::string& dir = *new std::string(std::string(tmp != nullptr && *tmp ? tmp : "/tmp") +
                                               "/http_auth_fuzz.XXXXXX");
    FUZZ_CHECK(mkdtemp(dir.data()) != nullptr);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    });
    const std::string path = dir + "/tokens";
    {
      std::ofstream out(path);
      out << "# two tokens\n"
          << bench::TokenTable::Hash(kViewToken) << " view alice\n"
          << bench::TokenTable::Hash(kAgentToken) << " agent node-1\n";
      FUZZ_CHECK(out.good());
    }
    auto file = bench::TokenFile::Open(path, absl::InfiniteDuration());
    FUZZ_CHECK(file.ok());
    return file->release();
  }();
  return tokens;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return -1;
  const uint8_t flags = data[0];
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t newline = rest.find('\n');
  const std::string_view cookie = rest.substr(0, newline);
  const std::string_view authorization =
      newline == std::string_view::npos ? std::string_view() : rest.substr(newline + 1);

  bench::HttpRequest request;
  request.method = "GET";
  request.path = "/api/v1/jobs";
  if (flags & 1) request.headers["cookie"] = std::string(cookie);
  if (flags & 2) request.headers["authorization"] = std::string(authorization);

  std::optional<std::string> value =
      bench::CookieValue(absl::string_view(cookie.data(), cookie.size()), "bench_token");
  FUZZ_CHECK(!value.has_value() || value->size() <= cookie.size());

  if (flags & 4) {
    FUZZ_CHECK(bench::HttpAuthenticator::Off().AuthorizeRead(request).ok());
    return 0;
  }
  const bench::HttpAuthenticator gate = bench::HttpAuthenticator::On(Tokens(), nullptr);
  const absl::Status status = gate.AuthorizeRead(request);
  FUZZ_CHECK(status.ok() || status.code() == absl::StatusCode::kUnauthenticated ||
             status.code() == absl::StatusCode::kPermissionDenied);

  std::optional<std::string> credential;
  if (flags & 2) {
    constexpr std::string_view kBearer = "Bearer ";
    bool bearer = authorization.size() > kBearer.size();
    for (size_t i = 0; bearer && i < kBearer.size(); ++i) {  // the scheme in any case
      bearer = std::tolower(static_cast<unsigned char>(authorization[i])) ==
               std::tolower(static_cast<unsigned char>(kBearer[i]));
    }
    if (bearer) {
      credential = std::string(authorization.substr(kBearer.size()));
    }
  } else if (flags & 1) {
    credential = value;
  }
  FUZZ_CHECK(status.ok() == (credential.has_value() && *credential == kViewToken));
  if (credential.has_value() && *credential == kAgentToken) {
    FUZZ_CHECK(status.code() == absl::StatusCode::kPermissionDenied);
  }
  return 0;
}
