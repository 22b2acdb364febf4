// An error as the web port answers it (a handler's status, a gate's, an event stream's):
// {"error":{"code":"NOT_FOUND","message":"..."}}, the message escaped by
// common/json_escape.h, with the HTTP status of the code. Pure.
#pragma once

#include "absl/status/status.h"
#include "httpd/http_message.h"

namespace bench {

// The HTTP status of the code: INVALID_ARGUMENT 400, UNAUTHENTICATED 401 with
// WWW-Authenticate: Bearer, PERMISSION_DENIED 403, NOT_FOUND 404, RESOURCE_EXHAUSTED 503
// with Retry-After, UNAVAILABLE 503, anything else 500. Never cached (Cache-Control:
// no-store).
HttpResponse JsonErrorResponse(const absl::Status& status);

}  // namespace bench
