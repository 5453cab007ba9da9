// tiletune report: the SVG writer (scales, ticks, escaping), the model read from a hand-made
// database (winner, sensitivity, convergence, bench, roofline bytes, the choice at hidden shapes),
// the choice on the H200 selection fixture, the Markdown, and the command line's answers to bad
// input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <tuple>

#include "tests/support/result_records.h"
#include "tests/support/run_tiletune.h"
#include "tests/support/test_folder.h"
#include "tests/support/tuned_fixture.h"
#include "tools/report/html_report.h"
#include "tools/report/markdown_report.h"
#include "tools/report/report_data.h"
#include "tools/report/svg_plot.h"
#include "tuner/backend/gpu/gpu_device.h"

namespace tiletune::report {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;
using testing_tools::run_tiletune;

int count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Winners and bench rows of each precision stand apart: a TF32 template's faster time is no FP32
// winner, its bench row is against cuBLAS in TF32, and the FP32 roofline leaves it out.
TEST(ReportPrecision, WinnersAndBenchRowsOfEachPrecisionStandApart) {
  const CurrentResult simt{h200(), make_result("simt", "f1", "c", kSquare, ResultStatus::ok, 3.0), 100,
                           Precision::fp32};
  const CurrentResult tensor{h200(), make_result("tensor", "t1", "c", kSquare, ResultStatus::ok, 1.0),
                             100, Precision::tf32};
  BenchRecord simt_bench{"NVIDIA H200", "simt", "f1", "c", kSquare, 3.0, 2.0, "2026-01-01 00:00:00"};
  BenchRecord tensor_bench{"NVIDIA H200", "tensor", "t1", "c", kSquare, 1.0, 0.5, "2026-01-01 00:00:00"};
  tensor_bench.precision = Precision::tf32;
  const ReportData report = build_report({simt, tensor}, {tensor_bench, simt_bench}, {});
  ASSERT_EQ(report.winners.size(), 2u);
  EXPECT_EQ(report.winners[0].result.template_name, "simt");
  EXPECT_EQ(report.winners[0].precision, Precision::fp32);
  EXPECT_EQ(report.winners[1].result.template_name, "tensor");
  EXPECT_EQ(report.winners[1].precision, Precision::tf32);
  ASSERT_EQ(report.bench.size(), 2u);  // the latest of each precision, not one for the shape

  const std::string md = markdown_report(report, "precision.db");
  EXPECT_THAT(md, HasSubstr("| NVIDIA H200 | 1024x1024x1024 | tf32 | tensor | c | 1.0000 |"));
  EXPECT_THAT(md, HasSubstr("| 1024x1024x1024 | tf32 | tensor | c | 1.0000 | cuBLAS TF32 | 0.5000 | 0.500 |"));
  EXPECT_THAT(md, HasSubstr("| 1024x1024x1024 | fp32 | simt | c | 3.0000 | cuBLAS SGEMM | 2.0000 | 0.667 |"));
  const std::size_t roofline_at = md.find("## Roofline");
  const std::string roofline = md.substr(roofline_at, md.find("## Parameter sensitivity") - roofline_at);
  EXPECT_THAT(roofline, HasSubstr("| 1024x1024x1024 | simt |"));
  EXPECT_THAT(roofline, Not(HasSubstr("| tensor |")));
  const std::string html = html_report(report, "precision.db");
  EXPECT_THAT(html, HasSubstr("<td>cuBLAS TF32</td>"));
  // A ratio chart per precision, each against its own yardstick, with its 1.0 line.
  EXPECT_EQ(count(html, "<svg class=\"plot bench\""), 2);
  EXPECT_THAT(html, HasSubstr("aria-label=\"NVIDIA H200, fp32: speed over cuBLAS SGEMM\""));
  EXPECT_THAT(html, HasSubstr("aria-label=\"NVIDIA H200, tf32: speed over cuBLAS TF32\""));
  EXPECT_EQ(count(html, "<polyline class=\"line unity\""), 2);
  EXPECT_THAT(html, HasSubstr("cuBLAS TF32 0.5000 ms / ours 1.0000 ms = 0.500"));
}

TEST(SvgPlot, EscapesMarkupInText) {
  EXPECT_EQ(escape_xml("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
  SvgPlot plot("bench", "A<B & C", Axis::linear("x <", 0, 1), Axis::linear("y \"", 0, 1));
  plot.add_point(0.5, 0.5, "ours", "TILE=<32>");
  const std::string svg = plot.render();
  EXPECT_THAT(svg, HasSubstr("A&lt;B &amp; C"));
  EXPECT_THAT(svg, HasSubstr("x &lt;"));
  EXPECT_THAT(svg, HasSubstr("y &quot;"));
  EXPECT_THAT(svg, HasSubstr("TILE=&lt;32&gt;"));
  EXPECT_THAT(svg, Not(HasSubstr("<B")));
}

TEST(SvgPlot, LinearTicksAreOneTwoFiveStepsCoveringTheRange) {
  EXPECT_THAT(axis_ticks(Axis::linear("", 0.3, 9.7)), ElementsAre(0, 2, 4, 6, 8, 10));
  EXPECT_THAT(axis_ticks(Axis::linear("", 0, 0.9)), ElementsAre(0, 0.2, 0.4, 0.6000000000000001, 0.8, 1));
  EXPECT_THAT(axis_ticks(Axis::linear("", 120, 480)), ElementsAre(100, 200, 300, 400, 500));
  // One value: a range around it, not a zero-width axis.
  EXPECT_THAT(axis_ticks(Axis::linear("", 4, 4)), ElementsAre(2, 3, 4, 5, 6));
}

TEST(SvgPlot, LogTicksArePowersOfTenAroundTheRange) {
  EXPECT_THAT(axis_ticks(Axis::logarithmic("", 0.05, 300)), ElementsAre(0.01, 0.1, 1, 10, 100, 1000));
  EXPECT_THAT(axis_ticks(Axis::logarithmic("", 10, 10)), ElementsAre(10, 100));
}

TEST(SvgPlot, ScalesMapTheTickRangeOntoThePixels) {
  const Scale linear(Axis::linear("", 0.3, 9.7), 100, 200);  // ticks 0..10
  EXPECT_DOUBLE_EQ(linear(0), 100);
  EXPECT_DOUBLE_EQ(linear(5), 150);
  EXPECT_DOUBLE_EQ(linear(10), 200);
  const Scale log(Axis::logarithmic("", 1, 100), 300, 100);  // upwards, as a y axis
  EXPECT_DOUBLE_EQ(log(1), 300);
  EXPECT_DOUBLE_EQ(log(10), 200);
  EXPECT_DOUBLE_EQ(log(100), 100);
  const Scale categories(Axis::categorical("", {"a", "b"}), 0, 100);  // half a step each side
  EXPECT_DOUBLE_EQ(categories(0), 25);
  EXPECT_DOUBLE_EQ(categories(1), 75);
}

TEST(SvgPlot, EveryPointIsACountableMarkAndAxesHaveLabels) {
  SvgPlot plot("sensitivity", "TILE", Axis::categorical("TILE", {"8", "16", "32"}), Axis::linear("best ms", 0, 3));
  plot.add_point(0, 3, "best", "8");
  plot.add_point(1, 1, "best", "16");
  plot.add_point(2, 2, "best", "32");
  plot.add_line({{0, 3}, {1, 1}}, "best");
  const std::string svg = plot.render();
  EXPECT_THAT(svg, HasSubstr("<svg class=\"plot sensitivity\""));
  EXPECT_EQ(count(svg, "<circle class=\"mark best\""), 3);
  EXPECT_EQ(count(svg, "<polyline class=\"line best\""), 1);
  EXPECT_EQ(count(svg, "class=\"axis\""), 2);
  EXPECT_EQ(count(svg, "class=\"axis-label\""), 2);
  EXPECT_THAT(svg, HasSubstr(">16</text>"));
}

TEST(SvgPlot, NumbersKeepThreeSignificantDigits) {
  EXPECT_EQ(format_number(0), "0");
  EXPECT_EQ(format_number(0.000745), "0.000745");
  EXPECT_EQ(format_number(2.5), "2.5");
  EXPECT_EQ(format_number(66.534), "66.5");
  EXPECT_EQ(format_number(12884901888), "12884901888");
}

// A database made by hand: an H200 with two template versions of tiled (only the current one
// counts), naive, fuzz passes, bench rows and counters; and a GPU without bench rows.
class ReportModel : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing_support::fresh_test_folder("report");
    ResultStore store(db());
    gpu_ = store.register_gpu(h200());
    store.register_template(make_template("tiled", "old"));
    store.record_result(gpu_, h200(), make_result("tiled", "old", "PAD=0,TILE=64", kSquare, ResultStatus::ok, 0.1));
    store.register_template(make_template("tiled", "h1"));
    store.register_template(make_template("naive", "n1"));
    // In recording order: 5, 2, a failure, 3, 1.5 (naive) for kSquare.
    for (const auto& [config, ms] : std::vector<std::pair<std::string, double>>{
             {"PAD=0,TILE=8", 5}, {"PAD=1,TILE=16", 2}, {"PAD=0,TILE=32", 3}, {"PAD=1,TILE=8", 4}}) {
      store.record_result(gpu_, h200(), make_result("tiled", "h1", config, kSquare, ResultStatus::ok, ms));
      if (ms == 2) {
        store.record_result(gpu_, h200(), make_result("tiled", "h1", "PAD=0,TILE=16", kSquare,
                                                      ResultStatus::wrong_result, 0));
      }
    }
    store.record_result(gpu_, h200(), make_result("naive", "n1", "", kSquare, ResultStatus::ok, 6));
    store.record_result(gpu_, h200(), make_result("tiled", "h1", "PAD=0,TILE=8", kTall, ResultStatus::ok, 1.5));
    store.record_fuzz_pass(gpu_, "tiled", "h1", "PAD=1,TILE=16", 200);
    store.record_bench(gpu_, BenchRecord{"", "tiled", "h1", "PAD=1,TILE=16", kSquare, 2.1, 1.4, ""});
    store.record_counters(gpu_, CounterRecord{"", "tiled", "h1", "PAD=1,TILE=16", kSquare,
                                              {{"dram_read_bytes", 3e7}, {"dram_write_bytes", 1e7}}, "2025.3.1", ""});
    // Two searches of tiled at 1024^3 (listed in the opposite order to the model's) and one of
    // the old version, which the report leaves out.
    record_search("bbbb", "exhaustive", "tiled", "h1", {{"PAD=0,TILE=8", 4}, {"PAD=1,TILE=16", 3}});
    record_search("aaaa", "random", "tiled", "h1", {{"PAD=0,TILE=8", 5}, {"PAD=0,TILE=16", 0}, {"PAD=1,TILE=16", 2}, {"PAD=0,TILE=32", 3}});
    record_search("cccc", "random", "tiled", "old", {{"PAD=0,TILE=64", 0.1}});
    GpuRecord other = h200();
    other.name = "NVIDIA A100-SXM4-80GB";
    other.sm_count = 108;
    other.clock_khz = 1410000;
    const std::int64_t a100 = store.register_gpu(other);
    store.record_result(a100, other, make_result("tiled", "h1", "PAD=0,TILE=32", kSquare, ResultStatus::ok, 7));
  }
  // A search's steps in order; a time of 0 is a wrong result.
  void record_search(const std::string& run, const std::string& strategy, const std::string& name,
                     const std::string& hash, const std::vector<std::pair<std::string, double>>& steps) {
    ResultStore store(db());
    int seq = 0;
    for (const auto& [config, ms] : steps) {
      TraceRecord step;
      step.run_id = run;
      step.template_name = name;
      step.template_hash = hash;
      step.shape = kSquare;
      step.seq = ++seq;
      step.strategy = strategy;
      step.config = config;
      step.status = ms > 0 ? ResultStatus::ok : ResultStatus::wrong_result;
      step.median_ms = ms;
      store.record_trace(gpu_, step);
    }
  }
  std::filesystem::path db() const { return dir_ / "report.db"; }
  ReportData read() const { return read_report(db()); }

  std::filesystem::path dir_;
  std::int64_t gpu_ = 0;
};

TEST_F(ReportModel, WinnerIsTheFastestOkResultOfCurrentVersionsPerGpuAndShape) {
  const ReportData report = read();
  EXPECT_THAT(report.gpu_names, ElementsAre("NVIDIA A100-SXM4-80GB", "NVIDIA H200"));
  ASSERT_EQ(report.winners.size(), 3u);
  EXPECT_EQ(report.winners[0].gpu.name, "NVIDIA A100-SXM4-80GB");
  const Winner& square = report.winners[1];  // H200 shapes in order: 1024^3, then 4096x256x512
  EXPECT_EQ(square.gpu.name, "NVIDIA H200");
  EXPECT_EQ(square.result.shape, kSquare);
  EXPECT_EQ(square.result.config, "PAD=1,TILE=16");  // not the old version's 0.1 ms
  EXPECT_EQ(square.fuzz_cases, 200);
  EXPECT_TRUE(square.bytes_measured);
  EXPECT_DOUBLE_EQ(square.bytes, 4e7);  // read + write
  const Winner& tall = report.winners[2];
  EXPECT_EQ(tall.result.shape, kTall);
  EXPECT_FALSE(tall.bytes_measured);
  EXPECT_DOUBLE_EQ(tall.bytes, 4.0 * (4096 * 512 + 512 * 256 + 4096 * 256));
  EXPECT_EQ(tall.fuzz_cases, 0);
}

TEST_F(ReportModel, SensitivityIsTheBestTimePerValueInNumericOrder) {
  const ReportData report = read();
  ASSERT_EQ(report.sensitivities.size(), 4u);  // A100 tiled; H200 naive, tiled 1024^3, tiled tall
  const Sensitivity& s = report.sensitivities[2];
  EXPECT_EQ(s.gpu_name, "NVIDIA H200");
  EXPECT_EQ(s.template_name, "tiled");
  EXPECT_EQ(s.shape, kSquare);
  EXPECT_THAT(s.best_ms_by_value.at("TILE"), ElementsAre(Pair("8", 4), Pair("16", 2), Pair("32", 3)));
  EXPECT_THAT(s.best_ms_by_value.at("PAD"), ElementsAre(Pair("0", 3), Pair("1", 2)));
}

TEST_F(ReportModel, ConvergenceIsTheBestSoFarOfEachSearchInItsStrategysOrder) {
  const ReportData report = read();
  ASSERT_EQ(report.convergences.size(), 1u);  // the old version's search is left out
  const Convergence& c = report.convergences[0];
  EXPECT_EQ(c.gpu_name, "NVIDIA H200");
  EXPECT_EQ(c.template_name, "tiled");
  EXPECT_EQ(c.template_hash, "h1");
  EXPECT_EQ(c.shape, kSquare);
  ASSERT_EQ(c.lines.size(), 2u);
  EXPECT_EQ(c.lines[0].strategy, "exhaustive");
  EXPECT_THAT(c.lines[0].best_so_far_ms, ElementsAre(4, 3));
  EXPECT_EQ(c.lines[1].strategy, "random");
  EXPECT_EQ(c.lines[1].run_id, "aaaa");
  EXPECT_THAT(c.lines[1].best_so_far_ms, ElementsAre(5, 5, 2, 2));  // the wrong result is a step
}

TEST(ReportConvergence, StepsBeforeTheFirstOkHaveNoBestYet) {
  TraceRecord failed, ok;
  failed.run_id = ok.run_id = "r";
  failed.strategy = ok.strategy = "bayes";
  failed.status = ResultStatus::crashed;
  ok.median_ms = 1.25;
  const ReportData report = build_report({}, {}, {}, {failed, ok});
  ASSERT_EQ(report.convergences.size(), 1u);
  ASSERT_EQ(report.convergences[0].lines.size(), 1u);
  const std::vector<double>& best = report.convergences[0].lines[0].best_so_far_ms;
  ASSERT_EQ(best.size(), 2u);
  EXPECT_TRUE(std::isnan(best[0]));
  EXPECT_EQ(best[1], 1.25);
  const std::string html = html_report(report, "trace.db");
  EXPECT_EQ(count(html, "<circle class=\"mark bayes\""), 1);
  EXPECT_EQ(count(html, "<polyline class=\"line bayes\""), 1);
  EXPECT_THAT(markdown_report(report, "trace.db"), HasSubstr("| bayes | r | 2 | 1.2500 | 1.2500 | 2 |"));
}

TEST_F(ReportModel, RoofsComeFromSmsClockAndTheDataSheet) {
  const ReportData report = read();
  ASSERT_EQ(report.roofs.size(), 2u);
  EXPECT_DOUBLE_EQ(report.roofs[1].fp32_peak_tflops, 132 * 128 * 2 * 1.98e9 / 1e12);
  EXPECT_EQ(report.roofs[1].bandwidth_gb_s, 4800);
  EXPECT_EQ(report.roofs[0].bandwidth_gb_s, 2039);
  EXPECT_EQ(datasheet_bandwidth_gb_s("CPU backend"), std::nullopt);
  EXPECT_EQ(datasheet_bandwidth_gb_s("NVIDIA GH200 480GB"), std::nullopt);  // not H200's
}

TEST(ReportOfNothing, SaysWhatIsMissingInEverySection) {
  const ReportData nothing = build_report({}, {}, {});
  const std::string html = html_report(nothing, "empty.db"), md = markdown_report(nothing, "empty.db");
  EXPECT_THAT(html, Not(HasSubstr("<svg")));
  EXPECT_EQ(count(html, "<p class=\"empty\">"), 7);
  EXPECT_EQ(count(md, "no ok results recorded"), 2);
  EXPECT_THAT(md, HasSubstr("no search traces recorded"));
  EXPECT_THAT(md, HasSubstr("no bench rows recorded"));
  EXPECT_THAT(md, HasSubstr("no GPUs recorded"));
  EXPECT_THAT(md, HasSubstr("no counters recorded"));
  EXPECT_THAT(md, HasSubstr("no GPU and template has ok results at 3 or more shapes"));
}

// Markdown shows what the database holds as text: a GPU or template name cannot inject raw HTML,
// a link, a heading or a table cell into a page a viewer renders.
TEST(ReportMarkdown, StringsFromTheDatabaseAreTextNotMarkup) {
  GpuRecord gpu = h200();
  gpu.name = "GPU<script>alert(1)</script>\n# Injected heading";
  const CurrentResult hostile{gpu,
                              make_result("tiled", "h", "A=[click me](javascript:alert(1))|x", kSquare,
                                          ResultStatus::ok, 1.0),
                              10, Precision::fp32};
  const std::string md = markdown_report(build_report({hostile}, {}, {}), "<img src=x onerror=alert(9)>.db");
  EXPECT_THAT(md, Not(HasSubstr("<script")));
  EXPECT_THAT(md, Not(HasSubstr("<img")));
  EXPECT_THAT(md, Not(HasSubstr("\n# Injected")));
  EXPECT_THAT(md, Not(HasSubstr("[click me](")));
  EXPECT_THAT(md, HasSubstr("GPU&lt;script&gt;alert(1)&lt;/script&gt; # Injected heading"));
  EXPECT_THAT(md, HasSubstr("A=\\[click me\\](javascript:alert(1))\\|x"));
}

TEST(ReportDramBytes, AreReadPlusWrittenAndNeedBoth) {
  CounterRecord counters;
  counters.values = {{"dram_read_bytes", 3}, {"dram_write_bytes", 1}};
  EXPECT_EQ(dram_bytes(counters), 4);
  counters.values.erase("dram_write_bytes");
  EXPECT_EQ(dram_bytes(counters), std::nullopt);  // half the traffic is no measure of it
}

TEST_F(ReportModel, HtmlHasEveryPlotWithMarksAndSaysWhereBenchRowsAreMissing) {
  const std::string html = html_report(read(), "report.db");
  EXPECT_EQ(count(html, "<svg class=\"plot bench\""), 1);      // the H200's
  EXPECT_EQ(count(html, "<svg class=\"plot roofline\""), 2);
  EXPECT_EQ(count(html, "<svg class=\"plot convergence\""), 1);
  EXPECT_EQ(count(html, "<polyline class=\"line random\""), 1);
  EXPECT_EQ(count(html, "<polyline class=\"line exhaustive\""), 1);
  EXPECT_EQ(count(html, "<circle class=\"mark random\""), 2);      // 5, then 2
  EXPECT_EQ(count(html, "<circle class=\"mark exhaustive\""), 2);  // 4, then 3
  EXPECT_EQ(count(html, "<circle class=\"legend random\""), 1);
  EXPECT_EQ(count(html, "<svg class=\"plot sensitivity\""), 2 + 0 + 2 + 2);  // naive has no parameter
  EXPECT_EQ(count(html, "<circle class=\"mark speed\""), 1);  // cuBLAS's time over ours
  EXPECT_EQ(count(html, "<polyline class=\"line unity\""), 1);  // its 1.0 line
  EXPECT_EQ(count(html, "<circle class=\"mark measured\""), 1);
  EXPECT_EQ(count(html, "<circle class=\"mark compulsory\""), 2);
  EXPECT_EQ(count(html, "<polyline class=\"line roof\""), 2);  // both GPUs' bandwidths are known
  EXPECT_EQ(count(html, "no bench rows recorded for this GPU"), 1);  // the A100's
  EXPECT_EQ(count(html, "the template has no parameters"), 1);      // naive
  // A row per counter, the record's cells spanning them: twenty columns would not fit the page.
  EXPECT_THAT(html, HasSubstr("<tr><td rowspan=\"2\">NVIDIA H200</td><td rowspan=\"2\">tiled</td>"));
  EXPECT_THAT(html, HasSubstr("<td rowspan=\"2\" class=\"config\">PAD=1,<wbr>TILE=16</td>"));
  EXPECT_THAT(html, HasSubstr("<td>dram_read_bytes</td><td class=\"num\">30000000</td></tr>\n"
                              "<tr><td>dram_write_bytes</td><td class=\"num\">10000000</td></tr>"));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("http://www.w3.org/1999")));  // no link out but the SVG namespace
  EXPECT_EQ(html, html_report(read(), "report.db"));  // the same bytes again
}

