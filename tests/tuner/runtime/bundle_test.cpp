// Bundles: what export selects from a database, the files it writes (folder or C++), and reading
// them back, with every damage refused in one line (tuner/runtime/bundle.h, bundle_export.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <set>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/support/skip_without_nvrtc.h"
#include "tests/support/test_folder.h"
#include "tests/support/tuned_fixture.h"
#include "tests/tuner/runtime/export_database.h"
#include "tiletune/tiletune.h"
#include "tuner/runtime/bundle.h"
#include "tuner/runtime/bundle_export.h"
#include "tuner/runtime/performance_model.h"
#include "tuner/runtime/performance_model.h"
#include "tuner/runtime/selection.h"
#include "tuner/runtime/workload_plan.h"

namespace tiletune::runtime {
namespace {

namespace fs = std::filesystem;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using testing_support::kA100;
using testing_support::kH100;
using testing_support::kLargeShape;
using testing_support::kSmallShape;

// Everything a RecordSet holds, one line each, for comparing two of them.
std::string describe(const RecordSet& records) {
  std::ostringstream out;
  out.precision(17);
  for (const RecordedGpu& g : records.gpus) {
    out << "gpu " << g.name << " " << g.arch() << " " << g.sm_count << " " << g.memory_bytes << "\n";
  }
  for (const RecordedTemplate& t : records.templates) {
    out << "template " << t.name << " " << t.source_hash << " " << t.path << " " << t.source.size()
        << (t.parsed ? " parsed " + t.parsed->entry : " unparsed") << "\n";
  }
  for (const RecordedChoice& c : records.choices) {
    out << "choice " << records.gpus[c.gpu].name << " " << records.templates[c.templ].name << " "
        << c.config << " " << c.shape.to_string() << " " << c.median_ms << " " << c.min_ms << " "
        << c.max_ms << " " << c.runs << " " << c.tflops << " " << c.registers << " "
        << c.static_shared_bytes << " " << c.dynamic_shared_bytes << " " << c.fuzz_cases << " "
        << c.recorded_at << "\n";
  }
  for (const RecordedModel& m : records.models) {
    out << "model " << records.gpus[m.gpu].name << " " << records.templates[m.templ].name << "\n";
    for (const auto& [config, c] : m.configurations) {
      out << "  " << config;
      for (const double coefficient : c.coefficients) out << " " << coefficient;
      out << " " << c.shapes << " " << c.own_fit << " " << c.measured_beyond_limits << "\n";
    }
  }
  return out.str();
}

// The configurations chosen for one GPU, template and shape, in order.
std::vector<std::string> chosen(const RecordSet& records, const std::string& gpu,
                                const std::string& templ, GemmShape shape) {
  std::vector<std::string> configs;
  for (const RecordedChoice& c : records.choices) {
    if (records.gpus[c.gpu].name == gpu && records.templates[c.templ].name == templ && c.shape == shape) {
      configs.push_back(c.config);
    }
  }
  return configs;
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Where a bundle keeps a file, as its manifest says (the names carry the content's hash).
std::string source_file(const fs::path& bundle, const std::string& name) {
  const nlohmann::json manifest = nlohmann::json::parse(read_bytes(bundle / "manifest.json"));
  for (const auto& t : manifest["templates"]) {
    if (t["name"] == name) return t["source_file"];
  }
  return "no source of " + name;
}
std::string cubin_file(const fs::path& bundle, const std::string& config, const std::string& arch) {
  for (const BundleCubin& cubin : read_bundle(bundle).cubins) {
    if (cubin.config == config && cubin.arch == arch) return cubin.file;
  }
  return "no cubin of " + config;
}

// --- selection (no NVRTC) ------------------------------------------------------------------------

class ExportSelection : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = testing_support::fresh_test_folder("export-selection");
    testing_support::write_export_database(folder_ / "tiletune.db");
    all_ = load_database_records(folder_ / "tiletune.db");
  }
  void TearDown() override { fs::remove_all(folder_); }
  fs::path folder_;
  RecordSet all_;
};

TEST_F(ExportSelection, KeepsTheFastestPerShapeOfEveryGpuAndTemplate) {
  const RecordSet selected = select_for_export(all_, {});
  EXPECT_EQ(chosen(selected, kH100, "tiled", kSmallShape),
            (std::vector<std::string>{"TILE=8,PAD=0,SWIZZLE=0", "TILE=16,PAD=0,SWIZZLE=0",
                                      "TILE=16,PAD=1,SWIZZLE=0", "TILE=32,PAD=0,SWIZZLE=1"}));
  EXPECT_EQ(chosen(selected, kH100, "tiled", kLargeShape),
            (std::vector<std::string>{"TILE=32,PAD=1,SWIZZLE=0", "TILE=32,PAD=0,SWIZZLE=1",
                                      "TILE=16,PAD=1,SWIZZLE=0", "TILE=16,PAD=0,SWIZZLE=0"}));
  // The compile error recorded on the A100 is no choice.
  EXPECT_EQ(chosen(selected, kA100, "tiled", kSmallShape),
            (std::vector<std::string>{"TILE=16,PAD=0,SWIZZLE=0", "TILE=8,PAD=0,SWIZZLE=0"}));
  EXPECT_EQ(selected.choices.size(), 4u + 4u + 2u + 4u);
  // One per shape, and naive_aligned's fastest that fits any problem.
  EXPECT_EQ(select_for_export(all_, {{}, {}, 1, {}}).choices.size(), 3u + 2u);
}

TEST_F(ExportSelection, AddsTheFastestConfigurationThatFitsAnyProblemWhenTheFastestDoNot) {
  // naive_aligned's two fastest need lda % 4 == 0: the third, which fits any problem, comes along.
  EXPECT_EQ(chosen(select_for_export(all_, {{}, {}, 2, {}}), kH100, "naive_aligned", kSmallShape),
            (std::vector<std::string>{"BLOCK_X=64,BLOCK_Y=4", "BLOCK_X=32,BLOCK_Y=8",
                                      "BLOCK_X=16,BLOCK_Y=8"}));
  // Among the fastest already: nothing is added.
  EXPECT_EQ(chosen(select_for_export(all_, {{}, {}, 3, {}}), kH100, "naive_aligned", kSmallShape).size(), 3u);
  // tiled's configurations all fit any problem: one per shape.
  EXPECT_EQ(chosen(select_for_export(all_, {{}, {}, 1, {}}), kH100, "tiled", kLargeShape),
            std::vector<std::string>{"TILE=32,PAD=1,SWIZZLE=0"});
}

TEST_F(ExportSelection, FitsAnyProblemReadsTheRequirementsWithTheParametersAlone) {
  const KernelTemplate aligned = parse_template(testing_support::naive_aligned_source(), "test");
  EXPECT_TRUE(fits_any_problem(aligned, aligned.parse_configuration("BLOCK_X=16,BLOCK_Y=8")));
  EXPECT_FALSE(fits_any_problem(aligned, aligned.parse_configuration("BLOCK_X=32,BLOCK_Y=8")));
}

TEST_F(ExportSelection, FiltersByTemplateAndGpu) {
  const RecordSet tiled = select_for_export(all_, {{"tiled"}, {}, 4, {}});
  ASSERT_EQ(tiled.templates.size(), 1u);
  EXPECT_EQ(tiled.templates[0].name, "tiled");
  EXPECT_EQ(tiled.gpus.size(), 2u);

  const RecordSet a100 = select_for_export(all_, {{}, {kA100}, 4, {}});
  ASSERT_EQ(a100.gpus.size(), 1u);
  EXPECT_EQ(a100.gpus[0].name, kA100);
  EXPECT_EQ(a100.templates.size(), 1u);  // naive_aligned has no A100 record
  EXPECT_EQ(a100.choices.size(), 2u);

  // A filter that matches nothing recorded, or nothing together, is one line.
  try {
    select_for_export(all_, {{"warp_tiled"}, {}, 4, {}});
    FAIL() << "an unknown template was exported";
  } catch (const ExportInputError& e) {
    EXPECT_STREQ(e.what(), "no record of template 'warp_tiled' to export");
  }
  EXPECT_THROW(select_for_export(all_, {{}, {"NVIDIA GeForce RTX 4090"}, 4, {}}), ExportInputError);
  EXPECT_THROW(select_for_export(all_, {{"naive_aligned"}, {kA100}, 4, {}}), ExportInputError);
}

// --- cubin_for (no NVRTC) ------------------------------------------------------------------------

Bundle bundle_of_cubins(const std::vector<std::string>& archs) {
  Bundle bundle;
  bundle.origin = "test";
  std::map<std::string, std::string> files;
  for (const std::string& arch : archs) {
    const std::string bytes = "cubin for " + arch;
    const std::string file = bundle_cubin_file("tiled", "TILE=16,PAD=0,SWIZZLE=0", arch, bytes);
    files[file] = bytes;
    bundle.cubins.push_back({"00000000000000aa", "TILE=16,PAD=0,SWIZZLE=0", arch, file,
                             files[file].size(), fnv1a_hex(files[file])});
  }
  bundle.read_file = [files](const std::string& relative) -> std::optional<std::vector<char>> {
    const auto f = files.find(relative);
    if (f == files.end()) return std::nullopt;
    return std::vector<char>(f->second.begin(), f->second.end());
  };
  return bundle;
}

std::string cubin_text(const Bundle& bundle, int major, int minor) {
  const auto cubin = bundle.cubin_for("00000000000000aa", "TILE=16,PAD=0,SWIZZLE=0", major, minor);
  return cubin ? std::string(cubin->begin(), cubin->end()) : "none";
}

TEST(BundleCubins, ExactArchElseTheHighestMinorOfTheSameMajorAtMostTheDevices) {
  const Bundle hopper = bundle_of_cubins({"sm_90"});
  EXPECT_EQ(cubin_text(hopper, 9, 0), "cubin for sm_90");
  EXPECT_EQ(cubin_text(hopper, 8, 0), "none");
  EXPECT_EQ(cubin_text(hopper, 10, 0), "none");  // SASS does not run on another major

  const Bundle ampere = bundle_of_cubins({"sm_80", "sm_86", "sm_90"});
  EXPECT_EQ(cubin_text(ampere, 8, 0), "cubin for sm_80");
  EXPECT_EQ(cubin_text(ampere, 8, 6), "cubin for sm_86");
  EXPECT_EQ(cubin_text(ampere, 8, 9), "cubin for sm_86");
  EXPECT_EQ(cubin_text(bundle_of_cubins({"sm_80"}), 8, 6), "cubin for sm_80");
  EXPECT_EQ(cubin_text(bundle_of_cubins({"sm_86"}), 8, 0), "none");  // a newer minor does not run
  EXPECT_EQ(ampere.cubin_for("00000000000000aa", "TILE=8,PAD=0,SWIZZLE=0", 8, 0), std::nullopt);
  EXPECT_EQ(ampere.cubin_for("00000000000000bb", "TILE=16,PAD=0,SWIZZLE=0", 8, 0), std::nullopt);
}

TEST(BundleCubins, ADamagedOrMissingCubinIsAnErrorNeverHandedBack) {
  Bundle bundle = bundle_of_cubins({"sm_90"});
  bundle.cubins[0].fnv1a = fnv1a_hex("something else");
  try {
    bundle.cubin_for("00000000000000aa", "TILE=16,PAD=0,SWIZZLE=0", 9, 0);
    FAIL() << "a damaged cubin was handed back";
  } catch (const BundleError& e) {
    EXPECT_THAT(e.what(), StartsWith("test/" + bundle.cubins[0].file + ": damaged: "));
  }
  bundle.cubins[0].file = "cubins/tiled/gone.sm_90.cubin";
  EXPECT_THROW(bundle.cubin_for("00000000000000aa", "TILE=16,PAD=0,SWIZZLE=0", 9, 0), BundleError);
}

TEST(BundleCubins, ParsesArchitectures) {
  EXPECT_EQ(parse_arch("sm_90"), (std::pair{9, 0}));
  EXPECT_EQ(parse_arch("sm_86"), (std::pair{8, 6}));
  EXPECT_EQ(parse_arch("sm_120"), (std::pair{12, 0}));
  EXPECT_EQ(parse_arch("sm_90a"), std::nullopt);
  EXPECT_EQ(parse_arch("compute_90"), std::nullopt);
  EXPECT_EQ(parse_arch("sm_99999999999999999999"), std::nullopt) << "no stoi overflow";
}

// What the generated C++ holds of a file's path is a literal whose every byte outside
// [A-Za-z0-9_./-] is an octal escape: no path can end the literal or start a line of code.
TEST(BundleCpp, FilePathsAreEscapedLiterals) {
  const fs::path folder = testing_support::fresh_test_folder("bundle-cpp");
  const BundleFiles files = {{"sources/x\", 0}};\n#define EVIL 1\n//.cu", "text"}};
  const std::string cpp = read_bytes(write_bundle_cpp(files, folder, "embedded"));
  EXPECT_THAT(cpp, HasSubstr("{\"sources/x\\042\\054\\0400\\175\\175\\073\\012\\043define\\040EVIL\\0401\\012//.cu\", file_0, 4}"));
  EXPECT_THAT(cpp, Not(HasSubstr("#define EVIL")));
  fs::remove_all(folder);
}

// --- a real bundle (NVRTC, no GPU) ---------------------------------------------------------------

// One database and one bundle for the suite: its cubins are compiled once (the cache is its own).
class ExportedBundle : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("tiletune-exported-bundle-" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    testing_support::write_export_database(root_ / "tiletune.db");
    selected_ = new RecordSet(select_for_export(load_database_records(root_ / "tiletune.db"), {}));
    try {
      contents_ = new BundleContents(build_bundle(*selected_, "tiletune.db", CubinCache(root_ / "cache")));
    } catch (const NvrtcError&) {
      // The tests skip with the reason (SKIP_WITHOUT_NVRTC).
    }
  }
  static void TearDownTestSuite() {
    fs::remove_all(root_);
    delete selected_;
    delete contents_;
    selected_ = nullptr;
    contents_ = nullptr;
  }
  void SetUp() override {
    SKIP_WITHOUT_NVRTC();
    ASSERT_NE(contents_, nullptr);
    folder_ = testing_support::fresh_test_folder("bundle");
    write_bundle_folder(contents_->files, folder_ / "bundle");
  }
  void TearDown() override { fs::remove_all(folder_); }

