#include "server/http/web_page.h"

#include <cstdint>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace bench {
namespace {

constexpr char kCsp[] =
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'none'";

// FNV-1a, 64 bits: enough to tell one build's bytes from another's.
std::string ETagOf(const EmbeddedFile& file) {
  uint64_t hash = 14695981039346656037ull;
  for (size_t i = 0; i < file.size; ++i) {
    hash ^= file.data[i];
    hash *= 1099511628211ull;
  }
  return absl::StrFormat("\"%016x-%d\"", hash, file.size);
}

// Whether If-None-Match names `etag` (a list, or "*").
bool Matches(const HttpRequest& request, const std::string& etag) {
  auto it = request.headers.find("if-none-match");
  if (it == request.headers.end()) return false;
  if (absl::StripAsciiWhitespace(it->second) == "*") return true;
  return absl::StrContains(it->second, etag);
}

HttpServer::Handler Serve(const EmbeddedFile& file) {
  const std::string content_type = WebContentType(file.path);
  const std::string etag = ETagOf(file);
  const bool html = absl::EndsWith(file.path, ".html");
  const absl::string_view body(reinterpret_cast<const char*>(file.data), file.size);
  return [content_type, etag, html, body](const HttpRequest& request) {
    HttpResponse response;
    response.content_type = content_type;
    response.headers = {{"Cache-Control", "no-cache"},
                        {"ETag", etag},
                        {"X-Content-Type-Options", "nosniff"}};
    if (html) {
      response.headers.push_back({"Content-Security-Policy", kCsp});
      response.headers.push_back({"Referrer-Policy", "no-referrer"});
    }
    if (Matches(request, etag)) {
      response.status = 304;
      return response;
    }
    response.body = std::string(body);
    return response;
  };
}

}  // namespace

std::string WebContentType(const std::string& path) {
  if (absl::EndsWith(path, ".html")) return "text/html; charset=utf-8";
  if (absl::EndsWith(path, ".js")) return "text/javascript; charset=utf-8";
  if (absl::EndsWith(path, ".css")) return "text/css; charset=utf-8";
  return "application/octet-stream";
}

void RegisterWebPage(HttpServer& http) {
  for (size_t i = 0; i < kEmbeddedWebFileCount; ++i) {
    const EmbeddedFile& file = kEmbeddedWebFiles[i];
    http.Handle(file.path, Serve(file));
    if (absl::string_view(file.path) == "/index.html") http.Handle("/", Serve(file));
  }
}

}  // namespace bench
