#include "tools/report/markdown_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tools/bench/cublas_sgemm.h"
#include "tools/report/svg_plot.h"

namespace tiletune::report {
namespace {

// Text from the database as Markdown shows it and nothing more: what would start markup (a link,
// code, emphasis, a table cell, raw HTML) escaped, line breaks flattened, so that a name cannot
// inject a heading, a link or a script into the page a viewer renders.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '\n': case '\r': out += ' '; break;
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '\\': case '`': case '*': case '[': case ']': case '|': out += '\\'; out += c; break;
      default: out += c;
    }
  }
  return out;
}

std::string table(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows) {
  std::string md = "| " + fmt::format("{}", fmt::join(headers, " | ")) + " |\n|";
  for (std::size_t i = 0; i < headers.size(); ++i) md += " --- |";
  md += "\n";
  for (const auto& row : rows) {
    std::vector<std::string> cells;
    for (const std::string& text : row) cells.push_back(cell(text));
    md += "| " + fmt::format("{}", fmt::join(cells, " | ")) + " |\n";
  }
  return md + "\n";
}

}  // namespace

std::string markdown_report(const ReportData& report, const std::string& source) {
  std::string md = "# tiletune report: " + cell(source) + "\n\n";
  std::vector<std::string> gpu_names;
  for (const std::string& name : report.gpu_names) gpu_names.push_back(cell(name));
  md += "GPUs: " + (gpu_names.empty() ? std::string("none recorded") : fmt::format("{}", fmt::join(gpu_names, ", "))) + "\n\n";

  md += "## Winners and their fuzz evidence\n\n";
  if (report.winners.empty()) {
    md += "no ok results recorded\n\n";
  } else {
    std::vector<std::vector<std::string>> rows;
    for (const Winner& w : report.winners) {
      rows.push_back({w.gpu.name, w.result.shape.to_string(), to_string(w.precision),
                      w.result.template_name, w.result.config,
                      fmt::format("{:.4f}", w.result.median_ms), format_number(w.result.tflops),
                      std::to_string(w.fuzz_cases)});
    }
    md += table({"GPU", "shape", "precision", "template", "configuration", "median ms", "TFLOP/s",
                 "fuzz cases passed"}, rows);
  }

  md += "## Winner against cuBLAS\n\n";
  if (report.gpu_names.empty()) md += "no bench rows recorded\n\n";
  for (const std::string& gpu : report.gpu_names) {
    std::vector<std::vector<std::string>> rows;
    for (const BenchRow& row : report.bench) {
      if (row.gpu_name != gpu) continue;
      rows.push_back({row.shape.to_string(), to_string(row.precision), row.template_name, row.config,
                      fmt::format("{:.4f}", row.ours_ms), cublas_yardstick(row.precision),
                      fmt::format("{:.4f}", row.cublas_ms),
                      row.ours_ms > 0 ? fmt::format("{:.3f}", row.cublas_ms / row.ours_ms) : "-", row.recorded_at});
    }
    md += "### " + cell(gpu) + "\n\n";
    md += rows.empty() ? "no bench rows recorded for this GPU (tiletune bench records them)\n\n"
                       : table({"shape", "precision", "template", "configuration", "ours ms", "against",
                                "cuBLAS ms", "ours / cuBLAS (speed)", "recorded at"}, rows);
  }

  md += "## Choice at untuned shapes\n\nLeave one shape out: each recorded shape of a GPU's template (" +
        std::to_string(kMinChoiceShapes) + " or more shapes) hidden in turn, what the library would run "
        "there, by its performance model and by the nearest recorded shape, as the chosen configuration's "
        "recorded time there over the best there (1.0: the best). An estimate of the choice at shapes "
        "nobody tuned; unmeasured: the chosen configuration was not timed at the shape.\n\n";
  if (report.choices.empty()) {
    md += "no GPU and template has ok results at " + std::to_string(kMinChoiceShapes) + " or more shapes\n\n";
  }
  for (const std::string& gpu : report.gpu_names) {
    std::vector<std::vector<std::string>> summaries, rows;
    for (const TemplateChoices& t : report.choices) {
      if (t.gpu_name != gpu) continue;
      summaries.push_back({t.template_name, std::to_string(t.shapes.size()), mean_text(t.model),
                           worst_text(t.model), mean_text(t.nearest), worst_text(t.nearest),
                           fmt::format("{}, {}", t.model.unmeasured, t.nearest.unmeasured)});
      for (const HeldOutShape& s : t.shapes) {
        rows.push_back({t.template_name, s.shape.to_string(), fmt::format("{:.4f}", s.best_ms), s.model.config,
                        ratio_text(s.model), s.nearest.config, ratio_text(s.nearest)});
      }
    }
    if (summaries.empty()) continue;
    md += "### " + cell(gpu) + "\n\n";
    md += table({"template", "shapes", "model: geometric mean", "model: worst", "nearest: geometric mean",
                 "nearest: worst", "unmeasured (model, nearest)"}, summaries);
    md += table({"template", "hidden shape", "best ms", "model's configuration", "model: over the best",
                 "nearest's configuration", "nearest: over the best"}, rows);
  }

  md += "## Roofline\n\nBytes: measured DRAM bytes (" + std::string(kDramBytesText) +
        ") where counters are recorded, else the compulsory 4(MK+KN+MN). FP32 winners only: TF32 and "
        "3xTF32 run on the tensor cores, under another roof.\n\n";
  if (report.roofs.empty()) md += "no GPUs recorded\n\n";
  for (const GpuRoofs& roofs : report.roofs) {
    md += "### " + cell(roofs.gpu.name) + "\n\n";
    md += (roofs.fp32_peak_tflops > 0 ? fmt::format("FP32 peak {} TFLOP/s", format_number(roofs.fp32_peak_tflops))
                                      : std::string("no FP32 peak: the GPU row has no SM count or clock")) +
          "; " + (roofs.bandwidth_gb_s ? fmt::format("{} GB/s, ", format_number(*roofs.bandwidth_gb_s)) : "") +
          roofs.bandwidth_source + ".\n\n";
    std::vector<std::vector<std::string>> rows;
    for (const Winner& w : report.winners) {
      if (w.gpu.name != roofs.gpu.name || w.precision != Precision::fp32) continue;  // FP32 roof
      rows.push_back({w.result.shape.to_string(), w.result.template_name, format_number(w.bytes),
                      w.bytes_measured ? "measured" : "compulsory", format_number(w.result.shape.flops() / w.bytes),
                      format_number(w.result.shape.tflops(w.result.median_ms))});
    }
    if (!rows.empty()) md += table({"shape", "template", "bytes", "bytes are", "FLOP/byte", "TFLOP/s"}, rows);
  }

  md += "## Parameter sensitivity\n\nThe best median time among ok results at each value of each parameter.\n\n";
  if (report.sensitivities.empty()) md += "no ok results recorded\n\n";
  for (const Sensitivity& s : report.sensitivities) {
    md += fmt::format("### {}, {} on {}\n\n", cell(s.template_name), s.shape.to_string(), cell(s.gpu_name));
    std::vector<std::vector<std::string>> rows;
    for (const auto& [parameter, values] : s.best_ms_by_value) {
      for (const auto& [value, ms] : values) rows.push_back({parameter, value, fmt::format("{:.4f}", ms)});
    }
    md += table({"parameter", "value", "best ms"}, rows);
  }

  md += "## Search convergence\n\nEach row is one tune's search (one process): the configurations its strategy "
        "settled, in its order, and when it found its best.\n\n";
  if (report.convergences.empty()) {
    md += "no search traces recorded (tunes record them since schema version 6)\n\n";
  } else {
    std::vector<std::vector<std::string>> rows;
    for (const Convergence& c : report.convergences) {
      for (const ConvergenceLine& line : c.lines) {
        const std::vector<double>& best = line.best_so_far_ms;
        const auto first_ok = std::find_if(best.begin(), best.end(), [](double ms) { return !std::isnan(ms); });
        if (first_ok == best.end()) {
          rows.push_back({c.gpu_name, c.template_name, c.shape.to_string(), line.strategy, line.run_id,
                          std::to_string(best.size()), "-", "-", "-"});
          continue;
        }
        const auto found = std::find(first_ok, best.end(), best.back());
        rows.push_back({c.gpu_name, c.template_name, c.shape.to_string(), line.strategy, line.run_id,
                        std::to_string(best.size()), fmt::format("{:.4f}", *first_ok), fmt::format("{:.4f}", best.back()),
                        std::to_string(found - best.begin() + 1)});
      }
    }
    md += table({"GPU", "template", "shape", "strategy", "run", "steps", "first ok ms", "best ms", "best found at step"}, rows);
  }

  md += "## Hardware counters\n\n";
  if (report.counters.empty()) {
    md += "no counters recorded (tiletune profile records them)\n";
  } else {
    std::vector<std::vector<std::string>> rows;
    for (const CounterRecord& c : report.counters) {
      for (const auto& [metric, value] : c.values) {
        rows.push_back({c.gpu_name, c.template_name, c.shape.to_string(), c.config, metric, format_number(value)});
      }
    }
    md += table({"GPU", "template", "shape", "configuration", "counter", "value"}, rows);
  }
  return md;
}

}  // namespace tiletune::report
