#include "tuner/core/kernel_template.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "tests/support/source_tree.h"
#include "tuner/core/configurations.h"

namespace tiletune {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Optional;
using ::testing::StartsWith;

using testing_support::kTemplates;

// A valid template: each test adds lines to it or replaces some.
constexpr const char* kEntry = "// tiletune: entry k\n";
constexpr const char* kParam = "// tiletune: param T 1 2\n";
constexpr const char* kBlock = "// tiletune: block T\n";
constexpr const char* kGrid = "// tiletune: grid 1\n";

std::string template_error(const std::string& source) {
  try {
    parse_template(source, "t.cu");
  } catch (const TemplateError& error) {
    return error.what();
  }
  ADD_FAILURE() << "parsed:\n" << source;
  return {};
}

std::string configuration_error(const KernelTemplate& tmpl, std::string_view text) {
  try {
    tmpl.parse_configuration(text);
  } catch (const TemplateError& error) {
    return error.what();
  }
  ADD_FAILURE() << "parsed configuration '" << text << "'";
  return {};
}

std::string geometry_error(const KernelTemplate& tmpl, const Configuration& config,
                           const GemmShape& shape) {
  try {
    tmpl.launch_geometry(config, shape);
  } catch (const TemplateError& error) {
    return error.what();
  }
  ADD_FAILURE() << "accepted " << config.to_string() << " at " << shape.to_string();
  return {};
}

TEST(KernelTemplate, ParsesDeclarationsAndDefaults) {
  const std::string source = std::string("__global__ void k() {}\n") + kEntry +
                             "  \t// tiletune: param T 4 -1 16\n" + kBlock + kGrid +
                             "int x;  // tiletune: this is code, not a declaration\n";
  const KernelTemplate tmpl = parse_template(source, "some/dir/foo.cu");
  EXPECT_EQ(tmpl.name, "foo");  // the origin's stem
  EXPECT_EQ(tmpl.entry, "k");
  EXPECT_TRUE(tmpl.path.empty());
  EXPECT_EQ(tmpl.source, source);
  EXPECT_EQ(tmpl.source_hash, fnv1a_hex(source));
  ASSERT_EQ(tmpl.parameters.size(), 1u);
  EXPECT_EQ(tmpl.parameters[0].name, "T");
  EXPECT_THAT(tmpl.parameters[0].values, ElementsAre(4, -1, 16));
  EXPECT_TRUE(tmpl.requirements.empty());
  EXPECT_EQ(tmpl.block[0].text(), "T");
  EXPECT_EQ(tmpl.block[1].text(), "1");  // missing dimensions are 1
  EXPECT_EQ(tmpl.block[2].text(), "1");
  EXPECT_EQ(tmpl.dynamic_shared_bytes.text(), "0");
}

TEST(KernelTemplate, GeometrySplitsOnTopLevelCommasOnly) {
  const KernelTemplate tmpl = parse_template(
      std::string(kEntry) + kParam + "// tiletune: block max(T, 2), min(T, 3) , 4\n" +
          "// tiletune: grid ceil_div(N, T), round_up(M, max(T, 2))\n" +
          "// tiletune: shared T * 4 * (N > 0 ? 1 : 0)\n" + "// tiletune: name custom\n",
      "t.cu");
  EXPECT_EQ(tmpl.name, "custom");
  EXPECT_EQ(tmpl.block[0].text(), "max(T, 2)");
  EXPECT_EQ(tmpl.block[1].text(), "min(T, 3)");
  EXPECT_EQ(tmpl.block[2].text(), "4");
  EXPECT_EQ(tmpl.grid[0].text(), "ceil_div(N, T)");
  EXPECT_EQ(tmpl.grid[1].text(), "round_up(M, max(T, 2))");
  EXPECT_EQ(tmpl.grid[2].text(), "1");
  EXPECT_EQ(tmpl.dynamic_shared_bytes.text(), "T * 4 * (N > 0 ? 1 : 0)");
}

TEST(KernelTemplate, NoDeclarations) {
  EXPECT_EQ(template_error("__global__ void k() {}\n// tiletune is mentioned here\n"),
            "t.cu: no '// tiletune:' declarations found");
  EXPECT_EQ(template_error(""), "t.cu: no '// tiletune:' declarations found");
}

TEST(KernelTemplate, UnknownDirectiveSuggestsTheValidOnes) {
  EXPECT_THAT(template_error(std::string(kEntry) + "// tiletune: blok T\n" + kGrid),
              AllOf(StartsWith("t.cu:2: "), HasSubstr("unknown directive 'blok'"),
                    HasSubstr("name, entry, param, require, tune_if, block, grid, shared")));
  EXPECT_THAT(template_error(std::string(kEntry) + "// tiletune:\n"),
              AllOf(StartsWith("t.cu:2: "), HasSubstr("missing directive")));
}

TEST(KernelTemplate, MissingEntryBlockOrGrid) {
  EXPECT_EQ(template_error(std::string(kParam) + kBlock + kGrid),
            "t.cu: missing '// tiletune: entry' declaration");
  EXPECT_EQ(template_error(std::string(kEntry) + kParam + kGrid),
            "t.cu: missing '// tiletune: block' declaration");
  EXPECT_EQ(template_error(std::string(kEntry) + kParam + kBlock),
            "t.cu: missing '// tiletune: grid' declaration");
}

TEST(KernelTemplate, MissingArgument) {
  EXPECT_THAT(
      template_error(std::string(kEntry) + kParam + kBlock + kGrid + "// tiletune: require  \n"),
      AllOf(StartsWith("t.cu:5: "), HasSubstr("'require' needs an argument")));
}

TEST(KernelTemplate, DuplicateDirectives) {
  const std::string base = std::string("// tiletune: name a\n") + kEntry + kParam + kBlock + kGrid +
                           "// tiletune: shared 0\n";
  EXPECT_THAT(template_error(base + "// tiletune: name b\n"),
              AllOf(StartsWith("t.cu:7: "), HasSubstr("duplicate 'name'"), HasSubstr("line 1")));
  EXPECT_THAT(template_error(base + "// tiletune: entry k2\n"),
              AllOf(StartsWith("t.cu:7: "), HasSubstr("duplicate 'entry'"), HasSubstr("line 2")));
  EXPECT_THAT(template_error(base + "// tiletune: block 1\n"),
              AllOf(StartsWith("t.cu:7: "), HasSubstr("duplicate 'block'"), HasSubstr("line 4")));
  EXPECT_THAT(template_error(base + "// tiletune: grid 1\n"),
              AllOf(StartsWith("t.cu:7: "), HasSubstr("duplicate 'grid'"), HasSubstr("line 5")));
  EXPECT_THAT(template_error(base + "// tiletune: shared 4\n"),
              AllOf(StartsWith("t.cu:7: "), HasSubstr("duplicate 'shared'"), HasSubstr("line 6")));
}

TEST(KernelTemplate, BadNameOrEntry) {
  EXPECT_THAT(
      template_error(std::string("// tiletune: name two words\n") + kEntry + kBlock + kGrid),
      AllOf(StartsWith("t.cu:1: "), HasSubstr("single word")));
  EXPECT_THAT(template_error(std::string("// tiletune: entry 9lives\n") + kBlock + kGrid),
              AllOf(StartsWith("t.cu:1: "), HasSubstr("entry '9lives' is not a C identifier")));
  EXPECT_THAT(template_error(std::string("// tiletune: entry a/../b\n") + kBlock + kGrid),
              AllOf(StartsWith("t.cu:1: "), HasSubstr("entry 'a/../b' is not a C identifier")));
}

// A name goes into file paths (the caches, --cubin-dir): only identifiers pass.
TEST(KernelTemplate, NameThatIsNotAnIdentifierIsRefused) {
  for (const std::string name : {"../../../../escaped", "a/b", "..", "x.y", "9lives", "tiled~x", "a-b"}) {
    SCOPED_TRACE(name);
    EXPECT_THAT(template_error("// tiletune: name " + name + "\n" + kEntry + kBlock + kGrid),
                AllOf(StartsWith("t.cu:1: "), HasSubstr("name '" + name + "' is not an identifier")));
  }
  EXPECT_EQ(parse_template("// tiletune: name _Tiled_2\n" + std::string(kEntry) + kParam + kBlock + kGrid, "t.cu").name,
            "_Tiled_2");
}

// A file's stem that is not an identifier gives one: other characters become '_'.
TEST(KernelTemplate, DefaultNameFromAStemThatIsNotAnIdentifier) {
  const std::string source = std::string(kEntry) + kParam + kBlock + kGrid;
  EXPECT_EQ(parse_template(source, "dir/my-kernel.cu").name, "my_kernel");
  EXPECT_EQ(parse_template(source, "a b/x y'z.v2.cu").name, "x_y_z_v2");
  EXPECT_EQ(parse_template(source, "3mm.cu").name, "_3mm");
  EXPECT_EQ(parse_template(source, "..").name, "__");
}

TEST(KernelTemplate, BadParameters) {
  const std::string head = std::string(kEntry) + kBlock + kGrid;  // parameters go on line 4
  EXPECT_THAT(template_error(head + "// tiletune: param 1T 1\n"),
              AllOf(StartsWith("t.cu:4: "), HasSubstr("'1T' is not an identifier")));
  EXPECT_THAT(template_error(head + "// tiletune: param T-1 1\n"),
              AllOf(StartsWith("t.cu:4: "), HasSubstr("'T-1' is not an identifier")));
  EXPECT_THAT(template_error(head + "// tiletune: param M 1 2\n"),
              AllOf(StartsWith("t.cu:4: "), HasSubstr("'M' is reserved")));
  EXPECT_THAT(template_error(head + "// tiletune: param K 1 2\n"),
              AllOf(StartsWith("t.cu:4: "), HasSubstr("'K' is reserved")));
  EXPECT_THAT(template_error(head + "// tiletune: param T 1 x 3\n"),
              AllOf(StartsWith("t.cu:4: "), HasSubstr("bad value 'x' for parameter 'T'")));
  EXPECT_THAT(template_error(head + "// tiletune: param T 1 2.5\n"),
              AllOf(StartsWith("t.cu:4: "), HasSubstr("bad value '2.5'")));
  EXPECT_THAT(template_error(head + "// tiletune: param T 99999999999999999999\n"),
              AllOf(StartsWith("t.cu:4: "), HasSubstr("bad value")));
  EXPECT_THAT(template_error(head + "// tiletune: param T 8 16 8\n"),
              AllOf(StartsWith("t.cu:4: "), HasSubstr("duplicate value 8 for parameter 'T'")));
  EXPECT_THAT(template_error(head + "// tiletune: param T\n"),
              AllOf(StartsWith("t.cu:4: "), HasSubstr("parameter 'T' has no candidate values")));
  EXPECT_THAT(
      template_error(head + kParam + "// tiletune: param T 3\n"),
      AllOf(StartsWith("t.cu:5: "), HasSubstr("duplicate parameter 'T'"), HasSubstr("line 4")));
}

TEST(KernelTemplate, ExpressionSyntaxErrors) {
  const std::string head = std::string(kEntry) + kParam;  // the next line is line 3
  EXPECT_THAT(template_error(head + "// tiletune: require T +\n" + kBlock + kGrid),
              AllOf(StartsWith("t.cu:3: "), HasSubstr("'require'"), HasSubstr("'T +'"),
                    HasSubstr("end of expression")));
  EXPECT_THAT(template_error(head + "// tiletune: block T, floor(T)\n" + kGrid),
              AllOf(StartsWith("t.cu:3: "), HasSubstr("unknown function 'floor'")));
  EXPECT_THAT(template_error(head + kBlock + "// tiletune: grid min(T)\n"),
              AllOf(StartsWith("t.cu:4: "), HasSubstr("min() takes 2 arguments")));
  EXPECT_THAT(template_error(head + kBlock + kGrid + "// tiletune: shared 1, 2\n"),
              AllOf(StartsWith("t.cu:5: "), HasSubstr("'shared'"), HasSubstr("','")));
  EXPECT_THAT(template_error(head + "// tiletune: block T, , 1\n" + kGrid),
              AllOf(StartsWith("t.cu:3: "), HasSubstr("'block'")));
}

// A requirement that cannot be evaluated for a configuration (a division by zero, an overflow) is
// the template's bug: an error naming it and the configuration, never "does not hold"; and a
// template no configuration of which meets its requirements has nothing to run.
TEST(KernelTemplate, ARequirementThatCannotBeEvaluatedIsAnErrorAndAnEmptySpaceIsRefused) {
  const std::string valid = std::string(kEntry) + kParam + kBlock + kGrid;
  const KernelTemplate divides = parse_template(valid + "// tiletune: require T / (T - T) > 0\n", "t.cu");
  try {
    enumerate_configurations(divides);
    ADD_FAILURE() << "a requirement dividing by zero was taken as not holding";
  } catch (const TemplateError& error) {
    EXPECT_THAT(error.what(), AllOf(StartsWith("t [T=1]: requirement 'T / (T - T) > 0' cannot be evaluated"),
                                    HasSubstr("division by zero")));
  }
  const KernelTemplate overflows =
      parse_template(valid + "// tiletune: require 9223372036854775807 + T > 0\n", "t.cu");
  EXPECT_THROW(enumerate_configurations(overflows), TemplateError);

  const KernelTemplate empty = parse_template(valid + "// tiletune: require T > 1000\n", "t.cu");
  const std::vector<Configuration> none = enumerate_configurations(empty);
  EXPECT_TRUE(none.empty());
  try {
    check_not_empty(empty, none);
    ADD_FAILURE() << "an empty space was accepted";
  } catch (const EmptySpace& error) {
    EXPECT_STREQ(error.what(), "t: no configuration of t meets its requirements: there is nothing to run");
  }
  EXPECT_NO_THROW(check_not_empty(divides, {divides.parse_configuration("T=1")}));
}

TEST(KernelTemplate, TooManyDimensions) {
  EXPECT_THAT(
      template_error(std::string(kEntry) + kParam + kBlock + "// tiletune: grid 1, 2, 3, 4\n"),
      AllOf(StartsWith("t.cu:4: "), HasSubstr("1 to 3"), HasSubstr("got 4")));
}

TEST(KernelTemplate, ExpressionsMayReadOnlyParametersAndProblemSizes) {
  const std::string head = std::string(kEntry) + kParam;
  EXPECT_THAT(template_error(head + "// tiletune: require T < X\n" + kBlock + kGrid),
              AllOf(StartsWith("t.cu:3: "), HasSubstr("'T < X'"), HasSubstr("reads 'X'"),
                    HasSubstr("neither a parameter (T)")));
  EXPECT_THAT(template_error(head + kBlock + "// tiletune: grid ceil_div(N, TILE)\n"),
              AllOf(StartsWith("t.cu:4: "), HasSubstr("reads 'TILE'")));
  EXPECT_THAT(template_error(head + kBlock + kGrid + "// tiletune: shared bytes\n"),
              AllOf(StartsWith("t.cu:5: "), HasSubstr("reads 'bytes'")));
  // A parameter declared after the expression that reads it is fine.
  EXPECT_NO_THROW(parse_template(std::string(kEntry) + "// tiletune: require U < M * N * K\n" +
                                     kParam + "// tiletune: param U 1\n" + kBlock + kGrid,
                                 "t.cu"));
}

TEST(KernelTemplate, ToleratesCarriageReturns) {
  const KernelTemplate tmpl = parse_template(
      "// tiletune: entry k\r\n// tiletune: param T 1 2\r\n// tiletune: block T\r\n"
      "// tiletune: grid 1\r\n",
      "t.cu");
  EXPECT_EQ(tmpl.entry, "k");
  EXPECT_THAT(tmpl.parameters[0].values, ElementsAre(1, 2));
}

TEST(KernelTemplate, Fnv1a) {
  EXPECT_EQ(fnv1a_hex(""), "cbf29ce484222325");
  EXPECT_EQ(fnv1a_hex("a"), "af63dc4c8601ec8c");
  EXPECT_EQ(fnv1a_hex("foobar"), "85944171f73967e8");
}

TEST(KernelTemplate, ShippedTiledTemplate) {
  const KernelTemplate tmpl = load_template(kTemplates / "tiled.cu");
  EXPECT_EQ(tmpl.name, "tiled");
  EXPECT_EQ(tmpl.entry, "tiled_gemm");
  EXPECT_EQ(tmpl.path, kTemplates / "tiled.cu");
  EXPECT_EQ(tmpl.source_hash, fnv1a_hex(tmpl.source));
  ASSERT_EQ(tmpl.parameters.size(), 3u);
  EXPECT_EQ(tmpl.parameters[0].name, "TILE");
  EXPECT_THAT(tmpl.parameters[0].values, ElementsAre(8, 16, 32));
  EXPECT_EQ(tmpl.parameters[1].name, "PAD");
  EXPECT_EQ(tmpl.parameters[2].name, "SWIZZLE");
  ASSERT_EQ(tmpl.requirements.size(), 1u);
  EXPECT_EQ(tmpl.requirements[0].text(), "!(PAD && SWIZZLE)");
}

TEST(KernelTemplate, ShippedNaiveTemplate) {
  const KernelTemplate tmpl = load_template(kTemplates / "naive.cu");
  EXPECT_EQ(tmpl.name, "naive");
  EXPECT_EQ(tmpl.entry, "naive_gemm");
  ASSERT_EQ(tmpl.parameters.size(), 2u);
  EXPECT_THAT(tmpl.parameters[0].values, ElementsAre(8, 16, 32, 64, 128));
  EXPECT_THAT(tmpl.parameters[1].values, ElementsAre(1, 2, 4, 8, 16, 32));
}

TEST(KernelTemplate, LoadTemplateReportsUnreadableFiles) {
  try {
    load_template(kTemplates / "no_such_template.cu");
    ADD_FAILURE() << "loaded a missing file";
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(), AllOf(StartsWith("cannot read "), HasSubstr("no_such_template.cu"),
                                    HasSubstr("No such file")));
  }
  try {
    load_template(kTemplates);
    ADD_FAILURE() << "loaded a directory";
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(), AllOf(StartsWith("cannot read "), HasSubstr("directory")));
  }
}

