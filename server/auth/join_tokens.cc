#include "server/auth/join_tokens.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "absl/strings/str_cat.h"
#include "common/quote.h"

namespace bench {
namespace {

absl::StatusOr<std::string> RandomHex(size_t digits) {
  std::string bytes(digits / 2, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(bytes.data()), static_cast<int>(bytes.size())) !=
      1) {
    return absl::InternalError("no random bytes from OpenSSL for a join token");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(digits);
  for (unsigned char b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 0xf]);
  }
  return out;
}

}  // namespace

absl::StatusOr<JoinTokens::Created> JoinTokens::Create(int uses, absl::Duration ttl,
                                                       bool allow_replace, std::string description,
                                                       absl::Time now) {
  if (absl::Status status = CheckNewJoinToken(uses, ttl, description); !status.ok()) {
    return status;
  }
  absl::StatusOr<std::string> id = RandomHex(kJoinTokenIdHexDigits);
  if (!id.ok()) return id.status();
  absl::StatusOr<std::string> secret = RandomHex(kJoinTokenSecretHexDigits);
  if (!secret.ok()) return secret.status();
  Created created;
  created.token = FormatJoinToken({*id, *secret});
  JoinTokenRecord& r = created.record;
  r.id = *id;
  r.secret_hash = TokenTable::Hash(*secret);
  r.description = std::move(description);
  r.uses = uses;
  r.created = now;
  r.expires = now + ttl;
  r.allow_replace = allow_replace;
  if (absl::Status status = store_->InsertJoinToken(r); !status.ok()) return status;
  return created;
}

absl::StatusOr<std::vector<JoinTokenRecord>> JoinTokens::List() { return store_->LoadJoinTokens(); }

absl::Status JoinTokens::Revoke(const std::string& id) {
  absl::StatusOr<bool> found = store_->RevokeJoinToken(id);
  if (!found.ok()) return found.status();
  if (!*found) {
    return absl::NotFoundError(absl::StrCat("no join token with id ", QuotePrefix(id)));
  }
  return absl::OkStatus();
}

absl::StatusOr<JoinTokenRecord> JoinTokens::Check(std::string_view token, absl::Time now) {
  std::optional<JoinTokenParts> parts = ParseJoinToken(token);
  if (!parts.has_value()) return JoinTokenRefused();
  absl::StatusOr<std::optional<JoinTokenRecord>> record = store_->FindJoinToken(parts->id);
  if (!record.ok()) return record.status();
  if (!record->has_value()) return JoinTokenRefused();
  const std::string hash = TokenTable::Hash(parts->secret);
  const std::string& stored = (*record)->secret_hash;
  if (stored.size() != hash.size() || CRYPTO_memcmp(stored.data(), hash.data(), hash.size()) != 0) {
    return JoinTokenRefused();
  }
  if (!JoinTokenUsable(**record, now)) return JoinTokenRefused();
  return **record;
}

absl::StatusOr<JoinTokenRecord> JoinTokens::CheckId(const std::string& id, absl::Time now) {
  absl::StatusOr<std::optional<JoinTokenRecord>> record = store_->FindJoinToken(id);
  if (!record.ok()) return record.status();
  if (!record->has_value() || !JoinTokenUsable(**record, now)) return JoinTokenRefused();
  return **record;
}

std::optional<Principal> JoinTokens::PrincipalOf(std::string_view token, absl::Time now) {
  absl::StatusOr<JoinTokenRecord> record = Check(token, now);
  if (!record.ok()) return std::nullopt;
  return Principal{record->id, Role::kJoin, "join-token"};
}

absl::Status JoinTokens::Spend(const std::string& id, absl::Time now) {
  absl::StatusOr<bool> spent = store_->SpendJoinTokenUse(id, now);
  if (!spent.ok()) return spent.status();
  return *spent ? absl::OkStatus() : JoinTokenRefused();
}

}  // namespace bench
