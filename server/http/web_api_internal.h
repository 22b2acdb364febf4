// What the web API's files (web_api.cc, web_api_samples.cc) share: parameter parsing
// that names the parameter in its errors, page tokens, and JSON responses. Not API.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "httpd/http_server.h"
#include "server/core/views.h"

namespace bench::web_api {

// INVALID_ARGUMENT naming the first query parameter not in `allowed`.
absl::Status CheckParams(const HttpRequest& request, std::initializer_list<const char*> allowed);
// The integer parameter `name` (unset: nullopt); INVALID_ARGUMENT naming it when it is
// not an integer in [min, max].
absl::StatusOr<std::optional<int64_t>> IntParam(const HttpRequest& request, const char* name,
                                                int64_t min, int64_t max);
// A page token: `kind` and `value` made opaque (web-safe base64); Decode checks the kind
// and gives the value back, INVALID_ARGUMENT naming page_token otherwise.
std::string EncodeToken(absl::string_view kind, absl::string_view value);
absl::StatusOr<std::string> DecodeToken(absl::string_view kind, absl::string_view token);

// `object` (a JSON object, optionally ending in '\n') with `"key":value_json` appended.
std::string WithField(std::string object, absl::string_view key, absl::string_view value_json);

// 200, application/json, not cached.
HttpResponse JsonOk(std::string body);
// The job's JobStatus in the proto JSON mapping, one line without a newline.
std::string JobJson(const JobView& view);
// JsonErrorResponse, not cached.
HttpResponse JsonError(const absl::Status& status);

}  // namespace bench::web_api