TEST_F(ReportModel, MarkdownHasTheSameContentAsTables) {
  const std::string md = markdown_report(read(), "report.db");
  EXPECT_THAT(md, HasSubstr("| NVIDIA H200 | 1024x1024x1024 | fp32 | tiled | PAD=1,TILE=16 | 2.0000 |"));
  EXPECT_THAT(md, HasSubstr("| 200 |"));  // the winner's fuzz cases
  EXPECT_THAT(md, HasSubstr("| 1024x1024x1024 | fp32 | tiled | PAD=1,TILE=16 | 2.1000 | cuBLAS SGEMM | 1.4000 | 0.667 |"));
  EXPECT_THAT(md, HasSubstr("| TILE | 16 | 2.0000 |"));
  EXPECT_THAT(md, HasSubstr("| NVIDIA H200 | tiled | 1024x1024x1024 | random | aaaa | 4 | 5.0000 | 2.0000 | 3 |"));
  EXPECT_THAT(md, HasSubstr("| dram_read_bytes | 30000000 |"));
  EXPECT_THAT(md, HasSubstr("| 1024x1024x1024 | tiled | 40000000 | measured |"));
  EXPECT_THAT(md, HasSubstr("no bench rows recorded for this GPU"));
  EXPECT_THAT(md, Not(HasSubstr("<svg")));
}