// The include and declaration parsers use std::regex, which recurses per character: a line of
// 100,000 characters would overflow the stack. Such lines, from a file or a recorded text, end in
// one error naming the origin and the line; a line at the limit (4096) is read, and a '#' followed
// by thousands of blank lines is no include.
TEST(KernelTemplate, LinesTooLongForTheParsersAreRefusedWithTheirNumber) {
  const std::string valid = std::string(kEntry) + kParam + kBlock + kGrid;
  const std::string long_arch = "// tiletune: arch sm_" + std::string(100000, '9') + "a\n";
  EXPECT_THAT(template_error(valid + long_arch),
              AllOf(StartsWith("t.cu: line 5 has 100022 characters"), HasSubstr("at most 4096")));
  std::string many_terms = "// tiletune: require ";
  for (int i = 0; i < 300000; ++i) many_terms += "1+";
  EXPECT_THAT(template_error(valid + many_terms + "1 > 0\n"), StartsWith("t.cu: line 5 has "));
  const std::string spaced_include = "#" + std::string(100000, ' ') + "include \"x.h\"\n";
  EXPECT_THAT(template_error(spaced_include + valid), StartsWith("t.cu: line 1 has 100014 characters"));

  EXPECT_EQ(parse_template("#" + std::string(50000, '\n') + valid, "t.cu").name, "t");
  const std::string at_limit = "//" + std::string(4094, 'x') + "\n";
  EXPECT_EQ(parse_template(valid + at_limit, "t.cu").name, "t");

  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("tiletune_long_" + std::to_string(::getpid()) + ".cu");
  {
    std::ofstream file(path);
    file << spaced_include << valid;
  }
  try {
    load_template(path);
    ADD_FAILURE() << "loaded a line of 100,014 characters";
  } catch (const TemplateError& error) {
    EXPECT_THAT(error.what(), StartsWith(path.string() + ": line 1 has 100014 characters"));
  }
  std::filesystem::remove(path);
}

