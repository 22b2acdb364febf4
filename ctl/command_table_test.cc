// The command table: every command is in it once with a handler, every flag it declares
// is in the usage text, and the parser built from it keeps benchctl's grammar.
#include "ctl/command_table.h"

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace bench::ctl {
namespace {

using ::testing::HasSubstr;

TEST(CommandTableTest, EveryCommandOnceWithAHandler) {
  std::set<std::string> names;
  std::set<Command> commands;
  for (const CommandSpec& spec : CommandTable()) {
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
    EXPECT_TRUE(commands.insert(spec.command).second) << spec.name;
    EXPECT_EQ(spec.run == nullptr, spec.command == Command::kHelp) << spec.name;
    EXPECT_EQ(&CommandSpecFor(spec.command), &spec) << spec.name;
    EXPECT_EQ(spec.positionals.empty(), std::string(spec.missing_positional).empty()) << spec.name;
  }
  EXPECT_EQ(commands.size(), 18u);
}

TEST(CommandTableTest, UsageShowsEveryFlagOnItsCommandsLines) {
  const std::string usage = UsageText();
  EXPECT_THAT(usage, HasSubstr("usage: benchctl [--server HOST:PORT] COMMAND [ARGS]\n"));
  for (const CommandSpec& spec : CommandTable()) {
    const size_t at = usage.find("\n  " + std::string(spec.name) + " ");
    ASSERT_NE(at, std::string::npos) << spec.name;
    size_t end = at + 1;  // the next line that is not indented past two spaces
    do {
      end = usage.find('\n', end + 1);
    } while (end != std::string::npos && usage.compare(end, 3, "\n  ") == 0 &&
             usage[end + 3] == ' ');
    const std::string section = usage.substr(at, end - at);
    for (const FlagSpec& flag : spec.flags) {
      const std::string name = flag.names.substr(0, flag.names.find(','));
      if (flag.hidden) {
        EXPECT_THAT(section, ::testing::Not(HasSubstr(name + " "))) << spec.name;
      } else {
        EXPECT_THAT(section, HasSubstr(name)) << spec.name;
      }
    }
  }
  for (const char* text : {"  submit --gpus N --bs N [--amp] [--precision fp32|tf32|amp|bf16]",
                           "[--iters N (100)]", "[--label k=v ...]", "[--repeat N (1)]",
                           "  logs JOB [--format dllogger|mllog|jsonl] [-f]\n",
                           "  cancel JOB     cancel a job; prints its resulting state\n",
                           "  compare JOB_A JOB_B [--format text|json]\n"}) {
    EXPECT_THAT(usage, HasSubstr(text));
  }
  for (absl::string_view line : absl::StrSplit(usage, '\n')) {
    EXPECT_LE(line.size(), 90u) << line;
  }
}

TEST(CommandTableTest, GrammarDetails) {
  // A job id that is also a command's name stays an argument.
  auto status = ParseArgs({"status", "list"}, "");
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->command, Command::kStatus);
  EXPECT_EQ(status->job_id, "list");
  auto cancel = ParseArgs({"cancel", "j-1", "list"}, "");
  ASSERT_FALSE(cancel.ok());
  EXPECT_EQ(cancel.status().message(), "cancel: unexpected argument \"list\"");
  // A flag given twice keeps the last value; repeatable ones add up.
  auto submit = ParseArgs({"submit", "--gpus", "1", "--bs", "2", "--gpus=4", "--label", "a=1",
                           "--label", "b=2", "--iters", "-5", "--wait", "--wait=false"},
                          "");
  ASSERT_TRUE(submit.ok()) << submit.status();
  EXPECT_EQ(submit->submit.spec.devices(), 4);
  EXPECT_EQ(submit->submit.spec.labels().size(), 2u);
  EXPECT_EQ(submit->submit.spec.iterations(), -5);
  EXPECT_FALSE(submit->submit.wait);
  // --server on either side of the command; the last one wins.
  auto server = ParseArgs({"--server", "a:1", "list", "--server=b:2"}, "env:3");
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(server->server, "b:2");
  EXPECT_EQ(ParseArgs({"list", "--server="}, "").status().message(), "--server: empty address");
  // The first bad flag in argv order is the one named.
  EXPECT_EQ(ParseArgs({"submit", "--bs", "x", "--gpus", "y"}, "").status().message(),
            "--bs: expected an integer, got \"x\"");
  // An unknown flag is named without its value; one before the command has no "for".
  EXPECT_EQ(ParseArgs({"list", "--bogus=1"}, "").status().message(),
            "unknown flag --bogus for list");
  EXPECT_EQ(ParseArgs({"--bogus", "list"}, "").status().message(), "unknown flag --bogus");
  EXPECT_EQ(ParseArgs({"frob", "list"}, "").status().message(), "unknown command \"frob\"");
  // --format's default is the command's, whatever order the flags come in.
  EXPECT_EQ(ParseArgs({"queue"}, "")->format, OutputFormat::kTable);
  EXPECT_EQ(ParseArgs({"results", "--format", "md"}, "")->format, OutputFormat::kMarkdown);
}

}  // namespace
}  // namespace bench::ctl
