// `benchctl join-token create|list|revoke` (issue 24's agent bootstrap): the command's
// entry in the command table (its positionals, flags and checks) and what it runs against
// benchd's Controller (CreateJoinToken, ListJoinTokens, RevokeJoinToken; admin only).
//   create [--uses N (1)] [--ttl D (1h)] [--allow-replace] [--description S]
//     prints the token alone on stdout (shown only then) and its id, uses and expiry on
//     stderr; D as --wall-time's ("90s", "30m", "2h", "1d", seconds)
//   list [--format text|json]   every token, never a secret
//   revoke ID
#pragma once

#include "absl/status/statusor.h"
#include "ctl/args.h"
#include "ctl/command_table.h"
#include "ctl/commands.h"

namespace bench::ctl {

CommandSpec JoinTokenCommand();

absl::StatusOr<int> RunJoinToken(const JoinTokenOptions& options, OutputFormat format,
                                 const CommandContext& context);

}  // namespace bench::ctl
