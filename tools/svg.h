// A small SVG writer for `tuner report`: a document of shapes and text, and a
// chart frame (linear or log axes with ticks, grid, title, axis labels and a
// legend) that maps data to pixels. Every text that goes into the output passes
// through xml_escape.
//
// Why our own: Debian has no C++ plotting library that writes self-contained
// SVG from a command-line program without pulling in a GUI toolkit (matplot++
// and friends shell out to gnuplot, an external process dependency); the charts
// here need lines, rectangles, text and axes, a few hundred lines of code.
// This file knows nothing of tuning records or plans; report_command.cpp does.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tuner::cli::svg {

/// Escapes text for XML/HTML content and attribute values: & < > " ' become entities; other control
/// characters than tab and newline (not allowed in XML 1.0) become U+FFFD.
inline std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r')
          out += "\xEF\xBF\xBD";
        else
          out += c;
    }
  }
  return out;
}

/// A number for an SVG attribute: at most 2 decimals, no trailing zeros.
std::string num(double v);
/// A number for a tick label or a caption: 3 significant digits, SI suffix (k from 1e4, M from 1e6, G from 1e9).
inline std::string label_num(double v) {
  if (!std::isfinite(v)) return "-";
  const double a = std::fabs(v);
  const char* suffix = "";
  if (a >= 1e9) {
    v /= 1e9;
    suffix = "G";
  } else if (a >= 1e6) {  // 1e6 is "1M", not "1000k"
    v /= 1e6;
    suffix = "M";
  } else if (a >= 1e4) {
    v /= 1e3;
    suffix = "k";
  }
  char buf[64];
  if (std::fabs(v) >= 1000)
    std::snprintf(buf, sizeof buf, "%.0f%s", v, suffix);  // 1000..9999: all digits, no exponent
  else
    std::snprintf(buf, sizeof buf, "%.3g%s", v, suffix);
  return buf;
}

/// The palette charts draw series with, by index (wraps around).
const char* color(size_t i);

/// An SVG document built up shape by shape; str() closes it.
class Document {
 public:
  Document(double width_px, double height_px, std::string title);

  void line(double x1, double y1, double x2, double y2, const std::string& stroke, double width = 1,
            const std::string& cls = "", const std::string& dash = "");
  void polyline(const std::vector<std::pair<double, double>>& pts, const std::string& stroke, double width,
                const std::string& cls);
  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& cls = "",
            const std::string& tooltip = "", const std::string& stroke = "");
  void circle(double cx, double cy, double r, const std::string& fill, const std::string& cls = "",
              const std::string& tooltip = "");
  /// anchor: start, middle, end; rotate: degrees about (x, y).
  void text(double x, double y, const std::string& s, double size = 12, const std::string& anchor = "start",
            const std::string& cls = "", double rotate = 0, const std::string& fill = "#222");

  /// The SVG; standalone adds the XML namespace (needed in a .svg file, not inside HTML).
  std::string str(bool standalone) const;
  double width() const { return width_; }
  double height() const { return height_; }

 private:
  double width_, height_;
  std::string title_;
  std::string body_;
};

/// One axis: data range and scale; maps data to [0, 1].
struct Axis {
  Axis() = default;
  Axis(double min_v, double max_v, bool log_scale, std::string title)
      : min(min_v), max(max_v), log(log_scale), label(std::move(title)) {}

  double min = 0, max = 1;  ///< Data range shown (both > 0 when log).
  bool log = false;         ///< Log10 scale.
  std::string label;        ///< Axis title, with units.
  /// Category axis (e.g. pipeline stages): band i spans [i, i+1] of a linear range [0, n] and is labelled
  /// categories[i] at its centre instead of numeric ticks; empty: numeric.
  std::vector<std::string> categories;
  /// Integer data (counts): linear ticks at whole numbers only.
  bool integer = false;

  double frac(double v) const;
  /// Tick positions: 1-2-5 steps (linear), decades (log; 1-2-5 within decades when fewer than 3).
  std::vector<double> ticks() const;
  /// Widens the range to pleasant ends (log: whole decades; linear: tick steps), keeping 0 when min is 0.
  void nice();
  /// A linear axis's tick step: 1-2-5 (whole numbers on an integer axis).
  double tick_step() const;
};

/// A chart: the document, a plot area inside margins, two axes, a title and a legend.
class Chart {
 public:
  Chart(double width_px, double height_px, std::string title, Axis x, Axis y, double right_margin_px = 20);

  double px(double x) const;  ///< Data x to pixel x (clamped to the plot area).
  double py(double y) const;  ///< Data y to pixel y (clamped to the plot area).
  double left() const { return left_; }
  double right() const { return right_; }
  double top() const { return top_; }
  double bottom() const { return bottom_; }
  const Axis& x_axis() const { return x_; }
  const Axis& y_axis() const { return y_; }
  Document& doc() { return doc_; }

  /// Grid, ticks, tick labels, axis titles and the chart title; call before drawing data.
  void draw_frame();
  /// A legend box in the plot area's top right (or top left), one swatch and label per entry.
  void legend(const std::vector<std::pair<std::string, std::string>>& color_and_label, bool top_left = false);
  /// A one-row legend in the top margin, right-aligned, for charts whose plot area is full (timelines).
  void legend_in_margin(const std::vector<std::pair<std::string, std::string>>& color_and_label);

 private:
  Document doc_;
  Axis x_, y_;
  std::string title_;
  double left_, right_, top_, bottom_;
};

}  // namespace tuner::cli::svg
