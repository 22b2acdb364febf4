// Issue 24's agent certificate bootstrap end to end, with real processes and a PKI made at
// test time by deploy/pki's scripts: benchd with TLS, --client-ca, --tokens and
// --agent-signing-cert/-key (make-signing-ca.sh's sub-CA), a join
// token from `benchctl join-token create --uses 2`, and agents given only the CA and the
// token file. Checks that both get a key and a certificate of their own and run a job; a
// third agent with the used-up token, an agent with a live agent's name and one with a
// revoked token are refused and get nothing; with --agent-cert-ttl 1m the certificates are
// renewed while the agents keep working, also after benchd was killed -9 and restarted
// (without a new token: the first one is used up).
//
// The tests share one cluster and run in the order written.
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/e2e/cluster.h"
#include "tests/e2e/pki.h"

namespace bench::testing {
namespace {

using ::testing::HasSubstr;

// Waits (generously: CI is loaded) until `done` holds.
bool WaitFor(const std::function<bool()>& done, int timeout_s = 120) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return true;
}

class BootstrapTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new LoopbackCluster();
    pki_ = new std::string(cluster_->dir() + "/pki");
    std::filesystem::create_directories(*pki_);
    const std::string& p = *pki_;
    Pki("make-ca.sh", p);
    Pki("make-server-cert.sh", p + " server DNS:localhost,IP:127.0.0.1");
    Pki("make-signing-ca.sh", p);  // agent-signer.pem and .key: the sub-CA benchd signs with
    const std::string admin = Pki("new-token.sh", "admin ops " + p + "/tokens");
    cluster_->set_benchctl_env({{"BENCH_TOKEN", admin}, {"BENCH_TLS_CA", p + "/ca.pem"}});
    absl::Status status = ::testing::Test::HasFailure()
                              ? absl::InternalError("deploy/pki could not make the PKI (above)")
                              : absl::OkStatus();
    if (status.ok()) {
      std::vector<std::string> flags = SecureBenchdFlags(p);
      flags.insert(flags.end(),
                   {"--agent-signing-cert", p + "/agent-signer.pem", "--agent-signing-key",
                    p + "/agent-signer.key", "--agent-cert-ttl", "1m"});
      status = cluster_->StartBenchd(flags);
    }
    if (status.ok()) {
      first_token_ = new std::string(CreateToken({"--uses", "2"}, "first"));
      if (first_token_->empty()) status = absl::InternalError("no join token (above)");
    }
    if (status.ok()) status = cluster_->StartAgent("node-a", 2, Joining("first"));
    if (status.ok()) status = cluster_->StartAgent("node-b", 2, Joining("first"));
    if (status.ok()) status = cluster_->WaitForAgents(2);
    setup_status_ = new absl::Status(status);
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete setup_status_;
    delete pki_;
    delete first_token_;
  }
  void SetUp() override { ASSERT_TRUE(setup_status_->ok()) << *setup_status_ << Logs(); }

  // `benchctl join-token create ARGS`; the token it printed, also written (0600) to
  // token_file(`file`). "" (and a failed EXPECT) if there is none.
  static std::string CreateToken(std::vector<std::string> args, const std::string& file) {
    args.insert(args.begin(), {"join-token", "create"});
    CommandResult created = cluster_->Benchctl(args, 60);
    EXPECT_EQ(created.exit_code, 0) << created.output;
    std::smatch match;
    static const std::regex kToken("bj1\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+");
    if (!std::regex_search(created.stdout_text, match, kToken)) {
      ADD_FAILURE() << "no bj1 token in:\n" << created.output;
      return "";
    }
    std::ofstream(token_file(file)) << match.str() << "\n";
    std::filesystem::permissions(
        token_file(file), std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    return match.str();
  }
  static std::string token_file(const std::string& name) {
    return absl::StrCat(cluster_->dir(), "/join-", name, ".token");
  }
  // An agent's flags for the CA and a token file, and no certificate of its own.
  static std::vector<std::string> Joining(const std::string& file) {
    return {"--tls-ca", *pki_ + "/ca.pem", "--join-token-file", token_file(file)};
  }
  static std::string Pem(const std::string& agent) {
    return ReadFile(cluster_->agent_state_dir(agent) + "/agent.pem");
  }
  static std::string Logs() {
    return absl::StrCat("\nbenchd:\n", cluster_->Log("benchd.log"), "\nnode-a:\n",
                        cluster_->Log("agent-node-a.log"), "\nnode-b:\n",
                        cluster_->Log("agent-node-b.log"));
  }
  // An agent started with `flags` stops by itself, its log saying `refusal`, and leaves no
  // certificate in `state_dir`.
  static void ExpectRefused(const std::string& name, const std::string& refusal,
                            const std::string& state_dir) {
    EXPECT_TRUE(WaitFor([&] { return cluster_->agent_pid(name) < 0; }))
        << name << " still runs:\n"
        << cluster_->Log("agent-" + name + ".log");
    EXPECT_THAT(cluster_->Log("agent-" + name + ".log"), HasSubstr(refusal));
    EXPECT_FALSE(std::filesystem::exists(state_dir + "/agent.pem"));
  }
  // A two-node job (one rank on each agent) succeeds.
  static void ExpectAJobOnBoth() {
    CommandResult submit =
        cluster_->Benchctl({"submit", "--nodes", "2", "--gpus-per-node", "1", "--bs", "2",
                            "--iters", "3", "--warmup", "1", "--image-size", "64", "--wait"});
    ASSERT_EQ(submit.exit_code, 0) << submit.output << Logs();
    const std::string job_id = std::string(absl::StripAsciiWhitespace(
        std::vector<std::string>(absl::StrSplit(submit.stdout_text, '\n')).front()));
    EXPECT_EQ(QueryInt(cluster_->db_path(),
                       "SELECT count(*) FROM jobs WHERE id='" + job_id + "' AND state='SUCCEEDED'"),
              1);
    for (const char* agent : {"node-a", "node-b"}) {
      EXPECT_EQ(QueryInt(cluster_->db_path(), absl::StrCat("SELECT count(*) FROM job_ranks "
                                                           "WHERE job_id='",
                                                           job_id, "' AND agent='", agent, "'")),
                1)
          << agent;
    }
  }

  static LoopbackCluster* cluster_;
  static absl::Status* setup_status_;
  static std::string* pki_;
  static std::string* first_token_;
};