TEST_F(ReportModel, CommandWritesTheFileAndRefusesBadInputInOneLine) {
  auto run = run_tiletune(dir_, {"report", "--db", db().string(), "--out", "r.html"});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_EQ(testing_tools::read_text(dir_ / "r.html"), html_report(read(), db().string()));
  run = run_tiletune(dir_, {"report", "--db", db().string(), "--format", "md"});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.out, HasSubstr("## Search convergence"));

  run = run_tiletune(dir_, {"report", "--db", "absent.db", "--out", "r2.html"});
  EXPECT_EQ(run.exit_code, 2) << run;
  EXPECT_EQ(run.err, "tiletune: no database at absent.db\n");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "r2.html"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "absent.db"));

  run = run_tiletune(dir_, {"report", "--db", db().string(), "--format", "pdf"});
  EXPECT_EQ(run.exit_code, 2) << run;
  EXPECT_THAT(run.err, ::testing::MatchesRegex("tiletune: --format: pdf not in \\{html,md\\}[^\n]*\n"));

  run = run_tiletune(dir_, {"report", "--db", db().string(), "--out", (dir_ / "none" / "r.html").string()});
  EXPECT_EQ(run.exit_code, 2) << run;
  EXPECT_THAT(run.err, ::testing::StartsWith("tiletune: cannot write the report to "));
  EXPECT_EQ(count(run.err, "\n"), 1);

  // Standard output that cannot take it (a full disk) is a failure, not a report delivered.
  if (std::filesystem::exists("/dev/full")) {
    const std::string command = testing_tools::kTiletune.string() + " report --db " + db().string() +
                                " --format md > /dev/full 2> " + (dir_ / "full.err").string();
    const int status = std::system(command.c_str());
    EXPECT_EQ(WEXITSTATUS(status), 3) << command;
    EXPECT_EQ(testing_tools::read_text(dir_ / "full.err"), "tiletune: cannot write the report to standard output\n");
  }
}

