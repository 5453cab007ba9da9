// tiletune lab NAME [--json] [--out DIR]
//
// Reproduces a lesson of the tutorials on this GPU and states, claim by claim, whether the GPU
// confirms it (tools/labs/): `bank-conflicts` and `tiling`. Exit 0 when no measured claim is
// refuted, 1 when one is, 3 without a GPU. Counters come from Nsight Compute running the hidden
// `tiletune lab-kernel LAB KERNEL [SIZE]`, which launches one lab kernel once.
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "tools/cli/command_line.h"
#include "tools/commands/commands.h"
#include "tools/labs/bank_conflicts_lab.h"
#include "tools/labs/tiling_lab.h"

namespace tiletune::cli {
namespace {

struct LabOptions {
  std::string name;
  bool json = false;
  std::string out;
};

// The lab's text and JSON under DIR as NAME.txt and NAME.json.
void keep(const std::string& dir, const std::string& name, const std::string& text,
          const nlohmann::json& json) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  std::ofstream txt(std::filesystem::path(dir) / (name + ".txt"));
  std::ofstream js(std::filesystem::path(dir) / (name + ".json"));
  txt << text;
  js << json.dump(2) << "\n";
  if (!txt || !js) {
    throw UsageError(fmt::format("--out {}: cannot write {}.txt and {}.json there", dir, name, name));
  }
}

int run(const LabOptions& options) {
  const GpuDevice device;
  // ncu runs this very binary's hidden lab-kernel. Each run takes seconds: say on a terminal
  // which kernel is being counted.
  const labs::CounterReader ncu =
      labs::nsight_compute_reader(std::filesystem::read_symlink("/proc/self/exe"));
  const labs::CounterReader counters = [&ncu](const std::vector<std::string>& arguments,
                                              const std::string& kernel,
                                              const std::vector<std::string>& metrics) {
    std::string words;
    for (const std::string& word : arguments) words += " " + word;
    progress_line("counting with Nsight Compute:" + words, false);
    try {
      auto values = ncu(arguments, kernel, metrics);
      progress_line("", false);
      return values;
    } catch (...) {
      progress_line("", false);
      throw;
    }
  };
  std::string text;
  nlohmann::json json;
  std::vector<labs::Claim> claims;
  if (options.name == "bank-conflicts") {
    const labs::BankConflictLab lab = labs::run_bank_conflict_lab(device, counters);
    text = labs::format_bank_conflict_lab(lab);
    json = labs::bank_conflict_lab_json(lab);
    claims = lab.claims;
  } else {
    const labs::TilingLab lab = labs::run_tiling_lab(device, counters);
    text = labs::format_tiling_lab(lab);
    json = labs::tiling_lab_json(lab);
    claims = lab.claims;
  }
  if (!options.out.empty()) keep(options.out, options.name, text, json);
  if (options.json) {
    fmt::print("{}\n", json.dump(2));
  } else {
    fmt::print("{}", text);
  }
  return labs::claims_exit_code(claims);
}

}  // namespace

void add_lab_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<LabOptions>();
  CLI::App* command = app.add_subcommand(
      "lab", "reproduce a lesson of the tutorials on this GPU and check its claims");
  command->add_option("name", options->name, "bank-conflicts or tiling")
      ->required()
      ->check(CLI::IsMember({"bank-conflicts", "tiling"}));
  command->add_flag("--json", options->json, "print the measurements and claims as JSON");
  command->add_option("--out", options->out, "also write NAME.txt and NAME.json into this folder");
  command->callback([options, &exit_code] { exit_code = run(*options); });

  // Hidden: one launch of one lab kernel, what Nsight Compute counts for the lab.
  auto words = std::make_shared<std::vector<std::string>>();
  CLI::App* kernel = app.add_subcommand("lab-kernel", "launch one lab kernel once (internal)");
  kernel->group("");
  kernel->add_option("words", *words, "LAB KERNEL [SIZE]")->required();
  kernel->callback([words, &exit_code] {
    const std::vector<std::string>& w = *words;
    if (w.size() == 2 && w[0] == "bank-conflicts") {
      labs::launch_bank_conflict_kernel(w[1]);
    } else if (w.size() == 3 && w[0] == "tiling") {
      labs::launch_tiling_kernel(w[1], w[2]);
    } else {
      throw UsageError("lab-kernel takes 'bank-conflicts KERNEL' or 'tiling KERNEL SIZE'");
    }
    exit_code = kSuccess;
  });
}

}  // namespace tiletune::cli
