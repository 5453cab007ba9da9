#include "tools/report/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tools/bench/cublas_sgemm.h"
#include "tools/report/svg_plot.h"

namespace tiletune::report {
namespace {

constexpr const char* kStyle = R"css(
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; max-width: 1200px; }
h1 { font-size: 1.5em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; } h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 0.9em; max-width: 100%; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.scroll { overflow-x: auto; }
.note, .empty { color: #555; } .empty { font-style: italic; }
.plots { display: flex; flex-wrap: wrap; gap: 12px; }
svg.plot { background: #fff; border: 1px solid #ddd; max-width: 100%; height: auto; }
svg .title { font-size: 13px; font-weight: 600; }
svg .tick-label, svg .legend-label { font-size: 11px; fill: #333; }
svg .axis-label { font-size: 12px; fill: #111; }
svg .axis, svg .tick { stroke: #333; } svg .grid { stroke: #eee; }
svg .line { fill: none; stroke: #999; stroke-width: 1.5; }
svg .line.roof { stroke: #b22; stroke-dasharray: 5 3; }
svg .mark, svg .legend { fill: #1f6fb4; } svg .legend.roof { fill: #b22; }
svg .compulsory { fill: #fff; stroke: #1f6fb4; stroke-width: 1.5; }
svg .line.best { stroke: #1f6fb4; }
svg .line.unity { stroke: #2a9d4b; stroke-dasharray: 6 3; } svg .legend.unity { fill: #2a9d4b; }
svg .mark.nearest, svg .legend.nearest { fill: #d9822b; }
svg .mark.beyond, svg .legend.beyond { fill: #fff; stroke: #1f6fb4; stroke-width: 1.5; }
svg .mark.nearest.beyond { stroke: #d9822b; } svg .legend.beyond { stroke: #555; }
svg .line.exhaustive { stroke: #1f6fb4; } svg .mark.exhaustive, svg .legend.exhaustive { fill: #1f6fb4; }
svg .line.random { stroke: #d9822b; } svg .mark.random, svg .legend.random { fill: #d9822b; }
svg .line.annealing { stroke: #2a9d4b; } svg .mark.annealing, svg .legend.annealing { fill: #2a9d4b; }
svg .line.genetic { stroke: #8e44ad; } svg .mark.genetic, svg .legend.genetic { fill: #8e44ad; }
svg .line.bayes { stroke: #b22; } svg .mark.bayes, svg .legend.bayes { fill: #b22; }
)css";

std::string td(const std::string& text) { return "<td>" + escape_xml(text) + "</td>"; }
std::string td_num(const std::string& text) { return "<td class=\"num\">" + escape_xml(text) + "</td>"; }
// A configuration's text, which may break after each comma: a long one would widen its table past
// the page.
std::string td_config(const std::string& text) {
  std::string html = "<td class=\"config\">";
  for (const char c : escape_xml(text)) html += c == ',' ? std::string(",<wbr>") : std::string(1, c);
  return html + "</td>";
}

std::string table_head(const std::vector<std::string>& headers) {
  std::string html = "<div class=\"scroll\"><table><thead><tr>";
  for (const std::string& h : headers) html += "<th>" + escape_xml(h) + "</th>";
  return html + "</tr></thead><tbody>\n";
}
constexpr const char* kTableEnd = "</tbody></table></div>\n";

std::string empty(const std::string& text) { return "<p class=\"empty\">" + escape_xml(text) + "</p>\n"; }

std::string winners_section(const ReportData& report) {
  std::string html = "<h2 id=\"winners\">Winners and their fuzz evidence</h2>\n"
      "<p class=\"note\">The fastest ok result of a current template version per GPU, shape and "
      "precision (the template's declared arithmetic). "
      "Fuzz cases: the most random cases its configuration passed on that GPU (0: none recorded).</p>\n";
  if (report.winners.empty()) return html + empty("no ok results recorded");
  html += table_head({"GPU", "shape", "precision", "template", "configuration", "median ms", "TFLOP/s",
                      "fuzz cases passed"});
  for (const Winner& w : report.winners) {
    html += "<tr>" + td(w.gpu.name) + td(w.result.shape.to_string()) + td(to_string(w.precision)) +
            td(w.result.template_name) +
            td_config(w.result.config) + td_num(fmt::format("{:.4f}", w.result.median_ms)) +
            td_num(format_number(w.result.tflops)) + td_num(std::to_string(w.fuzz_cases)) + "</tr>\n";
  }
  return html + kTableEnd;
}

// A chart of ratios over categories (shapes) with its 1.0 line. The axis holds 1.0 with a little
// room on both sides, so that the line is drawn on neither edge, and stops at kRatioTop: a ratio
// beyond it is drawn hollow at the top (its value in its tooltip and the table), so that one outlier
// does not flatten the differences near 1.0 the chart is for.
class RatioChart {
 public:
  static constexpr double kRatioTop = 2.0;

  RatioChart(const std::string& kind, const std::string& title, const Axis& x, std::string y_label,
             const std::vector<double>& ratios)
      : plot_(kind, title, x, y_axis(std::move(y_label), ratios)), categories_(x.categories.size()) {}

  void add(double x, double ratio, const std::string& series, const std::string& tooltip) {
    const bool beyond = ratio > top_;
    beyond_ = beyond_ || beyond;
    plot_.add_point(x, beyond ? top_ : ratio, beyond ? series + " beyond" : series, tooltip);
  }
  void add_legend(const std::string& series, const std::string& text) { plot_.add_legend(series, text); }

  std::string render(const std::string& unity_text) {
    plot_.add_line({{-0.5, 1}, {double(categories_) - 0.5, 1}}, "unity");
    plot_.add_legend("unity", unity_text);
    if (beyond_) {
      plot_.add_legend("beyond", fmt::format("hollow: above {} (its value in its tooltip and the table)",
                                             format_number(top_)));
    }
    return plot_.render();
  }

 private:
  Axis y_axis(std::string label, const std::vector<double>& ratios) {
    double low = 1, high = 1;
    for (const double r : ratios) low = std::min(low, r), high = std::max(high, std::min(r, kRatioTop));
    const double room = 0.05 * std::max(high - low, 1.0);
    Axis axis = Axis::linear(std::move(label), low - room, std::max(high, 1 + room));
    top_ = Scale(axis, 0, 1).domain_max();  // the top tick: a ratio above it is drawn at it
    return axis;
  }

  double top_ = kRatioTop;  // before plot_, whose axis sets it
  SvgPlot plot_;
  std::size_t categories_;
  bool beyond_ = false;
};

std::string bench_section(const ReportData& report) {
  std::string html = "<h2 id=\"bench\">Winner against cuBLAS</h2>\n"
      "<p class=\"note\">From the bench rows (<code>tiletune bench</code> times the best recorded "
      "configuration and cuBLAS in the same run: TF32 for tf32 templates, SGEMM for fp32 and "
      "tf32x3 ones); the latest row per GPU, shape and precision. A chart per precision: cuBLAS's "
      "time over ours, above 1.0 where ours is faster.</p>\n";
  if (report.gpu_names.empty()) html += empty("no bench rows recorded");
  for (const std::string& gpu : report.gpu_names) {
    html += "<h3>" + escape_xml(gpu) + "</h3>\n";
    std::vector<const BenchRow*> rows;
    std::map<Precision, std::vector<const BenchRow*>> by_precision;
    for (const BenchRow& row : report.bench) {
      if (row.gpu_name != gpu) continue;
      rows.push_back(&row);
      if (row.ours_ms > 0) by_precision[row.precision].push_back(&row);
    }
    if (rows.empty()) {
      html += empty("no bench rows recorded for this GPU (tiletune bench records them)");
      continue;
    }
    html += "<div class=\"plots\">\n";
    for (const auto& [precision, of_precision] : by_precision) {
      Axis x = Axis::categorical("shape (MxNxK)");
      std::vector<double> ratios;
      for (const BenchRow* row : of_precision) {
        x.categories.push_back(row->shape.to_string());
        ratios.push_back(row->cublas_ms / row->ours_ms);
      }
      const std::string yardstick = cublas_yardstick(precision);
      RatioChart plot("bench", fmt::format("{}, {}: speed over {}", gpu, to_string(precision), yardstick), x,
                      yardstick + " ms / ours ms", ratios);
      for (std::size_t i = 0; i < of_precision.size(); ++i) {
        const BenchRow& row = *of_precision[i];
        plot.add(double(i), ratios[i], "speed",
                       fmt::format("{} {} [{}]: {} {:.4f} ms / ours {:.4f} ms = {:.3f}", row.shape.to_string(),
                                   row.template_name, row.config, yardstick, row.cublas_ms, row.ours_ms, ratios[i]));
      }
      plot.add_legend("speed", "our winner's speed over " + yardstick);
      html += plot.render("1.0: as fast as " + yardstick);
    }
    html += "</div>\n";
    html += table_head({"shape", "precision", "template", "configuration", "ours ms", "against",
                        "cuBLAS ms", "ours / cuBLAS (speed)", "recorded at"});
    for (const BenchRow* row : rows) {
      html += "<tr>" + td(row->shape.to_string()) + td(to_string(row->precision)) +
              td(row->template_name) + td_config(row->config) + td_num(fmt::format("{:.4f}", row->ours_ms)) +
              td(cublas_yardstick(row->precision)) + td_num(fmt::format("{:.4f}", row->cublas_ms)) +
              td_num(row->ours_ms > 0 ? fmt::format("{:.3f}", row->cublas_ms / row->ours_ms) : "-") +
              td(row->recorded_at) + "</tr>\n";
    }
    html += kTableEnd;
  }
  return html;
}

std::string choice_section(const ReportData& report) {
  std::string html = "<h2 id=\"choice\">Choice at untuned shapes</h2>\n"
      "<p class=\"note\">Leave one shape out: for each GPU and template with ok results at " +
      std::to_string(kMinChoiceShapes) + " or more shapes, each recorded shape in turn is hidden "
      "(its records of the template on that GPU taken out) and the library asked what it would "
      "run there (packed leading dimensions): the configuration its performance model predicts "
      "fastest, and, as before the model, the nearest recorded shape's. Each point is the chosen "
      "configuration's recorded time at the hidden shape over the best recorded there (1.0: the "
      "best). An estimate of the choice at shapes nobody tuned: the other shapes stay known "
      "(<code>tiletune selection-eval</code> measures held-out ones). Unmeasured: the chosen "
      "configuration was not timed at the shape, so it has no ratio.</p>\n";
  if (report.choices.empty()) {
    return html + empty("no GPU and template has ok results at " + std::to_string(kMinChoiceShapes) +
                        " or more shapes");
  }
  for (const std::string& gpu : report.gpu_names) {
    std::vector<const TemplateChoices*> of_gpu;
    for (const TemplateChoices& t : report.choices) {
      if (t.gpu_name == gpu) of_gpu.push_back(&t);
    }
    if (of_gpu.empty()) continue;
    html += "<h3>" + escape_xml(gpu) + "</h3>\n";
    std::vector<GemmShape> shapes;
    std::vector<double> ratios;
    for (const TemplateChoices* t : of_gpu) {
      for (const HeldOutShape& s : t->shapes) {
        shapes.push_back(s.shape);
        for (const auto& ratio : {s.model.ratio, s.nearest.ratio}) {
          if (ratio) ratios.push_back(*ratio);
        }
      }
    }
    std::sort(shapes.begin(), shapes.end());
    shapes.erase(std::unique(shapes.begin(), shapes.end()), shapes.end());
    Axis x = Axis::categorical("hidden shape (MxNxK)");
    for (const GemmShape& shape : shapes) x.categories.push_back(shape.to_string());
    RatioChart plot("choice", gpu + ": chosen time over the best at each hidden shape", x, "chosen ms / best ms",
                    ratios);
    for (const TemplateChoices* t : of_gpu) {
      for (const HeldOutShape& s : t->shapes) {
        const double at = double(std::lower_bound(shapes.begin(), shapes.end(), s.shape) - shapes.begin());
        // Side by side within the shape's slot, so that equal ratios do not hide each other.
        for (const auto& [pick, series, offset] : {std::tuple{&s.model, "model", -0.12},
                                                   std::tuple{&s.nearest, "nearest", 0.12}}) {
          if (!pick->ratio) continue;
          plot.add(at + offset, *pick->ratio, series,
                   fmt::format("{} {} ({}): [{}] {:.3f}x the best [{}] {:.4f} ms", t->template_name,
                               s.shape.to_string(), series, pick->config, *pick->ratio, s.best_config, s.best_ms));
        }
      }
    }
    plot.add_legend("model", "the performance model's choice");
    plot.add_legend("nearest", "the nearest recorded shape's choice");
    html += plot.render("1.0: the shape's best");

    html += table_head({"template", "shapes", "model: geometric mean", "model: worst", "nearest: geometric mean",
                        "nearest: worst", "unmeasured (model, nearest)"});
    for (const TemplateChoices* t : of_gpu) {
      html += "<tr>" + td(t->template_name) + td_num(std::to_string(t->shapes.size())) +
              td_num(mean_text(t->model)) + td(worst_text(t->model)) + td_num(mean_text(t->nearest)) +
              td(worst_text(t->nearest)) +
              td_num(fmt::format("{}, {}", t->model.unmeasured, t->nearest.unmeasured)) + "</tr>\n";
    }
    html += kTableEnd;
    html += table_head({"template", "hidden shape", "best ms", "model's configuration", "model: over the best",
                        "nearest's configuration", "nearest: over the best"});
    for (const TemplateChoices* t : of_gpu) {
      for (const HeldOutShape& s : t->shapes) {
        html += "<tr>" + td(t->template_name) + td(s.shape.to_string()) +
                td_num(fmt::format("{:.4f}", s.best_ms)) + td_config(s.model.config) +
                td_num(ratio_text(s.model)) + td_config(s.nearest.config) +
                td_num(ratio_text(s.nearest)) + "</tr>\n";
      }
    }
    html += kTableEnd;
  }
  return html;
}

std::string roofline_section(const ReportData& report) {
  std::string html = "<h2 id=\"roofline\">Roofline</h2>\n"
      "<p class=\"note\">Each winner at its arithmetic intensity (FLOPs 2MNK over DRAM bytes) and "
      "achieved TFLOP/s. Bytes: Nsight Compute's measured DRAM bytes (<code>" + std::string(kDramBytesText) +
      "</code>, tiletune profile) where recorded (filled marks), else the compulsory traffic "
      "4(MK+KN+MN) (hollow marks). FP32 peak: SMs x 128 lanes x 2 FLOPs x clock. FP32 winners only: "
      "TF32 and 3xTF32 run on the tensor cores, under another roof.</p>\n";
  if (report.roofs.empty()) html += empty("no GPUs recorded");
  for (const GpuRoofs& roofs : report.roofs) {
    std::vector<const Winner*> winners;
    for (const Winner& w : report.winners) {
      if (w.gpu.name == roofs.gpu.name && w.precision == Precision::fp32) winners.push_back(&w);
    }
    html += "<h3>" + escape_xml(roofs.gpu.name) + "</h3>\n";
    html += "<p class=\"note\">" +
            escape_xml(roofs.fp32_peak_tflops > 0
                           ? fmt::format("FP32 peak {} TFLOP/s ({} SMs, {} MHz)", format_number(roofs.fp32_peak_tflops),
                                         roofs.gpu.sm_count, format_number(roofs.gpu.clock_khz / 1e3))
                           : std::string("no FP32 peak: the GPU row has no SM count or clock")) +
            "; " + escape_xml(roofs.bandwidth_gb_s ? fmt::format("{} GB/s, ", format_number(*roofs.bandwidth_gb_s)) : "") +
            escape_xml(roofs.bandwidth_source) + ".</p>\n";
    if (winners.empty()) {
      html += empty("no ok results recorded for this GPU");
      continue;
    }
    Axis x = Axis::logarithmic("FLOP / DRAM byte", 1e300, 0), y = Axis::logarithmic("TFLOP/s", 1e300, 0);
    for (const Winner* w : winners) {
      const double intensity = w->result.shape.flops() / w->bytes, achieved = w->result.shape.tflops(w->result.median_ms);
      x.min = std::min(x.min, intensity); x.max = std::max(x.max, intensity);
      y.min = std::min(y.min, achieved);  y.max = std::max(y.max, achieved);
    }
    const double peak = roofs.fp32_peak_tflops;
    if (peak > 0) y.max = std::max(y.max, peak);
    if (peak > 0 && roofs.bandwidth_gb_s) {
      const double ridge = peak * 1e12 / (*roofs.bandwidth_gb_s * 1e9);
      x.min = std::min(x.min, ridge / 10); x.max = std::max(x.max, ridge * 2);
      y.min = std::min(y.min, *roofs.bandwidth_gb_s * 1e9 * x.min / 1e12);
    }
    SvgPlot plot("roofline", roofs.gpu.name + ": winners on the roofline", x, y);
    const Scale sx(x, 0, 1);
    if (peak > 0 && roofs.bandwidth_gb_s) {
      const double ridge = peak * 1e12 / (*roofs.bandwidth_gb_s * 1e9);
      const double from = sx.domain_min(), to = sx.domain_max();
      plot.add_line({{from, *roofs.bandwidth_gb_s * 1e9 * from / 1e12}, {ridge, peak}, {to, peak}}, "roof");
      plot.add_legend("roof", "roofs: DRAM bandwidth x intensity, FP32 peak");
    } else if (peak > 0) {
      plot.add_line({{sx.domain_min(), peak}, {sx.domain_max(), peak}}, "roof");
      plot.add_legend("roof", "roof: FP32 peak (no DRAM bandwidth known)");
    }
    for (const Winner* w : winners) {
      const double intensity = w->result.shape.flops() / w->bytes, achieved = w->result.shape.tflops(w->result.median_ms);
      plot.add_point(intensity, achieved, w->bytes_measured ? "measured" : "compulsory",
                     fmt::format("{} {} [{}]: {} FLOP/byte ({} bytes), {} TFLOP/s", w->result.shape.to_string(),
                                 w->result.template_name, w->result.config, format_number(intensity),
                                 w->bytes_measured ? "measured" : "compulsory", format_number(achieved)));
    }
    plot.add_legend("measured", "measured DRAM bytes");
    plot.add_legend("compulsory", "compulsory bytes 4(MK+KN+MN)");
    html += plot.render();
  }
  return html;
}

std::string sensitivity_section(const ReportData& report) {
  std::string html = "<h2 id=\"sensitivity\">Parameter sensitivity</h2>\n"
      "<p class=\"note\">Per template and shape, for each parameter: the best median time among "
      "the ok results at each of its values.</p>\n";
  if (report.sensitivities.empty()) return html + empty("no ok results recorded");
  for (const Sensitivity& s : report.sensitivities) {
    html += "<h3>" + escape_xml(fmt::format("{}, {} on {}", s.template_name, s.shape.to_string(), s.gpu_name)) +
            "</h3>\n";
    if (s.best_ms_by_value.empty()) {
      html += empty("the template has no parameters");
      continue;
    }
    html += "<div class=\"plots\">\n";
    for (const auto& [parameter, values] : s.best_ms_by_value) {
      Axis x = Axis::categorical(parameter), y = Axis::linear("best ms", 0, 0);
      for (const auto& [value, ms] : values) {
        x.categories.push_back(value);
        y.max = std::max(y.max, ms);
      }
      SvgPlot plot("sensitivity", parameter, x, y, 260, 220);
      for (std::size_t i = 0; i < values.size(); ++i) {
        plot.add_point(double(i), values[i].second, "best",
                       fmt::format("{}={}: best {} ms", parameter, values[i].first, format_number(values[i].second)));
      }
      html += plot.render();
    }
    html += "</div>\n";
  }
  return html;
}

std::string convergence_section(const ReportData& report) {
  std::string html = "<h2 id=\"convergence\">Search convergence</h2>\n"
      "<p class=\"note\">Each line is one tune's search (one process, its strategy in the legend): "
      "the best ok time after each configuration the strategy settled, in its order, measured then "
      "or taken from an earlier record. Marks where it improved.</p>\n";
  if (report.convergences.empty()) {
    return html + empty("no search traces recorded (tunes record them since schema version 6)");
  }
  html += "<div class=\"plots\">\n";
  for (const Convergence& c : report.convergences) {
    std::size_t steps = 1;
    double slowest = 0;
    for (const ConvergenceLine& line : c.lines) {
      steps = std::max(steps, line.best_so_far_ms.size());
      for (const double ms : line.best_so_far_ms) {
        if (!std::isnan(ms)) slowest = std::max(slowest, ms);
      }
    }
    Axis x = Axis::linear("configurations settled", 1, double(steps)),
         y = Axis::linear("best ms so far", 0, slowest > 0 ? slowest : 1);
    SvgPlot plot("convergence", fmt::format("{}, {} on {}", c.template_name, c.shape.to_string(), c.gpu_name), x, y, 360, 240);
    for (const ConvergenceLine& line : c.lines) {
      std::vector<std::pair<double, double>> points;
      for (std::size_t i = 0; i < line.best_so_far_ms.size(); ++i) {
        const double ms = line.best_so_far_ms[i];
        if (std::isnan(ms)) continue;
        points.emplace_back(double(i + 1), ms);
        if (points.size() == 1 || ms < line.best_so_far_ms[i - 1]) {
          plot.add_point(double(i + 1), ms, line.strategy,
                         fmt::format("{} (run {}), step {}: {} ms", line.strategy, line.run_id, i + 1, format_number(ms)));
        }
      }
      plot.add_line(points, line.strategy);
      plot.add_legend(line.strategy, fmt::format("{} (run {}, {} steps)", line.strategy, line.run_id.substr(0, 6),
                                                 line.best_so_far_ms.size()));
    }
    html += plot.render();
  }
  return html + "</div>\n";
}

std::string counters_section(const ReportData& report) {
  std::string html = "<h2 id=\"counters\">Hardware counters</h2>\n"
      "<p class=\"note\">Recorded by <code>tiletune profile</code> (Nsight Compute), per configuration, GPU and "
      "shape: a row per counter, as profile records some twenty (a column each would widen the table "
      "past the page).</p>\n";
  if (report.counters.empty()) return html + empty("no counters recorded (tiletune profile records them)");
  html += table_head({"GPU", "template", "shape", "configuration", "ncu", "counter", "value"});
  for (const CounterRecord& c : report.counters) {
    // The record's cells span its counters' rows: "<td ...>" becomes "<td rowspan="N" ...>".
    const std::string span = fmt::format("<td rowspan=\"{}\"", std::max<std::size_t>(c.values.size(), 1));
    const auto spanning = [&](const std::string& cell) { return span + cell.substr(std::strlen("<td")); };
    html += "<tr>" + spanning(td(c.gpu_name)) + spanning(td(c.template_name)) + spanning(td(c.shape.to_string())) +
            spanning(td_config(c.config)) + spanning(td(c.ncu_version));
    if (c.values.empty()) html += td("-") + td_num("-") + "</tr>\n";
    bool first = true;
    for (const auto& [metric, value] : c.values) {
      html += (first ? "" : "<tr>") + td(metric) + td_num(format_number(value)) + "</tr>\n";
      first = false;
    }
  }
  return html + kTableEnd;
}

}  // namespace

std::string html_report(const ReportData& report, const std::string& source) {
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                     "<title>tiletune report: " + escape_xml(source) + "</title>\n<style>" + kStyle +
                     "</style>\n</head>\n<body>\n<h1>tiletune report: " + escape_xml(source) + "</h1>\n";
  html += "<p class=\"note\">GPUs: " + escape_xml(report.gpu_names.empty() ? std::string("none recorded") : fmt::format("{}", fmt::join(report.gpu_names, ", "))) +
          ". Sections: <a href=\"#winners\">winners</a>, <a href=\"#bench\">against cuBLAS</a>, "
          "<a href=\"#choice\">choice at untuned shapes</a>, "
          "<a href=\"#roofline\">roofline</a>, <a href=\"#sensitivity\">sensitivity</a>, "
          "<a href=\"#convergence\">convergence</a>, <a href=\"#counters\">counters</a>.</p>\n";
  html += winners_section(report) + bench_section(report) + choice_section(report) + roofline_section(report) +
          sensitivity_section(report) + convergence_section(report) + counters_section(report);
  return html + "</body>\n</html>\n";
}

}  // namespace tiletune::report
