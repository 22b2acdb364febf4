// A join token (issue 24's agent bootstrap) as data: the stored record, the token's text
// form `bj1.<id>.<secret>`, the bounds a new one is checked against, and whether one is
// usable at a given time. Pure: no store, no clock, no randomness (server/auth/join_tokens.h
// has those). The secret is never stored: only `secret_hash` (TokenTable::Hash of it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace bench {

struct JoinTokenRecord {
  std::string id;           // 16 lowercase hex digits
  std::string secret_hash;  // "sha256:<hex>" of the secret
  std::string description;
  int uses = 0;  // how many certificates it may obtain
  int used = 0;  // how many it has obtained
  absl::Time created;
  absl::Time expires;
  bool allow_replace = false;  // may take a name a live agent holds
  bool revoked = false;
};

// "bj1." — the prefix that tells a join token from a --tokens bearer token.
inline constexpr std::string_view kJoinTokenPrefix = "bj1.";
inline constexpr size_t kJoinTokenIdHexDigits = 16;
inline constexpr size_t kJoinTokenSecretHexDigits = 64;
// Bounds of a new token.
inline constexpr int kMaxJoinTokenUses = 100000;
inline constexpr absl::Duration kMaxJoinTokenTtl = absl::Hours(24 * 366);
inline constexpr size_t kMaxJoinTokenDescriptionBytes = 256;

struct JoinTokenParts {
  std::string id;
  std::string secret;
};

// "bj1.<id>.<secret>".
std::string FormatJoinToken(const JoinTokenParts& parts);
// The parts of a well-formed token (prefix, 16 and 64 lowercase hex digits); nullopt for
// anything else (it is then not a join token, or a malformed one: the caller answers the
// same UNAUTHENTICATED either way).
std::optional<JoinTokenParts> ParseJoinToken(std::string_view token);

// INVALID_ARGUMENT naming the field: uses in 1..kMaxJoinTokenUses, ttl in
// 1s..kMaxJoinTokenTtl, a description of at most kMaxJoinTokenDescriptionBytes printable
// bytes (UTF-8 allowed, no control characters).
absl::Status CheckNewJoinToken(int uses, absl::Duration ttl, std::string_view description);

// Not revoked, not expired at `now` (expires is exclusive) and with a use left.
bool JoinTokenUsable(const JoinTokenRecord& record, absl::Time now);

// The one answer to a token that is unknown, wrong, expired, revoked or used up: it does
// not say which.
absl::Status JoinTokenRefused();

}  // namespace bench
