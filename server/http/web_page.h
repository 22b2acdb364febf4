// benchd's web page at `/` on the web port: web/index.html, its JS modules and CSS and the
// vendored uPlot, embedded in the binary at build time (web/web.cmake, cmake/EmbedFiles.cmake),
// so benchd serves the page with no files beside it and the page makes no request to any
// other host. The page reads the JSON API (/api/v1/, server/http/web_api.h) and its event
// streams; web/README.md describes it.
//
// Thread-safe: the handlers only read the embedded bytes.
#pragma once

#include <cstddef>
#include <string>

#include "httpd/http_server.h"

namespace bench {

// One embedded file: its URL path ("/app.js") and bytes.
struct EmbeddedFile {
  const char* path;
  const unsigned char* data;
  size_t size;
};
// Defined by the generated web_assets.cc, in path order.
extern const EmbeddedFile kEmbeddedWebFiles[];
extern const size_t kEmbeddedWebFileCount;

// "text/html; charset=utf-8" for .html, text/javascript for .js, text/css for .css,
// "application/octet-stream" otherwise.
std::string WebContentType(const std::string& path);

// Registers `/` (index.html) and every embedded file at its path. Each answer carries an
// ETag (of its bytes) with `Cache-Control: no-cache`, so a browser revalidates and gets a
// 304 while the bytes are unchanged (a new benchd build is seen at once), plus
// X-Content-Type-Options: nosniff and, on the HTML, a Content-Security-Policy that allows
// only this origin (no inline script, no other host).
void RegisterWebPage(HttpServer& http);

}  // namespace bench