// A FIFO would block and a device never end: only regular files are read, and none larger than
// the limit.
TEST(KernelTemplate, LoadTemplateReadsOnlyRegularFilesOfBoundedSize) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("tiletune_special_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ASSERT_EQ(::mkfifo((dir / "fifo.cu").c_str(), 0600), 0);
  try {
    load_template(dir / "fifo.cu");
    ADD_FAILURE() << "loaded a FIFO";
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(), AllOf(StartsWith("cannot read "), HasSubstr("fifo.cu: not a regular file")));
  }
  try {
    load_template("/dev/zero");
    ADD_FAILURE() << "loaded /dev/zero";
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(), HasSubstr("/dev/zero: not a regular file"));
  }
  { std::ofstream(dir / "huge.cu") << kEntry; }
  std::filesystem::resize_file(dir / "huge.cu", (16u << 20) + 1);  // sparse: no disk is used
  try {
    load_template(dir / "huge.cu");
    ADD_FAILURE() << "loaded a file of 16 MiB and a byte";
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(), HasSubstr("huge.cu: 16777217 bytes; tiletune reads files of at most"));
  }
  std::filesystem::remove_all(dir);
}

TEST(KernelTemplate, LoadTemplateErrorsNameThePath) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("tiletune_bad_" + std::to_string(::getpid()) + ".cu");
  {
    std::ofstream file(path);
    file << kEntry << kParam << "// tiletune: frobnicate\n";
  }
  try {
    load_template(path);
    ADD_FAILURE() << "loaded a bad template";
  } catch (const TemplateError& error) {
    EXPECT_THAT(error.what(), StartsWith(path.string() + ":3: unknown directive 'frobnicate'"));
  }
  std::filesystem::remove(path);
}

TEST(KernelTemplate, TiledLaunchGeometry) {
  const KernelTemplate tmpl = load_template(kTemplates / "tiled.cu");
  const GemmShape shape{4095, 4097, 4093};
  const LaunchGeometry geometry =
      tmpl.launch_geometry(tmpl.parse_configuration("TILE=16,PAD=0,SWIZZLE=1"), shape);
  EXPECT_THAT(geometry.grid, ElementsAre((4097u + 15) / 16, (4095u + 15) / 16, 1u));
  EXPECT_THAT(geometry.grid, ElementsAre(257u, 256u, 1u));
  EXPECT_THAT(geometry.block, ElementsAre(16u, 16u, 1u));
  EXPECT_EQ(geometry.dynamic_shared_bytes, 0u);
  EXPECT_EQ(geometry.threads_per_block(), 256u);
}

TEST(KernelTemplate, ZeroOutputIsOffByDefaultAndEvaluatedPerConfiguration) {
  const KernelTemplate plain = parse_template(std::string(kEntry) + kParam + kBlock + kGrid, "plain.cu");
  EXPECT_FALSE(plain.launch_geometry(plain.parse_configuration("T=1"), GemmShape{8, 8, 8}).zero_output);

  const KernelTemplate split = parse_template(
      std::string(kEntry) + "// tiletune: param S 1 4\n// tiletune: block 32\n"
                            "// tiletune: grid ceil_div(N, 32), M, S\n// tiletune: zero_output S > 1\n",
      "split.cu");
  EXPECT_EQ(split.zero_output.text(), "S > 1");
  EXPECT_FALSE(split.launch_geometry(split.parse_configuration("S=1"), GemmShape{8, 8, 8}).zero_output);
  EXPECT_TRUE(split.launch_geometry(split.parse_configuration("S=4"), GemmShape{8, 8, 8}).zero_output);
  EXPECT_THROW(parse_template(std::string(kEntry) + kParam + kBlock + kGrid +
                                  "// tiletune: zero_output 1\n// tiletune: zero_output 0\n",
                              "twice.cu"),
               TemplateError);
}

TEST(KernelTemplate, GridAndZeroOutputReadTheGpusMultiprocessorCount) {
  const KernelTemplate waves = parse_template(
      std::string(kEntry) + "// tiletune: param W 0 2\n// tiletune: block 32\n"
                            "// tiletune: grid W ? W * SM_COUNT : ceil_div(N, 32), M\n"
                            "// tiletune: zero_output W > 0 && M % (W * SM_COUNT) != 0\n",
      "waves.cu");
  EXPECT_TRUE(waves.reads_sm_count());
  const Configuration two = waves.parse_configuration("W=2");
  const LaunchGeometry on_five = waves.launch_geometry(two, GemmShape{8, 64, 8}, 5);
  EXPECT_THAT(on_five.grid, ElementsAre(10u, 8u, 1u));
  EXPECT_TRUE(on_five.zero_output);
  EXPECT_FALSE(waves.launch_geometry(two, GemmShape{8, 64, 8}, 4).zero_output);
  // Without a GPU to ask there is no count: the launch is refused, whatever the configuration.
  EXPECT_THAT(geometry_error(waves, two, GemmShape{8, 64, 8}),
              AllOf(HasSubstr("waves"), HasSubstr("SM_COUNT"), HasSubstr("no GPU")));
  EXPECT_THAT(geometry_error(waves, waves.parse_configuration("W=0"), GemmShape{8, 64, 8}),
              HasSubstr("SM_COUNT"));

  const KernelTemplate plain = parse_template(std::string(kEntry) + kParam + kBlock + kGrid, "plain.cu");
  EXPECT_FALSE(plain.reads_sm_count());
  EXPECT_THAT(plain.launch_geometry(plain.parse_configuration("T=2"), GemmShape{8, 8, 8}).grid,
              ElementsAre(1u, 1u, 1u));
}

