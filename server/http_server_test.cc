// The web port over a real loopback socket.
#include "server/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bench {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Fetch(int port, const std::string& request) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "connect failed";
  }
  (void)!write(fd, request.data(), request.size());
  std::string response;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) response.append(buffer, n);
  close(fd);
  return response;
}

TEST(HttpServerTest, ServesHandlersAndRefusesTheRest) {
  HttpServer server;
  server.Handle("/healthz", [] { return HttpResponse{200, "text/plain", "ok\n"}; });
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status();

  std::string ok = Fetch(*port, "GET /healthz?x=1 HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_THAT(ok, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(ok, HasSubstr("Content-Length: 3\r\n"));
  EXPECT_THAT(ok, HasSubstr("\r\n\r\nok\n"));

  std::string head = Fetch(*port, "HEAD /healthz HTTP/1.1\r\n\r\n");
  EXPECT_THAT(head, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(head, ::testing::EndsWith("\r\n\r\n"));

  EXPECT_THAT(Fetch(*port, "GET /nope HTTP/1.1\r\n\r\n"), StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(Fetch(*port, "POST /healthz HTTP/1.1\r\n\r\n"), StartsWith("HTTP/1.1 405"));
  EXPECT_THAT(Fetch(*port, "garbage\r\n\r\n"), StartsWith("HTTP/1.1 400"));
  server.Stop();
  EXPECT_EQ(Fetch(*port, "GET /healthz HTTP/1.1\r\n\r\n"), "connect failed");
}

TEST(HttpServerTest, ABadAddressIsAnErrorNamingTheFlag) {
  HttpServer server;
  auto port = server.Start("no.such.host.invalid", 0);
  ASSERT_FALSE(port.ok());
  EXPECT_THAT(std::string(port.status().message()), HasSubstr("--http"));
}

}  // namespace
}  // namespace bench
