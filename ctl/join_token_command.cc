#include "ctl/join_token_command.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "ctl/flag_specs.h"
#include "ctl/flag_values.h"
#include "ctl/join_token_view.h"
#include "report/json_output.h"

namespace bench::ctl {
namespace {

namespace v1 = benchfleet::v1;
using Stub = Client::Stub;

std::vector<FlagSpec> Flags() {
  std::vector<FlagSpec> flags;
  flags.push_back(Int(
      "uses", [](ParseState& state, int32_t uses) { state.options.join_token.uses = uses; },
      "(1)"));
  flags.push_back(Value(
      "ttl", "D",
      [](ParseState& state, const std::string& value) {
        ASSIGN_OR_RETURN(int32_t seconds, ParseDurationSeconds("ttl", value));
        state.options.join_token.ttl_seconds = seconds;
        return absl::OkStatus();
      },
      "(1h)"));
  flags.push_back(Bool("--allow-replace", "allow-replace", [](ParseState& state, bool on) {
    state.options.join_token.allow_replace = on;
    return absl::OkStatus();
  }));
  flags.push_back(Value("description", "S", [](ParseState& state, const std::string& value) {
    state.options.join_token.description = value;
    return absl::OkStatus();
  }));
  flags.push_back(TextOrJson());
  return flags;
}

absl::Status Finish(ParseState& state) {
  JoinTokenOptions& options = state.options.join_token;
  if (state.positionals.empty()) {
    return absl::InvalidArgumentError("join-token: missing ACTION (create, list or revoke)");
  }
  const std::string& action = state.positionals[0];
  const bool create_flags = options.uses != 1 || options.ttl_seconds != 3600 ||
                            options.allow_replace || !options.description.empty();
  if (action == "create") {
    options.action = JoinTokenAction::kCreate;
    if (state.positionals.size() > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("join-token create: unexpected argument \"", state.positionals[1], "\""));
    }
    if (state.format.has_value()) {
      return absl::InvalidArgumentError("join-token create: --format is for list");
    }
    return absl::OkStatus();
  }
  if (action != "list" && action != "revoke") {
    return absl::InvalidArgumentError(absl::StrCat("join-token: unknown action \"", action,
                                                   "\" (expected create, list or revoke)"));
  }
  if (create_flags) {
    return absl::InvalidArgumentError(
        absl::StrCat("join-token ", action,
                     ": --uses, --ttl, --allow-replace and --description are for "
                     "create"));
  }
  if (action == "list") {
    options.action = JoinTokenAction::kList;
    if (state.positionals.size() > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("join-token list: unexpected argument \"", state.positionals[1], "\""));
    }
    return absl::OkStatus();
  }
  options.action = JoinTokenAction::kRevoke;
  if (state.positionals.size() < 2 || state.positionals[1].empty()) {
    return absl::InvalidArgumentError("join-token revoke: missing token ID (join-token list)");
  }
  if (state.format.has_value()) {
    return absl::InvalidArgumentError("join-token revoke: --format is for list");
  }
  options.id = state.positionals[1];
  return absl::OkStatus();
}

}  // namespace

CommandSpec JoinTokenCommand() {
  CommandSpec spec{"join-token",
                   Command::kJoinToken,
                   {"ACTION", "ID"},
                   "join-token: missing ACTION (create, list or revoke)",
                   OutputFormat::kText,
                   Flags(),
                   "create, list or revoke a join token (admin): an agent started with\n"
                   "one (bench-agent --join-token-file) gets its own certificate from\n"
                   "benchd, --uses times, within --ttl (D as --wall-time's). create\n"
                   "prints the token once on stdout, its id and expiry on stderr;\n"
                   "--allow-replace lets it take a name a live agent holds;\n"
                   "revoke takes the ID that create and list show",
                   Finish,
                   [](const CliOptions& o, const CommandContext& c) {
                     return RunJoinToken(o.join_token, o.format, c);
                   }};
  spec.optional_positionals = 1;
  return spec;
}

absl::StatusOr<int> RunJoinToken(const JoinTokenOptions& options, OutputFormat format,
                                 const CommandContext& context) {
  const absl::Time now = context.now.value_or(absl::Now());
  switch (options.action) {
    case JoinTokenAction::kCreate: {
      v1::CreateJoinTokenRequest request;
      request.set_uses(options.uses);
      request.set_ttl_seconds(options.ttl_seconds);
      request.set_allow_replace(options.allow_replace);
      request.set_description(options.description);
      ASSIGN_OR_RETURN(v1::CreateJoinTokenResponse created,
                       context.client->Call(&Stub::CreateJoinToken, request));
      *context.out << created.token() << "\n";
      *context.err << JoinTokenCreatedNote(created.info(), now);
      return 0;
    }
    case JoinTokenAction::kList: {
      ASSIGN_OR_RETURN(v1::ListJoinTokensResponse listed,
                       context.client->Call(&Stub::ListJoinTokens, v1::ListJoinTokensRequest()));
      const std::vector<v1::JoinToken> tokens(listed.tokens().begin(), listed.tokens().end());
      if (format == OutputFormat::kJson) {
        *context.out << report::ToJsonArray(tokens) << "\n";
      } else {
        *context.out << JoinTokensTable(tokens, now);
      }
      return 0;
    }
    case JoinTokenAction::kRevoke: {
      v1::RevokeJoinTokenRequest request;
      request.set_id(options.id);
      ASSIGN_OR_RETURN(v1::RevokeJoinTokenResponse revoked,
                       context.client->Call(&Stub::RevokeJoinToken, request));
      (void)revoked;
      *context.out << "revoked join token " << options.id << "\n";
      return 0;
    }
  }
  return absl::InternalError("unknown join-token action");
}

}  // namespace bench::ctl
