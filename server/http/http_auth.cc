#include "server/http/http_auth.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "httpd/tls_front.h"
#include "server/auth/token_file.h"

namespace bench {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string PercentDecode(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && HexValue(text[i + 1]) >= 0 &&
        HexValue(text[i + 2]) >= 0) {
      out += static_cast<char>(HexValue(text[i + 1]) * 16 + HexValue(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> CookieValue(absl::string_view cookie_header, absl::string_view name) {
  for (absl::string_view pair : absl::StrSplit(cookie_header, ';')) {
    pair = absl::StripAsciiWhitespace(pair);
    size_t eq = pair.find('=');
    if (eq == absl::string_view::npos || pair.substr(0, eq) != name) continue;
    absl::string_view value = pair.substr(eq + 1);
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    return PercentDecode(value);
  }
  return std::nullopt;
}

std::optional<Principal> HttpAuthenticator::PrincipalOf(const HttpRequest& request) const {
  if (!on_) return Principal{"", Role::kAdmin, "none"};
  if (tls_ != nullptr && request.remote_port != 0) {
    // Only the exact relayed connection (httpd/tls_front.h): never a port alone.
    for (const std::string& uri :
         tls_->PeerUris(request.remote_addr, request.remote_port, request.local_port)) {
      absl::StatusOr<Principal> who = PrincipalFromCertUri(uri);
      if (who.ok()) return *who;
    }
  }
  if (tokens_ == nullptr) return std::nullopt;
  auto header = request.headers.find("authorization");
  if (header != request.headers.end()) {
    constexpr std::string_view kBearer = "Bearer ";  // the scheme in any case (RFC 6750)
    std::string_view value = header->second;
    if (value.size() > kBearer.size() &&
        absl::StartsWithIgnoreCase(absl::string_view(value.data(), value.size()),
                                   absl::string_view(kBearer.data(), kBearer.size()))) {
      return tokens_->Find(value.substr(kBearer.size()));
    }
    return std::nullopt;
  }
  auto cookie = request.headers.find("cookie");
  if (cookie != request.headers.end()) {
    std::optional<std::string> token = CookieValue(cookie->second, "bench_token");
    if (token.has_value() && !token->empty()) return tokens_->Find(*token);
  }
  return std::nullopt;
}

absl::Status HttpAuthenticator::AuthorizeRead(const HttpRequest& request) const {
  if (!on_) return absl::OkStatus();
  return Authorize(PrincipalOf(request), Action::kRead);
}

}  // namespace bench