// Leave one shape out on a hand-made database whose answer is known. The template's source is no
// template today's parser reads, so its model predicts nothing and both ways choose as the nearest
// recorded shape does (log_distance): hidden 256^3 -> 512^3's fastest, TILE=32, never timed at
// 256^3 (unmeasured); 512^3 -> 256^3's, TILE=8, 4 / 2.5; 2048^3 -> 4096^3's, TILE=16, 60 / 50;
// 4096^3 -> 2048^3's, TILE=8, 400 / 300. Were the hidden shape's records left in, every ratio would
// be 1.
class ReportChoice : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing_support::fresh_test_folder("report-choice");
    ResultStore store(db());
    const std::int64_t gpu = store.register_gpu(h200());
    store.register_template(make_template("tiled", "h1"));
    store.register_template(make_template("naive", "n1"));
    const std::vector<std::tuple<GemmShape, std::string, double>> times = {
        {kA, "TILE=8", 1},   {kA, "TILE=16", 2},
        {kB, "TILE=8", 4},   {kB, "TILE=16", 3},   {kB, "TILE=32", 2.5},
        {kC, "TILE=8", 50},  {kC, "TILE=16", 60},
        {kD, "TILE=8", 400}, {kD, "TILE=16", 300},
    };
    for (const auto& [shape, config, ms] : times) {
      store.record_result(gpu, h200(), make_result("tiled", "h1", config, shape, ResultStatus::ok, ms));
    }
    // Two shapes only: nothing is left to choose from once one is hidden.
    store.record_result(gpu, h200(), make_result("naive", "n1", "", kA, ResultStatus::ok, 9));
    store.record_result(gpu, h200(), make_result("naive", "n1", "", kB, ResultStatus::ok, 9));
  }
  std::filesystem::path db() const { return dir_ / "choice.db"; }

  static constexpr GemmShape kA{256, 256, 256}, kB{512, 512, 512}, kC{2048, 2048, 2048}, kD{4096, 4096, 4096};
  std::filesystem::path dir_;
};

