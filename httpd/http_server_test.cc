// The web port over real loopback sockets.
#include "httpd/http_server.h"
#include "httpd/http_test_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"

namespace bench {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using http_test::Fetch;
using http_test::Get;
using http_test::ReadToEof;
using http_test::ReadUntil;
using http_test::SendAll;

HttpResponse Text(std::string body) {
  return HttpResponse{200, "text/plain", std::move(body)};
}

TEST(HttpServerTest, ServesHandlersAndRefusesTheRest) {
  HttpServer server;
  server.Handle("/healthz", [](const HttpRequest&) { return Text("ok\n"); });
  server.HandlePrefix("/api/", [](const HttpRequest& r) { return Text("api " + r.path); });
  server.HandlePrefix("/api/v1/jobs/", [](const HttpRequest& r) {
    return Text("jobs " + r.path + " " + r.Query("state").value_or("-"));
  });
  server.Handle("/api/v1/jobs/*/log", [](const HttpRequest&) { return Text("log"); });
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status();

  std::string ok = Get(*port, "/healthz?x=1");
  EXPECT_THAT(ok, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(ok, HasSubstr("Content-Length: 3\r\n"));
  EXPECT_THAT(ok, HasSubstr("Cache-Control: no-store\r\n"));
  EXPECT_THAT(ok, EndsWith("\r\n\r\nok\n"));

  EXPECT_THAT(Get(*port, "/api/v1/agents"), EndsWith("api /api/v1/agents"));
  EXPECT_THAT(Get(*port, "/api/v1/jobs/j%201?state=RUN%20NING&x"),
              EndsWith("jobs /api/v1/jobs/j 1 RUN NING"));
  EXPECT_THAT(Get(*port, "/api/v1/jobs/j1/log"), EndsWith("\r\n\r\nlog"));
  EXPECT_THAT(Get(*port, "/api/v1/jobs/j1/log/x"), EndsWith("jobs /api/v1/jobs/j1/log/x -"));

  std::string head = Fetch(*port, "HEAD /healthz HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(head, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(head, HasSubstr("Content-Length: 3\r\n"));
  EXPECT_THAT(head, EndsWith("\r\n\r\n"));

  EXPECT_THAT(Get(*port, "/nope"), StartsWith("HTTP/1.1 404"));
  std::string post = Fetch(*port, "POST /healthz HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  EXPECT_THAT(post, StartsWith("HTTP/1.1 405"));
  EXPECT_THAT(post, HasSubstr("Allow: GET, HEAD\r\n"));
  EXPECT_THAT(Fetch(*port, "garbage\r\n\r\n"), StartsWith("HTTP/1.1 400"));
  server.Stop();
  EXPECT_EQ(Get(*port, "/healthz"), "connect failed");
}

// civetweb logs each request it cannot read with the client's bytes in it; a client
// sending garbage must not fill benchd's log.
TEST(HttpServerTest, TheWebServersOwnMessagesAreRateLimited) {
  HttpServer server;
  server.Handle("/healthz", [](const HttpRequest&) { return Text("ok\n"); });
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status();
  ::testing::internal::CaptureStderr();
  // A long bad version: civetweb logs "truncating vsnprintf buffer: [Bad HTTP version: [...".
  const std::string bad = "GET /healthz HTTP/" + std::string(200, '|') + "\r\n\r\n";
  for (int i = 0; i < 60; ++i) Fetch(*port, bad);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  Fetch(*port, bad);
  std::string log = ::testing::internal::GetCapturedStderr();
  size_t lines = 0;
  for (size_t at = log.find("http: "); at != std::string::npos; at = log.find("http: ", at + 1)) {
    ++lines;
  }
  // A burst gives at most 10 lines a second, then one line counting the rest.
  EXPECT_GE(lines, 2u) << log;
  EXPECT_LE(lines, 22u) << log;
  EXPECT_THAT(log, HasSubstr("more messages of the web server not logged")) << log;
  EXPECT_THAT(Get(*port, "/healthz"), StartsWith("HTTP/1.1 200"));
}

TEST(HttpServerTest, ABadAddressIsAnErrorNamingTheFlag) {
  HttpServer server;
  auto port = server.Start("no.such.host.invalid", 0);
  ASSERT_FALSE(port.ok());
  EXPECT_THAT(std::string(port.status().message()), HasSubstr("--http"));
}

TEST(HttpServerTest, APortInUseIsUnavailable) {
  HttpServer first;
  auto port = first.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  HttpServer second;
  auto again = second.Start("127.0.0.1", *port);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(again.status().message()), HasSubstr("--http"));
}

TEST(HttpServerTest, JsonErrorsEscapeTheirMessage) {
  HttpResponse r = JsonErrorResponse(absl::NotFoundError("job \"a\\b\"\n"));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.body, R"({"error":{"code":"NOT_FOUND","message":"job \"a\\b\"\n"}})");
  EXPECT_EQ(JsonErrorResponse(absl::InvalidArgumentError("x")).status, 400);
  EXPECT_EQ(JsonErrorResponse(absl::UnavailableError("x")).status, 503);
  EXPECT_EQ(JsonErrorResponse(absl::InternalError("x")).status, 500);
  HttpResponse busy = JsonErrorResponse(absl::ResourceExhaustedError("x"));
  EXPECT_EQ(busy.status, 503);
  EXPECT_THAT(busy.headers, testing::Contains(testing::Pair("Retry-After", testing::_)));
}

