#include "httpd/http_routes.h"

#include <string>

#include <gtest/gtest.h>

namespace bench {
namespace {

// A route table whose handlers answer their own name, to see which one Find chose.
class HttpRoutesTest : public ::testing::Test {
 protected:
  void Add(const std::string& path, bool prefix = false) {
    routes_.Add(
        path, prefix,
        [path](const HttpRequest&) {
          return HttpResponse{200, "", path};
        },
        nullptr);
  }
  std::string Found(const std::string& path) const {
    const HttpRoutes::Route* route = routes_.Find(path);
    return route == nullptr ? "(none)" : route->handler(HttpRequest{}).body;
  }
  HttpRoutes routes_;
};

TEST_F(HttpRoutesTest, ExactBeatsPatternBeatsTheLongestPrefix) {
  Add("/api/", /*prefix=*/true);
  Add("/api/v1/jobs/", /*prefix=*/true);
  Add("/api/v1/jobs/*/events");
  Add("/api/v1/jobs/fleet/events");
  EXPECT_EQ(Found("/api/v1/jobs/fleet/events"), "/api/v1/jobs/fleet/events");
  EXPECT_EQ(Found("/api/v1/jobs/j-1/events"), "/api/v1/jobs/*/events");
  EXPECT_EQ(Found("/api/v1/jobs/j-1"), "/api/v1/jobs/");
  EXPECT_EQ(Found("/api/v1/agents"), "/api/");
  EXPECT_EQ(Found("/metrics"), "(none)");
}

TEST_F(HttpRoutesTest, APatternSegmentMatchesOneNonEmptySegment) {
  Add("/jobs/*/events");
  EXPECT_EQ(Found("/jobs/a/events"), "/jobs/*/events");
  EXPECT_EQ(Found("/jobs//events"), "(none)");
  EXPECT_EQ(Found("/jobs/a/b/events"), "(none)");
  EXPECT_EQ(Found("/jobs/a/events/"), "(none)");
  EXPECT_EQ(Found("/jobs/a"), "(none)");
}

TEST_F(HttpRoutesTest, AStreamRouteCarriesItsStreamHandler) {
  routes_.Add("/events/", true, nullptr,
              [](const HttpRequest&, EventStream&) { return absl::OkStatus(); });
  const HttpRoutes::Route* route = routes_.Find("/events/jobs");
  ASSERT_NE(route, nullptr);
  EXPECT_TRUE(route->stream);
  EXPECT_FALSE(route->handler);
}

}  // namespace
}  // namespace bench
