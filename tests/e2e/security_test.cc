// Issue 15's trust model end to end, with real processes and a PKI made at test time by
// deploy/pki's scripts, as an operator makes one (docs/security.md): benchd with TLS,
// client-certificate CA and hashed tokens; agents with their node's certificate;
// benchctl with tokens and certificates. Probes are refused with the right
// code and leave nothing behind, while a real job beside them succeeds. A refusal in the
// TLS handshake reads like an unreachable benchd to the client, so those checks prove
// benchd answered around them and logged that handshake's failure.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/free_port.h"
#include "tests/e2e/cluster.h"
#include "tests/e2e/pki.h"

namespace bench::testing {
namespace {

using ::testing::HasSubstr;
using Env = std::vector<std::pair<std::string, std::string>>;

class SecurityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new LoopbackCluster();
    pki_ = new std::string(cluster_->dir() + "/pki");
    std::filesystem::create_directories(*pki_);
    const std::string& p = *pki_;
    Pki("make-ca.sh", p);
    Pki("make-server-cert.sh", p + " server DNS:localhost,IP:127.0.0.1");
    Pki("make-client-cert.sh", p + " agent node-a");
    Pki("make-client-cert.sh", p + " submit alice");
    // An expired user certificate: it expired yesterday.
    Pki("make-client-cert.sh", p + " admin old -1");
    // Another fleet's CA and an admin signed by it: foreign/mallory.pem.
    Pki("make-ca.sh", p + "/foreign");
    Pki("make-client-cert.sh", p + "/foreign admin mallory");
    tokens_ = new Tokens{Pki("new-token.sh", "submit bob " + p + "/tokens"),
                         Pki("new-token.sh", "view grafana " + p + "/tokens"),
                         Pki("new-token.sh", "admin ops " + p + "/tokens")};
    cluster_->set_benchctl_env({{"BENCH_TOKEN", tokens_->admin}, {"BENCH_TLS_CA", p + "/ca.pem"}});
    absl::Status status = ::testing::Test::HasFailure()
                              ? absl::InternalError("deploy/pki could not make the PKI (above)")
                              : absl::OkStatus();
    if (status.ok()) {
      std::vector<std::string> flags = SecureBenchdFlags(p);
      flags.insert(flags.end(), {"--cert-refresh", "1s"});
      status = cluster_->StartBenchd(flags);
    }
    if (status.ok()) status = cluster_->StartAgent("node-a", 2, AgentTls("node-a"));
    // node-a's certificate, registering as node-b: refused, again and again.
    if (status.ok()) status = cluster_->StartAgent("node-b", 2, AgentTls("node-a"));
    if (status.ok()) status = cluster_->WaitForAgents(1);
    setup_status_ = new absl::Status(status);
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete setup_status_;
    delete pki_;
    delete tokens_;
  }
  void SetUp() override { ASSERT_TRUE(setup_status_->ok()) << *setup_status_; }

  static std::vector<std::string> AgentTls(const std::string& cert) {
    return {"--tls-ca",  *pki_ + "/ca.pem",          "--tls-cert", *pki_ + "/" + cert + ".pem",
            "--tls-key", *pki_ + "/" + cert + ".key"};
  }
  static Env Ca() { return {{"BENCH_TLS_CA", *pki_ + "/ca.pem"}}; }
  static Env Token(const std::string& token) {
    Env env = Ca();
    env.emplace_back("BENCH_TOKEN", token);
    return env;
  }
  static std::vector<std::string> Cert(const std::string& name, std::vector<std::string> args) {
    args.insert(args.end(), {"--tls-cert", *pki_ + "/" + name + ".pem", "--tls-key",
                             *pki_ + "/" + name + ".key"});
    return args;
  }
  static int64_t JobCount() { return QueryInt(cluster_->db_path(), "SELECT count(*) FROM jobs"); }
  // benchd is up and answers an allowed call (the admin token over TLS).
  static void ExpectBenchdAnswers(const std::string& when) {
    CommandResult list = cluster_->Benchctl({"list"});
    EXPECT_EQ(list.exit_code, 0) << when << ": benchd does not answer: " << list.output;
  }
  // `refused` is a benchctl call that benchd's TLS refuses in the handshake, which the
  // client sees as UNAVAILABLE ("cannot reach benchd"), as it would a benchd that is down.
  // So benchd must answer an allowed call right before and right after; the client must
  // have seen the connection closed on it, not refused (nothing listening reads
  // "Connection refused"); and benchd's log must gain the handshake failure `why`.
  static void ExpectHandshakeRefusal(const std::string& what,
                                     const std::function<CommandResult()>& refused,
                                     const std::string& why) {
    SCOPED_TRACE(what);
    ExpectBenchdAnswers("before");
    const int logged = CountOccurrences(cluster_->Log("benchd.log"), why);
    CommandResult result = refused();
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("cannot reach benchd"));
    EXPECT_THAT(result.output, ::testing::AnyOf(HasSubstr("Socket closed"),
                                                HasSubstr("Connection reset by peer")));
    EXPECT_THAT(result.output, ::testing::Not(HasSubstr("Connection refused")));
    // gRPC logs the failed handshake from its own thread: wait for the line.
    bool seen = false;
    for (int i = 0; i < 100 && !seen; ++i) {
      seen = CountOccurrences(cluster_->Log("benchd.log"), why) > logged;
      if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_TRUE(seen) << "benchd's log lacks a new \"" << why << "\":\n"
                      << cluster_->Log("benchd.log");
    ExpectBenchdAnswers("after");
  }
  // benchd's certificate serial as a new TLS connection sees it.
  static std::string ServedSerial() {
    return std::string(absl::StripAsciiWhitespace(
        Shell(absl::StrCat("openssl s_client -connect ", cluster_->server(),
                           " -alpn h2 </dev/null 2>/dev/null | openssl x509 -noout -serial"),
              *pki_)));
  }

