#include "ctl/join_token_view.h"

#include "absl/strings/str_cat.h"
#include "report/text_table.h"

namespace bench::ctl {
namespace {

std::string Utc(int64_t unix_seconds) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(unix_seconds),
                          absl::UTCTimeZone());
}

}  // namespace

std::string JoinTokenState(const benchfleet::v1::JoinToken& token, absl::Time now) {
  if (token.revoked()) return "revoked";
  if (absl::FromUnixSeconds(token.expires_unix_seconds()) <= now) return "expired";
  if (token.used() >= token.uses()) return "used up";
  return "active";
}

std::string JoinTokenCreatedNote(const benchfleet::v1::JoinToken& token, absl::Time now) {
  const absl::Duration left = absl::Seconds(
      absl::ToInt64Seconds(absl::FromUnixSeconds(token.expires_unix_seconds()) - now));
  return absl::StrCat(
      "join token ", token.id(), ": ", token.uses(), token.uses() == 1 ? " use" : " uses",
      ", expires ", Utc(token.expires_unix_seconds()), " (in ", absl::FormatDuration(left), ")",
      token.allow_replace() ? ", may replace live agents" : "", "; the token is shown only now\n");
}

std::string JoinTokensTable(const std::vector<benchfleet::v1::JoinToken>& tokens, absl::Time now) {
  if (tokens.empty()) return "no join tokens\n";
  report::TextTable table;
  table.header = {"ID", "USED", "EXPIRES", "STATE", "REPLACE", "DESCRIPTION"};
  table.align = {report::Align::kLeft, report::Align::kRight};
  for (const benchfleet::v1::JoinToken& token : tokens) {
    table.rows.push_back({token.id(), absl::StrCat(token.used(), "/", token.uses()),
                          Utc(token.expires_unix_seconds()), JoinTokenState(token, now),
                          token.allow_replace() ? "yes" : "no", token.description()});
  }
  return report::RenderPlainTable(table);
}

}  // namespace bench::ctl
