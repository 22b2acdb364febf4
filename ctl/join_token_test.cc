// `benchctl join-token`: its parsing (actions, flags, what each action refuses), its views,
// and the three actions against a fake Controller on 127.0.0.1:0 (what is sent, what is
// printed where, the server's refusal passed on).
#include <sstream>

#include <grpcpp/grpcpp.h>

#include "absl/synchronization/mutex.h"
#include "ctl/args.h"
#include "ctl/commands.h"
#include "ctl/join_token_view.h"
#include "ctl/test_command_server.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace bench::ctl {
namespace {

namespace v1 = benchfleet::v1;
using ::testing::HasSubstr;
using ::testing::Not;

const absl::Time kNow = kCommandTestNow;

TEST(JoinTokenArgsTest, CreateTakesItsFlags) {
  auto options = ParseArgs({"join-token", "create", "--uses", "4", "--ttl", "2h", "--allow-replace",
                            "--description", "rack 7"},
                           "");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->command, Command::kJoinToken);
  const JoinTokenOptions& j = options->join_token;
  EXPECT_EQ(j.action, JoinTokenAction::kCreate);
  EXPECT_EQ(j.uses, 4);
  EXPECT_EQ(j.ttl_seconds, 7200);
  EXPECT_TRUE(j.allow_replace);
  EXPECT_EQ(j.description, "rack 7");
  // Defaults: one use, an hour.
  auto plain = ParseArgs({"join-token", "create"}, "");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->join_token.uses, 1);
  EXPECT_EQ(plain->join_token.ttl_seconds, 3600);
  EXPECT_FALSE(plain->join_token.allow_replace);
}

TEST(JoinTokenArgsTest, ListAndRevoke) {
  auto list = ParseArgs({"join-token", "list", "--format", "json"}, "");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->join_token.action, JoinTokenAction::kList);
  EXPECT_EQ(list->format, OutputFormat::kJson);
  auto revoke = ParseArgs({"join-token", "revoke", "0123456789abcdef"}, "");
  ASSERT_TRUE(revoke.ok()) << revoke.status();
  EXPECT_EQ(revoke->join_token.action, JoinTokenAction::kRevoke);
  EXPECT_EQ(revoke->join_token.id, "0123456789abcdef");
}

TEST(JoinTokenArgsTest, RefusalsNameWhatIsWrong) {
  auto error = [](const std::vector<std::string>& args) {
    auto options = ParseArgs(args, "");
    EXPECT_FALSE(options.ok());
    return options.ok() ? std::string() : std::string(options.status().message());
  };
  EXPECT_THAT(error({"join-token"}), HasSubstr("missing ACTION"));
  EXPECT_THAT(error({"join-token", "make"}), HasSubstr("unknown action \"make\""));
  EXPECT_THAT(error({"join-token", "revoke"}), HasSubstr("missing token ID"));
  EXPECT_THAT(error({"join-token", "list", "--uses", "3"}), HasSubstr("are for create"));
  EXPECT_THAT(error({"join-token", "revoke", "x", "--allow-replace"}), HasSubstr("are for create"));
  EXPECT_THAT(error({"join-token", "create", "x"}), HasSubstr("unexpected argument \"x\""));
  EXPECT_THAT(error({"join-token", "list", "x"}), HasSubstr("unexpected argument \"x\""));
  EXPECT_THAT(error({"join-token", "create", "--uses", "many"}), HasSubstr("--uses"));
  EXPECT_THAT(error({"join-token", "create", "--ttl", "soon"}), HasSubstr("--ttl"));
  EXPECT_THAT(error({"join-token", "list", "--format", "csv"}), HasSubstr("--format"));
  EXPECT_THAT(error({"join-token", "create", "--format", "json"}), HasSubstr("for list"));
}

TEST(JoinTokenArgsTest, UsageShowsTheCommand) {
  const std::string usage = UsageText();
  EXPECT_THAT(usage, HasSubstr("join-token ACTION [ID]"));
  EXPECT_THAT(usage, HasSubstr("--allow-replace"));
}

v1::JoinToken Token(const std::string& id, int uses, int used, int64_t expires, bool revoked) {
  v1::JoinToken token;
  token.set_id(id);
  token.set_uses(uses);
  token.set_used(used);
  token.set_created_unix_seconds(1800000000 - 60);
  token.set_expires_unix_seconds(expires);
  token.set_revoked(revoked);
  return token;
}

