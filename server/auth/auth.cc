// Roles, principals, the authorization table and hashed bearer tokens (server/auth/auth.h).
#include "server/auth/auth.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/quote.h"

namespace bench {
namespace {

// This Debian's Abseil has its own string_view, distinct from std::string_view.
constexpr absl::string_view kUriPrefix = "spiffe://benchfleet/";
constexpr absl::string_view kHashPrefix = "sha256:";

absl::string_view AV(std::string_view s) { return absl::string_view(s.data(), s.size()); }
std::string_view SV(absl::string_view s) { return std::string_view(s.data(), s.size()); }
constexpr size_t kMaxNameBytes = 63;

const char* ActionName(Action action) {
  switch (action) {
    case Action::kRead: return "read";
    case Action::kSubmit: return "submit";
    case Action::kCancel: return "cancel";
    case Action::kSetBaseline: return "set-baseline";
    case Action::kAgent: return "agent";
    case Action::kRequestCertificate: return "request-certificate";
    case Action::kManageJoinTokens: return "manage-join-tokens";
  }
  return "unknown";
}

// A principal's name: 1-63 bytes of [A-Za-z0-9._-], starting with a letter or digit
// (the node-name rule, so an agent's cert can name any valid node).
bool ValidName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameBytes) return false;
  if (!absl::ascii_isalnum(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

bool IsLowerHex(absl::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

absl::Status Denied(const Principal& who, Action action, std::string_view why = "") {
  return absl::PermissionDeniedError(absl::StrCat(
      "permission denied: ", QuotePrefix(who.name), " (role ", RoleName(who.role), ", via ",
      who.via, ") may not ", ActionName(action), why.empty() ? "" : ": ", AV(why)));
}

}  // namespace

const char* RoleName(Role role) {
  switch (role) {
    case Role::kView: return "view";
    case Role::kSubmit: return "submit";
    case Role::kAdmin: return "admin";
    case Role::kAgent: return "agent";
    case Role::kJoin: return "join";
  }
  return "unknown";
}

absl::StatusOr<Role> ParseRole(std::string_view name) {
  if (name == "view") return Role::kView;
  if (name == "submit") return Role::kSubmit;
  if (name == "admin") return Role::kAdmin;
  if (name == "agent") return Role::kAgent;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown role ", QuotePrefix(name), " (want view, submit, admin or agent)"));
}

std::string Principal::Describe() const {
  return absl::StrCat(name, " (", RoleName(role), ", ", via, ")");
}

absl::Status Authorize(const std::optional<Principal>& who, Action action,
                       std::string_view job_owner_name) {
  if (!who.has_value()) {
    return absl::UnauthenticatedError(
        "no credentials: present a client certificate or a bearer token");
  }
  if (who->via == "none") return absl::OkStatus();  // security off: anonymous admin
  const Role role = who->role;
  if (role == Role::kAgent) {
    return action == Action::kAgent || action == Action::kRequestCertificate ? absl::OkStatus()
                                                                             : Denied(*who, action);
  }
  if (role == Role::kJoin) {
    return action == Action::kRequestCertificate ? absl::OkStatus() : Denied(*who, action);
  }
  switch (action) {
    case Action::kRead: return absl::OkStatus();
    case Action::kSubmit: return role == Role::kView ? Denied(*who, action) : absl::OkStatus();
    case Action::kCancel:
      if (role == Role::kAdmin) return absl::OkStatus();
      if (role == Role::kSubmit) {
        if (!job_owner_name.empty() && job_owner_name == who->name) return absl::OkStatus();
        return Denied(*who, action,
                      absl::StrCat("the job was submitted by ", job_owner_name.empty()
                                                                    ? std::string("nobody recorded")
                                                                    : QuotePrefix(job_owner_name)));
      }
      return Denied(*who, action);
    case Action::kSetBaseline:
      return role == Role::kAdmin ? absl::OkStatus() : Denied(*who, action);
    case Action::kManageJoinTokens:
      return role == Role::kAdmin ? absl::OkStatus() : Denied(*who, action);
    case Action::kAgent:
    case Action::kRequestCertificate: return Denied(*who, action);
  }
  return Denied(*who, action);
}

absl::Status CheckAgentNode(const Principal& who, std::string_view node) {
  if (who.via == "none") return absl::OkStatus();
  if (who.role != Role::kAgent) return Denied(who, Action::kAgent);
  if (who.name != node) {
    return absl::PermissionDeniedError(
        absl::StrCat("permission denied: agent ", QuotePrefix(who.name), " (via ", who.via,
                     ") may act only for its own node, not ", QuotePrefix(node)));
  }
  return absl::OkStatus();
}

absl::StatusOr<Principal> PrincipalFromCertUri(std::string_view uri) {
  absl::string_view rest = AV(uri);
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("certificate URI ", QuotePrefix(uri), " ", why,
                     " (want spiffe://benchfleet/<view|submit|admin|agent>/<name>)"));
  };
  if (!absl::ConsumePrefix(&rest, kUriPrefix)) return bad("is not a benchfleet identity");
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return bad("names no role and name");
  absl::StatusOr<Role> role = ParseRole(SV(rest.substr(0, slash)));
  if (!role.ok()) return bad("names an unknown role");
  std::string_view name = SV(rest.substr(slash + 1));
  if (!ValidName(name)) return bad("has a bad name (1-63 of [A-Za-z0-9._-])");
  return Principal{std::string(name), *role, "cert"};
}

absl::StatusOr<TokenTable> TokenTable::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read token file ", QuotePrefix(path)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return absl::DataLossError(absl::StrCat("error reading token file ", QuotePrefix(path)));
  }
  return Parse(text.str(), path);
}

absl::StatusOr<TokenTable> TokenTable::Parse(std::string_view text, std::string_view source) {
  TokenTable table;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(AV(text), '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(
          AV(source), ":", line_no, ": ", why, " (want 'sha256:<64 hex digits> <role> <name>')"));
    };
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (fields.size() != 3) return bad("not three fields");
    absl::string_view hash = fields[0];
    if (!absl::ConsumePrefix(&hash, kHashPrefix) || hash.size() != 64 || !IsLowerHex(hash)) {
      return bad("bad hash");
    }
    absl::StatusOr<Role> role = ParseRole(SV(fields[1]));
    if (!role.ok()) return bad(role.status().message());
    if (!ValidName(SV(fields[2]))) {
      return bad(absl::StrCat("bad name ", QuotePrefix(SV(fields[2]))));
    }
    std::string key(fields[0]);
    if (table.by_hash_.count(key)) return bad("duplicate token hash");
    table.by_hash_[key] = Principal{std::string(fields[2]), *role, "token"};
  }
  return table;
}

std::optional<Principal> TokenTable::Find(std::string_view token) const {
  if (token.empty()) return std::nullopt;
  const std::string hash = Hash(token);
  // Every entry compared in constant time, no early exit, so timing tells nothing of
  // which (or whether a) stored hash shares a prefix with the offered one.
  const Principal* found = nullptr;
  for (const auto& [stored, principal] : by_hash_) {
    if (stored.size() == hash.size() &&
        CRYPTO_memcmp(stored.data(), hash.data(), hash.size()) == 0) {
      found = &principal;
    }
  }
  if (found == nullptr) return std::nullopt;
  return *found;
}

std::string TokenTable::Hash(std::string_view token) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(kHashPrefix.data(), kHashPrefix.size());
  out.reserve(kHashPrefix.size() + 2 * SHA256_DIGEST_LENGTH);
  for (unsigned char b : digest) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 0xf]);
  }
  return out;
}

}  // namespace bench
