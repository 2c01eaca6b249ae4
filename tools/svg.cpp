#include "tools/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tuner::cli::svg {

std::string num(double v) {
  if (!std::isfinite(v)) v = 0;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  std::string s = buf;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}


const char* color(size_t i) {
  static const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                   "#9467bd", "#8c564b", "#e377c2", "#17becf"};
  return kPalette[i % (sizeof kPalette / sizeof kPalette[0])];
}

Document::Document(double width_px, double height_px, std::string title)
    : width_(width_px), height_(height_px), title_(std::move(title)) {}

namespace {

std::string attr(const char* name, const std::string& value) {
  return value.empty() ? "" : std::string(" ") + name + "=\"" + xml_escape(value) + "\"";
}

}  // namespace

void Document::line(double x1, double y1, double x2, double y2, const std::string& stroke, double width,
                    const std::string& cls, const std::string& dash) {
  body_ += "<line" + attr("class", cls) + " x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) +
           "\" y2=\"" + num(y2) + "\"" + attr("stroke", stroke) + " stroke-width=\"" + num(width) + "\"" +
           attr("stroke-dasharray", dash) + "/>\n";
}

void Document::polyline(const std::vector<std::pair<double, double>>& pts, const std::string& stroke, double width,
                        const std::string& cls) {
  std::string p;
  for (const auto& [x, y] : pts) p += (p.empty() ? "" : " ") + num(x) + "," + num(y);
  body_ += "<polyline" + attr("class", cls) + " fill=\"none\"" + attr("stroke", stroke) + " stroke-width=\"" +
           num(width) + "\" points=\"" + p + "\"/>\n";
}

void Document::rect(double x, double y, double w, double h, const std::string& fill, const std::string& cls,
                    const std::string& tooltip, const std::string& stroke) {
  body_ += "<rect" + attr("class", cls) + " x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" +
           num(std::max(0.0, w)) + "\" height=\"" + num(std::max(0.0, h)) + "\"" + attr("fill", fill) +
           attr("stroke", stroke) + (stroke.empty() ? "" : " stroke-width=\"0.5\"");
  body_ += tooltip.empty() ? "/>\n" : "><title>" + xml_escape(tooltip) + "</title></rect>\n";
}

void Document::circle(double cx, double cy, double r, const std::string& fill, const std::string& cls,
                      const std::string& tooltip) {
  body_ += "<circle" + attr("class", cls) + " cx=\"" + num(cx) + "\" cy=\"" + num(cy) + "\" r=\"" + num(r) + "\"" +
           attr("fill", fill);
  body_ += tooltip.empty() ? "/>\n" : "><title>" + xml_escape(tooltip) + "</title></circle>\n";
}

void Document::text(double x, double y, const std::string& s, double size, const std::string& anchor,
                    const std::string& cls, double rotate, const std::string& fill) {
  body_ += "<text" + attr("class", cls) + " x=\"" + num(x) + "\" y=\"" + num(y) + "\" font-size=\"" + num(size) +
           "\"" + attr("text-anchor", anchor == "start" ? "" : anchor) + attr("fill", fill);
  if (rotate != 0) body_ += " transform=\"rotate(" + num(rotate) + " " + num(x) + " " + num(y) + ")\"";
  body_ += ">" + xml_escape(s) + "</text>\n";
}

std::string Document::str(bool standalone) const {
  std::string out = "<svg";
  if (standalone) out += " xmlns=\"http://www.w3.org/2000/svg\"";
  out += " width=\"" + num(width_) + "\" height=\"" + num(height_) + "\" viewBox=\"0 0 " + num(width_) + " " +
         num(height_) + "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" role=\"img\">\n";
  out += "<title>" + xml_escape(title_) + "</title>\n";
  out += "<rect x=\"0\" y=\"0\" width=\"" + num(width_) + "\" height=\"" + num(height_) + "\" fill=\"#ffffff\"/>\n";
  out += body_;
  out += "</svg>\n";
  return out;
}

double Axis::frac(double v) const {
  if (log) {
    const double lo = std::log10(std::max(min, 1e-300)), hi = std::log10(std::max(max, 1e-300));
    if (hi <= lo) return 0.5;
    return (std::log10(std::max(v, 1e-300)) - lo) / (hi - lo);
  }
  if (max <= min) return 0.5;
  return (v - min) / (max - min);
}

namespace {

/// The 1-2-5 step that gives about n intervals over span.
double nice_step(double span, int n) {
  if (span <= 0) return 1;
  const double raw = span / n;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double r = raw / mag;
  return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
}

}  // namespace

std::vector<double> Axis::ticks() const {
  std::vector<double> out;
  if (log) {
    const int lo = static_cast<int>(std::floor(std::log10(min) + 1e-9));
    const int hi = static_cast<int>(std::ceil(std::log10(max) - 1e-9));
    const bool fine = hi - lo < 3;
    const int every = std::max(1, (hi - lo + 7) / 8);  // at most about 8 labelled decades
    for (int e = lo; e <= hi; ++e) {
      if ((e - lo) % every != 0) continue;
      for (double m : fine ? std::vector<double>{1, 2, 5} : std::vector<double>{1}) {
        const double v = m * std::pow(10.0, e);
        if (v >= min * (1 - 1e-9) && v <= max * (1 + 1e-9)) out.push_back(v);
      }
    }
    if (out.size() < 2) out = {min, std::sqrt(min * max), max};  // a narrow range inside one decade
    return out;
  }
  const double step = tick_step();
  for (double v = std::ceil(min / step - 1e-9) * step; v <= max + step * 1e-9; v += step)
    out.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  return out;
}