  static inline fs::path root_;
  static inline RecordSet* selected_ = nullptr;
  static inline BundleContents* contents_ = nullptr;
  fs::path folder_;
};

TEST_F(ExportedBundle, ReadsBackTheRecordsExported) {
  ASSERT_TRUE(is_bundle(folder_ / "bundle"));
  EXPECT_FALSE(is_bundle(folder_));
  const Bundle bundle = read_bundle(folder_ / "bundle");
  EXPECT_EQ(describe(bundle.records), describe(*selected_));
  EXPECT_EQ(bundle.tiletune_version, TILETUNE_VERSION);
  ASSERT_NE(bundle.records.find_template("naive_aligned"), nullptr);
  ASSERT_TRUE(bundle.records.find_template("naive_aligned")->parsed);
  EXPECT_EQ(bundle.records.find_template("naive_aligned")->parsed->requirements.size(), 2u);
}

TEST_F(ExportedBundle, HasOneCubinPerConfigurationAndArchitecture) {
  const Bundle bundle = read_bundle(folder_ / "bundle");
  EXPECT_EQ(bundle.cubins.size(), 9u * 2u);  // 5 of tiled, 4 of naive_aligned; sm_80 and sm_90
  EXPECT_EQ(contents_->cubins, 18);
  const RecordedTemplate& tiled = *bundle.records.find_template("tiled");
  for (const auto& [major, arch] : {std::pair{9, "sm_90"}, std::pair{8, "sm_80"}}) {
    const auto cubin = bundle.cubin_for(tiled.source_hash, "TILE=16,PAD=1,SWIZZLE=0", major, 0);
    ASSERT_TRUE(cubin) << arch;
    EXPECT_EQ(std::string(cubin->begin(), cubin->begin() + 4), "\x7f" "ELF") << arch;
    const std::string file = cubin_file(folder_ / "bundle", "TILE=16,PAD=1,SWIZZLE=0", arch);
    EXPECT_EQ(std::string(cubin->begin(), cubin->end()), read_bytes(folder_ / "bundle" / file));
  }
  EXPECT_EQ(bundle.cubin_for(tiled.source_hash, "TILE=16,PAD=1,SWIZZLE=0", 7, 5), std::nullopt);
  // The manifest declares the template as parsed.
  const std::string manifest = read_bytes(folder_ / "bundle" / "manifest.json");
  EXPECT_THAT(manifest, HasSubstr("\"BLOCK_X < 32 || lda % 4 == 0\""));
  EXPECT_THAT(manifest, HasSubstr("\"entry\": \"tiled_gemm\""));
}

// Rewrites the manifest through `edit` (on its text) and expects read_bundle to refuse it.
std::string refusal(const fs::path& bundle, const std::function<void(std::string&)>& edit) {
  std::string manifest = read_bytes(bundle / "manifest.json");
  edit(manifest);
  write_bytes(bundle / "manifest.json", manifest);
  try {
    read_bundle(bundle);
  } catch (const BundleError& e) {
    return e.what();
  }
  return "accepted";
}

void replace_once(std::string& text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
}

TEST_F(ExportedBundle, ADamagedManifestIsOneLineNamingIt) {
  const fs::path bundle = folder_ / "bundle";
  const std::string manifest = (bundle / "manifest.json").string();
  const std::string original = read_bytes(manifest);
  EXPECT_THAT(refusal(bundle, [](std::string& m) { m.resize(m.size() / 2); }),
              StartsWith(manifest + ": not JSON: "));
  write_bytes(manifest, original);
  EXPECT_EQ(refusal(bundle, [](std::string& m) { replace_once(m, "\"format_version\": 1", "\"format_version\": 2"); }),
            manifest + ": format_version 2 is not 1 (written by another tiletune)");
  write_bytes(manifest, original);
  EXPECT_EQ(refusal(bundle, [](std::string& m) { replace_once(m, "tiletune-bundle", "other-bundle"); }),
            manifest + ": format is not 'tiletune-bundle'");
  write_bytes(manifest, original);
  EXPECT_EQ(refusal(bundle, [](std::string& m) { replace_once(m, "\"template\": \"tiled\"", "\"template\": \"tiles\""); }),
            manifest + ": a choice names an unknown template 'tiles'");
  write_bytes(manifest, original);
  // The first mention of the A100 is a choice's (the manifest's keys are sorted).
  EXPECT_EQ(refusal(bundle, [](std::string& m) { replace_once(m, "\"name\": \"" + kA100, "\"name\": \"A100 renamed"); }),
            manifest + ": a choice names an unknown GPU 'A100 renamed'");
  write_bytes(manifest, original);
  EXPECT_EQ(refusal(bundle, [](std::string& m) { replace_once(m, "\"name\": \"naive_aligned\"", "\"name\": \"tiled\""); }),
            manifest + ": template tiled is listed twice");
  write_bytes(manifest, original);
  // A name becomes a path in the bundle (and outside it, were it "../.."): names are identifiers.
  EXPECT_EQ(refusal(bundle, [](std::string& m) { replace_once(m, "\"name\": \"naive_aligned\"", "\"name\": \"../../x\""); }),
            manifest + ": template name \"../../x\" is not an identifier");
  EXPECT_THROW(bundle_source_file("../../x", ""), std::invalid_argument);
  EXPECT_THROW(bundle_cubin_file("a/b", "T=1", "sm_90", ""), std::invalid_argument);
  write_bytes(manifest, original);
  EXPECT_THAT(refusal(bundle, [](std::string& m) { replace_once(m, "TILE=8,PAD=0", "TILE=9,PAD=0"); }),
              StartsWith(manifest + ": a choice of template tiled has configuration 'TILE=9,PAD=0,SWIZZLE=0': "));
  write_bytes(manifest, original);
  // A negative time would make a choice the fastest of every group.
  EXPECT_THAT(refusal(bundle, [](std::string& m) { replace_once(m, "\"median_ms\": ", "\"median_ms\": -"); }),
              HasSubstr(" has a time or rate of -"));
  write_bytes(manifest, original);
  EXPECT_THAT(refusal(bundle, [](std::string& m) { replace_once(m, "\"cubins\": [", "\"cubins\": 3, \"x\": ["); }),
              StartsWith(manifest + ": malformed: "));
  write_bytes(manifest, original);
  EXPECT_THAT(refusal(bundle, [](std::string& m) { replace_once(m, "\"file\": \"cubins/", "\"file\": \"../cubins/"); }),
              HasSubstr("is outside the bundle"));
  fs::remove(manifest);
  EXPECT_THROW(read_bundle(bundle), BundleError);
}

TEST_F(ExportedBundle, AnEditedSourceIsRefused) {
  const fs::path source = folder_ / "bundle" / source_file(folder_ / "bundle", "tiled");
  write_bytes(source, read_bytes(source) + "// edited\n");
  try {
    read_bundle(folder_ / "bundle");
    FAIL() << "an edited source was read";
  } catch (const BundleError& e) {
    EXPECT_THAT(e.what(), StartsWith(source.string() + ": damaged: its hash is "));
  }
  fs::remove(source);
  EXPECT_THROW(read_bundle(folder_ / "bundle"), BundleError);
}

// A bundle's files are read only from its own folder, only as regular files: a linked source or
// a linked folder (whose target may hold a consistent copy) is refused, a FIFO does not block.
TEST_F(ExportedBundle, LinksAndSpecialFilesAreNeverRead) {
  const fs::path bundle = folder_ / "bundle";
  const fs::path source = bundle / source_file(bundle, "tiled");
  const std::string original = read_bytes(source);
  const auto refusal_of = [&]() -> std::string {
    try {
      read_bundle(bundle);
    } catch (const BundleError& e) {
      return e.what();
    }
    return "accepted";
  };
  write_bytes(folder_ / "outside.cu", original);  // consistent with the manifest
  fs::remove(source);
  fs::create_symlink(folder_ / "outside.cu", source);
  EXPECT_THAT(refusal_of(), StartsWith(source.string() + ": a symbolic link"));
  fs::remove(source);
  ASSERT_EQ(::mkfifo(source.c_str(), 0600), 0);
  EXPECT_EQ(refusal_of(), source.string() + ": not a regular file: not read");
  fs::remove(source);
  fs::rename(bundle / "sources", folder_ / "elsewhere");
  write_bytes(folder_ / "elsewhere" / source.filename(), original);
  fs::create_directory_symlink(folder_ / "elsewhere", bundle / "sources");
  EXPECT_THAT(refusal_of(), HasSubstr("a symbolic link or not a folder on its path"));
  fs::remove(bundle / "sources");
  fs::rename(folder_ / "elsewhere", bundle / "sources");
  EXPECT_NO_THROW(read_bundle(bundle));
}

TEST_F(ExportedBundle, ADamagedCubinIsRefusedWhenRead) {
  const Bundle bundle = read_bundle(folder_ / "bundle");
  const RecordedTemplate& tiled = *bundle.records.find_template("tiled");
  const fs::path file = folder_ / "bundle" / cubin_file(folder_ / "bundle", "TILE=8,PAD=0,SWIZZLE=0", "sm_90");
  std::string bytes = read_bytes(file);
  bytes[bytes.size() / 2] ^= 1;
  write_bytes(file, bytes);
  try {
    bundle.cubin_for(tiled.source_hash, "TILE=8,PAD=0,SWIZZLE=0", 9, 0);
    FAIL() << "a damaged cubin was handed back";
  } catch (const BundleError& e) {
    EXPECT_THAT(e.what(), StartsWith(file.string() + ": damaged: "));
  }
  // The others are still served.
  EXPECT_TRUE(bundle.cubin_for(tiled.source_hash, "TILE=8,PAD=0,SWIZZLE=0", 8, 0));
}

TEST_F(ExportedBundle, ReplacesAPreviousBundleOneExportLaterAndOnlyWhatItWrote) {
  const fs::path bundle = folder_ / "bundle";
  const std::string old_source = source_file(bundle, "naive_aligned");
  const std::string old_cubin = cubin_file(bundle, "TILE=8,PAD=0,SWIZZLE=0", "sm_90");
  write_bytes(bundle / "NOTES.txt", "the user's own\n");
  // Named as export names its files, but its content has not the hash in its name: the user's.
  write_bytes(bundle / "sources" / "notes-0123456789abcdef.cu", "the user's too\n");
  // A smaller bundle over it: tiled alone, on the A100 alone.
  const RecordSet a100 = select_for_export(load_database_records(root_ / "tiletune.db"), {{"tiled"}, {kA100}, 4, {}});
  const BundleContents smaller = build_bundle(a100, "tiletune.db", CubinCache(root_ / "cache"));
  write_bundle_folder(smaller.files, bundle);
  EXPECT_EQ(describe(read_bundle(bundle).records), describe(a100));
  // The previous bundle's files stay for one export: a reader may have read its manifest just before.
  EXPECT_TRUE(fs::exists(bundle / old_source));
  EXPECT_TRUE(fs::exists(bundle / old_cubin));
  write_bundle_folder(smaller.files, bundle);
  EXPECT_FALSE(fs::exists(bundle / old_source));
  EXPECT_FALSE(fs::exists(bundle / "cubins" / "naive_aligned"));
  EXPECT_FALSE(fs::exists(bundle / old_cubin));
  EXPECT_EQ(read_bytes(bundle / "NOTES.txt"), "the user's own\n");
  EXPECT_EQ(read_bytes(bundle / "sources" / "notes-0123456789abcdef.cu"), "the user's too\n");
  std::size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(bundle)) files += entry.is_regular_file();
  EXPECT_EQ(files, smaller.files.size() + 2);
}

