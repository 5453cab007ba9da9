#include "tools/report/svg_plot.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace tiletune::report {
namespace {

constexpr int kLeft = 70, kRight = 20, kTop = 34, kBottom = 48;
constexpr int kCategoryBottom = 96;  // room for slanted category labels
constexpr int kPixelsPerCategory = 56;

// The smallest of 1, 2, 5 x 10^k that is at least `raw`.
double nice_step(double raw) {
  const double decade = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    if (factor * decade >= raw * (1 - 1e-9)) return factor * decade;
  }
  return 10 * decade;
}

int bottom_margin(const Axis& x) { return x.categories.empty() ? kBottom : kCategoryBottom; }

}  // namespace

std::string escape_xml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string format_number(double value) {
  if (value == 0) return "0";
  if (std::abs(value) >= 1000) return fmt::format("{:.0f}", value);
  return fmt::format("{:.3g}", value);
}

std::vector<double> axis_ticks(const Axis& axis) {
  std::vector<double> ticks;
  if (!axis.categories.empty()) {
    for (std::size_t i = 0; i < axis.categories.size(); ++i) ticks.push_back(static_cast<double>(i));
    return ticks;
  }
  double lo = std::min(axis.min, axis.max), hi = std::max(axis.min, axis.max);
  if (axis.log) {
    lo = lo > 0 ? lo : 1e-3;
    hi = hi > 0 ? hi : 1;
    int first = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
    int last = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
    if (last <= first) last = first + 1;
    for (int e = first; e <= last; ++e) ticks.push_back(std::pow(10.0, e));
    return ticks;
  }
  if (hi - lo <= 0) {  // one value: a range around it
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.5;
    lo -= pad;
    hi += pad;
  }
  const double step = nice_step((hi - lo) / 5);
  const double first = std::floor(lo / step + 1e-9) * step, last = std::ceil(hi / step - 1e-9) * step;
  for (int i = 0; first + i * step <= last + step * 1e-6; ++i) {
    const double tick = first + i * step;
    ticks.push_back(std::abs(tick) < step * 1e-9 ? 0.0 : tick);
  }
  return ticks;
}

Scale::Scale(const Axis& axis, double pixel_from, double pixel_to)
    : log_(axis.log && axis.categories.empty()), pixel_from_(pixel_from), pixel_to_(pixel_to) {
  if (!axis.categories.empty()) {
    min_ = -0.5;
    max_ = static_cast<double>(axis.categories.size()) - 0.5;
  } else {
    const std::vector<double> ticks = axis_ticks(axis);
    min_ = ticks.front();
    max_ = ticks.back();
  }
}

double Scale::operator()(double value) const {
  const double from = log_ ? std::log10(min_) : min_, to = log_ ? std::log10(max_) : max_;
  const double v = log_ ? std::log10(std::max(value, min_ * 1e-3)) : value;
  return pixel_from_ + (v - from) / (to - from) * (pixel_to_ - pixel_from_);
}

SvgPlot::SvgPlot(std::string kind, std::string title, Axis x, Axis y, int width, int height)
    : kind_(std::move(kind)), title_(std::move(title)), x_(std::move(x)), y_(std::move(y)), width_(width), height_(height) {
  if (!x_.categories.empty()) {
    width_ = std::max(width_, kLeft + kRight + kPixelsPerCategory * static_cast<int>(x_.categories.size()));
  }
}

void SvgPlot::add_point(double x, double y, const std::string& series, const std::string& tooltip) {
  points_.push_back({x, y, series, tooltip});
}

void SvgPlot::add_line(const std::vector<std::pair<double, double>>& points, const std::string& series) {
  lines_.push_back({points, series});
}

void SvgPlot::add_legend(const std::string& series, const std::string& text) {
  legend_.emplace_back(series, text);
}

std::string SvgPlot::render() const {
  const int bottom = bottom_margin(x_);
  const int plot_height = height_ + (bottom - kBottom);
  const double left = kLeft, right = width_ - kRight, top = kTop, base = plot_height - bottom;
  const Scale sx(x_, left, right), sy(y_, base, top);
  std::string svg = fmt::format(
      "<svg class=\"plot {3}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"{2}\">\n",
      width_, plot_height + 18 * static_cast<int>(legend_.size()), escape_xml(title_), escape_xml(kind_));
  // A title wider than the plot (about 7.2 px a character at 13 px) is squeezed to fit, not cut.
  const int title_room = width_ - 16;
  const std::string fit = 7.2 * static_cast<double>(title_.size()) > title_room
                              ? fmt::format(" textLength=\"{}\" lengthAdjust=\"spacingAndGlyphs\"", title_room)
                              : "";
  svg += fmt::format("<text class=\"title\" x=\"8\" y=\"18\"{}>{}</text>\n", fit, escape_xml(title_));
  // Axes, ticks and grid.
  svg += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>\n", left, base, right);
  svg += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n", left, base, top);
  for (double tick : axis_ticks(x_)) {
    const double px = sx(tick);
    const std::string label = x_.categories.empty() ? format_number(tick)
                                                    : x_.categories[static_cast<std::size_t>(tick)];
    svg += fmt::format("<line class=\"tick\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>\n", px, base, base + 5);
    if (x_.categories.empty()) {
      svg += fmt::format("<text class=\"tick-label\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                         px, base + 18, escape_xml(label));
    } else {
      svg += fmt::format("<text class=\"tick-label\" x=\"{0:.1f}\" y=\"{1}\" text-anchor=\"end\" "
                         "transform=\"rotate(-35 {0:.1f} {1})\">{2}</text>\n",
                         px, base + 14, escape_xml(label));
    }
  }
  for (double tick : axis_ticks(y_)) {
    const double py = sy(tick);
    svg += fmt::format("<line class=\"grid\" x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\"/>\n", left, py, right);
    svg += fmt::format("<text class=\"tick-label\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
                       left - 6, py + 4, escape_xml(format_number(tick)));
  }
  svg += fmt::format("<text class=\"axis-label\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     (left + right) / 2, plot_height - 6, escape_xml(x_.label));
  svg += fmt::format("<text class=\"axis-label\" x=\"14\" y=\"{0:.1f}\" text-anchor=\"middle\" "
                     "transform=\"rotate(-90 14 {0:.1f})\">{1}</text>\n",
                     (top + base) / 2, escape_xml(y_.label));
  // Data: lines under points.
  for (const Line& line : lines_) {
    std::string coordinates;
    for (const auto& [x, y] : line.points) {
      coordinates += fmt::format("{}{:.1f},{:.1f}", coordinates.empty() ? "" : " ", sx(x), sy(y));
    }
    svg += fmt::format("<polyline class=\"line {}\" points=\"{}\"/>\n", escape_xml(line.series), coordinates);
  }
  for (const Point& p : points_) {
    svg += fmt::format("<circle class=\"mark {}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\"><title>{}</title></circle>\n",
                       escape_xml(p.series), sx(p.x), sy(p.y), escape_xml(p.tooltip));
  }
  for (std::size_t i = 0; i < legend_.size(); ++i) {
    const double y = plot_height + 18.0 * static_cast<double>(i) + 4;
    svg += fmt::format("<circle class=\"legend {}\" cx=\"{}\" cy=\"{:.1f}\" r=\"4\"/>"
                       "<text class=\"legend-label\" x=\"{}\" y=\"{:.1f}\">{}</text>\n",
                       escape_xml(legend_[i].first), left + 4, y, left + 14, y + 4,
                       escape_xml(legend_[i].second));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace tiletune::report
