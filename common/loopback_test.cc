// CheckLoopbackHost against the resolver of this machine, and TargetHosts' reading of
// gRPC targets.
#include "common/loopback.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bench {
namespace {

using ::testing::HasSubstr;

TEST(LoopbackTest, LoopbackAddressesAndLocalhostAre) {
  for (const char* host :
       {"127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]", "::ffff:127.0.0.1"}) {
    absl::Status status = CheckLoopbackHost(host);
    EXPECT_TRUE(status.ok()) << host << ": " << status;
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  }
}

TEST(LoopbackTest, ANameStartingWith127IsWhatItResolvesTo) {
  // Not a prefix test: this name does not resolve here, so it is not loopback.
  absl::Status status = CheckLoopbackHost("127.example.com");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("127.example.com"));
  EXPECT_THAT(status.message(), HasSubstr("does not resolve"));
  EXPECT_FALSE(IsLoopbackHost("127.example.com"));
}

TEST(LoopbackTest, WildcardsEmptyAndOtherAddressesAreNot) {
  for (const char* host : {"0.0.0.0", "::", "[::]"}) {
    absl::Status status = CheckLoopbackHost(host);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << host;
    EXPECT_THAT(status.message(), HasSubstr("wildcard")) << host;
  }
  EXPECT_THAT(CheckLoopbackHost("").message(), HasSubstr("empty host"));
  for (const char* host : {"10.0.0.1", "192.168.1.1", "::ffff:10.0.0.1", "2001:db8::1"}) {
    absl::Status status = CheckLoopbackHost(host);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << host;
    EXPECT_THAT(status.message(), HasSubstr("which is not loopback")) << host;
  }
}

TEST(LoopbackTest, TargetHostsReadsGrpcTargets) {
  struct Case {
    const char* target;
    std::vector<std::string> hosts;
  };
  for (const Case& c :
       {Case{"127.0.0.1:7600", {"127.0.0.1"}}, Case{"localhost:7600", {"localhost"}},
        Case{"[::1]:7600", {"::1"}}, Case{"::1", {"::1"}},
        Case{"benchd.example.org:7600", {"benchd.example.org"}},
        Case{"dns:///127.0.0.1:7600", {"127.0.0.1"}},
        Case{"dns://8.8.8.8/example.org:7600", {"example.org"}},
        Case{"ipv4:10.0.0.1:7600,127.0.0.1:7600", {"10.0.0.1", "127.0.0.1"}},
        Case{"ipv4:127.0.0.1:7600,10.0.0.1:7600", {"127.0.0.1", "10.0.0.1"}},
        Case{"ipv6:[::1]:7600", {"::1"}}, Case{"benchd", {"benchd"}}}) {
    std::vector<std::string> hosts;
    bool local = true;
    absl::Status status = TargetHosts(c.target, &hosts, &local);
    ASSERT_TRUE(status.ok()) << c.target << ": " << status;
    EXPECT_EQ(hosts, c.hosts) << c.target;
    EXPECT_FALSE(local) << c.target;
  }
  std::vector<std::string> hosts;
  bool local = false;
  ASSERT_TRUE(TargetHosts("unix:/run/benchd.sock", &hosts, &local).ok());
  EXPECT_TRUE(local);
  EXPECT_TRUE(hosts.empty());
  EXPECT_EQ(TargetHosts(":7600", &hosts, &local).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TargetHosts("ipv4:127.0.0.1:1,:2", &hosts, &local).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TargetHosts("http://x:1", &hosts, &local).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace bench
