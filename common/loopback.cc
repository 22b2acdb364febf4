#include "common/loopback.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/quote.h"

namespace bench {
namespace {

bool IsLoopbackAddress(const sockaddr* address) {
  if (address->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(address);
    return (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
  }
  if (address->sa_family == AF_INET6) {
    const in6_addr& v6 = reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

bool IsWildcardAddress(const sockaddr* address) {
  if (address->sa_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(address)->sin_addr.s_addr == htonl(INADDR_ANY);
  }
  if (address->sa_family == AF_INET6) {
    return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr);
  }
  return false;
}

std::string AddressText(const sockaddr* address) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (address->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, text,
              sizeof(text));
  } else if (address->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr, text,
              sizeof(text));
  }
  return text;
}

}  // namespace

absl::Status CheckLoopbackHost(const std::string& given) {
  std::string host = given;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) {
    return absl::InvalidArgumentError("an empty host means every address");
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr) {
    if (found != nullptr) freeaddrinfo(found);
    return absl::InvalidArgumentError(absl::StrCat(
        QuotePrefix(host), " does not resolve: ", rc != 0 ? gai_strerror(rc) : "no address"));
  }
  std::vector<std::string> others;
  bool wildcard = false;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (IsLoopbackAddress(a->ai_addr)) continue;
    wildcard = wildcard || IsWildcardAddress(a->ai_addr);
    std::string text = AddressText(a->ai_addr);
    if (std::find(others.begin(), others.end(), text) == others.end()) others.push_back(text);
  }
  freeaddrinfo(found);
  if (others.empty()) return absl::OkStatus();
  if (wildcard && others.size() == 1 && others[0] == host) {
    return absl::InvalidArgumentError(
        absl::StrCat(host, " is a wildcard address, which means every address"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      QuotePrefix(host), " resolves to ", absl::StrJoin(others, ", "), ", which is not loopback"));
}

namespace {

// The host of one address: "HOST:PORT", "[V6]:PORT", a bare host or a bare IPv6 address.
std::string HostOf(const std::string& address) {
  if (absl::StartsWith(address, "[")) {
    const size_t close = address.find(']');
    return close == std::string::npos ? "" : address.substr(1, close - 1);
  }
  if (std::count(address.begin(), address.end(), ':') == 1) {
    return address.substr(0, address.find(':'));
  }
  return address;
}

}  // namespace

absl::Status TargetHosts(const std::string& target, std::vector<std::string>* hosts,
                         bool* local_socket) {
  *local_socket = false;
  hosts->clear();
  std::string rest = target;
  if (absl::StartsWith(rest, "unix:") || absl::StartsWith(rest, "unix-abstract:")) {
    *local_socket = true;
    return absl::OkStatus();
  }
  std::vector<std::string> addresses;
  if (absl::StartsWith(rest, "dns:")) {
    rest = rest.substr(4);
    if (absl::StartsWith(rest, "//")) {  // dns://[authority]/host:port
      size_t slash = rest.find('/', 2);
      rest = slash == std::string::npos ? "" : rest.substr(slash + 1);
    }
    addresses.push_back(rest);
  } else if (absl::StartsWith(rest, "ipv4:") || absl::StartsWith(rest, "ipv6:")) {
    addresses = absl::StrSplit(rest.substr(5), ',');
  } else if (rest.find("://") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("target ", QuotePrefix(target), ": unknown scheme"));
  } else {
    addresses.push_back(rest);
  }
  for (const std::string& address : addresses) {
    std::string host = HostOf(address);
    if (host.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("target ", QuotePrefix(target), ": no host"));
    }
    hosts->push_back(std::move(host));
  }
  return absl::OkStatus();
}

}  // namespace bench