// A manifest that merely lists a file (here the user's, under a name export never gives) does not
// make it export's to remove.
TEST_F(ExportedBundle, AListedFileIsRemovedOnlyIfExportWroteIt) {
  const fs::path bundle = folder_ / "bundle";
  write_bytes(bundle / "sources" / "mine.txt", "the user's own\n");
  std::string manifest = read_bytes(bundle / "manifest.json");
  const std::string listed = source_file(bundle, "tiled");
  replace_once(manifest, "\"" + listed + "\"", "\"sources/mine.txt\"");
  fs::rename(bundle / listed, bundle / "sources" / "kept.cu");
  write_bytes(bundle / "manifest.json", manifest);
  write_bundle_folder(contents_->files, bundle);
  write_bundle_folder(contents_->files, bundle);
  EXPECT_EQ(read_bytes(bundle / "sources" / "mine.txt"), "the user's own\n");
  EXPECT_TRUE(fs::exists(bundle / "sources" / "kept.cu"));
  EXPECT_NO_THROW(read_bundle(bundle));
}

// A bundle written before content-addressed names (sources/<name>.cu): its files go at the first
// export over it, as the previous manifest lists them with their content's hash.
TEST_F(ExportedBundle, ReplacesABundleOfTheOlderLayout) {
  const fs::path bundle = folder_ / "bundle";
  const std::string hashed = source_file(bundle, "tiled");
  std::string manifest = read_bytes(bundle / "manifest.json");
  replace_once(manifest, "\"" + hashed + "\"", "\"sources/tiled.cu\"");
  fs::rename(bundle / hashed, bundle / "sources" / "tiled.cu");
  write_bytes(bundle / "manifest.json", manifest);
  ASSERT_NO_THROW(read_bundle(bundle));
  write_bundle_folder(contents_->files, bundle);
  EXPECT_FALSE(fs::exists(bundle / "sources" / "tiled.cu"));
  EXPECT_TRUE(fs::exists(bundle / hashed));
}