  // Tokens from new-token.sh: bob (submit), grafana (view), ops (admin).
  struct Tokens {
    std::string submit, view, admin;
  };

  static LoopbackCluster* cluster_;
  static absl::Status* setup_status_;
  static std::string* pki_;
  static Tokens* tokens_;
};

LoopbackCluster* SecurityTest::cluster_ = nullptr;
absl::Status* SecurityTest::setup_status_ = nullptr;
std::string* SecurityTest::pki_ = nullptr;
SecurityTest::Tokens* SecurityTest::tokens_ = nullptr;

TEST_F(SecurityTest, ARealJobWithASubmitTokenSucceedsOnATlsAgentAndRecordsItsSubmitter) {
  CommandResult submit = cluster_->BenchctlAs(Token(tokens_->submit),
                                              {"submit", "--gpus", "2", "--bs", "2", "--iters", "3",
                                               "--warmup", "1", "--image-size", "64", "--wait"},
                                              600);
  ASSERT_EQ(submit.exit_code, 0) << submit.output << "\nbenchd:\n"
                                 << cluster_->Log("benchd.log") << "\nnode-a:\n"
                                 << cluster_->Log("agent-node-a.log");
  std::string job_id = std::string(absl::StripAsciiWhitespace(
      std::vector<std::string>(absl::StrSplit(submit.stdout_text, '\n')).front()));
  ASSERT_THAT(job_id, ::testing::StartsWith("job-"));
  EXPECT_EQ(QueryInt(cluster_->db_path(),
                     "SELECT count(*) FROM jobs WHERE id='" + job_id + "' AND state='SUCCEEDED'"),
            1);
  EXPECT_EQ(QueryInt(cluster_->db_path(), "SELECT count(*) FROM job_ranks WHERE job_id='" + job_id +
                                              "' AND agent='node-a'"),
            2);
  CommandResult status = cluster_->Benchctl({"status", job_id, "--format", "json"});
  ASSERT_EQ(status.exit_code, 0) << status.output;
  EXPECT_THAT(status.stdout_text, HasSubstr("\"submitted_by\":\"bob\""));

  // A view token reads it but cannot cancel it; bob (its submitter) could.
  CommandResult viewed = cluster_->BenchctlAs(Token(tokens_->view), {"status", job_id});
  EXPECT_EQ(viewed.exit_code, 0) << viewed.output;
  CommandResult cancel = cluster_->BenchctlAs(Token(tokens_->view), {"cancel", job_id});
  EXPECT_EQ(cancel.exit_code, 1);
  EXPECT_THAT(cancel.output, HasSubstr("PERMISSION_DENIED"));
}

