#include "worker/agent/data_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "worker/agent/temp_dir.h"

namespace bench::agent {
namespace {

using ::testing::HasSubstr;

// TEMP/root (the agent's --data-root) holding imagenet/, and TEMP/outside/ beside it.
class DataPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(temp_.ok());
    root_ = temp_.path() + "/root";
    outside_ = temp_.path() + "/outside";
    for (const std::string& dir : {root_, root_ + "/imagenet", outside_}) {
      ASSERT_EQ(mkdir(dir.c_str(), 0755), 0) << dir;
    }
  }
  static benchfleet::v1::JobSpec Spec(
      const std::string& path,
      benchfleet::v1::DataSource data = benchfleet::v1::DATA_SOURCE_IMAGEFOLDER) {
    benchfleet::v1::JobSpec spec;
    spec.set_data(data);
    spec.set_data_path(path);
    return spec;
  }
  // The message of a path that is not there, which every refused path outside gets.
  static std::string Missing(const std::string& path) {
    return absl::StrCat("node dgx-03: data path ", path, ": No such file or directory");
  }
  std::string Check(const std::string& path, std::vector<std::string> roots = {}) {
    if (roots.empty()) roots = {root_};
    absl::Status status = CheckDataPath(Spec(path), "dgx-03", roots);
    return status.ok() ? "ok" : std::string(status.message());
  }

  TempDir temp_{"agent_data_path_test_"};
  std::string root_, outside_;
};

TEST_F(DataPathTest, AFolderInsideARootIsRead) {
  EXPECT_EQ(Check(root_ + "/imagenet"), "ok");
  EXPECT_EQ(Check(root_), "ok");  // the root itself
  EXPECT_EQ(Check(root_ + "/imagenet/"), "ok");
  EXPECT_EQ(Check(root_ + "/imagenet/../imagenet"), "ok");  // `..` that stays inside
  // Any of several roots.
  EXPECT_EQ(Check(outside_, {root_, outside_}), "ok");
  // A symlink inside a root to another folder inside it.
  ASSERT_EQ(symlink((root_ + "/imagenet").c_str(), (root_ + "/current").c_str()), 0);
  EXPECT_EQ(Check(root_ + "/current"), "ok");
  // A root given through a symlink: roots are resolved too.
  const std::string linked_root = temp_.path() + "/root-link";
  ASSERT_EQ(symlink(root_.c_str(), linked_root.c_str()), 0);
  EXPECT_EQ(Check(root_ + "/imagenet", {linked_root}), "ok");
  EXPECT_EQ(Check(linked_root + "/imagenet", {root_}), "ok");
}

TEST_F(DataPathTest, AFolderOutsideEveryRootReadsAsMissing) {
  EXPECT_EQ(Check(outside_), Missing(outside_));
  EXPECT_EQ(Check("/usr"), Missing("/usr"));
  EXPECT_EQ(Check("/"), Missing("/"));
  // A sibling whose name starts with the root's is not inside it.
  const std::string sibling = root_ + "-not";
  ASSERT_EQ(mkdir(sibling.c_str(), 0755), 0);
  EXPECT_EQ(Check(sibling), Missing(sibling));
  // A file outside, and one that is not there: the same message.
  std::ofstream(outside_ + "/secret") << "x";
  EXPECT_EQ(Check(outside_ + "/secret"), Missing(outside_ + "/secret"));
  EXPECT_EQ(Check(outside_ + "/none"), Missing(outside_ + "/none"));
}

TEST_F(DataPathTest, DotDotOutOfARootReadsAsMissing) {
  const std::string escape = root_ + "/imagenet/../../outside";
  EXPECT_EQ(Check(escape), Missing(escape));
  const std::string far = root_ + "/../../../../../../usr";
  EXPECT_EQ(Check(far), Missing(far));
}

