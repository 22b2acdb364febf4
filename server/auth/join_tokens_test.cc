// JoinTokens over a real SQLite store: the token shown once and only its hash stored, uses
// running out (and never over-spent by racing callers), expiry by a passed-in clock,
// revocation, and the used count surviving a reopen of the database.
#include "server/auth/join_tokens.h"

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/store/store_test_fixture.h"

namespace bench {
namespace {

using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1800000000);

class JoinTokensTest : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    Reopen();
  }
  void Reopen() {
    tokens_.reset();
    store_.reset();
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    tokens_ = std::make_unique<JoinTokens>(store_.get());
  }
  JoinTokens::Created MustCreate(int uses, absl::Duration ttl, bool allow_replace = false) {
    absl::StatusOr<JoinTokens::Created> created =
        tokens_->Create(uses, ttl, allow_replace, "rack 4", kT0);
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? *created : JoinTokens::Created{};
  }
  std::unique_ptr<Store> store_;
  std::unique_ptr<JoinTokens> tokens_;
};

TEST(JoinTokenTest, ParsesOnlyWellFormedTokens) {
  const std::string id(16, 'a'), secret(64, '0');
  std::optional<JoinTokenParts> parts = ParseJoinToken("bj1." + id + "." + secret);
  ASSERT_TRUE(parts.has_value());
  EXPECT_EQ(parts->id, id);
  EXPECT_EQ(parts->secret, secret);
  EXPECT_EQ(FormatJoinToken(*parts), "bj1." + id + "." + secret);
  for (const std::string& bad : std::vector<std::string>{
           "", "bj1.", "bj1." + id, "bj2." + id + "." + secret, "bj1." + id + "." + secret + "0",
           "bj1." + std::string(15, 'a') + "." + secret, "bj1." + id + "." + std::string(64, 'G'),
           "bj1." + id + "-" + secret}) {
    EXPECT_FALSE(ParseJoinToken(bad).has_value()) << bad;
  }
}

TEST(JoinTokenTest, NewTokenBounds) {
  EXPECT_TRUE(CheckNewJoinToken(1, absl::Seconds(1), "").ok());
  EXPECT_THAT(CheckNewJoinToken(0, absl::Hours(1), "").message(), HasSubstr("uses"));
  EXPECT_THAT(CheckNewJoinToken(-3, absl::Hours(1), "").message(), HasSubstr("uses"));
  EXPECT_THAT(CheckNewJoinToken(kMaxJoinTokenUses + 1, absl::Hours(1), "").message(),
              HasSubstr("uses"));
  EXPECT_THAT(CheckNewJoinToken(1, absl::ZeroDuration(), "").message(), HasSubstr("ttl_seconds"));
  EXPECT_THAT(CheckNewJoinToken(1, absl::Hours(24 * 400), "").message(), HasSubstr("ttl_seconds"));
  EXPECT_THAT(CheckNewJoinToken(1, absl::Hours(1), std::string(300, 'x')).message(),
              HasSubstr("description"));
  EXPECT_THAT(CheckNewJoinToken(1, absl::Hours(1), "a\nb").message(), HasSubstr("description"));
}

TEST_F(JoinTokensTest, TheSecretIsShownOnceAndOnlyItsHashIsStored) {
  JoinTokens::Created created = MustCreate(2, absl::Hours(1));
  std::optional<JoinTokenParts> parts = ParseJoinToken(created.token);
  ASSERT_TRUE(parts.has_value()) << created.token;
  EXPECT_EQ(parts->id, created.record.id);
  EXPECT_EQ(created.record.secret_hash, TokenTable::Hash(parts->secret));
  EXPECT_EQ(created.record.expires, kT0 + absl::Hours(1));
  absl::StatusOr<std::vector<JoinTokenRecord>> listed = tokens_->List();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].secret_hash, TokenTable::Hash(parts->secret));
  EXPECT_EQ((*listed)[0].description, "rack 4");
  EXPECT_EQ((*listed)[0].uses, 2);
  EXPECT_EQ((*listed)[0].used, 0);
  // Nowhere in the database's files (the file and its WAL) is the secret.
  tokens_.reset();
  store_.reset();
  for (const std::string& file : {path_, path_ + "-wal"}) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    EXPECT_EQ(bytes.str().find(parts->secret), std::string::npos) << file;
  }
  Reopen();
  EXPECT_TRUE(tokens_->Check(created.token, kT0).ok());
}