// The message goes through common/json_escape.h: whatever its bytes, the body is valid
// JSON (UTF-8 kept, a byte that is not UTF-8 as U+FFFD, DEL escaped).
TEST(HttpServerTest, JsonErrorsAreValidJsonWhateverTheMessagesBytes) {
  HttpResponse r = JsonErrorResponse(absl::NotFoundError("no job caf\xc3\xa9\xff\x7f\b"));
  EXPECT_EQ(
      r.body,
      "{\"error\":{\"code\":\"NOT_FOUND\",\"message\":\"no job caf\xc3\xa9\\ufffd\\u007f\\b\"}}");
}

TEST(HttpServerTest, AGateAnswersForTheRoutesUnderItsPrefixUntilItOpens) {
  HttpServer server;
  std::atomic<bool> ready{false};
  server.Handle("/healthz", [](const HttpRequest&) { return Text("ok\n"); });
  server.Handle("/api/v1/jobs", [](const HttpRequest&) { return Text("jobs\n"); });
  server.SetGate("/api/", [&ready] {
    return ready ? absl::OkStatus() : absl::UnavailableError("benchd is recovering its jobs");
  });
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status();
  std::string refused = Get(*port, "/api/v1/jobs");
  EXPECT_THAT(refused, StartsWith("HTTP/1.1 503"));
  EXPECT_THAT(refused, HasSubstr("benchd is recovering its jobs"));
  EXPECT_THAT(Get(*port, "/healthz"), StartsWith("HTTP/1.1 200"));
  ready = true;
  EXPECT_THAT(Get(*port, "/api/v1/jobs"), HasSubstr("\r\n\r\njobs\n"));
  server.Stop();
}