TEST(KernelTemplate, OnlyGridAndZeroOutputMayReadTheMultiprocessorCount) {
  for (const char* line : {"// tiletune: require SM_COUNT > 1\n", "// tiletune: tune_if SM_COUNT > 1\n",
                           "// tiletune: shared SM_COUNT\n"}) {
    EXPECT_THAT(template_error(std::string(kEntry) + kParam + kBlock + line + kGrid),
                AllOf(StartsWith("t.cu:4: "), HasSubstr("reads 'SM_COUNT'"),
                      HasSubstr("only 'grid' and 'zero_output'")))
        << line;
  }
  EXPECT_THAT(template_error(std::string(kEntry) + kParam + "// tiletune: block SM_COUNT\n" + kGrid),
              HasSubstr("reads 'SM_COUNT'"));
  EXPECT_THAT(template_error(std::string(kEntry) + "// tiletune: param SM_COUNT 1 2\n" + kBlock + kGrid),
              HasSubstr("parameter name 'SM_COUNT' is reserved"));
}

TEST(KernelTemplate, PrecisionIsFp32UnlessDeclared) {
  const std::string base = std::string(kEntry) + kParam + kBlock + kGrid;
  EXPECT_EQ(parse_template(base, "plain.cu").precision, Precision::fp32);
  EXPECT_EQ(parse_template(base + "// tiletune: precision tf32\n", "t.cu").precision, Precision::tf32);
  EXPECT_EQ(parse_template(base + "// tiletune: precision tf32x3\n", "t.cu").precision, Precision::tf32x3);
  EXPECT_EQ(parse_template(base + "// tiletune: precision fp32\n", "t.cu").precision, Precision::fp32);
  EXPECT_EQ(template_error(base + "// tiletune: precision fp16\n"),
            "t.cu:5: unknown precision 'fp16' (expected one of fp32, tf32, tf32x3)");
  EXPECT_EQ(template_error(base + "// tiletune: precision tf32\n// tiletune: precision tf32x3\n"),
            "t.cu:6: duplicate 'precision' (first declared on line 5)");
}

TEST(KernelTemplate, ArchitectureSpecificTargetIsDeclaredAndOnlyItsFamilyCompilesIt) {
  const std::string base = std::string(kEntry) + kParam + kBlock + kGrid;
  const KernelTemplate any = parse_template(base, "plain.cu");
  EXPECT_EQ(any.feature_arch, "");
  EXPECT_EQ(any.compile_arch("sm_80"), "sm_80");
  const KernelTemplate hopper = parse_template(base + "// tiletune: arch sm_90a\n", "t.cu");
  EXPECT_EQ(hopper.feature_arch, "sm_90a");
  EXPECT_EQ(hopper.compile_arch("sm_90"), "sm_90a");
  EXPECT_EQ(hopper.compile_arch("sm_80"), "") << "an sm_90a template cannot run on sm_80";
  EXPECT_EQ(hopper.compile_arch("sm_100"), "");
  EXPECT_EQ(template_error(base + "// tiletune: arch sm_90\n"),
            "t.cu:5: arch 'sm_90' is not an architecture-specific target like sm_90a");
  EXPECT_EQ(template_error(base + "// tiletune: arch sm_90a\n// tiletune: arch sm_100a\n"),
            "t.cu:6: duplicate 'arch' (first declared on line 5)");
}

TEST(KernelTemplate, TensorMapsAreDeclaredInOrderAndRequireAlignedRows) {
  const std::string base = std::string(kEntry) + kParam + kBlock + kGrid;
  const KernelTemplate tmpl = parse_template(
      base + "// tiletune: tensor_map A tf32 swizzle128 32, 64 * T\n"
             "// tiletune: tensor_map B fp32 dense 8 * T + 8, 32\n",
      "t.cu");
  ASSERT_EQ(tmpl.tensor_maps.size(), 2u);
  EXPECT_EQ(tmpl.tensor_maps[0].operand, 'A');
  EXPECT_TRUE(tmpl.tensor_maps[0].tf32);
  EXPECT_TRUE(tmpl.tensor_maps[0].swizzle128);
  EXPECT_EQ(tmpl.tensor_maps[1].operand, 'B');
  EXPECT_FALSE(tmpl.tensor_maps[1].tf32);
  EXPECT_FALSE(tmpl.tensor_maps[1].swizzle128);
  const Configuration config = tmpl.parse_configuration("T=2");
  const LaunchGeometry geometry = tmpl.launch_geometry(config, GemmShape{100, 100, 100});
  ASSERT_EQ(geometry.tensor_maps.size(), 2u);
  EXPECT_EQ(geometry.tensor_maps[0].inner, 32u);
  EXPECT_EQ(geometry.tensor_maps[0].outer, 128u);
  EXPECT_EQ(geometry.tensor_maps[1].inner, 24u);
  EXPECT_EQ(geometry.tensor_maps[1].outer, 32u);
  // TMA reads rows that start 16-byte aligned: each map requires its operand's leading dimension.
  EXPECT_TRUE(tmpl.satisfies_requirements(config, GemmProblem{{100, 100, 100}, 100, 104, 100}));
  const GemmProblem odd_lda{{100, 100, 100}, 101, 100, 100}, odd_ldb{{100, 100, 100}, 100, 102, 100};
  const Expression* unmet = tmpl.violated_requirement(config, &odd_lda);
  ASSERT_NE(unmet, nullptr);
  EXPECT_EQ(unmet->text(), "lda % 4 == 0");
  unmet = tmpl.violated_requirement(config, &odd_ldb);
  ASSERT_NE(unmet, nullptr);
  EXPECT_EQ(unmet->text(), "ldb % 4 == 0");
  // No tensor maps unless declared.
  EXPECT_TRUE(parse_template(base, "plain.cu").tensor_maps.empty());
}

TEST(KernelTemplate, ATensorMapThatCopiesUnalignedOperandsRequiresNoLeadingDimension) {
  const std::string base = std::string(kEntry) + kParam + kBlock + kGrid;
  const KernelTemplate tmpl = parse_template(
      base + "// tiletune: tensor_map A tf32 swizzle128 copy_unaligned 32, 64 * T\n"
             "// tiletune: tensor_map B fp32 dense 8 * T + 8, 32\n",
      "t.cu");
  ASSERT_EQ(tmpl.tensor_maps.size(), 2u);
  EXPECT_TRUE(tmpl.tensor_maps[0].copy_unaligned);
  EXPECT_FALSE(tmpl.tensor_maps[1].copy_unaligned);
  const Configuration config = tmpl.parse_configuration("T=2");
  const LaunchGeometry geometry = tmpl.launch_geometry(config, GemmShape{100, 100, 100});
  EXPECT_TRUE(geometry.tensor_maps[0].copy_unaligned);
  EXPECT_EQ(geometry.tensor_maps[0].outer, 128u);
  // A's map copies where it must: only B's leading dimension is required.
  const GemmProblem odd_lda{{100, 100, 100}, 101, 100, 100}, odd_ldb{{100, 100, 100}, 100, 102, 100};
  EXPECT_EQ(tmpl.violated_requirement(config, &odd_lda), nullptr);
  const Expression* unmet = tmpl.violated_requirement(config, &odd_ldb);
  ASSERT_NE(unmet, nullptr);
  EXPECT_EQ(unmet->text(), "ldb % 4 == 0");
  // The option comes between the layout and the box.
  EXPECT_THAT(template_error(base + "// tiletune: tensor_map A tf32 dense 32, 32 copy_unaligned\n"),
              StartsWith("t.cu:5: bad 'tensor_map' expression: invalid expression '32 copy_unaligned'"));
}