TEST_F(SecurityTest, AnAgentCertificateCannotRegisterAsAnotherNodeNorSubmit) {
  CommandResult agents = cluster_->Benchctl({"agents", "--format", "json"});
  ASSERT_EQ(agents.exit_code, 0) << agents.output;
  EXPECT_THAT(agents.stdout_text, HasSubstr("node-a"));
  EXPECT_THAT(agents.stdout_text, ::testing::Not(HasSubstr("node-b")));
  // node-b's agent keeps trying; wait for a refusal in its log.
  std::string log;
  for (int i = 0; i < 100 && log.find("PERMISSION_DENIED") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    log = cluster_->Log("agent-node-b.log");
  }
  EXPECT_THAT(log, HasSubstr("PERMISSION_DENIED"));
  EXPECT_THAT(log, HasSubstr("not \"node-b\""));

  const int64_t jobs = JobCount();
  CommandResult submit =
      cluster_->BenchctlAs(Ca(), Cert("node-a", {"submit", "--gpus", "1", "--bs", "2"}));
  EXPECT_EQ(submit.exit_code, 1);
  EXPECT_THAT(submit.output, HasSubstr("PERMISSION_DENIED"));
  EXPECT_EQ(JobCount(), jobs);
}

TEST_F(SecurityTest, NoCredentialIsUnauthenticated) {
  // benchd's own answers, UNAUTHENTICATED, show it was up.
  CommandResult list = cluster_->BenchctlAs(Ca(), {"list"});
  EXPECT_EQ(list.exit_code, 1);
  EXPECT_THAT(list.output, HasSubstr("UNAUTHENTICATED"));
  EXPECT_THAT(list.output, HasSubstr("no credentials"));
  const int64_t jobs = JobCount();
  CommandResult wrong =
      cluster_->BenchctlAs(Token("not-a-token"), {"submit", "--gpus", "1", "--bs", "2"});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_THAT(wrong.output, HasSubstr("UNAUTHENTICATED"));
  EXPECT_EQ(JobCount(), jobs);
  // Plaintext to a TLS port: benchd's TLS ends the connection in the handshake.
  ExpectHandshakeRefusal(
      "plaintext",
      [] {
        return cluster_->BenchctlAs({{"BENCH_TOKEN", tokens_->admin}}, {"list"});
      },
      "Handshake failed with fatal error SSL_ERROR_SSL: error:0A00010B:SSL routines::wrong "
      "version number");
}

// What the refusals above are told apart from: benchctl against a port where nothing
// listens (as with benchd down) says the connection was refused.
TEST_F(SecurityTest, ABenchdThatIsDownReadsAsConnectionRefused) {
  absl::StatusOr<int> port = PickFreePort("127.0.0.1");
  ASSERT_TRUE(port.ok()) << port.status();
  CommandResult down = cluster_->BenchctlAs(
      Token(tokens_->admin), {"--server", absl::StrCat("127.0.0.1:", *port), "list"});
  EXPECT_EQ(down.exit_code, 1);
  EXPECT_THAT(down.output, HasSubstr("cannot reach benchd"));
  EXPECT_THAT(down.output, HasSubstr("Connection refused"));
}

TEST_F(SecurityTest, ExpiredAndForeignCaCertificatesAreRefused) {
  // gRPC's TLS layer refuses these in the handshake (benchd verifies the client's
  // certificate), so the client sees UNAVAILABLE, not UNAUTHENTICATED: docs/security.md
  // says so.
  for (const char* name : {"old", "foreign/mallory"}) {
    ExpectHandshakeRefusal(
        name, [name] { return cluster_->BenchctlAs(Ca(), Cert(name, {"list"})); },
        "Handshake failed with fatal error SSL_ERROR_SSL: error:0A000086:SSL "
        "routines::certificate verify failed");
  }
}

TEST_F(SecurityTest, ARotatedServerCertificateIsServedWithoutARestart) {
  const std::string before = ServedSerial();
  ASSERT_THAT(before, ::testing::StartsWith("serial="));
  const pid_t pid = cluster_->benchd_pid();
  // Renewed in place, as an operator renews it: the script moves the new key, then the
  // new certificate, over benchd's files.
  Pki("make-server-cert.sh", *pki_ + " server DNS:localhost,IP:127.0.0.1");
  const std::string wanted = std::string(
      absl::StripAsciiWhitespace(Shell("openssl x509 -noout -serial -in server.pem", *pki_)));
  std::string now;
  for (int i = 0; i < 100 && now != wanted; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    now = ServedSerial();
  }
  EXPECT_EQ(now, wanted) << "was " << before;
  EXPECT_NE(now, before);
  EXPECT_EQ(cluster_->benchd_pid(), pid);
  CommandResult list = cluster_->Benchctl({"list"});
  EXPECT_EQ(list.exit_code, 0) << list.output;
}

}  // namespace
}  // namespace bench::testing
