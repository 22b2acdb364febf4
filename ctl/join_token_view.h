// How benchctl shows join tokens (`benchctl join-token`, issue 24's agent bootstrap): the
// lines after `create` (the token itself alone on stdout, so `$(benchctl join-token
// create)` captures it; its id, uses and expiry for the operator on stderr), and `list` as
// a table or JSON. A token's state is taken at `now`. Pure functions; never the secret
// except the one `token` create prints.
#pragma once

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "benchfleet/v1/controller.pb.h"

namespace bench::ctl {

// "active", "revoked", "expired" or "used up" (revoked first, then expiry, then uses).
std::string JoinTokenState(const benchfleet::v1::JoinToken& token, absl::Time now);

// "join token 0123456789abcdef: 3 uses, expires 2026-11-26T13:00:00Z (in 1h), may replace
// live agents\n" — the note `create` prints on stderr beside the token on stdout.
std::string JoinTokenCreatedNote(const benchfleet::v1::JoinToken& token, absl::Time now);

// ID, USED (used/uses), EXPIRES (UTC), STATE, REPLACE, DESCRIPTION; oldest first as given.
// "no join tokens\n" when empty.
std::string JoinTokensTable(const std::vector<benchfleet::v1::JoinToken>& tokens, absl::Time now);

}  // namespace bench::ctl