// `copy_unaligned B EXPR` (no tensor map): the launch geometry names the operand, as the build
// stores it, where the expression holds for the build and the shape.
TEST(KernelTemplate, ACopyUnalignedDeclarationNamesTheOperandWhereItsExpressionHolds) {
  const std::string base = std::string(kEntry) + kParam + kBlock + kGrid +
                           "// tiletune: supports op_a op_b\n// tiletune: specializes op_a\n";
  const KernelTemplate tmpl = parse_template(
      base + "// tiletune: copy_unaligned B !OP_A && ceil_div(M, 32 * T) >= 4\n"
             "// tiletune: copy_unaligned A OP_A\n",
      "t.cu");
  ASSERT_EQ(tmpl.unaligned_copies.size(), 2u);
  const Configuration config = tmpl.parse_configuration("T=2");
  EXPECT_THAT(tmpl.launch_geometry(config, {256, 8, 8}).aligned_copies,
              ElementsAre(StoredOperand{'B', false}));
  EXPECT_TRUE(tmpl.launch_geometry(config, {192, 8, 8}).aligned_copies.empty()) << "3 rows of tiles";
  Specialization transposed_a;
  transposed_a.op_a = Op::t;
  EXPECT_THAT(tmpl.launch_geometry(tmpl.build_configuration(config, transposed_a), {256, 8, 8}).aligned_copies,
              ElementsAre(StoredOperand{'A', true}));
  EXPECT_EQ((StoredOperand{'A', true}.width({5, 3, 7})), 5);
  EXPECT_EQ((StoredOperand{'A', true}.rows({5, 3, 7})), 7);
  // Copying changes no requirement: the kernel runs either way.
  EXPECT_TRUE(tmpl.satisfies_requirements(config, GemmProblem{{256, 8, 8}, 9, 9, 8}));
  // Without an expression it always holds.
  EXPECT_THAT(parse_template(base + "// tiletune: copy_unaligned B\n", "t.cu")
                  .launch_geometry(config, {1, 1, 1}).aligned_copies,
              ElementsAre(StoredOperand{'B', false}));

  EXPECT_EQ(template_error(base + "// tiletune: copy_unaligned C\n"),
            "t.cu:7: copy_unaligned of 'C': only A and B are copied (expected 'copy_unaligned "
            "A|B [EXPRESSION]')");
  EXPECT_EQ(template_error(base + "// tiletune: copy_unaligned B\n// tiletune: copy_unaligned B M > 1\n"),
            "t.cu:8: a second copy_unaligned of B");
  EXPECT_THAT(template_error(base + "// tiletune: copy_unaligned B lda > 1\n"),
              HasSubstr("only 'require' may read the leading dimensions"));
  EXPECT_THAT(template_error(std::string(kEntry) + kParam + kBlock + kGrid +
                             "// tiletune: tensor_map B fp32 dense 32, 32\n"
                             "// tiletune: copy_unaligned B\n"),
              HasSubstr("t.cu:6: copy_unaligned B of an operand read through a tensor map"));
}

// `tile ROWS, COLUMNS[, DEPTH]`: C's block tile and its step along K for the performance model, of
// the parameters alone.
TEST(KernelTemplate, ADeclaredTileIsOfTheParametersAlone) {
  const std::string base = std::string(kEntry) + kParam + kBlock + kGrid;
  const auto extents = [](const std::optional<BlockTile>& tile) {
    return tile ? std::vector<std::int64_t>{tile->rows, tile->columns, tile->depth} : std::vector<std::int64_t>{};
  };
  const KernelTemplate tmpl = parse_template(base + "// tiletune: tile 32 * T, 64\n", "t.cu");
  EXPECT_THAT(extents(tmpl.block_tile(tmpl.parse_configuration("T=2"))), ElementsAre(64, 64, 1))
      << "no depth declared: K in steps of 1";
  const KernelTemplate deep = parse_template(base + "// tiletune: tile 32, 64, 8 * T\n", "t.cu");
  EXPECT_THAT(extents(deep.block_tile(deep.parse_configuration("T=2"))), ElementsAre(32, 64, 16));
  EXPECT_EQ(parse_template(base, "t.cu").block_tile(tmpl.parse_configuration("T=2")), std::nullopt);
  EXPECT_THAT(template_error(base + "// tiletune: tile 32, M\n"),
              StartsWith("t.cu:5: expression 'M' reads 'M': 'tile' reads the parameters alone (T)"));
  EXPECT_THAT(template_error(base + "// tiletune: tile 32, 32, K\n"),
              StartsWith("t.cu:5: expression 'K' reads 'K': 'tile' reads the parameters alone (T)"));
  EXPECT_THAT(template_error(base + "// tiletune: tile 32\n"),
              StartsWith("t.cu:5: tile '32' is not two or three extents"));
  EXPECT_THAT(template_error(base + "// tiletune: tile 32, 32, 8, 8\n"),
              StartsWith("t.cu:5: tile '32, 32, 8, 8' is not two or three extents"));
  EXPECT_THAT(template_error(base + "// tiletune: tile 32, 32\n// tiletune: tile 32, 32\n"),
              StartsWith("t.cu:6: duplicate 'tile'"));
  const KernelTemplate empty = parse_template(base + "// tiletune: tile T - 1, 32\n", "t.cu");
  EXPECT_THROW(empty.block_tile(empty.parse_configuration("T=1")), TemplateError);
  const KernelTemplate shallow = parse_template(base + "// tiletune: tile 32, 32, T - 1\n", "t.cu");
  EXPECT_THROW(shallow.block_tile(shallow.parse_configuration("T=1")), TemplateError);
}

TEST(KernelTemplate, BadTensorMapsAreOneLineEach) {
  const std::string base = std::string(kEntry) + kParam + kBlock + kGrid;
  EXPECT_EQ(template_error(base + "// tiletune: tensor_map C tf32 dense 32, 32\n"),
            "t.cu:5: tensor_map of 'C': only A and B have one (expected 'tensor_map A|B "
            "[op_a=t|op_b=t] fp32|tf32 dense|swizzle128 [copy_unaligned] INNER, OUTER')");
  EXPECT_THAT(template_error(base + "// tiletune: tensor_map A fp16 dense 32, 32\n"),
              StartsWith("t.cu:5: tensor_map element 'fp16'"));
  EXPECT_THAT(template_error(base + "// tiletune: tensor_map A tf32 swizzle64 32, 32\n"),
              StartsWith("t.cu:5: tensor_map layout 'swizzle64'"));
  EXPECT_THAT(template_error(base + "// tiletune: tensor_map A tf32 dense 32\n"),
              StartsWith("t.cu:5: tensor_map box '32' is not two extents"));
  EXPECT_EQ(template_error(base + "// tiletune: tensor_map A tf32 dense 32, 32\n"
                                  "// tiletune: tensor_map A tf32 dense 32, 32\n"),
            "t.cu:6: a second tensor_map of A");
  EXPECT_THAT(template_error(base + "// tiletune: tensor_map A tf32 dense 32, W\n"),
              HasSubstr("reads 'W'"));
  // Boxes TMA cannot copy are refused per configuration, when the geometry is evaluated.
  const auto box_error = [&](const std::string& box) {
    const KernelTemplate tmpl =
        parse_template(base + "// tiletune: name geo\n// tiletune: tensor_map A tf32 " + box + "\n",
                       "t.cu");
    return geometry_error(tmpl, tmpl.parse_configuration("T=2"), GemmShape{8, 8, 8});
  };
  EXPECT_EQ(box_error("dense 32, 4 * 128"),
            "geo: tensor_map A for T=2: box 32 x 512 has an extent above 256 (TMA's most)");
  EXPECT_EQ(box_error("dense 6, 32"),
            "geo: tensor_map A for T=2: box 6 x 32 has rows that are not a multiple of 16 bytes");
  EXPECT_EQ(box_error("swizzle128 16, 32"),
            "geo: tensor_map A for T=2: box 16 x 32 has rows other than 128 bytes: swizzle128 "
            "swizzles 128-byte rows");
}

// A transposed operand's map (`tensor_map B op_b=t`): the builds that store B N x K get it in the
// place of B's plain map, with the box and layout of its own declaration.
TEST(KernelTemplate, ATransposedBuildTakesItsOperandsTransposedMap) {
  const std::string base = std::string(kEntry) + kParam + kBlock + kGrid +
                           "// tiletune: supports op_b alpha\n// tiletune: specializes op_b alpha\n";
  const KernelTemplate tmpl = parse_template(
      base + "// tiletune: tensor_map A tf32 swizzle128 32, 64\n"
             "// tiletune: tensor_map B tf32 dense copy_unaligned 8 * T + 8, 32\n"
             "// tiletune: tensor_map B op_b=t tf32 swizzle128 copy_unaligned 32, 64 * T\n",
      "t.cu");
  ASSERT_EQ(tmpl.tensor_maps.size(), 3u);
  EXPECT_EQ(tmpl.tensor_map_parameters(), 2u) << "one parameter per operand";
  EXPECT_TRUE(tmpl.tensor_maps[2].transposed);
  const Configuration config = tmpl.parse_configuration("T=2");
  const GemmShape shape{100, 60, 30};
  const LaunchGeometry plain = tmpl.launch_geometry(config, shape);
  ASSERT_EQ(plain.tensor_maps.size(), 2u);
  EXPECT_FALSE(plain.tensor_maps[1].transposed);
  EXPECT_FALSE(plain.tensor_maps[1].swizzle128);
  EXPECT_EQ(plain.tensor_maps[1].inner, 24u);
  EXPECT_EQ(plain.tensor_maps[1].width(shape), 60);  // B K x N: N wide, K rows
  EXPECT_EQ(plain.tensor_maps[1].rows(shape), 30);
  for (const Specialization& build : {Specialization{Op::n, Op::t}, Specialization{Op::n, Op::t, true}}) {
    const LaunchGeometry transposed = tmpl.launch_geometry(tmpl.build_configuration(config, build), shape);
    ASSERT_EQ(transposed.tensor_maps.size(), 2u);
    EXPECT_FALSE(transposed.tensor_maps[0].transposed) << "A's map is A's in every build";
    const TensorMapBox& b = transposed.tensor_maps[1];
    EXPECT_EQ(b.operand, 'B');
    EXPECT_TRUE(b.transposed);
    EXPECT_TRUE(b.swizzle128);
    EXPECT_TRUE(b.copy_unaligned);
    EXPECT_EQ(b.inner, 32u);
    EXPECT_EQ(b.outer, 128u);
    EXPECT_EQ(b.width(shape), 30);  // B N x K: K wide, N rows
    EXPECT_EQ(b.rows(shape), 60);
  }
  // An alpha build stores B as the plain one does.
  EXPECT_FALSE(tmpl.launch_geometry(tmpl.build_configuration(config, Specialization{.alpha = true}), shape)
                   .tensor_maps[1].transposed);
}