TEST_F(ExportedBundle, NeverWritesThroughALinkedFolder) {
  const fs::path bundle = folder_ / "bundle";
  const fs::path victim = folder_ / "victim";
  fs::create_directories(victim / "tiled");
  write_bytes(victim / "tiled" / "precious.txt", "keep me");
  fs::rename(bundle / "cubins", folder_ / "cubins.old");
  fs::create_directory_symlink(victim, bundle / "cubins");
  try {
    write_bundle_folder(contents_->files, bundle);
    FAIL() << "exported through a linked folder";
  } catch (const ExportInputError& e) {
    EXPECT_EQ(std::string(e.what()), (bundle / "cubins").string() +
                                         ": a symbolic link or not a folder; export writes into real folders only");
  }
  EXPECT_EQ(testing_support::sorted_names(victim / "tiled"), std::vector<std::string>{"precious.txt"});
}

// Re-exporting over a live bundle: every concurrent open sees the old bundle or the new one, whole.
TEST_F(ExportedBundle, ConcurrentReadersSeeOneBundleWhole) {
  const fs::path bundle = folder_ / "bundle";
  const RecordSet a100 = select_for_export(load_database_records(root_ / "tiletune.db"), {{"tiled"}, {kA100}, 4, {}});
  const BundleContents smaller = build_bundle(a100, "tiletune.db", CubinCache(root_ / "cache"));
  const std::set<std::string> expected = {describe(*selected_), describe(a100)};
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < 40; ++i) write_bundle_folder(i % 2 ? contents_->files : smaller.files, bundle);
    done = true;
  });
  int reads = 0, failures = 0;
  std::string failure;
  while (!done || reads == 0) {
    try {
      const std::string records = describe(read_bundle(bundle).records);
      failures += expected.count(records) == 0;
    } catch (const BundleError& e) {
      ++failures;
      failure = e.what();
    }
    ++reads;
  }
  writer.join();
  EXPECT_EQ(failures, 0) << "of " << reads << " reads; the last: " << failure;
}

