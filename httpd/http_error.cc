#include "httpd/http_error.h"

#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "common/json_escape.h"

namespace bench {

HttpResponse JsonErrorResponse(const absl::Status& status) {
  HttpResponse response;
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument: response.status = 400; break;
    case absl::StatusCode::kNotFound: response.status = 404; break;
    case absl::StatusCode::kUnauthenticated:
      response.status = 401;
      response.headers.push_back({"WWW-Authenticate", "Bearer realm=\"benchfleet\""});
      break;
    case absl::StatusCode::kPermissionDenied: response.status = 403; break;
    case absl::StatusCode::kResourceExhausted:
      response.status = 503;
      response.headers.push_back({"Retry-After", "5"});
      break;
    case absl::StatusCode::kUnavailable: response.status = 503; break;
    default: response.status = 500;
  }
  response.content_type = "application/json";
  const absl::string_view message = status.message();
  response.body = absl::StrCat(
      "{\"error\":{\"code\":\"", absl::StatusCodeToString(status.code()),
      "\",\"message\":", JsonString(std::string_view(message.data(), message.size())), "}}");
  response.headers.push_back({"Cache-Control", "no-store"});
  return response;
}

}  // namespace bench