TEST(HttpServerTest, KeepAliveServesTwoRequestsOnOneConnection) {
  HttpServer server;
  server.Handle("/a", [](const HttpRequest&) { return Text("first"); });
  server.Handle("/b", [](const HttpRequest&) { return Text("second"); });
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  int fd = http_test::ConnectLoopback(*port);
  ASSERT_GE(fd, 0);
  SendAll(fd, "GET /a HTTP/1.1\r\nHost: t\r\n\r\n");
  std::string one = ReadUntil(fd, [](const std::string& s) { return s.find("first") != s.npos; });
  EXPECT_THAT(one, HasSubstr("Connection: keep-alive"));
  EXPECT_THAT(one, EndsWith("first"));
  SendAll(fd, "HEAD /b HTTP/1.1\r\nHost: t\r\n\r\n");
  std::string two =
      ReadUntil(fd, [](const std::string& s) { return s.find("\r\n\r\n") != s.npos; });
  EXPECT_THAT(two, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(two, HasSubstr("Content-Length: 6\r\n"));
  SendAll(fd, "GET /b HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  std::string three = ReadToEof(fd);
  EXPECT_THAT(three, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(three, EndsWith("second"));
  close(fd);
}

TEST(HttpServerTest, AnOversizedHeadIs431) {
  HttpServerOptions options;
  options.max_request_head_bytes = 4096;
  HttpServer server(options);
  server.Handle("/healthz", [](const HttpRequest&) { return Text("ok\n"); });
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  std::string big = "GET /healthz HTTP/1.1\r\nX-Big: " + std::string(8000, 'a') + "\r\n\r\n";
  EXPECT_THAT(Fetch(*port, big), StartsWith("HTTP/1.1 431"));
  EXPECT_THAT(Get(*port, "/healthz"), StartsWith("HTTP/1.1 200"));
}

TEST(HttpServerTest, IdleConnectionsDoNotDelayOthers) {
  HttpServer server;
  server.Handle("/healthz", [](const HttpRequest&) { return Text("ok\n"); });
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  std::vector<int> idle;
  for (int i = 0; i < 10; ++i) idle.push_back(http_test::ConnectLoopback(*port));
  absl::SleepFor(absl::Milliseconds(100));
  auto start = std::chrono::steady_clock::now();
  std::string ok = Get(*port, "/healthz");
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_THAT(ok, StartsWith("HTTP/1.1 200"));
  EXPECT_LT(seconds, 2.0);
  std::cout << "healthz beside 10 idle connections: " << seconds * 1000 << " ms\n";
  for (int fd : idle) close(fd);
}

TEST(HttpServerTest, FiftyConcurrentClientsAreAllAnswered) {
  HttpServer server;
  server.Handle("/slow", [](const HttpRequest&) {
    absl::SleepFor(absl::Milliseconds(50));
    return Text("done");
  });
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  std::atomic<int> answered{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 50; ++i) {
    clients.emplace_back([&] {
      std::string r = Get(*port, "/slow");
      if (r.rfind("HTTP/1.1 200", 0) == 0 && r.size() > 4 && r.substr(r.size() - 4) == "done") {
        ++answered;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(answered.load(), 50);
}

TEST(HttpServerTest, ASlowClientIsCutAfterTheRequestTimeout) {
  HttpServerOptions options;
  options.request_timeout_ms = 300;
  HttpServer server(options);
  server.Handle("/healthz", [](const HttpRequest&) { return Text("ok\n"); });
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  int fd = http_test::ConnectLoopback(*port);
  ASSERT_GE(fd, 0);
  SendAll(fd, "GET /healthz HTTP/1.1\r\nHo");
  auto start = std::chrono::steady_clock::now();
  std::string answer = ReadToEof(fd);  // EOF once cut
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  close(fd);
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 408"));
  EXPECT_THAT(answer, Not(HasSubstr("ok\n")));
  EXPECT_LT(seconds, 3.0);
}

// Reads SSE frames from an open stream.
struct SseClient {
  int fd = -1;
  std::string buffer = {};
  bool ReadUntilContains(const std::string& text,
                         std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    std::string more = ReadUntil(
        fd,
        [&](const std::string& s) { return (buffer + s).find(text) != std::string::npos; },
        timeout);
    buffer += more;
    return buffer.find(text) != std::string::npos;
  }
};

TEST(HttpServerTest, EventStreamsSendFramedEventsAndNoticeDepartedClients) {
  HttpServer server;
  absl::Notification returned;
  std::atomic<int> sent{0};
  server.HandleEvents("/events/", [&](const HttpRequest& request, EventStream& stream) {
    if (request.path == "/events/missing") return absl::NotFoundError("no such job");
    stream.Send("hello", "{\"a\":1}\n{\"b\":2}");
    while (stream.Send("tick", std::to_string(sent.load()))) {
      ++sent;
      absl::SleepFor(absl::Milliseconds(20));
    }
    returned.Notify();
    return absl::OkStatus();
  });
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());

  std::string missing = Get(*port, "/events/missing");
  EXPECT_THAT(missing, StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(missing, HasSubstr("application/json"));
  EXPECT_THAT(missing, HasSubstr(R"({"error":{"code":"NOT_FOUND","message":"no such job"}})"));

  SseClient client{http_test::ConnectLoopback(*port)};
  SendAll(client.fd, "GET /events/x HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(client.ReadUntilContains("event: tick\ndata: 2\n\n"));
  EXPECT_THAT(client.buffer, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(client.buffer, HasSubstr("Content-Type: text/event-stream\r\n"));
  EXPECT_THAT(client.buffer, HasSubstr("Cache-Control: no-store\r\n"));
  EXPECT_THAT(client.buffer, Not(HasSubstr("Content-Length")));
  EXPECT_THAT(client.buffer, HasSubstr("\r\n\r\nevent: hello\ndata: {\"a\":1}\ndata: {\"b\":2}\n\n"
                                       "event: tick\ndata: 0\n\n"));
  EXPECT_EQ(server.open_event_streams(), 1);
  close(client.fd);
  EXPECT_TRUE(returned.WaitForNotificationWithTimeout(absl::Seconds(5)));
  for (int i = 0; i < 100 && server.open_event_streams() != 0; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(server.open_event_streams(), 0);
}

TEST(HttpServerTest, StreamsPastTheCapGet503AndStopEndsOpenStreams) {
  HttpServerOptions options;
  options.max_event_streams = 2;
  HttpServer server(options);
  std::atomic<int> handlers_returned{0};
  server.HandleEvents("/events", [&](const HttpRequest&, EventStream& stream) {
    stream.Send("open", "1");
    while (stream.Wait(absl::Seconds(30))) {
    }
    ++handlers_returned;
    return absl::OkStatus();
  });
  server.Handle("/healthz", [](const HttpRequest&) { return Text("ok\n"); });
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  std::vector<SseClient> clients;
  for (int i = 0; i < 2; ++i) {
    clients.push_back({http_test::ConnectLoopback(*port)});
    SendAll(clients.back().fd, "GET /events HTTP/1.1\r\nHost: t\r\n\r\n");
    ASSERT_TRUE(clients.back().ReadUntilContains("event: open"));
  }
  EXPECT_EQ(server.open_event_streams(), 2);
  std::string third = Get(*port, "/events");
  EXPECT_THAT(third, StartsWith("HTTP/1.1 503"));
  EXPECT_THAT(third, HasSubstr("Retry-After: "));
  EXPECT_THAT(third, HasSubstr("RESOURCE_EXHAUSTED"));
  EXPECT_THAT(Get(*port, "/healthz"), StartsWith("HTTP/1.1 200"));

  // A client that closes while its handler waits frees the stream at once.
  close(clients[1].fd);
  for (int i = 0; i < 200 && server.open_event_streams() != 1; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(server.open_event_streams(), 1);

  auto start = std::chrono::steady_clock::now();
  server.Stop();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 3.0);
  EXPECT_EQ(handlers_returned.load(), 2);
  EXPECT_EQ(server.open_event_streams(), 0);
  ReadToEof(clients[0].fd);  // the server closed it
  close(clients[0].fd);
}

}  // namespace
}  // namespace bench