TEST_F(ExportedBundle, RefusesAFolderThatHoldsSomethingElse) {
  const fs::path foreign = folder_ / "foreign";
  fs::create_directories(foreign);
  write_bytes(foreign / "data.bin", "keep me");
  try {
    write_bundle_folder(contents_->files, foreign);
    FAIL() << "a foreign folder was written into";
  } catch (const ExportInputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("not empty and no tiletune bundle"));
  }
  EXPECT_EQ(testing_support::sorted_names(foreign), std::vector<std::string>{"data.bin"});
  // A manifest that is not a bundle's: nothing it names is ours to replace.
  write_bytes(foreign / "manifest.json", "{\"format\": \"something\"}");
  EXPECT_THROW(write_bundle_folder(contents_->files, foreign), ExportInputError);
  EXPECT_EQ(read_bytes(foreign / "data.bin"), "keep me");

  // A manifest naming files outside its folder: none of them is removed.
  fs::create_directories(folder_ / "bundle2");
  write_bytes(folder_ / "outside.txt", "keep me too");
  std::string manifest = read_bytes(folder_ / "bundle" / "manifest.json");
  replace_once(manifest, "\"file\": \"cubins/", "\"file\": \"../outside.txt\", \"x\": \"");
  write_bytes(folder_ / "bundle2" / "manifest.json", manifest);
  EXPECT_THROW(write_bundle_folder(contents_->files, folder_ / "bundle2"), ExportInputError);
  EXPECT_EQ(read_bytes(folder_ / "outside.txt"), "keep me too");
}