TEST_F(ReportChoice, EachHiddenShapeIsScoredByTheTimesRecordedThere) {
  const ReportData report = read_report(db());
  ASSERT_EQ(report.choices.size(), 1u);  // naive, at two shapes, is left out
  const TemplateChoices& tiled = report.choices[0];
  EXPECT_EQ(tiled.gpu_name, "NVIDIA H200");
  EXPECT_EQ(tiled.template_name, "tiled");
  ASSERT_EQ(tiled.shapes.size(), 4u);
  const HeldOutShape &a = tiled.shapes[0], &b = tiled.shapes[1], &c = tiled.shapes[2], &d = tiled.shapes[3];
  EXPECT_EQ(a.shape, kA);
  EXPECT_EQ(a.model.config, "TILE=32");
  EXPECT_EQ(a.model.ratio, std::nullopt);
  EXPECT_EQ(ratio_text(a.model), "unmeasured");
  EXPECT_EQ(b.best_config, "TILE=32");
  EXPECT_EQ(b.best_ms, 2.5);
  EXPECT_EQ(b.model.config, "TILE=8");
  EXPECT_DOUBLE_EQ(*b.model.ratio, 4 / 2.5);
  EXPECT_EQ(c.model.config, "TILE=16");
  EXPECT_DOUBLE_EQ(*c.model.ratio, 60.0 / 50);
  EXPECT_EQ(d.model.config, "TILE=8");
  EXPECT_DOUBLE_EQ(*d.model.ratio, 400.0 / 300);
  for (const HeldOutShape& s : tiled.shapes) {
    SCOPED_TRACE(s.shape.to_string());
    EXPECT_EQ(s.nearest.config, s.model.config);  // no model to predict with
    EXPECT_EQ(s.nearest.ratio, s.model.ratio);
  }
  EXPECT_EQ(tiled.model.measured, 3);
  EXPECT_EQ(tiled.model.unmeasured, 1);
  EXPECT_NEAR(tiled.model.geometric_mean, std::cbrt(1.6 * 1.2 * (4.0 / 3)), 1e-12);
  EXPECT_DOUBLE_EQ(tiled.model.worst, 1.6);
  EXPECT_EQ(tiled.model.worst_shape, kB);
  EXPECT_EQ(worst_text(tiled.model), "1.600 at 512x512x512");

  const std::string html = html_report(report, "choice.db");
  EXPECT_EQ(count(html, "<svg class=\"plot choice\""), 1);
  EXPECT_EQ(count(html, "<circle class=\"mark model\""), 3);  // the unmeasured one has no point
  EXPECT_EQ(count(html, "<circle class=\"mark nearest\""), 3);
  EXPECT_EQ(count(html, "<polyline class=\"line unity\""), 1);
  EXPECT_THAT(html, HasSubstr("<td>tiled</td><td class=\"num\">4</td><td class=\"num\">1.368</td>"
                              "<td>1.600 at 512x512x512</td>"));
  const std::string md = markdown_report(report, "choice.db");
  EXPECT_THAT(md, HasSubstr("## Choice at untuned shapes"));
  EXPECT_THAT(md, HasSubstr("| tiled | 4 | 1.368 | 1.600 at 512x512x512 | 1.368 | 1.600 at 512x512x512 | 1, 1 |"));
  EXPECT_THAT(md, HasSubstr("| tiled | 256x256x256 | 1.0000 | TILE=32 | unmeasured | TILE=32 | unmeasured |"));
  EXPECT_THAT(md, HasSubstr("| tiled | 512x512x512 | 2.5000 | TILE=8 | 1.600 | TILE=8 | 1.600 |"));
  EXPECT_THAT(md, Not(HasSubstr("| naive |")));
}