TEST(KernelTemplate, BadTransposedTensorMapsAreOneLineEach) {
  const std::string base = std::string(kEntry) + kParam + kBlock + kGrid;
  const std::string specialized = base + "// tiletune: supports op_b\n// tiletune: specializes op_b\n";
  const std::string plain_b = "// tiletune: tensor_map B tf32 dense 136, 32\n";
  const std::string transposed_b = "// tiletune: tensor_map B op_b=t tf32 swizzle128 32, 128\n";
  // The qualifier names the operand's own transpose.
  EXPECT_EQ(template_error(specialized + "// tiletune: tensor_map B op_a=t tf32 dense 32, 32\n"),
            "t.cu:7: tensor_map B op_a=t: a map of B is qualified 'op_b=t' (the builds whose B is "
            "stored transposed)");
  // Only builds that store B transposed take it: the template specializes op_b.
  EXPECT_EQ(template_error(base + plain_b + transposed_b),
            "t.cu:6: tensor_map B op_b=t, but the template does not specialize op_b ('// "
            "tiletune: specializes op_b'): no build stores B transposed");
  // It stands in for B's plain map, which the entry takes.
  EXPECT_EQ(template_error(specialized + transposed_b),
            "t.cu:7: tensor_map B op_b=t without a tensor_map B for the other builds");
  EXPECT_EQ(template_error(specialized + plain_b + transposed_b + transposed_b),
            "t.cu:9: a second tensor_map of B op_b=t");
  // A requirement of aligned rows holds for every build: both maps copy unaligned rows, or neither.
  EXPECT_EQ(template_error(specialized + plain_b +
                           "// tiletune: tensor_map B op_b=t tf32 swizzle128 copy_unaligned 32, 128\n"),
            "t.cu:8: tensor_map B op_b=t and tensor_map B differ in copy_unaligned: declare it for "
            "both or neither");
  // A template that serves a transposed B through a map of B describes the stored matrix per build.
  EXPECT_EQ(template_error(specialized + plain_b),
            "t.cu:7: tensor_map B of a template that serves op_b: op_b must be specialized and a "
            "'tensor_map B op_b=t' describe the transposed operand");
  EXPECT_EQ(template_error(base + "// tiletune: supports op_b\n" + plain_b),
            "t.cu:6: tensor_map B of a template that serves op_b: op_b must be specialized and a "
            "'tensor_map B op_b=t' describe the transposed operand");
  // A map of A is free of B's transpose.
  EXPECT_NO_THROW(parse_template(specialized + "// tiletune: tensor_map A tf32 swizzle128 32, 64\n" +
                                     plain_b + transposed_b,
                                 "t.cu"));
}

TEST(KernelTemplate, LaunchGeometryValidatesItsValues) {
  const std::string head = std::string(kEntry) + "// tiletune: param T 0 1 -1\n";
  const KernelTemplate tmpl = parse_template(
      head +
          "// tiletune: block T\n// tiletune: grid M * N * K\n// tiletune: shared T * 4\n"
          "// tiletune: name geo\n",
      "t.cu");
  const auto config = [&](int t) { return tmpl.parse_configuration("T=" + std::to_string(t)); };
  const GemmShape small{1, 1, 1};

  EXPECT_EQ(tmpl.launch_geometry(config(1), small).dynamic_shared_bytes, 4u);
  EXPECT_THAT(geometry_error(tmpl, config(0), small),
              AllOf(StartsWith("geo: block x for T=0 at 1x1x1"), HasSubstr("'T' is 0")));
  EXPECT_THAT(geometry_error(tmpl, config(-1), small), HasSubstr("block x"));
  // 65536^3 = 2^48 does not fit in 32 bits; (2^31 - 1)^3 does not even fit in 64.
  EXPECT_THAT(geometry_error(tmpl, config(1), GemmShape{65536, 65536, 65536}),
              AllOf(HasSubstr("grid x"), HasSubstr("4294967295")));
  EXPECT_THAT(geometry_error(tmpl, config(1), GemmShape{2147483647, 2147483647, 2147483647}),
              AllOf(HasSubstr("grid x"), HasSubstr("overflow")));
  EXPECT_EQ(tmpl.launch_geometry(config(1), GemmShape{4294967295, 1, 1}).grid[0], 4294967295u);

  const KernelTemplate negative_shared = parse_template(
      std::string(kEntry) + kParam + kBlock + kGrid + "// tiletune: shared T - 2\n", "neg.cu");
  EXPECT_THAT(geometry_error(negative_shared, negative_shared.parse_configuration("T=1"), small),
              AllOf(StartsWith("neg: shared for T=1"), HasSubstr("is -1")));
}

TEST(KernelTemplate, MacroDefinitions) {
  const KernelTemplate tmpl = load_template(kTemplates / "tiled.cu");
  EXPECT_THAT(tmpl.macro_definitions(tmpl.parse_configuration("TILE=16,PAD=1,SWIZZLE=0")),
              ElementsAre("-DTT_TILE=16", "-DTT_PAD=1", "-DTT_SWIZZLE=0"));
}

TEST(KernelTemplate, BindingsAndRequirements) {
  const KernelTemplate tmpl = load_template(kTemplates / "tiled.cu");
  const Configuration both = tmpl.parse_configuration("TILE=8,PAD=1,SWIZZLE=1");
  EXPECT_FALSE(tmpl.satisfies_requirements(both));
  EXPECT_TRUE(tmpl.satisfies_requirements(tmpl.parse_configuration("TILE=8,PAD=1,SWIZZLE=0")));

  const GemmShape shape{1, 2, 3};
  const Bindings bindings = tmpl.bindings(both, &shape);
  EXPECT_EQ(bindings.size(), 6u);
  EXPECT_EQ(bindings.at("TILE"), 8);
  EXPECT_EQ(bindings.at("M"), 1);
  EXPECT_EQ(bindings.at("N"), 2);
  EXPECT_EQ(bindings.at("K"), 3);
  EXPECT_EQ(tmpl.bindings(both).size(), 3u);
}

TEST(KernelTemplate, ShapeRequirementsNeedAShape) {
  const KernelTemplate tmpl = parse_template(
      std::string(kEntry) + "// tiletune: param T 8 16\n// tiletune: require M % T == 0\n" +
          kBlock + kGrid,
      "t.cu");
  const Configuration t16 = tmpl.parse_configuration("T=16");
  const GemmShape divisible{32, 1, 1}, not_divisible{40, 1, 1};
  EXPECT_TRUE(tmpl.satisfies_requirements(t16));  // skipped without a shape
  EXPECT_TRUE(tmpl.satisfies_requirements(t16, &divisible));
  EXPECT_FALSE(tmpl.satisfies_requirements(t16, &not_divisible));
}