TEST_F(ExportedBundle, TheCppFormatCompilesAndEmbedsTheSameRecords) {
  const fs::path cpp = write_bundle_cpp(contents_->files, folder_ / "cpp", "my_bundle");
  EXPECT_EQ(cpp, folder_ / "cpp" / "my_bundle.cpp");
  const std::string compile = "c++ -std=c++17 -Wall -Werror -c -I " TILETUNE_SOURCE_DIR "/tuner/runtime/include " +
                              cpp.string() + " -o " + (folder_ / "cpp" / "my_bundle.o").string();
  ASSERT_EQ(std::system(compile.c_str()), 0) << compile;
  EXPECT_THAT(read_bytes(cpp), HasSubstr("const tiletune::EmbeddedBundle& my_bundle() {"));

  // Linked into a program that writes every embedded file out: the files the folder has, byte
  // for byte.
  write_bytes(folder_ / "cpp" / "dump.cpp", R"(#include <tiletune/tiletune.h>
#include <filesystem>
#include <fstream>
const tiletune::EmbeddedBundle& my_bundle();
int main(int, char** argv) {
  for (std::size_t i = 0; i < my_bundle().count; ++i) {
    const tiletune::EmbeddedFile& f = my_bundle().files[i];
    const std::filesystem::path path = std::filesystem::path(argv[1]) / f.path;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(f.data), f.size);
  }
})");
  const fs::path dump = folder_ / "cpp" / "dump";
  const std::string link = "c++ -std=c++17 -I " TILETUNE_SOURCE_DIR "/tuner/runtime/include " +
                           (folder_ / "cpp" / "dump.cpp").string() + " " +
                           (folder_ / "cpp" / "my_bundle.o").string() + " -o " + dump.string();
  ASSERT_EQ(std::system(link.c_str()), 0) << link;
  ASSERT_EQ(std::system((dump.string() + " " + (folder_ / "dumped").string()).c_str()), 0);
  std::size_t dumped = 0;
  for (const auto& entry : fs::recursive_directory_iterator(folder_ / "dumped")) {
    if (!entry.is_regular_file()) continue;
    ++dumped;
    const fs::path relative = fs::relative(entry.path(), folder_ / "dumped");
    EXPECT_EQ(read_bytes(entry.path()), read_bytes(folder_ / "bundle" / relative)) << relative;
  }
  EXPECT_EQ(dumped, contents_->files.size());

  // The same files as an EmbeddedBundle, as the generated code defines it, read as the folder is.
  std::vector<std::string> paths, data;
  for (const auto& entry : fs::recursive_directory_iterator(folder_ / "bundle")) {
    if (!entry.is_regular_file()) continue;
    paths.push_back(fs::relative(entry.path(), folder_ / "bundle").string());
    data.push_back(read_bytes(entry.path()));
  }
  std::vector<tiletune::EmbeddedFile> files;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    files.push_back({paths[i].c_str(), reinterpret_cast<const unsigned char*>(data[i].data()), data[i].size()});
  }
  const Bundle embedded = read_bundle(tiletune::EmbeddedBundle{files.data(), files.size()});
  EXPECT_EQ(embedded.origin, "embedded bundle");
  EXPECT_EQ(describe(embedded.records), describe(read_bundle(folder_ / "bundle").records));
  const RecordedTemplate& tiled = *embedded.records.find_template("tiled");
  EXPECT_TRUE(embedded.cubin_for(tiled.source_hash, "TILE=8,PAD=0,SWIZZLE=0", 9, 0));

  EXPECT_THROW(write_bundle_cpp(contents_->files, folder_ / "cpp", "my-bundle"), ExportInputError);
  EXPECT_THROW(write_bundle_cpp(contents_->files, folder_ / "cpp", "1bundle"), ExportInputError);
}