// The section on the H200 selection fixture: bench's 13-shape suite, tuned exhaustively, 11
// templates. Measured when this test was written: warp_tiled's model 1.019 in geometric mean (worst
// 1.141 at 127x129x8191), its nearest shape 1.604 (worst 20.4, same shape); the other templates'
// models 1.001 to 1.026, but naive's 1.070. The bound of 1.10 leaves room for a refit's drift and
// none for the nearest shape's choice; 1.25 at worst is the target at held-out shapes.
TEST(ReportChoiceOnTheFixture, TheModelsChoiceAtHiddenSuiteShapesIsNearTheBest) {
  const std::filesystem::path db =
      testing_support::load_selection_fixture("suite", testing_support::fresh_test_folder("report-fixture") / "suite.db");
  const ReportData report = read_report(db);
  ASSERT_EQ(report.choices.size(), 11u);  // every template: each has 12 or 13 shapes
  for (const TemplateChoices& t : report.choices) {
    SCOPED_TRACE(t.template_name);
    EXPECT_EQ(t.gpu_name, testing_support::kSelectionFixtureGpu);
    // The model keeps to tune_if, within which the exhaustive tune timed everything.
    EXPECT_EQ(t.model.unmeasured, 0);
    if (t.template_name != "naive") {
      EXPECT_LT(t.model.geometric_mean, 1.10);
    }
  }
  const auto warp_tiled = std::find_if(report.choices.begin(), report.choices.end(),
                                       [](const TemplateChoices& t) { return t.template_name == "warp_tiled"; });
  ASSERT_NE(warp_tiled, report.choices.end());
  EXPECT_EQ(warp_tiled->shapes.size(), 13u);
  EXPECT_LT(warp_tiled->model.worst, 1.25);
  EXPECT_GT(warp_tiled->model.worst, 1.0);  // the hidden shape's own records would make every ratio 1
  EXPECT_GT(warp_tiled->nearest.geometric_mean, 1.3);  // the choice before the model, for comparison
  const std::string html = html_report(report, db.string());
  EXPECT_EQ(count(html, "<svg class=\"plot choice\""), 1);
  // The nearest shape's 20x at 127x129x8191 is drawn hollow at the axis' top, not off the plot.
  EXPECT_GT(count(html, "<circle class=\"mark nearest beyond\""), 0);
  EXPECT_THAT(html, HasSubstr("<td>warp_tiled</td><td class=\"num\">13</td><td class=\"num\">" +
                              mean_text(warp_tiled->model) + "</td>"));
}

