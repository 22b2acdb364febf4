#include "httpd/http_civet_io.h"

#include <strings.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>
#include <utility>

#include <civetweb.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace bench {
namespace {

std::string UrlDecode(absl::string_view text) {
  std::string out(text.size() + 1, '\0');
  int n = mg_url_decode(text.data(), static_cast<int>(text.size()), out.data(),
                        static_cast<int>(out.size()), /*is_form_url_encoded=*/1);
  out.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return out;
}

}  // namespace

HttpRequest ReadHttpRequest(mg_connection* conn) {
  const mg_request_info* info = mg_get_request_info(conn);
  HttpRequest request;
  request.method = info->request_method;
  request.path = info->local_uri != nullptr ? info->local_uri : "";
  request.remote_addr = info->remote_addr;
  request.remote_port = info->remote_port;
  request.local_port = info->server_port;
  if (info->query_string != nullptr) {
    for (absl::string_view pair : absl::StrSplit(info->query_string, '&', absl::SkipEmpty())) {
      size_t eq = pair.find('=');
      std::string name = UrlDecode(pair.substr(0, eq));
      std::string value = eq == absl::string_view::npos ? "" : UrlDecode(pair.substr(eq + 1));
      request.query.emplace(std::move(name), std::move(value));
    }
  }
  for (int i = 0; i < info->num_headers; ++i) {
    std::string name = info->http_headers[i].name;
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    const char* value = info->http_headers[i].value ? info->http_headers[i].value : "";
    auto [it, inserted] = request.headers.emplace(name, value);
    if (!inserted) absl::StrAppend(&it->second, ", ", value);
  }
  return request;
}

bool WantsKeepAlive(mg_connection* conn) {
  const mg_request_info* info = mg_get_request_info(conn);
  const char* connection = mg_get_header(conn, "Connection");
  if (connection != nullptr) {
    std::string value = connection;
    std::transform(value.begin(), value.end(), value.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    return value.find("keep-alive") != std::string::npos;
  }
  return info->http_version != nullptr && std::strcmp(info->http_version, "1.1") == 0;
}

void WriteHttpResponse(mg_connection* conn, const HttpResponse& response, bool head,
                       bool keep_alive) {
  std::string out = absl::StrCat("HTTP/1.1 ", response.status, " ",
                                 mg_get_response_code_text(conn, response.status),
                                 "\r\nContent-Type: ", response.content_type,
                                 "\r\nContent-Length: ", response.body.size(), "\r\n");
  bool cache_control = false;
  for (const auto& [name, value] : response.headers) {
    if (strcasecmp(name.c_str(), "Cache-Control") == 0) cache_control = true;
    absl::StrAppend(&out, name, ": ", value, "\r\n");
  }
  if (!cache_control) out += "Cache-Control: no-store\r\n";
  absl::StrAppend(&out, "Connection: ", keep_alive ? "keep-alive" : "close", "\r\n\r\n");
  if (!head) out += response.body;
  mg_write(conn, out.data(), out.size());
  if (!keep_alive) mg_disable_connection_keep_alive(conn);
}

}  // namespace bench
