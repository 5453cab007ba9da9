// A fuzz target for the parsers that read what others wrote: template declarations (a file, a
// database row, a bundle's source), a bundle's manifest, and the replay lines of reports
// (`--case`). Each starts from a valid text and is mutated at random (bytes inserted, deleted,
// repeated, a run of 20,000 of one character, a line doubled); every outcome must be a parse or
// the parser's own one-line error, never a crash, a hang or another exception. The time per
// parser is $TILETUNE_PARSER_FUZZ_SECONDS (default 5); the count of inputs run is printed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <typeinfo>
#include <vector>

#include "fuzz/gemm_case.h"
#include "tests/support/skip_without_nvrtc.h"
#include "tests/support/test_folder.h"
#include "tests/tuner/runtime/export_database.h"
#include "tiletune/tiletune.h"
#include "tuner/core/kernel_template.h"
#include "tuner/runtime/bundle.h"
#include "tuner/runtime/bundle_export.h"

namespace tiletune {
namespace {

namespace fs = std::filesystem;

double fuzz_seconds() {
  const char* text = std::getenv("TILETUNE_PARSER_FUZZ_SECONDS");
  return text ? std::atof(text) : 5.0;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// One random edit of the text.
std::string mutate(std::string text, std::mt19937_64& random) {
  const auto at = [&](std::size_t size) { return size == 0 ? 0 : std::size_t(random() % (size + 1)); };
  const char interesting[] = {'\0', '\n', '"', '\\', '(', ')', '{', '}', '[', ']', ',', '=', '9',
                              '-', '+', '*', '/', '%', '#', ' ', 'x', char(0xff)};
  switch (random() % 6) {
    case 0: text.insert(at(text.size()), 1, interesting[random() % sizeof(interesting)]); break;
    case 1: {
      const std::size_t from = at(text.size());
      text.erase(from, random() % 64);
      break;
    }
    case 2: text.insert(at(text.size()), 20000, interesting[random() % sizeof(interesting)]); break;
    case 3: {
      const std::size_t from = at(text.size()), length = random() % 256;
      text.insert(at(text.size()), text.substr(from, length));
      break;
    }
    case 4: if (!text.empty()) text[random() % text.size()] = char(random()); break;
    default: {  // a line doubled
      const std::size_t line = text.find('\n', at(text.size()));
      if (line != std::string::npos) {
        const std::size_t end = text.find('\n', line + 1);
        text.insert(line, text.substr(line, end == std::string::npos ? std::string::npos : end - line));
      }
    }
  }
  return text;
}

// Parses mutants of `seed` (1 to 8 edits each) for the time given; `parse` may throw only what
// `expected` accepts. Returns the number of inputs run.
long fuzz_parser(const std::string& name, const std::string& seed,
                 const std::function<void(const std::string&)>& parse,
                 const std::function<bool(const std::exception&)>& expected) {
  std::mt19937_64 random(std::hash<std::string>{}(name));
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(fuzz_seconds());
  long inputs = 0, refused = 0;
  while (std::chrono::steady_clock::now() < end) {
    std::string text = seed;
    for (int edits = 1 + int(random() % 8); edits > 0; --edits) text = mutate(std::move(text), random);
    ++inputs;
    try {
      parse(text);
    } catch (const std::exception& e) {
      ++refused;
      if (!expected(e)) {
        ADD_FAILURE() << name << ": unexpected " << typeid(e).name() << ": " << e.what();
        break;
      }
      if (std::string(e.what()).find('\n') != std::string::npos) {
        ADD_FAILURE() << name << ": an error of several lines: " << e.what();
        break;
      }
    }
  }
  std::printf("%s: %ld inputs, %ld refused, no crash\n", name.c_str(), inputs, refused);
  return inputs;
}

TEST(ParserFuzz, TemplateDeclarationsAreParsedOrRefusedInOneError) {
  const std::string seed = read_text(fs::path(TILETUNE_SOURCE_DIR) / "kernels_src" / "tiled.cu");
  const long inputs = fuzz_parser(
      "template", seed, [](const std::string& text) { parse_template(text, "fuzzed.cu"); },
      [](const std::exception& e) { return dynamic_cast<const TemplateError*>(&e) != nullptr; });
  EXPECT_GT(inputs, 0);
}

TEST(ParserFuzz, ReplayLinesAreParsedOrRefusedInOneLine) {
  const std::string seed = "193x67x45 lda=50 ldb=70 ldc=68 inputs=real data=12 schedule=7";
  const long inputs = fuzz_parser(
      "case", seed, [](const std::string& text) { GemmCase::parse(text); },
      [](const std::exception& e) { return dynamic_cast<const std::invalid_argument*>(&e) != nullptr; });
  EXPECT_GT(inputs, 0);
}

TEST(ParserFuzz, BundleManifestsAreReadOrRefusedInOneLine) {
  SKIP_WITHOUT_NVRTC();
  const fs::path folder = testing_support::fresh_test_folder("parser-fuzz-bundle");
  testing_support::write_export_database(folder / "tiletune.db");
  const runtime::RecordSet records =
      runtime::select_for_export(runtime::load_database_records(folder / "tiletune.db"), {});
  const runtime::BundleFiles files =
      runtime::build_bundle(records, "tiletune.db", CubinCache(folder / "cache")).files;
  const std::string seed = files.at(std::string(runtime::kBundleManifest));
  const long inputs = fuzz_parser(
      "manifest", seed,
      [&](const std::string& manifest) {
        runtime::BundleFiles edited = files;
        edited[std::string(runtime::kBundleManifest)] = manifest;
        std::vector<EmbeddedFile> embedded;
        for (const auto& [path, content] : edited) {
          embedded.push_back({path.c_str(), reinterpret_cast<const unsigned char*>(content.data()),
                              content.size()});
        }
        runtime::read_bundle(EmbeddedBundle{embedded.data(), embedded.size()});
      },
      [](const std::exception& e) { return dynamic_cast<const runtime::BundleError*>(&e) != nullptr; });
  EXPECT_GT(inputs, 0);
  fs::remove_all(folder);
}

}  // namespace
}  // namespace tiletune