// --- the performance model in a bundle (the H200 selection fixture; no NVRTC) -------------------

// warp_tiled of the selection fixture's suite (tests/fixtures/selection), exported without cubins
// (the model is what is tested here): as export writes it, and with the held-out shapes as its
// workload. Made once for the suite.
class BundleModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("tiletune-bundle-model-" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    database_ = new RecordSet(
        load_database_records(testing_support::load_selection_fixture("suite", root_ / "suite.db")));
    heldout_ = new std::vector<GemmShape>;
    for (const WorkloadShape& w :
         read_workload(fs::path(TILETUNE_SOURCE_DIR) / "tests/fixtures/selection/heldout_shapes.txt")) {
      heldout_->push_back(w.shape);
    }
    selected_ = new RecordSet(select_for_export(*database_, {{"warp_tiled"}, {}, 4, {}}));
    write_bundle_folder(build_bundle(*selected_, "suite.db", std::nullopt, 0, ExportCubins::none).files,
                        root_ / "bundle");
    write_bundle_folder(build_bundle(select_for_export(*database_, {{"warp_tiled"}, {}, 4, *heldout_}),
                                     "suite.db", std::nullopt, 0, ExportCubins::none)
                            .files,
                        root_ / "workload");
  }
  static void TearDownTestSuite() {
    fs::remove_all(root_);
    delete database_;
    delete selected_;
    delete heldout_;
  }

  // The configuration chosen for warp_tiled at the shape's packed problem.
  static std::string choice(const RecordSet& records, const GemmShape& shape) {
    SelectionRequest request;
    request.template_name = "warp_tiled";
    request.problem = GemmProblem::packed(shape);
    request.gpu_name = testing_support::kSelectionFixtureGpu;
    return select_configuration(records, request).config;
  }
  static bool keeps(const RecordSet& records, const std::string& config) {
    return std::any_of(records.choices.begin(), records.choices.end(),
                       [&](const RecordedChoice& c) { return c.config == config; });
  }

  static inline fs::path root_;
  static inline RecordSet* database_ = nullptr;
  static inline RecordSet* selected_ = nullptr;
  static inline std::vector<GemmShape>* heldout_ = nullptr;
};

TEST_F(BundleModel, TheModelFittedOnTheDatabaseRoundTripsThroughTheManifest) {
  const Bundle bundle = read_bundle(root_ / "bundle");
  ASSERT_EQ(bundle.records.models.size(), 1u);
  const RecordedModel& carried = bundle.records.models[0];
  EXPECT_EQ(bundle.records.gpus[carried.gpu].name, testing_support::kSelectionFixtureGpu);
  EXPECT_EQ(bundle.records.templates[carried.templ].name, "warp_tiled");

  // Each configuration kept with the coefficients the whole database gave it, to the last bit.
  const std::size_t gpu = 0, templ = std::size_t(database_->find_template("warp_tiled") - database_->templates.data());
  const PerformanceModel fitted(*database_, gpu, templ);
  int kept = 0, own = 0, beyond_kept_records = 0;
  for (const auto& [config, model] : fitted.configurations()) {
    if (!keeps(bundle.records, config)) continue;
    ++kept;
    ASSERT_TRUE(carried.configurations.contains(config)) << config;
    const FittedConfiguration& c = carried.configurations.at(config);
    EXPECT_EQ(c.coefficients, model.coefficients) << config;
    EXPECT_EQ(c.shapes, model.shapes) << config;
    EXPECT_EQ(c.own_fit, model.own_fit) << config;
    EXPECT_EQ(c.measured_beyond_limits, fitted.measured_beyond_limits(config)) << config;
    own += c.own_fit;
    const auto records = std::count_if(bundle.records.choices.begin(), bundle.records.choices.end(),
                                       [&](const RecordedChoice& r) { return r.config == config; });
    beyond_kept_records += c.shapes > records;
  }
  EXPECT_EQ(int(carried.configurations.size()), kept);
  EXPECT_EQ(carried.work_share, fitted.work_share());
  EXPECT_GT(own, kept / 2) << "most kept configurations have their own fit in the database";
  EXPECT_GT(beyond_kept_records, kept / 2) << "fitted on records the bundle does not keep";

  // The bundle's model predicts what the database's does, without fitting again.
  const PerformanceModel served(bundle.records, carried.gpu, carried.templ);
  for (const auto& [config, c] : carried.configurations) {
    const GemmShape shape{333, 777, 2049};
    ASSERT_TRUE(served.predict(config, shape)) << config;
    EXPECT_EQ(served.predict(config, shape)->ms, fitted.predict(config, shape)->ms) << config;
    EXPECT_EQ(served.predict(config, shape)->shapes, c.shapes) << config;
  }
}

TEST_F(BundleModel, ChoosesAtHeldOutShapesWhatTheDatabaseChoosesOfWhatItKeeps) {
  const Bundle bundle = read_bundle(root_ / "bundle");
  RecordSet refitted = bundle.records;  // the bundle as read before bundles carried the model
  refitted.models.clear();
  const Bundle workload = read_bundle(root_ / "workload");
  int kept = 0, refitted_differs = 0;
  for (const GemmShape& shape : *heldout_) {
    SCOPED_TRACE(shape.to_string());
    const std::string database = choice(*database_, shape);
    if (keeps(bundle.records, database)) {
      ++kept;
      EXPECT_EQ(choice(bundle.records, shape), database);
      refitted_differs += choice(refitted, shape) != database;
    }
    // Exported for the workload, the bundle keeps the database's choice at each of its shapes.
    EXPECT_EQ(choice(workload.records, shape), database);
  }
  EXPECT_GE(kept, 8) << "of " << heldout_->size();
  EXPECT_GE(refitted_differs, 5) << "fitted on the bundle's records alone, the model chooses otherwise";
  EXPECT_GT(workload.records.choices.size(), bundle.records.choices.size());
}