TEST(KernelTemplate, RequirementsMayReadLeadingDimensions) {
  const KernelTemplate tmpl = parse_template(
      std::string(kEntry) + "// tiletune: param T 4 8\n// tiletune: require lda % T == 0 && ldb >= N\n" +
          "// tiletune: require M % 2 == 0\n" + kBlock + kGrid,
      "t.cu");
  const Configuration t4 = tmpl.parse_configuration("T=4");
  EXPECT_TRUE(tmpl.satisfies_requirements(t4));  // skipped without a problem, as for compile
  EXPECT_EQ(tmpl.violated_requirement(t4), nullptr);
  const GemmProblem aligned{{2, 3, 5}, 8, 3, 3}, odd_lda{{2, 3, 5}, 6, 3, 3}, odd_m{{3, 3, 5}, 8, 3, 3};
  EXPECT_TRUE(tmpl.satisfies_requirements(t4, aligned));
  EXPECT_NO_THROW(tmpl.check_requirements(t4, aligned));
  ASSERT_NE(tmpl.violated_requirement(t4, &odd_lda), nullptr);
  EXPECT_EQ(tmpl.violated_requirement(t4, &odd_lda)->text(), "lda % T == 0 && ldb >= N");
  EXPECT_EQ(tmpl.violated_requirement(t4, &odd_m)->text(), "M % 2 == 0");
  try {
    tmpl.check_requirements(t4, odd_lda);
    FAIL() << "a problem with lda = 6 passed 'lda % 4 == 0'";
  } catch (const RequirementNotMet& e) {
    EXPECT_EQ(std::string(e.what()),
              "t [T=4]: the problem 2x3x5 lda=6 ldb=3 ldc=3 does not meet requirement "
              "'lda % T == 0 && ldb >= N'");
  }
  const GemmShape k20{2, 3, 20}, k10{2, 3, 10};  // a shape stands for its packed problem
  EXPECT_TRUE(tmpl.satisfies_requirements(t4, &k20));
  EXPECT_FALSE(tmpl.satisfies_requirements(t4, &k10));
  const Bindings bindings = tmpl.bindings(t4, odd_lda);
  EXPECT_EQ(bindings.at("lda"), 6);
  EXPECT_EQ(bindings.at("ldb"), 3);
  EXPECT_EQ(bindings.at("ldc"), 3);
}

TEST(KernelTemplate, OnlyRequirementsMayReadLeadingDimensions) {
  const std::string head = std::string(kEntry) + kParam;
  EXPECT_THAT(template_error(head + kBlock + "// tiletune: grid ceil_div(lda, T)\n"),
              AllOf(StartsWith("t.cu:4: "), HasSubstr("reads 'lda'"), HasSubstr("only 'require'")));
  EXPECT_THAT(template_error(head + kBlock + kGrid + "// tiletune: shared ldc * 4\n"),
              AllOf(StartsWith("t.cu:5: "), HasSubstr("reads 'ldc'")));
  EXPECT_THAT(template_error(std::string(kEntry) + "// tiletune: param ldb 1 2\n" + kBlock + kGrid),
              HasSubstr("parameter name 'ldb' is reserved"));
}

TEST(KernelTemplate, TuningLimitsSayWhereAConfigurationIsWorthTuningAndAreNoPrecondition) {
  const KernelTemplate tmpl = parse_template(
      std::string(kEntry) + "// tiletune: param T 4 8\n// tiletune: tune_if T < 2 * max(M, 2)\n" +
          "// tiletune: tune_if M > 100 || 16 % (T - 4) == 0\n" + kBlock + kGrid,
      "t.cu");
  ASSERT_EQ(tmpl.tuning_limits.size(), 2u);
  EXPECT_TRUE(tmpl.requirements.empty());
  const Configuration t4 = tmpl.parse_configuration("T=4"), t8 = tmpl.parse_configuration("T=8");
  EXPECT_TRUE(tmpl.worth_tuning(t8, {5, 1, 1}));
  EXPECT_FALSE(tmpl.worth_tuning(t8, {4, 1, 1})) << "8 < 2 * 4 is false";
  EXPECT_FALSE(tmpl.worth_tuning(t4, {5, 1, 1})) << "a division by zero does not hold";
  EXPECT_TRUE(tmpl.worth_tuning(t4, {101, 1, 1}));
  // No precondition: every problem the requirements admit stays admissible.
  const GemmProblem tiny = GemmProblem::packed({1, 1, 1});
  EXPECT_TRUE(tmpl.satisfies_requirements(t8, tiny));
  EXPECT_NO_THROW(tmpl.check_requirements(t8, tiny));
  EXPECT_THAT(template_error(std::string(kEntry) + kParam + "// tiletune: tune_if lda > 4\n" + kBlock + kGrid),
              AllOf(StartsWith("t.cu:3: "), HasSubstr("reads 'lda'")));
}

TEST(KernelTemplate, ConfigurationToStringAndAt) {
  const Configuration config{{{"TILE", 16}, {"PAD", 1}, {"SWIZZLE", 0}}};
  EXPECT_EQ(config.to_string(), "TILE=16,PAD=1,SWIZZLE=0");
  EXPECT_EQ(config.at("PAD"), 1);
  EXPECT_THROW(config.at("WARP"), std::out_of_range);
  EXPECT_EQ(Configuration{}.to_string(), "");
}

TEST(KernelTemplate, ParseConfigurationRoundTrips) {
  const KernelTemplate tmpl = load_template(kTemplates / "tiled.cu");
  for (const Configuration& config : enumerate_configurations(tmpl)) {
    EXPECT_EQ(tmpl.parse_configuration(config.to_string()), config);
  }
  const Configuration expected{{{"TILE", 32}, {"PAD", 1}, {"SWIZZLE", 0}}};
  EXPECT_EQ(tmpl.parse_configuration(" SWIZZLE = 0 , TILE=32,\tPAD=1 "), expected);
}

TEST(KernelTemplate, ParseConfigurationErrors) {
  const KernelTemplate tmpl = load_template(kTemplates / "tiled.cu");
  EXPECT_THAT(configuration_error(tmpl, "TILE=16,PAD=0,SWIZZLE=0,WARP=2"),
              AllOf(StartsWith("tiled: invalid configuration 'TILE=16,PAD=0,SWIZZLE=0,WARP=2'"),
                    HasSubstr("unknown parameter 'WARP'"), HasSubstr("TILE, PAD, SWIZZLE")));
  EXPECT_THAT(configuration_error(tmpl, "TILE=16,PAD=0"), HasSubstr("missing parameter 'SWIZZLE'"));
  EXPECT_THAT(configuration_error(tmpl, ""), HasSubstr("missing parameter 'TILE'"));
  EXPECT_THAT(configuration_error(tmpl, "TILE=16,PAD=0,SWIZZLE=0,TILE=8"),
              HasSubstr("parameter 'TILE' given twice"));
  EXPECT_THAT(
      configuration_error(tmpl, "TILE=12,PAD=0,SWIZZLE=0"),
      AllOf(HasSubstr("12 is not a candidate of TILE"), HasSubstr("candidates: 8, 16, 32")));
  EXPECT_THAT(configuration_error(tmpl, "TILE=16,PAD,SWIZZLE=0"),
              HasSubstr("'PAD' is not NAME=VALUE"));
  EXPECT_THAT(configuration_error(tmpl, "TILE=sixteen,PAD=0,SWIZZLE=0"),
              HasSubstr("'sixteen' of TILE is not an integer"));
  EXPECT_THAT(configuration_error(tmpl, "TILE=16,,PAD=0,SWIZZLE=0"), HasSubstr("NAME=VALUE"));
}

TEST(KernelTemplate, TemplateWithoutParameters) {
  const KernelTemplate tmpl =
      parse_template(std::string(kEntry) + "// tiletune: block 32\n" + kGrid, "t.cu");
  EXPECT_EQ(tmpl.parse_configuration(""), Configuration{});
  EXPECT_THAT(tmpl.launch_geometry(Configuration{}, GemmShape{1, 1, 1}).block,
              ElementsAre(32u, 1u, 1u));
}

// `specializes`: the parts each build compiles in, their values as the build's macros, and the
// declarations it refuses in one line.
TEST(KernelTemplate, SpecializedPartsAreBuildsOfEachConfiguration) {
  const std::string base = std::string(kEntry) + kParam + kBlock + kGrid;
  const KernelTemplate tmpl = parse_template(
      base + "// tiletune: supports op_a op_b alpha_beta batch epilogue\n"
             "// tiletune: specializes op_b beta epilogue\n"
             "// tiletune: shared T * (OP_B ? 8 : 4)\n",
      "t.cu");
  const Configuration config = tmpl.parse_configuration("T=2");
  GemmProblem problem = GemmProblem::packed({8, 8, 8});
  problem.op_a = Op::t;  // served at run time: no part of the build
  problem.lda = 8;
  problem.op_b = Op::t;
  problem.beta = 0.5f;
  problem.epilogue = Epilogue::bias_relu;
  const Specialization build = tmpl.specialization(problem);
  EXPECT_EQ(build.to_string(), "op_b=t beta epilogue=bias_relu");
  EXPECT_EQ(Specialization::parse(build.to_string()), build);
  const Configuration built = tmpl.build_configuration(config, build);
  EXPECT_EQ(built.to_string(), "T=2,OP_B=1,BETA=1,EPILOGUE=3");
  EXPECT_THAT(tmpl.macro_definitions(built), ElementsAre("-DTT_T=2", "-DTT_OP_B=1", "-DTT_BETA=1",
                                                         "-DTT_EPILOGUE=3"));
  EXPECT_EQ(tmpl.build_configuration(config, Specialization{}), config);  // the plain build
  EXPECT_EQ(tmpl.launch_geometry(built, {8, 8, 8}).dynamic_shared_bytes, 16u);
  EXPECT_EQ(tmpl.launch_geometry(config, {8, 8, 8}).dynamic_shared_bytes, 8u);
  EXPECT_EQ(tmpl.builds(config).size(), 2u * 2u * 6u);  // op_b, beta, the epilogue
  EXPECT_TRUE(tmpl.builds(config).front().plain());

  EXPECT_THAT(template_error(base + "// tiletune: supports op_a\n// tiletune: specializes op_b\n"),
              HasSubstr("specializes op_b but supports op_a"));
  EXPECT_THAT(template_error(std::string(kEntry) + "// tiletune: param OP_A 0 1\n// tiletune: block 1\n" +
                             kGrid + "// tiletune: supports op_a\n// tiletune: specializes op_a\n"),
              HasSubstr("parameter name 'OP_A' is reserved for a specialized part"));
  EXPECT_THAT(template_error(std::string(kEntry) + kParam + "// tiletune: block T * (OP_B + 1)\n" + kGrid +
                             "// tiletune: supports op_b\n// tiletune: specializes op_b\n"),
              HasSubstr("only 'require', 'grid', 'shared', 'tensor_map' and 'copy_unaligned' may "
                        "read a build's specialized parts"));
  EXPECT_THAT(template_error(base + "// tiletune: supports op_b\n// tiletune: specializes op_b op_b\n"),
              HasSubstr("specializes 'op_b' twice"));
  EXPECT_THROW(Specialization::parse("op_c=t"), std::invalid_argument);
}

