// JoinTokens: the join tokens of issue 24's agent bootstrap over the store — made with a
// random id and secret (the token `bj1.<id>.<secret>` returned once, only its hash kept),
// listed, revoked, checked and spent. A join token is a principal of role `join`
// (server/auth/auth.h) that may only obtain agent certificates, `uses` times, until `expires`.
// Time is always passed in. Thread-safe (the store serialises; a use is spent by one
// conditional update, so two callers never share the last one).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/auth/auth.h"
#include "server/auth/join_token.h"
#include "server/store/store.h"

namespace bench {

class JoinTokens {
 public:
  explicit JoinTokens(Store* store) : store_(store) {}  // not owned

  struct Created {
    std::string token;  // bj1.<id>.<secret>: shown once, never stored
    JoinTokenRecord record;
  };
  // INVALID_ARGUMENT naming the field (CheckNewJoinToken) for bad bounds.
  absl::StatusOr<Created> Create(int uses, absl::Duration ttl, bool allow_replace,
                                 std::string description, absl::Time now);
  // Every token, oldest first (revoked, expired and used-up ones too).
  absl::StatusOr<std::vector<JoinTokenRecord>> List();
  // NOT_FOUND naming the id when there is none. Revoking twice is fine.
  absl::Status Revoke(const std::string& id);

  // The token's record when `token` is a join token whose secret matches (compared in
  // constant time) and that is usable at `now`; JoinTokenRefused() (UNAUTHENTICATED, one
  // message for every reason) otherwise, or the store's error.
  absl::StatusOr<JoinTokenRecord> Check(std::string_view token, absl::Time now);
  // The join principal of a token Check accepts: name = its id, role join, via
  // "join-token"; nullopt when Check refuses.
  std::optional<Principal> PrincipalOf(std::string_view token, absl::Time now);
  // The record of the token with `id` when it is usable at `now`; JoinTokenRefused()
  // otherwise (for a principal PrincipalOf made, read again).
  absl::StatusOr<JoinTokenRecord> CheckId(const std::string& id, absl::Time now);
  // Spends one use of the token with `id` (a principal's name, authenticated by Check in
  // this call), checked again atomically: JoinTokenRefused() when it is no longer usable
  // (another caller took the last use, or it was revoked or expired meanwhile).
  absl::Status Spend(const std::string& id, absl::Time now);

 private:
  Store* const store_;
};

}  // namespace bench
