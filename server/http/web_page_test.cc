// The embedded page over a real loopback socket: every file of web/ and the vendored uPlot
// is served byte for byte, with its content type, ETag, no-cache and (on the HTML) the CSP.
#include "server/http/web_page.h"

#include <set>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "httpd/http_test_client.h"

namespace bench {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using http_test::Get;

std::string Body(const std::string& response) {
  size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

std::string Header(const std::string& response, const std::string& name) {
  size_t at = response.find("\r\n" + name + ": ");
  if (at == std::string::npos) return "";
  at += name.size() + 4;
  return response.substr(at, response.find("\r\n", at) - at);
}

TEST(WebPageTest, EmbedsThePageItsModulesAndUPlot) {
  std::set<std::string> paths;
  for (size_t i = 0; i < kEmbeddedWebFileCount; ++i) paths.insert(kEmbeddedWebFiles[i].path);
  for (const char* path : {"/index.html", "/app.js", "/format.js", "/style.css",
                           "/vendor/uPlot.iife.min.js", "/vendor/uPlot.min.css"}) {
    EXPECT_EQ(paths.count(path), 1u) << path;
  }
  EXPECT_EQ(WebContentType("/a.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(WebContentType("/a.css"), "text/css; charset=utf-8");
  EXPECT_EQ(WebContentType("/index.html"), "text/html; charset=utf-8");
}

TEST(WebPageTest, ServesEveryFileByteForByteAndRevalidates) {
  HttpServer server;
  RegisterWebPage(server);
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status();

  for (size_t i = 0; i < kEmbeddedWebFileCount; ++i) {
    const EmbeddedFile& file = kEmbeddedWebFiles[i];
    std::string response = Get(*port, file.path);
    ASSERT_THAT(response, StartsWith("HTTP/1.1 200")) << file.path;
    EXPECT_EQ(Body(response),
              std::string(reinterpret_cast<const char*>(file.data), file.size)) << file.path;
    EXPECT_EQ(Header(response, "Content-Type"), WebContentType(file.path)) << file.path;
    EXPECT_EQ(Header(response, "Cache-Control"), "no-cache") << file.path;
    EXPECT_EQ(Header(response, "X-Content-Type-Options"), "nosniff") << file.path;
    const std::string etag = Header(response, "ETag");
    ASSERT_FALSE(etag.empty()) << file.path;
    std::string again = Get(*port, file.path, "If-None-Match: " + etag + "\r\n");
    EXPECT_THAT(again, StartsWith("HTTP/1.1 304")) << file.path;
    EXPECT_EQ(Body(again), "") << file.path;
  }

  std::string index = Get(*port, "/");
  ASSERT_THAT(index, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(Body(index), HasSubstr("<script type=\"module\" src=\"app.js\">"));
  EXPECT_THAT(Header(index, "Content-Security-Policy"), HasSubstr("default-src 'self'"));
  EXPECT_THAT(Header(index, "Content-Security-Policy"), HasSubstr("script-src 'self'"));
  // No file of the page names another host: everything it loads comes from benchd.
  for (size_t i = 0; i < kEmbeddedWebFileCount; ++i) {
    const EmbeddedFile& file = kEmbeddedWebFiles[i];
    if (std::string(file.path).rfind("/vendor/", 0) == 0) continue;
    const std::string text(reinterpret_cast<const char*>(file.data), file.size);
    EXPECT_EQ(text.find("http://"), std::string::npos) << file.path;
    EXPECT_EQ(text.find("https://"), std::string::npos) << file.path;
  }
  EXPECT_THAT(Get(*port, "/nope.js"), StartsWith("HTTP/1.1 404"));
  server.Stop();
}

}  // namespace
}  // namespace bench
