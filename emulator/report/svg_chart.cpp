// RenderSvgChart: linear scales from the data (and the reference line), 5 ticks per axis.
#include "emulator/report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace feedrate {

namespace {

std::string Num(double v) {
  char b[32];
  if (std::fabs(v) >= 1000 || v == std::floor(v)) {
    std::snprintf(b, sizeof b, "%.0f", v);
  } else {
    std::snprintf(b, sizeof b, "%.3g", v);
  }
  return b;
}

// A "nice" upper bound for an axis that starts at 0 or at the data minimum.
double NiceCeil(double v) {
  if (v <= 0) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * p >= v) return m * p;
  }
  return 10 * p;
}

}  // namespace

std::string HtmlEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

namespace {

// The chart's geometry: the plot box inside the margins and the data's ranges mapped onto it.
struct Frame {
  static constexpr double W = 640, H = 320, L = 70, R = 20, T = 46, B = 52;
  double x0 = 0, x1 = 0, y1 = 0, x_step = 1;
  size_t count = 0;
  double sx(double x) const { return L + (x - x0) / (x1 - x0) * (W - L - R); }
  double sy(double y) const { return H - B - y / y1 * (H - T - B); }
};

Frame FrameFor(const Chart& c) {
  Frame f;
  bool any = false, integer_x = true;  // epochs, accelerator counts: ticks on whole numbers
  for (const auto& s : c.series) {
    for (const auto& [x, y] : s.points) {
      const double right = c.bars ? x + c.bar_width : x;
      f.x0 = any ? std::min(f.x0, x) : x;
      f.x1 = any ? std::max(f.x1, right) : right;
      f.y1 = any ? std::max(f.y1, y) : y;
      any = true;
      ++f.count;
      integer_x = integer_x && x == std::floor(x);
    }
  }
  if (c.has_reference) f.y1 = std::max(f.y1, c.reference);
  if (f.x1 <= f.x0) f.x1 = f.x0 + 1;
  f.y1 = c.y_max > 0 ? c.y_max : NiceCeil(f.y1 * 1.05);
  f.x_step = integer_x ? std::max(1.0, std::ceil((f.x1 - f.x0) / 4)) : (f.x1 - f.x0) / 4;
  return f;
}

// Title, axes, grid and ticks, axis labels, the reference line.
void DrawFrame(const Chart& c, const Frame& f, std::string& o) {
  const double W = Frame::W, H = Frame::H, L = Frame::L, R = Frame::R, T = Frame::T, B = Frame::B;
  char b[256];
  std::snprintf(b, sizeof b, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"%.0f\" height=\"%.0f\" "
                "viewBox=\"0 0 %.0f %.0f\" data-points=\"%zu\">", W, H, W, H, f.count);
  o += b;
  o += "<title>" + HtmlEscape(c.title) + "</title>";
  std::snprintf(b, sizeof b, "<text x=\"%.0f\" y=\"18\" class=\"ct\">", L);
  o += b + HtmlEscape(c.title) + "</text>";
  std::snprintf(b, sizeof b, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" class=\"ax\"/>", L, H - B, W - R, H - B);
  o += b;
  std::snprintf(b, sizeof b, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" class=\"ax\"/>", L, T, L, H - B);
  o += b;
  for (int i = 0; i <= 4; ++i) {
    const double yv = f.y1 * i / 4;
    std::snprintf(b, sizeof b, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" class=\"grid\"/>", L, f.sy(yv), W - R, f.sy(yv));
    o += b;
    std::snprintf(b, sizeof b, "<text x=\"%.0f\" y=\"%.1f\" class=\"tk\" text-anchor=\"end\">", L - 6, f.sy(yv) + 4);
    o += b + Num(yv) + "</text>";
  }
  for (double xv = f.x0; xv <= f.x1 + 1e-9; xv += f.x_step) {
    std::snprintf(b, sizeof b, "<text x=\"%.1f\" y=\"%.0f\" class=\"tk\" text-anchor=\"middle\">", f.sx(xv), H - B + 18);
    o += b + Num(xv) + "</text>";
  }
  std::snprintf(b, sizeof b, "<text x=\"%.0f\" y=\"%.0f\" class=\"al\" text-anchor=\"middle\">", (L + W - R) / 2, H - 10);
  o += b + HtmlEscape(c.x_label) + "</text>";
  std::snprintf(b, sizeof b, "<text x=\"16\" y=\"%.0f\" class=\"al\" text-anchor=\"middle\" transform=\"rotate(-90 16 %.0f)\">",
                (T + H - B) / 2, (T + H - B) / 2);
  o += b + HtmlEscape(c.y_label) + "</text>";
  if (c.has_reference) {
    std::snprintf(b, sizeof b, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" class=\"ref\"/>", L, f.sy(c.reference), W - R,
                  f.sy(c.reference));
    o += b;
    std::snprintf(b, sizeof b, "<text x=\"%.0f\" y=\"%.1f\" class=\"tk\" text-anchor=\"end\">", W - R, f.sy(c.reference) - 4);
    o += b + HtmlEscape(c.reference_label) + "</text>";
  }
}

// Each series as bars, or as a line with a circle per point and a legend entry (on its own line under the title,
// each entry as wide as its name).
void DrawSeries(const Chart& c, const Frame& f, std::string& o) {
  char b[256];
  double legend_x = Frame::L;
  for (const auto& s : c.series) {
    if (c.bars) {
      for (const auto& [x, y] : s.points) {
        const double w = std::max(1.0, f.sx(x + c.bar_width) - f.sx(x) - 1);
        std::snprintf(b, sizeof b, "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
                      f.sx(x), f.sy(y), w, f.sy(0) - f.sy(y), s.color.c_str());
        o += b + HtmlEscape(s.name) + ": " + Num(x) + ", " + Num(y) + "</title></rect>";
      }
      continue;
    }
    std::string pts;
    for (const auto& [x, y] : s.points) {
      std::snprintf(b, sizeof b, "%.1f,%.1f ", f.sx(x), f.sy(y));
      pts += b;
    }
    o += "<polyline fill=\"none\" stroke=\"" + s.color + "\" stroke-width=\"2\" points=\"" + pts + "\"/>";
    for (const auto& [x, y] : s.points) {
      std::snprintf(b, sizeof b, "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>%s: %s, %s</title></circle>",
                    f.sx(x), f.sy(y), s.color.c_str(), HtmlEscape(s.name).c_str(), Num(x).c_str(), Num(y).c_str());
      o += b;
    }
    std::snprintf(b, sizeof b, "<rect x=\"%.0f\" y=\"30\" width=\"10\" height=\"3\" fill=\"%s\"/><text x=\"%.0f\" y=\"35\" class=\"tk\">",
                  legend_x, s.color.c_str(), legend_x + 14);
    o += b + HtmlEscape(s.name) + "</text>";
    legend_x += 34 + 6.2 * static_cast<double>(s.name.size());
  }
}

}  // namespace

std::string RenderSvgChart(const Chart& c) {
  const Frame f = FrameFor(c);
  std::string o;
  DrawFrame(c, f, o);
  DrawSeries(c, f, o);
  o += "</svg>";
  return o;
}

}  // namespace feedrate