TEST_F(DataPathTest, ASymlinkInsideARootThatPointsOutsideReadsAsMissing) {
  ASSERT_EQ(symlink(outside_.c_str(), (root_ + "/escape").c_str()), 0);
  EXPECT_EQ(Check(root_ + "/escape"), Missing(root_ + "/escape"));
  ASSERT_EQ(symlink("/usr", (root_ + "/usr").c_str()), 0);
  EXPECT_EQ(Check(root_ + "/usr"), Missing(root_ + "/usr"));
  // A dangling one too.
  ASSERT_EQ(symlink((outside_ + "/none").c_str(), (root_ + "/dangling").c_str()), 0);
  EXPECT_EQ(Check(root_ + "/dangling"), Missing(root_ + "/dangling"));
}

TEST_F(DataPathTest, InsideARootAMissingFolderOrAFileIsNamedAsSuch) {
  EXPECT_EQ(Check(root_ + "/no-such-set"), Missing(root_ + "/no-such-set"));
  std::ofstream(root_ + "/file") << "x";
  EXPECT_EQ(Check(root_ + "/file"),
            absl::StrCat("node dgx-03: data path ", root_, "/file: Not a directory"));
}

TEST_F(DataPathTest, AnAgentWithoutRootsReadsNoDataAndSaysNothingOfThePath) {
  for (const std::string& path : {root_ + "/imagenet", outside_, std::string("/no/such")}) {
    absl::Status status = CheckDataPath(Spec(path), "dgx-03", {});
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(status.message(),
              "node dgx-03: this agent reads no data (start it with --data-root)");
  }
  // Synthetic data reads no folder: fine with or without roots.
  EXPECT_TRUE(CheckDataPath(Spec("", benchfleet::v1::DATA_SOURCE_SYNTHETIC), "dgx-03", {}).ok());
  EXPECT_TRUE(
      CheckDataPath(Spec("/no/such", benchfleet::v1::DATA_SOURCE_SYNTHETIC), "dgx-03", {root_})
          .ok());
}

TEST_F(DataPathTest, ACocoFolderNeedsItsInstancesFile) {
  const std::string coco = root_ + "/coco";
  ASSERT_EQ(mkdir(coco.c_str(), 0755), 0);
  auto check = [&](benchfleet::v1::DataSource data) {
    return CheckDataPath(Spec(coco, data), "dgx-03", {root_});
  };
  EXPECT_EQ(check(benchfleet::v1::DATA_SOURCE_COCO).message(),
            absl::StrCat("node dgx-03: data path ", coco,
                         ": no annotations folder (annotations/: No such file or directory)"));
  ASSERT_EQ(mkdir((coco + "/annotations").c_str(), 0755), 0);
  std::ofstream(coco + "/annotations/captions_val2017.json") << "{}";
  EXPECT_THAT(std::string(check(benchfleet::v1::DATA_SOURCE_COCO).message()),
              HasSubstr("no annotations/instances_*.json"));
  std::ofstream(coco + "/annotations/instances_val2017.json") << "{}";
  EXPECT_TRUE(check(benchfleet::v1::DATA_SOURCE_COCO).ok());
  // The same folder as an ImageFolder: only the folder itself is checked here.
  EXPECT_TRUE(check(benchfleet::v1::DATA_SOURCE_IMAGEFOLDER).ok());
  // Outside the roots, a COCO folder reads as missing too, annotations or not.
  EXPECT_EQ(
      CheckDataPath(Spec(coco, benchfleet::v1::DATA_SOURCE_COCO), "dgx-03", {outside_}).message(),
      Missing(coco));
}

TEST_F(DataPathTest, DataRootsMustBeAbsoluteExistingFolders) {
  EXPECT_TRUE(CheckDataRoots({}).ok());
  EXPECT_TRUE(CheckDataRoots({root_, outside_}).ok());
  absl::Status relative = CheckDataRoots({"data/imagenet"});
  EXPECT_EQ(relative.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(relative.message(), "--data-root data/imagenet: must be an absolute path");
  EXPECT_EQ(CheckDataRoots({root_, root_ + "/none"}).message(),
            absl::StrCat("--data-root ", root_, "/none: No such file or directory"));
  std::ofstream(root_ + "/file") << "x";
  EXPECT_EQ(CheckDataRoots({root_ + "/file"}).message(),
            absl::StrCat("--data-root ", root_, "/file: Not a directory"));
  EXPECT_EQ(CheckDataRoots({""}).message(), "--data-root : must be an absolute path");
}

}  // namespace
}  // namespace bench::agent
