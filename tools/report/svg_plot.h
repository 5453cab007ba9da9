// A plot written as plain SVG by our code (no script, no network): axes with ticks and labels, and
// marks a reader (or the report's browser test) can count: every data point is a
// <circle class="mark SERIES">, every line a <polyline class="line SERIES">.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tiletune::report {

// Text made safe inside SVG/HTML elements and attribute values.
std::string escape_xml(std::string_view text);

// A number for a tick label or a table: up to 3 significant digits, no trailing zeros ("0.25",
// "1.5k" is not used: "1500").
std::string format_number(double value);

struct Axis {
  std::string label;
  double min = 0, max = 1;  // the data range; widened to nice ticks by the plot
  bool log = false;         // log10 scale (min and max must be > 0)
  // Non-empty: a categorical axis, value i stands for categories[i] (min and max are ignored).
  std::vector<std::string> categories;

  static Axis linear(std::string label, double min, double max) { return {std::move(label), min, max, false, {}}; }
  static Axis logarithmic(std::string label, double min, double max) { return {std::move(label), min, max, true, {}}; }
  static Axis categorical(std::string label, std::vector<std::string> categories = {}) {
    return {std::move(label), 0, 1, false, std::move(categories)};
  }
};

// Tick values for an axis: linear, 1-2-5 steps giving about 5 ticks that cover [min, max]; log,
// each power of ten from below min to above max; categorical, 0..n-1.
std::vector<double> axis_ticks(const Axis& axis);

// Maps data values to pixels along one axis, over the range its ticks cover.
class Scale {
 public:
  Scale(const Axis& axis, double pixel_from, double pixel_to);
  double operator()(double value) const;
  double domain_min() const { return min_; }
  double domain_max() const { return max_; }

 private:
  bool log_;
  double min_, max_, pixel_from_, pixel_to_;
};

class SvgPlot {
 public:
  // `kind`: a class on the <svg> besides "plot", naming what it shows ("roofline", ...).
  SvgPlot(std::string kind, std::string title, Axis x, Axis y, int width = 560, int height = 320);

  // A point of a series; `tooltip` is shown on hover (an SVG <title>).
  void add_point(double x, double y, const std::string& series, const std::string& tooltip);
  // A line through points, in order.
  void add_line(const std::vector<std::pair<double, double>>& points, const std::string& series);
  // A legend entry: the series' class and what it means.
  void add_legend(const std::string& series, const std::string& text);

  std::string render() const;

 private:
  struct Point { double x, y; std::string series, tooltip; };
  struct Line { std::vector<std::pair<double, double>> points; std::string series; };
  std::string kind_, title_;
  Axis x_, y_;
  int width_, height_;
  std::vector<Point> points_;
  std::vector<Line> lines_;
  std::vector<std::pair<std::string, std::string>> legend_;
};

}  // namespace tiletune::report