TEST_F(JoinTokensTest, UsesRunOut) {
  JoinTokens::Created created = MustCreate(2, absl::Hours(1));
  const std::string& id = created.record.id;
  ASSERT_TRUE(tokens_->Check(created.token, kT0).ok());
  EXPECT_TRUE(tokens_->Spend(id, kT0).ok());
  EXPECT_TRUE(tokens_->Spend(id, kT0).ok());
  absl::Status third = tokens_->Spend(id, kT0);
  EXPECT_EQ(third.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(tokens_->Check(created.token, kT0).status(), JoinTokenRefused());
  EXPECT_FALSE(tokens_->PrincipalOf(created.token, kT0).has_value());
  EXPECT_EQ((*tokens_->List())[0].used, 2);
}

TEST_F(JoinTokensTest, ExpiresByThePassedInClock) {
  JoinTokens::Created created = MustCreate(5, absl::Hours(1));
  std::optional<Principal> who = tokens_->PrincipalOf(created.token, kT0 + absl::Minutes(59));
  ASSERT_TRUE(who.has_value());
  EXPECT_EQ(who->role, Role::kJoin);
  EXPECT_EQ(who->name, created.record.id);
  EXPECT_EQ(who->via, "join-token");
  EXPECT_EQ(tokens_->Check(created.token, kT0 + absl::Hours(1)).status(), JoinTokenRefused());
  EXPECT_EQ(tokens_->Spend(created.record.id, kT0 + absl::Hours(1)), JoinTokenRefused());
  EXPECT_TRUE(tokens_->Spend(created.record.id, kT0 + absl::Minutes(59)).ok());
}

TEST_F(JoinTokensTest, RevokedTokensAndWrongSecretsAreRefusedAlike) {
  JoinTokens::Created created = MustCreate(5, absl::Hours(1));
  JoinTokens::Created other = MustCreate(5, absl::Hours(1));
  // The right id with another token's secret.
  std::optional<JoinTokenParts> mine = ParseJoinToken(created.token);
  std::optional<JoinTokenParts> theirs = ParseJoinToken(other.token);
  ASSERT_TRUE(mine && theirs);
  EXPECT_EQ(tokens_->Check(FormatJoinToken({mine->id, theirs->secret}), kT0).status(),
            JoinTokenRefused());
  EXPECT_EQ(tokens_->Check("bj1.0000000000000000." + std::string(64, '0'), kT0).status(),
            JoinTokenRefused());
  EXPECT_EQ(tokens_->Check("garbage", kT0).status(), JoinTokenRefused());

  ASSERT_TRUE(tokens_->Revoke(created.record.id).ok());
  EXPECT_TRUE(tokens_->Revoke(created.record.id).ok());  // twice is fine
  EXPECT_EQ(tokens_->Check(created.token, kT0).status(), JoinTokenRefused());
  EXPECT_EQ(tokens_->Spend(created.record.id, kT0), JoinTokenRefused());
  EXPECT_TRUE(tokens_->Check(other.token, kT0).ok());
  absl::Status unknown = tokens_->Revoke("ffffffffffffffff");
  EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(unknown.message(), HasSubstr("ffffffffffffffff"));
  absl::StatusOr<std::vector<JoinTokenRecord>> listed = tokens_->List();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  int revoked = 0;
  for (const JoinTokenRecord& r : *listed) revoked += r.revoked ? 1 : 0;
  EXPECT_EQ(revoked, 1);
}

TEST_F(JoinTokensTest, TheUsedCountSurvivesAReopen) {
  JoinTokens::Created created = MustCreate(3, absl::Hours(1), /*allow_replace=*/true);
  ASSERT_TRUE(tokens_->Spend(created.record.id, kT0).ok());
  Reopen();
  absl::StatusOr<std::vector<JoinTokenRecord>> listed = tokens_->List();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].used, 1);
  EXPECT_TRUE((*listed)[0].allow_replace);
  EXPECT_EQ((*listed)[0].created, kT0);
  EXPECT_EQ((*listed)[0].expires, kT0 + absl::Hours(1));
  EXPECT_TRUE(tokens_->Spend(created.record.id, kT0).ok());
  EXPECT_TRUE(tokens_->Spend(created.record.id, kT0).ok());
  EXPECT_EQ(tokens_->Spend(created.record.id, kT0), JoinTokenRefused());
  Reopen();
  EXPECT_EQ((*tokens_->List())[0].used, 3);
  EXPECT_EQ(tokens_->Check(created.token, kT0).status(), JoinTokenRefused());
}

TEST_F(JoinTokensTest, RacingCallersNeverSpendMoreThanTheUses) {
  JoinTokens::Created created = MustCreate(3, absl::Hours(1));
  std::atomic<int> spent{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      if (tokens_->Spend(created.record.id, kT0).ok()) ++spent;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(spent.load(), 3);
  EXPECT_EQ((*tokens_->List())[0].used, 3);
}

TEST_F(JoinTokensTest, CreateRefusesBadBoundsNamingTheField) {
  absl::StatusOr<JoinTokens::Created> bad = tokens_->Create(0, absl::Hours(1), false, "", kT0);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("uses"));
  EXPECT_TRUE(tokens_->List()->empty());
}

}  // namespace
}  // namespace bench
