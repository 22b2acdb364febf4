#include "httpd/http_routes.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace bench {
namespace {

bool PatternMatches(const std::vector<std::string>& pattern, absl::string_view path) {
  std::vector<absl::string_view> parts = absl::StrSplit(path, '/');
  if (parts.size() != pattern.size()) return false;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (pattern[i] == "*") {
      if (parts[i].empty()) return false;
    } else if (pattern[i] != parts[i]) {
      return false;
    }
  }
  return true;
}

}  // namespace

void HttpRoutes::Add(const std::string& path, bool prefix, HttpHandler handler,
                     HttpStreamHandler stream) {
  Route route;
  route.path = path;
  route.prefix = prefix;
  if (!prefix) {
    std::vector<std::string> parts = absl::StrSplit(path, '/');
    if (std::find(parts.begin(), parts.end(), "*") != parts.end()) route.pattern = parts;
  }
  route.handler = std::move(handler);
  route.stream = std::move(stream);
  routes_.push_back(std::move(route));
}

const HttpRoutes::Route* HttpRoutes::Find(const std::string& path) const {
  for (const Route& route : routes_) {
    if (!route.prefix && route.pattern.empty() && route.path == path) return &route;
  }
  for (const Route& route : routes_) {
    if (!route.pattern.empty() && PatternMatches(route.pattern, path)) return &route;
  }
  const Route* best = nullptr;
  for (const Route& route : routes_) {
    if (route.prefix && path.compare(0, route.path.size(), route.path) == 0 &&
        (best == nullptr || route.path.size() > best->path.size())) {
      best = &route;
    }
  }
  return best;
}

}  // namespace bench
