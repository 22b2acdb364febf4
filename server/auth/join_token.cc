#include "server/auth/join_token.h"

#include "absl/strings/str_cat.h"

namespace bench {
namespace {

bool IsLowerHex(std::string_view s, size_t digits) {
  if (s.size() != digits) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

std::string FormatJoinToken(const JoinTokenParts& parts) {
  return std::string(kJoinTokenPrefix) + parts.id + "." + parts.secret;
}

std::optional<JoinTokenParts> ParseJoinToken(std::string_view token) {
  if (token.substr(0, kJoinTokenPrefix.size()) != kJoinTokenPrefix) return std::nullopt;
  token.remove_prefix(kJoinTokenPrefix.size());
  const size_t dot = token.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  std::string_view id = token.substr(0, dot);
  std::string_view secret = token.substr(dot + 1);
  if (!IsLowerHex(id, kJoinTokenIdHexDigits) || !IsLowerHex(secret, kJoinTokenSecretHexDigits)) {
    return std::nullopt;
  }
  return JoinTokenParts{std::string(id), std::string(secret)};
}

absl::Status CheckNewJoinToken(int uses, absl::Duration ttl, std::string_view description) {
  if (uses < 1 || uses > kMaxJoinTokenUses) {
    return absl::InvalidArgumentError(absl::StrCat("uses: ", uses, " is not in 1..",
                                                   kMaxJoinTokenUses,
                                                   " (how many certificates the token obtains)"));
  }
  if (ttl < absl::Seconds(1) || ttl > kMaxJoinTokenTtl) {
    return absl::InvalidArgumentError(absl::StrCat("ttl_seconds: ", absl::ToInt64Seconds(ttl),
                                                   " is not in 1..",
                                                   absl::ToInt64Seconds(kMaxJoinTokenTtl)));
  }
  if (description.size() > kMaxJoinTokenDescriptionBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "description: ", description.size(), " bytes; at most ", kMaxJoinTokenDescriptionBytes));
  }
  for (char c : description) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      return absl::InvalidArgumentError("description: holds a control character");
    }
  }
  return absl::OkStatus();
}

bool JoinTokenUsable(const JoinTokenRecord& record, absl::Time now) {
  return !record.revoked && now < record.expires && record.used < record.uses;
}

absl::Status JoinTokenRefused() {
  return absl::UnauthenticatedError(
      "join token refused: unknown, expired, revoked or used up (ask an admin for a new one: "
      "benchctl join-token create)");
}

}  // namespace bench