double Axis::tick_step() const {
  const double step = nice_step(max - min, 6);
  return integer ? std::max(1.0, step) : step;
}

void Axis::nice() {
  if (log) {
    if (!(min > 0)) min = 1e-3;
    if (!(max > min)) max = min * 10;
    min = std::pow(10.0, std::floor(std::log10(min) + 1e-9));
    max = std::pow(10.0, std::ceil(std::log10(max) - 1e-9));
    if (max <= min) max = min * 10;
    return;
  }
  if (!(max > min)) max = min + 1;
  const double step = tick_step();
  min = std::floor(min / step + 1e-9) * step;
  max = std::ceil(max / step - 1e-9) * step;
}

Chart::Chart(double width_px, double height_px, std::string title, Axis x, Axis y, double right_margin_px)
    : doc_(width_px, height_px, title), x_(std::move(x)), y_(std::move(y)), title_(std::move(title)) {
  left_ = 72;
  right_ = width_px - right_margin_px;
  top_ = 40;
  bottom_ = height_px - 52;
}

double Chart::px(double x) const { return left_ + std::clamp(x_.frac(x), 0.0, 1.0) * (right_ - left_); }
double Chart::py(double y) const { return bottom_ - std::clamp(y_.frac(y), 0.0, 1.0) * (bottom_ - top_); }

void Chart::draw_frame() {
  doc_.text(left_, 24, title_, 15, "start", "title", 0, "#111");
  for (double t : x_.ticks()) {
    const double p = px(t);
    doc_.line(p, top_, p, bottom_, "#e4e4e4", 1, "grid");
    doc_.line(p, bottom_, p, bottom_ + 5, "#444", 1, "tick");
    doc_.text(p, bottom_ + 18, label_num(t), 11, "middle", "tick-label");
  }
  for (size_t i = 0; i < y_.categories.size(); ++i)
    doc_.text(left_ - 8, py(static_cast<double>(i) + 0.5) + 4, y_.categories[i], 11, "end", "tick-label");
  for (double t : y_.categories.empty() ? y_.ticks() : std::vector<double>{}) {
    const double p = py(t);
    doc_.line(left_, p, right_, p, "#e4e4e4", 1, "grid");
    doc_.line(left_ - 5, p, left_, p, "#444", 1, "tick");
    doc_.text(left_ - 8, p + 4, label_num(t), 11, "end", "tick-label");
  }
  doc_.rect(left_, top_, right_ - left_, bottom_ - top_, "none", "frame", "", "#444");
  doc_.text((left_ + right_) / 2, bottom_ + 40, x_.label, 12, "middle", "axis-label");
  doc_.text(18, (top_ + bottom_) / 2, y_.label, 12, "middle", "axis-label", -90);
}

void Chart::legend(const std::vector<std::pair<std::string, std::string>>& entries, bool top_left) {
  if (entries.empty()) return;
  // As many rows as the plot area holds; past that the last row counts the rest (30 sessions ran 180 px below the
  // chart, and the box covered the plot).
  const auto rows_fit = static_cast<size_t>(std::max(1.0, std::floor((bottom_ - top_ - 28) / 17.0)));
  const size_t shown = entries.size() <= rows_fit ? entries.size() : rows_fit - 1;
  const std::string more = entries.size() > shown ? "... and " + std::to_string(entries.size() - shown) + " more" : "";
  size_t longest = more.size();
  for (size_t i = 0; i < shown; ++i) longest = std::max(longest, entries[i].second.size());
  const double w = std::min(right_ - left_ - 20, 34 + 6.4 * static_cast<double>(longest));
  const double h = 8 + 17.0 * static_cast<double>(shown + (more.empty() ? 0 : 1));
  const double x = top_left ? left_ + 10 : right_ - w - 10, y = top_ + 10;
  doc_.rect(x, y, w, h, "#ffffff", "legend", "", "#999");
  for (size_t i = 0; i < shown; ++i) {
    const double ly = y + 14 + 17.0 * static_cast<double>(i);
    doc_.line(x + 8, ly - 4, x + 26, ly - 4, entries[i].first, 3, "legend-swatch");
    doc_.text(x + 32, ly, entries[i].second, 11, "start", "legend-label");
  }
  if (!more.empty()) doc_.text(x + 32, y + 14 + 17.0 * static_cast<double>(shown), more, 11, "start", "legend-label");
}

void Chart::legend_in_margin(const std::vector<std::pair<std::string, std::string>>& entries) {
  double x = right_;
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    x -= 6.4 * static_cast<double>(it->second.size()) + 12;
    doc_.text(x, 24, it->second, 11, "start", "legend-label");
    doc_.rect(x - 18, 15, 13, 11, it->first, "legend-swatch");
    x -= 30;
  }
}

}  // namespace tuner::cli::svg
