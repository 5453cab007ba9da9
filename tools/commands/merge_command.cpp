// tiletune merge OUT.db IN.db...
//
// Joins the databases of a sharded tune (`tune --shard I/N`), or of tunes run elsewhere, into OUT:
// created when missing, migrated when older; the inputs are only read. The rules for a key held
// twice are db/database_merge.h's. Prints what each input brought, one line each.
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "db/database_merge.h"
#include "tools/cli/command_line.h"
#include "tools/commands/commands.h"

namespace tiletune::cli {
namespace {

struct MergeOptions {
  std::string out;
  std::vector<std::string> inputs;
};

// "results 12 added 3 replaced, fuzz_passes 9 added, ...": the tables it changed.
std::string describe(const MergedInput& input) {
  std::string text;
  for (const char* table : {"gpus", "templates", "shapes", "results", "fuzz_passes", "missed_problems",
                            "counters", "bench_results", "search_trace"}) {
    const auto count = [table](const std::map<std::string, int>& counts) {
      const auto found = counts.find(table);
      return found == counts.end() ? 0 : found->second;
    };
    const int added = count(input.added), replaced = count(input.replaced);
    if (added == 0 && replaced == 0) continue;
    text += (text.empty() ? "" : ", ") + fmt::format("{} {} added", table, added);
    if (replaced > 0) text += fmt::format(" {} replaced", replaced);
  }
  return text.empty() ? "nothing new" : text;
}

int run(const MergeOptions& options) {
  std::vector<std::filesystem::path> inputs(options.inputs.begin(), options.inputs.end());
  for (const MergedInput& input : merge_databases(options.out, inputs)) {
    fmt::print("{} (schema {}): {}\n", input.path.string(), input.schema_version, describe(input));
  }
  fmt::print("merged {} database{} into {}\n", inputs.size(), inputs.size() == 1 ? "" : "s", options.out);
  return kSuccess;
}

}  // namespace

void add_merge_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<MergeOptions>();
  CLI::App* command = app.add_subcommand(
      "merge", "join tiletune databases (the shards of a tune) into one; the inputs are only read");
  command->add_option("out", options->out, "the database to merge into (created when missing)")->required();
  command->add_option("inputs", options->inputs, "the databases to merge from")
      ->required()->check(CLI::ExistingFile);
  command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace tiletune::cli
