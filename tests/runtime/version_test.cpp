// tilejit's version: the release number and a fingerprint of the sources that decide generated
// code, made by cmake/source_fingerprint.cmake, which is run here on a small tree of its own.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "runtime/version.h"
#include "tests/temp_directory.h"

namespace tilejit {
namespace {

using testing_util::TempDirectory;
namespace fs = std::filesystem;

TEST(TilejitVersion, IsTheReleaseAndTheSourceFingerprint) {
  EXPECT_TRUE(std::regex_match(tilejit_version(), std::regex(R"(\d+\.\d+\.\d+\+src\.[0-9a-f]{12})")))
      << tilejit_version();
}

class SourceFingerprint : public ::testing::Test {
 protected:
  void write(const std::string& relative, const std::string& text) {
    fs::create_directories((root_.path() / relative).parent_path());
    std::ofstream(root_.path() / relative) << text;
  }
  // Runs the script over folders "a" and "b/c" and file "e/f.cpp" of the tree; the fingerprint it wrote.
  std::string fingerprint() {
    const std::string command = std::string("\"") + TILEJIT_TEST_CMAKE + "\" -DROOT=" + root_.path().string() +
                                " -DPATHS=a,b/c,e/f.cpp -DOUTPUT=" + header() + " -P " +
                                TILEJIT_TEST_FINGERPRINT_SCRIPT;
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    std::stringstream text;
    text << std::ifstream(header()).rdbuf();
    std::smatch found;
    const std::string s = text.str();
    EXPECT_TRUE(std::regex_search(s, found, std::regex(R"re(#define TILEJIT_SOURCE_FINGERPRINT "([0-9a-f]{12})")re")))
        << s;
    return found.size() > 1 ? found[1].str() : "";
  }
  std::string header() const { return (out_.path() / "source_fingerprint.h").string(); }

  TempDirectory root_, out_;
};

TEST_F(SourceFingerprint, FollowsEverySourceItCovers) {
  write("a/one.cpp", "int one();\n");
  write("b/c/two.h", "#pragma once\n");
  const std::string first = fingerprint();

  write("a/one.cpp", "int one(); \n");
  const std::string edited = fingerprint();
  EXPECT_NE(edited, first) << "an edit";

  write("b/c/d/three.cpp", "");
  const std::string added = fingerprint();
  EXPECT_NE(added, edited) << "a new file, even an empty one";

  fs::rename(root_.path() / "b/c/d/three.cpp", root_.path() / "b/c/d/four.cpp");
  EXPECT_NE(fingerprint(), added) << "a renamed file";
  fs::rename(root_.path() / "b/c/d/four.cpp", root_.path() / "b/c/d/three.cpp");
  EXPECT_EQ(fingerprint(), added) << "the same tree again";

  write("e/f.cpp", "int f();\n");
  const std::string named = fingerprint();
  EXPECT_NE(named, added) << "a file named on its own";
  write("e/f.cpp", "int f(); \n");
  EXPECT_NE(fingerprint(), named) << "an edit of a file named on its own";
}

TEST_F(SourceFingerprint, IgnoresWhatItDoesNotCover) {
  write("a/one.cpp", "int one();\n");
  const std::string first = fingerprint();
  write("b/other.cpp", "");      // b itself is not covered, only b/c
  write("a/notes.txt", "text");  // nor other kinds of file
  write("elsewhere/x.h", "");
  write("e/g.cpp", "");  // nor a file beside one named on its own
  EXPECT_EQ(fingerprint(), first);
}

TEST_F(SourceFingerprint, AnUnchangedFingerprintLeavesTheHeaderAlone) {
  write("a/one.cpp", "int one();\n");
  fingerprint();
  const auto written = fs::last_write_time(header());
  fs::last_write_time(header(), written - std::chrono::hours(1));
  fingerprint();
  EXPECT_EQ(fs::last_write_time(header()), written - std::chrono::hours(1));
}

}  // namespace
}  // namespace tilejit