LoopbackCluster* BootstrapTest::cluster_ = nullptr;
absl::Status* BootstrapTest::setup_status_ = nullptr;
std::string* BootstrapTest::pki_ = nullptr;
std::string* BootstrapTest::first_token_ = nullptr;

TEST_F(BootstrapTest, TwoAgentsWithOnlyATokenGetTheirOwnCertificatesAndRunAJob) {
  std::vector<std::string> keys;
  for (const std::string agent : {"node-a", "node-b"}) {
    const std::string dir = cluster_->agent_state_dir(agent);
    struct stat st;
    ASSERT_EQ(stat((dir + "/agent.key").c_str(), &st), 0) << dir << Logs();
    EXPECT_EQ(st.st_mode & 0777, 0600) << agent;
    keys.push_back(ReadFile(dir + "/agent.key"));
    const std::string text =
        Shell(absl::StrCat("openssl x509 -noout -text -in '", dir, "/agent.pem' 2>&1"));
    EXPECT_THAT(text, HasSubstr("URI:spiffe://benchfleet/agent/" + agent));
    EXPECT_THAT(text, HasSubstr("TLS Web Client Authentication"));
    // The chain (leaf, then the signing sub-CA) verifies against the fleet's CA.
    EXPECT_THAT(Shell(absl::StrCat("openssl verify -CAfile '", *pki_, "/ca.pem' -untrusted '", dir,
                                   "/agent.pem' '", dir, "/agent.pem' 2>&1")),
                HasSubstr(": OK"));
  }
  EXPECT_NE(keys[0], keys[1]);
  ExpectAJobOnBoth();
}

TEST_F(BootstrapTest, AThirdAgentWithTheUsedUpTokenIsRefused) {
  ASSERT_TRUE(cluster_->StartAgent("node-c", 2, Joining("first")).ok());
  ExpectRefused("node-c", "UNAUTHENTICATED", cluster_->agent_state_dir("node-c"));
  CommandResult agents = cluster_->Benchctl({"agents", "--format", "json"});
  EXPECT_THAT(agents.stdout_text, ::testing::Not(HasSubstr("node-c")));
}

TEST_F(BootstrapTest, AnAgentWithALiveAgentsNameIsRefused) {
  ASSERT_FALSE(CreateToken({"--uses", "1"}, "second").empty());
  const std::string state = cluster_->dir() + "/state-impostor";
  std::vector<std::string> flags = Joining("second");
  flags.insert(flags.end(), {"--name", "node-a", "--state-dir", state});
  ASSERT_TRUE(cluster_->StartAgent("impostor", 2, flags).ok());
  ExpectRefused("impostor", "ALREADY_EXISTS", state);
  EXPECT_THAT(cluster_->Log("agent-impostor.log"), HasSubstr("node-a"));
}

TEST_F(BootstrapTest, ARevokedTokenBootstrapsNothing) {
  const std::string token = CreateToken({"--uses", "5"}, "revoked");
  ASSERT_FALSE(token.empty());
  const std::string id = std::vector<std::string>(absl::StrSplit(token, '.'))[1];
  CommandResult revoke = cluster_->Benchctl({"join-token", "revoke", id}, 60);
  ASSERT_EQ(revoke.exit_code, 0) << revoke.output;
  ASSERT_TRUE(cluster_->StartAgent("node-d", 2, Joining("revoked")).ok());
  ExpectRefused("node-d", "UNAUTHENTICATED", cluster_->agent_state_dir("node-d"));
}

TEST_F(BootstrapTest, CertificatesAreRenewedAndTheAgentsKeepWorking) {
  // --agent-cert-ttl 1m: renewed 40 s after they were obtained, over their own certificates.
  const std::string a = Pem("node-a");
  const std::string b = Pem("node-b");
  ASSERT_TRUE(WaitFor([&] { return Pem("node-a") != a && Pem("node-b") != b; }))
      << "not renewed" << Logs();
  EXPECT_THAT(cluster_->Log("agent-node-a.log"), HasSubstr("certificate renewed"));
  ASSERT_TRUE(cluster_->WaitForAgents(2).ok()) << Logs();
  ExpectAJobOnBoth();
}

TEST_F(BootstrapTest, AfterBenchdIsKilledTheAgentsComeBackWithoutANewToken) {
  cluster_->KillBenchd();
  ASSERT_TRUE(cluster_->StartBenchd().ok()) << Logs();
  ASSERT_TRUE(cluster_->WaitForAgents(2).ok()) << Logs();
  // The first token is used up: coming back and renewing needs none.
  const std::string a = Pem("node-a");
  ASSERT_TRUE(WaitFor([&] { return Pem("node-a") != a; })) << "not renewed" << Logs();
  ExpectAJobOnBoth();
  for (const char* agent : {"node-a", "node-b"}) {
    const std::string log = cluster_->Log(absl::StrCat("agent-", agent, ".log"));
    EXPECT_THAT(log, ::testing::Not(HasSubstr("bootstrapped again"))) << agent;
  }
}

}  // namespace
}  // namespace bench::testing