TEST_F(BundleModel, ABundleWithoutTheModelIsReadAsBeforeAndFittedOnItsChoices) {
  const fs::path manifest = root_ / "bundle" / "manifest.json";
  const std::string original = read_bytes(manifest);
  RecordSet without = read_bundle(root_ / "bundle").records;
  without.models.clear();
  const std::string described = describe(without);
  for (const char* version : {"absent", "another"}) {
    SCOPED_TRACE(version);
    nlohmann::json m = nlohmann::json::parse(original);
    if (std::string(version) == "absent") {
      m.erase("models");
      m.erase("performance_model");
    } else {
      m["performance_model"] = runtime::kPerformanceModelVersion + 1;  // another tiletune's model: its coefficients mean other things
    }
    write_bytes(manifest, m.dump(2));
    const Bundle bundle = read_bundle(root_ / "bundle");
    EXPECT_TRUE(bundle.records.models.empty());
    EXPECT_EQ(describe(bundle.records), described);
    EXPECT_NO_THROW(choice(bundle.records, {333, 777, 2049}));
  }
  write_bytes(manifest, original);
}

TEST_F(BundleModel, ADamagedModelIsOneLineNamingTheManifest) {
  const fs::path bundle = root_ / "bundle";
  const fs::path manifest = bundle / "manifest.json";
  const std::string original = read_bytes(manifest);
  // `edit` on the manifest's JSON, then each `from` in its text made `to` (what JSON cannot hold).
  const auto refusal = [&](const std::function<void(nlohmann::json&)>& edit, const std::string& from = "",
                           const std::string& to = "") -> std::string {
    nlohmann::json m = nlohmann::json::parse(original);
    edit(m);
    std::string text = m.dump(2);
    if (!from.empty()) replace_once(text, from, to);
    write_bytes(manifest, text);
    std::string why = "accepted";
    try {
      read_bundle(bundle);
    } catch (const BundleError& e) {
      why = e.what();
    }
    write_bytes(manifest, original);
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
    return why;
  };
  const auto first = [](nlohmann::json& m) -> nlohmann::json& { return m["models"][0]["configurations"][0]; };
  const std::string where = manifest.string() + ": the model of warp_tiled on NVIDIA H200 ";
  EXPECT_THAT(refusal([&](nlohmann::json& m) { first(m)["coefficients"][1] = -1e-3; }),
              StartsWith(where + "has coefficients ["));
  EXPECT_THAT(refusal([&](nlohmann::json& m) { first(m)["coefficients"] = {0, 0, 0, 0, 0}; }),
              HasSubstr("not a model (finite, none negative, one positive)"));
  // Beyond a double's range: the parser refuses it before it could be read as infinite.
  EXPECT_THAT(refusal([&](nlohmann::json& m) { first(m)["coefficients"][0] = 12345.5; }, "12345.5", "1e400"),
              StartsWith(manifest.string() + ": not JSON: "));
  // JSON has no NaN: nlohmann writes it as null.
  EXPECT_THAT(refusal([&](nlohmann::json& m) { first(m)["coefficients"][2] = std::nan(""); }),
              StartsWith(manifest.string() + ": malformed: "));
  EXPECT_THAT(refusal([&](nlohmann::json& m) { first(m)["coefficients"].erase(4); }),
              StartsWith(where + "has 4 coefficients for '"));
  EXPECT_THAT(refusal([&](nlohmann::json& m) { first(m)["config"] = "BM=1"; }),
              StartsWith(where + "has configuration 'BM=1', which none of its choices has"));
  EXPECT_THAT(refusal([&](nlohmann::json& m) { first(m)["shapes"] = 0; }), StartsWith(where + "says '"));
  EXPECT_THAT(refusal([&](nlohmann::json& m) {
                first(m)["own_fit"] = true;
                first(m)["shapes"] = kOwnFitShapes - 1;
              }),
              HasSubstr(" shapes on its own"));
  EXPECT_THAT(refusal([&](nlohmann::json& m) { m["models"][0]["configurations"].push_back(first(m)); }),
              HasSubstr("' twice"));
  EXPECT_THAT(refusal([&](nlohmann::json& m) { m["models"].push_back(m["models"][0]); }),
              EndsWith("NVIDIA H200 is listed twice"));
  EXPECT_EQ(refusal([&](nlohmann::json& m) { m["models"][0]["work_share"] = "busiest"; }),
            where + "has work_share 'busiest', not busiest_sm or even");
  EXPECT_THAT(refusal([&](nlohmann::json& m) { m["models"][0].erase("work_share"); }),
              StartsWith(manifest.string() + ": malformed: "));
  EXPECT_EQ(refusal([&](nlohmann::json& m) { m["models"][0]["template"] = "tiles"; }),
            manifest.string() + ": a model names an unknown template 'tiles'");
  EXPECT_EQ(refusal([&](nlohmann::json& m) { m["models"][0]["gpu"]["cc_minor"] = 9; }),
            manifest.string() + ": a model names an unknown GPU 'NVIDIA H200'");
  EXPECT_THAT(refusal([&](nlohmann::json& m) { first(m)["own_fit"] = "yes"; }),
              StartsWith(manifest.string() + ": malformed: "));
  EXPECT_THAT(refusal([&](nlohmann::json& m) { m["performance_model"] = "1"; }),
              StartsWith(manifest.string() + ": malformed: "));
  EXPECT_NO_THROW(read_bundle(bundle));
}

}  // namespace
}  // namespace tiletune::runtime
