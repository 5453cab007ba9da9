// tiletune report [--db PATH] [--out FILE] [--format html|md]
//
// What the database holds, shown: per GPU and shape the winner against cuBLAS (bench rows), the
// library's choice at shapes it holds out of its own records, a roofline, parameter sensitivity,
// search convergence, the counters and the fuzz evidence per winner (tools/report/). html: one self-contained page with plain SVG plots; md: the same
// content as Markdown tables for a terminal. The same database gives the same bytes.
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "tools/cli/command_line.h"
#include "tools/commands/commands.h"
#include "tools/report/html_report.h"
#include "tools/report/markdown_report.h"
#include "tools/report/report_data.h"

namespace tiletune::cli {
namespace {

struct ReportOptions {
  std::string db = "tiletune.db";
  std::string out;  // empty: stdout
  std::string format = "html";
};

int run(const ReportOptions& options) {
  if (!std::filesystem::exists(options.db)) {
    throw UsageError(fmt::format("no database at {}", options.db));
  }
  if (!options.out.empty()) refuse_output_over_database("--out", options.out, options.db);
  const report::ReportData data = report::read_report(options.db);
  const std::string text = options.format == "md" ? report::markdown_report(data, options.db)
                                                  : report::html_report(data, options.db);
  if (options.out.empty()) {
    std::cout << text << std::flush;
    if (!std::cout) {  // a full disk or a closed pipe: the report is not where the caller looks
      fmt::print(stderr, "tiletune: cannot write the report to standard output\n");
      return kEnvironment;
    }
    return kSuccess;
  }
  std::ofstream out(options.out, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw UsageError(fmt::format("cannot write the report to {}", options.out));
  return kSuccess;
}

}  // namespace

void add_report_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* command = app.add_subcommand("report", "write what the database holds as an HTML page or Markdown tables");
  command->add_option("--db", options->db, "SQLite database file")->capture_default_str();
  command->add_option("--out", options->out, "file to write (default: standard output)");
  command->add_option("--format", options->format, "html: a self-contained page with SVG plots; md: Markdown tables")
      ->capture_default_str()
      ->check(CLI::IsMember({"html", "md"}));
  command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace tiletune::cli
