#include "server/auth/auth.h"

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace bench {
namespace {

Principal P(std::string name, Role role, std::string via = "token") {
  return Principal{std::move(name), role, std::move(via)};
}

TEST(AuthTest, RoleNamesRoundTrip) {
  for (Role r : {Role::kView, Role::kSubmit, Role::kAdmin, Role::kAgent}) {
    auto parsed = ParseRole(RoleName(r));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, r);
  }
  EXPECT_EQ(ParseRole("root").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AuthTest, NoPrincipalIsUnauthenticated) {
  absl::Status s = Authorize(std::nullopt, Action::kRead);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_NE(s.message().find("no credentials"), std::string_view::npos);
}

TEST(AuthTest, ViewReadsOnly) {
  auto v = P("grafana", Role::kView);
  EXPECT_TRUE(Authorize(v, Action::kRead).ok());
  for (Action a : {Action::kSubmit, Action::kCancel, Action::kSetBaseline, Action::kAgent}) {
    absl::Status s = Authorize(v, a, "grafana");
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
    EXPECT_NE(s.message().find("grafana"), std::string_view::npos);
    EXPECT_NE(s.message().find("view"), std::string_view::npos);
  }
}

TEST(AuthTest, SubmitCancelsOnlyItsOwnJobs) {
  auto alice = P("alice", Role::kSubmit);
  EXPECT_TRUE(Authorize(alice, Action::kRead).ok());
  EXPECT_TRUE(Authorize(alice, Action::kSubmit).ok());
  EXPECT_TRUE(Authorize(alice, Action::kCancel, "alice").ok());
  EXPECT_EQ(Authorize(alice, Action::kCancel, "bob").code(), absl::StatusCode::kPermissionDenied);
  // A job with no recorded submitter (security was off) is an admin's to cancel.
  EXPECT_EQ(Authorize(alice, Action::kCancel, "").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(Authorize(alice, Action::kSetBaseline).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(Authorize(alice, Action::kAgent).code(), absl::StatusCode::kPermissionDenied);
}

TEST(AuthTest, AdminCancelsAnyAndSetsBaselines) {
  auto ops = P("ops", Role::kAdmin, "cert");
  EXPECT_TRUE(Authorize(ops, Action::kCancel, "bob").ok());
  EXPECT_TRUE(Authorize(ops, Action::kCancel, "").ok());
  EXPECT_TRUE(Authorize(ops, Action::kSetBaseline).ok());
  EXPECT_TRUE(Authorize(ops, Action::kSubmit).ok());
  EXPECT_EQ(Authorize(ops, Action::kAgent).code(), absl::StatusCode::kPermissionDenied);
}

TEST(AuthTest, AgentTakesOnlyAgentActionsForItsNode) {
  auto node = P("node-a", Role::kAgent, "cert");
  EXPECT_TRUE(Authorize(node, Action::kAgent).ok());
  for (Action a : {Action::kRead, Action::kSubmit, Action::kCancel, Action::kSetBaseline}) {
    EXPECT_EQ(Authorize(node, a, "node-a").code(), absl::StatusCode::kPermissionDenied);
  }
  EXPECT_TRUE(CheckAgentNode(node, "node-a").ok());
  absl::Status s = CheckAgentNode(node, "node-b");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("node-b"), std::string_view::npos);
  // An admin is not an agent.
  EXPECT_EQ(CheckAgentNode(P("node-a", Role::kAdmin), "node-a").code(),
            absl::StatusCode::kPermissionDenied);
}

// A join token (issue 24) may ask for an agent certificate and nothing else; it is never a
// role a --tokens file or a certificate can name.
TEST(AuthTest, JoinTakesOnlyRequestCertificate) {
  const Principal join = P("0123456789abcdef", Role::kJoin, "join-token");
  EXPECT_EQ(std::string(RoleName(Role::kJoin)), "join");
  EXPECT_TRUE(Authorize(join, Action::kRequestCertificate).ok());
  for (Action action : {Action::kRead, Action::kSubmit, Action::kCancel, Action::kSetBaseline,
                        Action::kAgent, Action::kManageJoinTokens}) {
    absl::Status s = Authorize(join, action, "0123456789abcdef");
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << static_cast<int>(action);
    EXPECT_NE(s.message().find("join"), std::string_view::npos) << s;
  }
  EXPECT_EQ(CheckAgentNode(join, "0123456789abcdef").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ParseRole("join").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(PrincipalFromCertUri("spiffe://benchfleet/join/node-a").ok());
  EXPECT_FALSE(TokenTable::Parse("sha256:" + std::string(64, 'a') + " join x", "t").ok());
}

TEST(AuthTest, WhoMayRequestCertificatesAndManageJoinTokens) {
  EXPECT_TRUE(Authorize(P("node-a", Role::kAgent, "cert"), Action::kRequestCertificate).ok());
  for (Role role : {Role::kView, Role::kSubmit, Role::kAdmin}) {
    EXPECT_EQ(Authorize(P("x", role), Action::kRequestCertificate).code(),
              absl::StatusCode::kPermissionDenied);
  }
  EXPECT_TRUE(Authorize(P("ops", Role::kAdmin), Action::kManageJoinTokens).ok());
  for (Role role : {Role::kView, Role::kSubmit, Role::kAgent}) {
    EXPECT_EQ(Authorize(P("x", role), Action::kManageJoinTokens).code(),
              absl::StatusCode::kPermissionDenied);
  }
}

TEST(AuthTest, SecurityOffIsAnonymousAdmin) {
  auto anon = P("", Role::kAdmin, "none");
  for (Action a :
       {Action::kRead, Action::kSubmit, Action::kCancel, Action::kSetBaseline, Action::kAgent}) {
    EXPECT_TRUE(Authorize(anon, a, "bob").ok());
  }
  EXPECT_TRUE(CheckAgentNode(anon, "any-node").ok());
}

TEST(AuthTest, PrincipalFromCertUri) {
  auto p = PrincipalFromCertUri("spiffe://benchfleet/agent/dgx-01");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->name, "dgx-01");
  EXPECT_EQ(p->role, Role::kAgent);
  EXPECT_EQ(p->via, "cert");
  EXPECT_EQ(p->Describe(), "dgx-01 (agent, cert)");
  auto s = PrincipalFromCertUri("spiffe://benchfleet/submit/alice");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->role, Role::kSubmit);
  for (std::string_view bad :
       {"spiffe://other/agent/x", "spiffe://benchfleet/root/x", "spiffe://benchfleet/agent/",
        "spiffe://benchfleet/agent", "spiffe://benchfleet/agent/a/b",
        "spiffe://benchfleet/agent/-x", "https://benchfleet/agent/x", ""}) {
    EXPECT_EQ(PrincipalFromCertUri(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  // A long URI is quoted as a short prefix only.
  std::string huge = "spiffe://benchfleet/agent/" + std::string(100000, 'a');
  absl::Status err = PrincipalFromCertUri(huge).status();
  EXPECT_EQ(err.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_LT(err.message().size(), 400u);
}

TEST(AuthTest, HashIsSha256Hex) {
  // SHA-256("abc"), FIPS 180-2 test vector.
  EXPECT_EQ(TokenTable::Hash("abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(AuthTest, TokenTableFindsByHashOnly) {
  std::string text = "# tokens\n\n" + TokenTable::Hash("s3cret-view") + " view grafana\n" +
                     TokenTable::Hash("s3cret-alice") + "  submit\talice\n";
  auto table = TokenTable::Parse(text, "tokens.txt");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->size(), 2u);
  auto alice = table->Find("s3cret-alice");
  ASSERT_TRUE(alice.has_value());
  EXPECT_EQ(alice->name, "alice");
  EXPECT_EQ(alice->role, Role::kSubmit);
  EXPECT_EQ(alice->via, "token");
  EXPECT_EQ(table->Find("s3cret-view")->role, Role::kView);
  EXPECT_FALSE(table->Find("s3cret").has_value());
  EXPECT_FALSE(table->Find("").has_value());
  // The hash itself is not a token.
  EXPECT_FALSE(table->Find(TokenTable::Hash("s3cret-alice")).has_value());
}

TEST(AuthTest, TokenTableRefusesBadLinesNamingThem) {
  const std::string h = TokenTable::Hash("x");
  for (std::string bad :
       std::vector<std::string>{h + " view", h + " root alice", "sha256:abc view alice",
                                "md5:" + h.substr(7) + " view alice", h + " view al ice",
                                h + " view a\x01z", h + " view a\n" + h + " admin b"}) {
    auto t = TokenTable::Parse("# c\n" + bad + "\n", "tok.txt");
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find("tok.txt:"), std::string_view::npos) << t.status();
  }
  auto upper = TokenTable::Parse("sha256:" + std::string(64, 'A') + " view a", "t");
  EXPECT_FALSE(upper.ok());
}

TEST(AuthTest, TokenTableLoadsFile) {
  std::string path = ::testing::TempDir() + "/auth_test_tokens.txt";
  {
    std::ofstream out(path);
    out << TokenTable::Hash("tok") << " admin ops\n";
  }
  auto t = TokenTable::Load(path);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->Find("tok")->name, "ops");
  std::remove(path.c_str());
  EXPECT_FALSE(TokenTable::Load(path).ok());
}

}  // namespace
}  // namespace bench
