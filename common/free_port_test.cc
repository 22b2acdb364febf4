#include "common/free_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace bench {
namespace {

TEST(FreePortTest, PicksABindablePortOnLoopback) {
  auto port = PickFreePort("127.0.0.1");
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_GT(*port, 0);
  EXPECT_LT(*port, 65536);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(*port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0)
      << "the picked port should be free again";
  close(fd);
}

TEST(FreePortTest, AllInterfacesAndHostNames) {
  auto any = PickFreePort("");
  ASSERT_TRUE(any.ok()) << any.status();
  EXPECT_GT(*any, 0);
  auto localhost = PickFreePort("localhost");
  ASSERT_TRUE(localhost.ok()) << localhost.status();
  EXPECT_GT(*localhost, 0);
}

TEST(FreePortTest, UnresolvableAddressFails) {
  EXPECT_FALSE(PickFreePort("no-such-host.invalid").ok());
}

}  // namespace
}  // namespace bench
