// Who is calling benchd's web port, and whether they may read: the HTTP side of
// server/auth/auth.h, as server/rpc/grpc_auth.h is its gRPC side. Adapter code, no I/O.
//
// A principal comes from, in this order: the verified client certificate of the TLS
// connection the request came through (its URI SAN, httpd/tls_front.h; found by the
// relayed connection's exact 4-tuple, never by a port alone), an `Authorization: Bearer
// TOKEN` header (the scheme in any letter case, RFC 6750), or a `bench_token` cookie (the
// web page sets it, since a browser's EventSource cannot send headers). With security off
// every request is an anonymous admin. Which paths need a credential is benchd's choice
// (server/benchd.cc).
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "httpd/http_server.h"
#include "server/auth/auth.h"

namespace bench {

class TlsFront;
class TokenFile;

class HttpAuthenticator {
 public:
  // Security off: every request may read.
  static HttpAuthenticator Off() { return HttpAuthenticator(false, nullptr, nullptr); }
  // Security on: bearer tokens from `tokens`, certificates from `tls`; either may be
  // null (not owned; must outlive this).
  static HttpAuthenticator On(TokenFile* tokens, const TlsFront* tls) {
    return HttpAuthenticator(true, tokens, tls);
  }

  std::optional<Principal> PrincipalOf(const HttpRequest& request) const;

  // OK for a principal allowed to read (always with security off); otherwise
  // UNAUTHENTICATED (no usable credential) or PERMISSION_DENIED (e.g. an agent's
  // certificate), as Authorize says.
  absl::Status AuthorizeRead(const HttpRequest& request) const;

  bool security_on() const { return on_; }

 private:
  HttpAuthenticator(bool on, TokenFile* tokens, const TlsFront* tls)
      : on_(on), tokens_(tokens), tls_(tls) {}
  bool on_;
  TokenFile* tokens_;
  const TlsFront* tls_;
};

// The value of cookie `name` in a Cookie header ("a=1; bench_token=x"), percent-decoded;
// nullopt when absent.
std::optional<std::string> CookieValue(absl::string_view cookie_header, absl::string_view name);

}  // namespace bench
