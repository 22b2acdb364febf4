#include "common/log.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

namespace bench {
namespace {

std::string& Component() {
  static std::string* component = new std::string("bench");
  return *component;
}

// "2026-11-21T18:51:15.123Z" (UTC, milliseconds).
std::string Timestamp() {
  const auto now = std::chrono::system_clock::now();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch());
  const std::time_t seconds = static_cast<std::time_t>(ms.count() / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[40];
  const size_t n = std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(text + n, sizeof(text) - n, ".%03dZ", static_cast<int>(ms.count() % 1000));
  return text;
}

}  // namespace

void SetLogComponent(std::string_view component) { Component() = std::string(component); }

void LogLine(std::string_view message) {
  std::string line = Timestamp();
  line += ' ';
  line += Component();
  line += ": ";
  line += message;
  line += '\n';
  (void)!write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace bench