TEST(JoinTokenViewTest, StatesAndTable) {
  EXPECT_EQ(JoinTokenState(Token("a", 2, 1, 1800003600, false), kNow), "active");
  EXPECT_EQ(JoinTokenState(Token("a", 2, 2, 1800003600, false), kNow), "used up");
  EXPECT_EQ(JoinTokenState(Token("a", 2, 0, 1800000000, false), kNow), "expired");
  EXPECT_EQ(JoinTokenState(Token("a", 2, 2, 1700000000, true), kNow), "revoked");
  v1::JoinToken described = Token("0123456789abcdef", 3, 1, 1800003600, false);
  described.set_description("rack 7");
  described.set_allow_replace(true);
  const std::string table =
      JoinTokensTable({described, Token("fedcba9876543210", 1, 0, 1700000000, true)}, kNow);
  EXPECT_EQ(table,
            "ID                USED  EXPIRES               STATE    REPLACE  DESCRIPTION\n"
            "0123456789abcdef   1/3  2027-01-15T09:00:00Z  active   yes      rack 7\n"
            "fedcba9876543210   0/1  2023-11-14T22:13:20Z  revoked  no\n");
  EXPECT_EQ(JoinTokensTable({}, kNow), "no join tokens\n");
  EXPECT_EQ(JoinTokenCreatedNote(described, kNow),
            "join token 0123456789abcdef: 3 uses, expires 2027-01-15T09:00:00Z (in 1h), may "
            "replace live agents; the token is shown only now\n");
}

// Join tokens only; records what it was sent.
class FakeJoinTokens final : public v1::Controller::Service {
 public:
  grpc::Status CreateJoinToken(grpc::ServerContext*, const v1::CreateJoinTokenRequest* request,
                               v1::CreateJoinTokenResponse* response) override {
    absl::MutexLock lock(&mu_);
    last_create_ = *request;
    if (request->uses() <= 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "uses: 0 is not in 1..100000");
    }
    response->set_token("bj1.0123456789abcdef." + std::string(64, 'e'));
    *response->mutable_info() =
        Token("0123456789abcdef", request->uses(), 0, 1800000000 + request->ttl_seconds(), false);
    return grpc::Status::OK;
  }
  grpc::Status ListJoinTokens(grpc::ServerContext*, const v1::ListJoinTokensRequest*,
                              v1::ListJoinTokensResponse* response) override {
    *response->add_tokens() = Token("0123456789abcdef", 2, 1, 1800003600, false);
    return grpc::Status::OK;
  }
  grpc::Status RevokeJoinToken(grpc::ServerContext*, const v1::RevokeJoinTokenRequest* request,
                               v1::RevokeJoinTokenResponse*) override {
    if (request->id() != "0123456789abcdef") {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          "no join token with id \"" + request->id() + "\"");
    }
    return grpc::Status::OK;
  }
  v1::CreateJoinTokenRequest last_create() {
    absl::MutexLock lock(&mu_);
    return last_create_;
  }

 private:
  absl::Mutex mu_;
  v1::CreateJoinTokenRequest last_create_;
};

class JoinTokenCommandTest : public CommandServerTest<FakeJoinTokens> {};

TEST_F(JoinTokenCommandTest, CreatePrintsTheTokenAloneOnStdout) {
  EXPECT_EQ(Run({"join-token", "create", "--uses", "3", "--ttl", "30m", "--allow-replace",
                 "--description", "rack 7"}),
            0);
  EXPECT_EQ(out_.str(), "bj1.0123456789abcdef." + std::string(64, 'e') + "\n");
  EXPECT_THAT(err_.str(), HasSubstr("join token 0123456789abcdef: 3 uses, expires "
                                    "2027-01-15T08:30:00Z (in 30m)"));
  EXPECT_THAT(err_.str(), Not(HasSubstr("bj1.")));
  v1::CreateJoinTokenRequest sent = service_.last_create();
  EXPECT_EQ(sent.uses(), 3);
  EXPECT_EQ(sent.ttl_seconds(), 1800);
  EXPECT_TRUE(sent.allow_replace());
  EXPECT_EQ(sent.description(), "rack 7");
}

TEST_F(JoinTokenCommandTest, ARefusalIsPrintedAndFails) {
  EXPECT_EQ(Run({"join-token", "create", "--uses", "0"}), 1);
  EXPECT_EQ(out_.str(), "");
  EXPECT_THAT(err_.str(), HasSubstr("benchctl: "));
  EXPECT_THAT(err_.str(), HasSubstr("uses: 0 is not in 1..100000"));
  EXPECT_EQ(Run({"join-token", "revoke", "nope"}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("no join token with id \"nope\""));
}

TEST_F(JoinTokenCommandTest, ListAndRevoke) {
  EXPECT_EQ(Run({"join-token", "list"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("0123456789abcdef   1/2  2027-01-15T09:00:00Z  active"));
  EXPECT_EQ(Run({"join-token", "list", "--format", "json"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("\"id\":\"0123456789abcdef\""));
  EXPECT_THAT(out_.str(), HasSubstr("\"used\":1"));
  EXPECT_EQ(Run({"join-token", "revoke", "0123456789abcdef"}), 0);
  EXPECT_EQ(out_.str(), "revoked join token 0123456789abcdef\n");
}

}  // namespace
}  // namespace bench::ctl