// A requirement of the parts decides which builds exist: a template that serves op_a=t only with
// op_b=t has no build of op_a=t alone, says so for such a problem (for the template, and for the
// configuration where the requirement also reads a parameter), and its grid reads the build's parts.
TEST(KernelTemplate, ARequirementOfTheBuildsPartsLeavesBuildsOut) {
  const std::string base = std::string(kEntry) + "// tiletune: param T 1 2\n" + kBlock +
                           "// tiletune: grid OP_A ? M : N\n"
                           "// tiletune: supports op_a op_b\n// tiletune: specializes op_a op_b\n";
  const KernelTemplate tmpl = parse_template(base + "// tiletune: require OP_A == 0 || OP_B == 1\n", "t.cu");
  const Configuration config = tmpl.parse_configuration("T=2");
  std::vector<std::string> builds;
  for (const Specialization& build : tmpl.builds(config)) builds.push_back(build.to_string());
  EXPECT_THAT(builds, ElementsAre("plain", "op_b=t", "op_a=t op_b=t"));

  GemmProblem tn = GemmProblem::packed({8, 6, 4});
  tn.op_a = Op::t;
  tn.lda = 8;
  EXPECT_THAT(tmpl.unsupported(tn).value_or(""),
              AllOf(HasSubstr("has no build op_a=t"), HasSubstr("'OP_A == 0 || OP_B == 1'")));
  GemmProblem tt = tn;
  tt.op_b = Op::t;
  tt.ldb = 4;
  EXPECT_EQ(tmpl.unsupported(tt), std::nullopt);
  EXPECT_EQ(tmpl.unsupported(tt, config), std::nullopt);
  EXPECT_EQ(tmpl.launch_geometry(tmpl.build_configuration(config, tt), tt.shape).grid[0], 8u);
  EXPECT_EQ(tmpl.launch_geometry(config, tt.shape).grid[0], 6u);

  // Reading a parameter too, the requirement is the configuration's.
  const KernelTemplate mixed = parse_template(base + "// tiletune: require OP_A == 0 || T == 1\n", "t.cu");
  EXPECT_EQ(mixed.unsupported(tn), std::nullopt);
  EXPECT_THAT(mixed.unsupported(tn, config).value_or(""),
              AllOf(HasSubstr("[T=2] has no build op_a=t"), HasSubstr("'OP_A == 0 || T == 1'")));
  EXPECT_EQ(mixed.unsupported(tn, mixed.parse_configuration("T=1")), std::nullopt);
  EXPECT_EQ(mixed.builds(config).size(), 2u);  // plain, op_b=t
}

// tf32_wgmma_tma's split K follows the shape and the GPU: as many slices as make SPLIT_WAVES waves
// of the tiles' blocks over the multiprocessors (none under 8 steps of K), C cleared only where it
// splits, and a configuration that may split leaves beta and the epilogue to the launcher's pass.
TEST(KernelTemplate, TmaSplitsKIntoTheSlicesThatFillTheGpusWaves) {
  const KernelTemplate tmpl = load_template(kTemplates / "tf32_wgmma_tma.cu");
  const Configuration one = tmpl.parse_configuration("BM=64,STAGES=4,GROUP=1,SPLIT_WAVES=1");
  const Configuration two = tmpl.parse_configuration("BM=64,STAGES=4,GROUP=1,SPLIT_WAVES=2");
  const Configuration none = tmpl.parse_configuration("BM=64,STAGES=4,GROUP=1,SPLIT_WAVES=0");
  const GemmShape decode{16, 4096, 4096};  // 32 tiles: 132 / 32 = 4 slices, 264 / 32 = 8
  EXPECT_EQ(tmpl.launch_geometry(one, decode, 132).grid[2], 4u);
  EXPECT_TRUE(tmpl.launch_geometry(one, decode, 132).zero_output);
  EXPECT_EQ(tmpl.launch_geometry(two, decode, 132).grid[2], 8u);
  EXPECT_EQ(tmpl.launch_geometry(none, decode, 132).grid[2], 1u);
  EXPECT_FALSE(tmpl.launch_geometry(none, decode, 132).zero_output);
  // 86 tiles fill one wave's 132 blocks once: a split only where two waves are asked for.
  const GemmShape wide{8, 11008, 4096};
  EXPECT_EQ(tmpl.launch_geometry(one, wide, 132).grid[2], 1u);
  EXPECT_FALSE(tmpl.launch_geometry(one, wide, 132).zero_output);
  EXPECT_EQ(tmpl.launch_geometry(two, wide, 132).grid[2], 3u);
  // One tile and a long K: the slices are capped at K / 256 (8 steps each).
  EXPECT_EQ(tmpl.launch_geometry(one, GemmShape{64, 64, 1024}, 132).grid[2], 4u);
  EXPECT_EQ(tmpl.launch_geometry(one, GemmShape{64, 64, 65536}, 132).grid[2], 132u);

  EXPECT_TRUE(tmpl.may_add_into_c(one));
  EXPECT_FALSE(tmpl.may_add_into_c(none));
  // Where it may split, every launch passes over C after the kernel, split or not.
  EXPECT_TRUE(tmpl.launch_geometry(one, wide, 132).epilogue_pass);
  EXPECT_FALSE(tmpl.launch_geometry(none, decode, 132).epilogue_pass);
  GemmProblem with_beta = GemmProblem::packed(decode);
  with_beta.beta = 1;
  with_beta.epilogue = Epilogue::bias_gelu;
  EXPECT_EQ(tmpl.unsupported(with_beta, one), std::nullopt);
  EXPECT_EQ(tmpl.unsupported(with_beta, none), std::nullopt);
}

// A configuration that may add into C is built without beta and the epilogue, which the launcher's
// pass applies; its other parts stay in its build, and one that keeps C keeps them all.
TEST(KernelTemplate, AConfigurationThatMayAddIntoCLeavesBetaAndTheEpilogueToThePass) {
  const KernelTemplate tmpl = load_template(kTemplates / "warp_tiled.cu");
  const Configuration split =
      tmpl.parse_configuration("BM=32,BN=64,BK=16,TM=4,TN=4,STAGES=3,SWIZZLE=0,SPLIT_K=16,STREAM_K=0");
  const Configuration whole =
      tmpl.parse_configuration("BM=32,BN=64,BK=16,TM=4,TN=4,STAGES=3,SWIZZLE=0,SPLIT_K=1,STREAM_K=0");
  const Specialization asked{Op::n, Op::t, true, true, false, Epilogue::bias_relu};
  EXPECT_EQ(tmpl.kernel_build(split, asked), (Specialization{Op::n, Op::t, true, false, false, Epilogue::none}));
  EXPECT_EQ(tmpl.kernel_build(whole, asked), asked);
  EXPECT_EQ(tmpl.build_configuration(split, asked).to_string(),
            tmpl.with_parts(split, Specialization{Op::n, Op::t, true}).to_string());
  // Its builds still name every combination: the fuzz draws beta and epilogues for each.
  const std::vector<Specialization> builds = tmpl.builds(split);
  EXPECT_EQ(builds.size(), tmpl.builds(whole).size());
  EXPECT_NE(std::find(builds.begin(), builds.end(), asked), builds.end());
}

}  // namespace
}  // namespace tiletune
