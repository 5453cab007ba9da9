// Headers beside a template put into its text: recursively, each once, the including file's line
// numbers kept, other includes left alone.
#include "tuner/core/local_includes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tiletune {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

class LocalIncludes : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tiletune_local_includes_" + std::to_string(getpid()));
    fs::create_directories(dir_ / "sub");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const fs::path& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  fs::path dir_;
};

TEST_F(LocalIncludes, PutsEachHeaderInOnceAndKeepsTheLineNumbers) {
  write("a.h", "#pragma once\n#include \"sub/b.h\"\nint a;\n");
  write("sub/b.h", "int b;\n");
  const std::string source =
      "#include <cstdio>\n#include \"a.h\"\n#include \"a.h\"\n#include \"missing.h\"\nint main;\n";
  const std::string text = inline_local_includes(source, dir_ / "k.cu");
  EXPECT_THAT(text, HasSubstr("int a;\n")) << text;
  EXPECT_THAT(text, HasSubstr("int b;\n")) << "a header's own includes are relative to it\n" << text;
  EXPECT_EQ(text.find("int a;"), text.rfind("int a;")) << "included twice\n" << text;
  EXPECT_THAT(text, Not(HasSubstr("pragma once"))) << text;
  EXPECT_THAT(text, HasSubstr("#include <cstdio>\n"));
  EXPECT_THAT(text, HasSubstr("#include \"missing.h\"\n")) << "left for the compiler to report";
  EXPECT_THAT(text, HasSubstr("#line 3\n")) << "line 3 of k.cu follows the first include\n" << text;
}

TEST_F(LocalIncludes, ASourceWithoutLocalIncludesIsUnchanged) {
  const std::string source = "#include <cstdio>\nint x;";  // no final newline either
  EXPECT_EQ(inline_local_includes(source, dir_ / "k.cu"), source);
}

}  // namespace
}  // namespace tiletune