// On a GPU: bench records the row it measured (ours and cuBLAS), and the report plots it.
TEST(ReportOnAGpu, BenchRecordsEachMeasuredRowForTheReport) {
  try {
    GpuDevice device;
  } catch (const GpuUnavailable& e) {
    GTEST_SKIP() << "no GPU: " << e.what();
  }
  const std::filesystem::path dir = testing_support::fresh_test_folder("report-gpu");
  const GemmShape shape{128, 64, 96};
  auto run = run_tiletune(dir, {"bench", std::string(TILETUNE_SOURCE_DIR) + "/kernels_src/tiled.cu",
                                "--shape", shape.to_string(), "--db", "bench.db"},
                          {{"XDG_CACHE_HOME", (dir / "cache").string()}});
  ASSERT_EQ(run.exit_code, 0) << run;
  const ResultStore store(dir / "bench.db", ResultStore::Access::read_only);
  const std::vector<BenchRecord> rows = store.bench_results();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].shape, shape);
  EXPECT_EQ(rows[0].template_name, "tiled");
  EXPECT_EQ(rows[0].config, store.best(rows[0].gpu_name, shape)->config);
  EXPECT_GT(rows[0].ours_ms, 0);
  EXPECT_GT(rows[0].cublas_ms, 0);
  const std::string html = html_report(read_report(dir / "bench.db"), "bench.db");
  EXPECT_EQ(count(html, "<circle class=\"mark speed\""), 1);
}

}  // namespace
}  // namespace tiletune::report
