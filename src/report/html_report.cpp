#include "report/html_report.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>

#include <fmt/format.h>

#include "text/log_text.h"

#ifndef SCALESCOPE_VERSION
#define SCALESCOPE_VERSION "unknown"
#endif
#ifndef SCALESCOPE_GIT_COMMIT
#define SCALESCOPE_GIT_COMMIT "unknown"
#endif

namespace scalescope::report {

std::string html_escape(std::string_view in) {
  const std::string s = analyze::to_valid_utf8(in);
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
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

std::vector<std::pair<std::string, std::string>> default_provenance(const std::vector<std::string>& argv) {
  std::vector<std::pair<std::string, std::string>> p;
  p.emplace_back("scalescope", std::string(SCALESCOPE_VERSION) + ", commit " + SCALESCOPE_GIT_COMMIT);
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  p.emplace_back("command", cmd);
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) p.emplace_back("host", host);
  const std::time_t t = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&t));
  p.emplace_back("written", date);
  return p;
}

namespace {

constexpr double kW = 680, kH = 300, kL = 64, kR = 150, kT = 28, kB = 44;

std::string color_of(const std::string& style, std::size_t i) {
  static const char* palette[] = {"#1f5fa8", "#c2410c", "#15803d", "#7c3aed", "#b45309", "#0e7490"};
  if (style == "ideal") return "#6b7280";
  if (style == "ceiling") return "#dc2626";
  if (style == "predicted") return "#d97706";
  return palette[i % 6];
}

std::string dash_of(const std::string& style) {
  if (style == "ideal") return " stroke-dasharray=\"6 4\"";
  if (style == "ceiling") return " stroke-dasharray=\"2 3\"";
  if (style == "predicted") return " stroke-dasharray=\"8 3 2 3\"";
  return "";
}

std::string number_text(double v) {
  const double a = std::abs(v);
  if (a == 0) return "0";
  if (a >= 1e9) return fmt::format("{:.3g}G", v / 1e9);
  if (a >= 1e6) return fmt::format("{:.3g}M", v / 1e6);
  if (a >= 1e4) return fmt::format("{:.3g}k", v / 1e3);
  if (a >= 100) return fmt::format("{:.0f}", v);
  if (a >= 1) return fmt::format("{:.3g}", v);
  return fmt::format("{:.2g}", v);
}

/// A y axis from 0 past `top` in round steps (1, 2, 2.5 or 5 × a power of ten), four or five of them: {step, count}.
std::pair<double, int> round_axis(double top) {
  const double raw = top * 1.05 / 4, mag = std::pow(10, std::floor(std::log10(raw)));
  double step = 10 * mag;
  for (const double m : {1.0, 2.0, 2.5, 5.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  return {step, static_cast<int>(std::ceil(top * 1.05 / step))};
}

std::string chart_svg(const HtmlChart& c) {
  double x0 = 1e300, x1 = -1e300, y1 = 0;
  for (const auto& s : c.series)
    for (auto [x, y] : s.points) {
      if (c.log_x && x <= 0) continue;
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      x0 = std::min(x0, x), x1 = std::max(x1, x), y1 = std::max(y1, y);
    }
  if (x0 > x1) return "<p class=\"none\">no points to plot</p>";
  if (x0 == x1) x0 -= 1, x1 += 1;
  if (y1 <= 0) y1 = 1;
  const auto [step, y_ticks] = round_axis(y1);
  y1 = step * y_ticks;
  const auto fx = [&](double x) {
    const double a = c.log_x ? std::log(x) : x, lo = c.log_x ? std::log(x0) : x0, hi = c.log_x ? std::log(x1) : x1;
    return kL + (kW - kL - kR) * (a - lo) / (hi - lo);
  };
  const auto fy = [&](double y) { return kT + (kH - kT - kB) * (1 - y / y1); };
  std::string o = fmt::format("<svg class=\"chart\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"{}\">",
                              kW, kH, kW, kH, html_escape(c.title));
  const std::string title = c.title.size() > 90 ? c.title.substr(0, 87) + "…" : c.title;
  o += fmt::format("<text x=\"{}\" y=\"16\" class=\"ct\">{}<title>{}</title></text>", kL, html_escape(title), html_escape(c.title));
  // axes and ticks
  o += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" class=\"ax\"/><line x1=\"{0}\" y1=\"{3}\" x2=\"{0}\" y2=\"{1}\" class=\"ax\"/>",
                   kL, kH - kB, kW - kR, kT);
  for (int i = 0; i <= y_ticks; ++i) {
    const double y = step * i;
    o += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" class=\"grid\"/><text x=\"{3}\" y=\"{4:.1f}\" class=\"tk\" text-anchor=\"end\">{5}</text>",
                     kL, fy(y), kW - kR, kL - 4, fy(y) + 4, number_text(y));
  }
  std::vector<double> ticks;
  std::vector<double> xs;  // the points' own x values: the ticks when there are few (rank counts)
  for (const auto& s : c.series)
    for (auto [x, y] : s.points)
      if (!(c.log_x && x <= 0) && std::isfinite(x)) xs.push_back(x);
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  if (c.log_x && xs.size() <= 12) {
    ticks = xs;
  } else if (c.log_x) {
    for (double t = std::pow(10, std::floor(std::log10(x0))); t <= x1 * 1.0001; t *= 10)
      if (t >= x0 * 0.9999) ticks.push_back(t);
    if (ticks.size() < 2) ticks = {x0, x1};
  } else {
    ticks = xs;
    while (ticks.size() > 12) {  // every other tick
      std::vector<double> t2;
      for (std::size_t i = 0; i < ticks.size(); i += 2) t2.push_back(ticks[i]);
      ticks = t2;
    }
  }
  double last_x = -1e300;  // a label closer than 28 px to the one before it is left out (its point keeps its title)
  for (double t : ticks) {
    if (fx(t) - last_x < 28) continue;
    last_x = fx(t);
    o += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" class=\"ax\"/>", fx(t), kH - kB, kH - kB + 4);
    o += fmt::format("<text x=\"{:.1f}\" y=\"{}\" class=\"tk\" text-anchor=\"middle\">{}</text>", fx(t), kH - kB + 16, number_text(t));
  }
  o += fmt::format("<text x=\"{}\" y=\"{}\" class=\"al\" text-anchor=\"middle\">{}</text>", (kL + kW - kR) / 2, kH - 8,
                   html_escape(c.x_label));
  o += fmt::format("<text x=\"14\" y=\"{}\" class=\"al\" text-anchor=\"middle\" transform=\"rotate(-90 14 {})\">{}</text>",
                   (kT + kH - kB) / 2, (kT + kH - kB) / 2, html_escape(c.y_label));
  // Series: the ideal, ceilings and predictions under, the measured on top (a measured line equal to the prediction
  // stays visible); the legend keeps the series' own order and colours.
  const auto layer = [](const std::string& style) { return style == "measured" ? 2 : style == "predicted" ? 1 : 0; };
  std::vector<std::size_t> order(c.series.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return layer(c.series[a].style) < layer(c.series[b].style); });
  for (const std::size_t k : order) {
    const auto& s = c.series[k];
    const std::string col = color_of(s.style, k);
    std::string path;
    for (auto [x, y] : s.points) {
      if ((c.log_x && x <= 0) || !std::isfinite(x) || !std::isfinite(y)) continue;
      path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "M" : " L", fx(x), fy(y));
    }
    if (!path.empty())
      o += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}/>", path, col, dash_of(s.style));
    if (s.style == "measured" || s.style == "predicted")
      for (auto [x, y] : s.points)
        if (!(c.log_x && x <= 0) && std::isfinite(x) && std::isfinite(y))
          o += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>{}: {} → {}</title></circle>", fx(x), fy(y), col,
                           html_escape(s.name), number_text(x), number_text(y));
  }
  for (std::size_t i = 0; i < c.series.size(); ++i) {
    const auto& s = c.series[i];
    const std::string col = color_of(s.style, i);
    const double ly = kT + 6 + 18.0 * static_cast<double>(i);
    o += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"2\"{4}/><text x=\"{5}\" y=\"{6}\" class=\"lg\">{7}</text>",
                     kW - kR + 10, ly, kW - kR + 34, col, dash_of(s.style), kW - kR + 38, ly + 4, html_escape(s.name));
  }
  return o + "</svg>";
}

std::string waterfall_svg(const HtmlWaterfall& w) {
  std::vector<std::tuple<std::string, double, double, std::string>> bars;  // label, from, to, class
  double level = w.start;
  bars.emplace_back(w.start_label, 0, w.start, "wf-base");
  for (const auto& [label, v] : w.parts) {
    bars.emplace_back(label, level, level + v, v >= 0 ? "wf-up" : "wf-down");
    level += v;
  }
  bars.emplace_back(w.end_label, 0, level, "wf-end");
  double top = 0;
  for (const auto& b : bars) top = std::max({top, std::get<1>(b), std::get<2>(b)});
  if (top <= 0) top = 1;
  const auto [step, ticks] = round_axis(top);
  top = step * ticks;
  const double n = static_cast<double>(bars.size());
  const double width = kW - kL - 20, bw = width / n * 0.7;
  const auto fy = [&](double y) { return kT + (kH - kT - kB) * (1 - y / top); };
  std::string o = fmt::format("<svg class=\"chart\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"{}\">",
                              kW, kH, kW, kH, html_escape(w.title));
  o += fmt::format("<text x=\"{}\" y=\"16\" class=\"ct\">{}</text>", kL, html_escape(w.title));
  o += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" class=\"ax\"/>", kL, kH - kB, kW - 20);
  for (int i = 0; i <= ticks; ++i)
    o += fmt::format("<text x=\"{}\" y=\"{:.1f}\" class=\"tk\" text-anchor=\"end\">{}</text>", kL - 4, fy(step * i) + 4, number_text(step * i));
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const auto& [label, a, b, cls] = bars[i];
    const double x = kL + width / n * (static_cast<double>(i) + 0.15);
    const double y = fy(std::max(a, b)), h = std::max(1.0, std::abs(fy(a) - fy(b)));
    o += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" class=\"{}\"><title>{}: {:+.3f} {}</title></rect>", x, y, bw,
                     h, cls, html_escape(label), b - a, html_escape(w.unit));
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tk\" text-anchor=\"middle\">{}</text>", x + bw / 2, y - 4,
                     cls == "wf-base" || cls == "wf-end" ? number_text(b) : fmt::format("{:+.2f}", b - a));
    o += fmt::format("<text x=\"{:.1f}\" y=\"{}\" class=\"tk\" text-anchor=\"middle\">{}</text>", x + bw / 2, kH - kB + 16, html_escape(label));
  }
  return o + "</svg>";
}

std::string lanes_svg(const std::vector<HtmlLane>& lanes) {
  double longest = 0;
  for (const auto& l : lanes) longest = std::max(longest, l.step_ms);
  if (longest <= 0) return "<p class=\"none\">no step to draw</p>";
  const double lane_h = 26, h = kT + lane_h * static_cast<double>(lanes.size()) + kB;
  const double x0 = 90, width = kW - x0 - 20;
  const auto fx = [&](double ms) { return x0 + width * ms / longest; };
  std::string o = fmt::format("<svg class=\"chart\" viewBox=\"0 0 {} {:.0f}\" width=\"{}\" height=\"{:.0f}\" role=\"img\" aria-label=\"one step per rank\">",
                              kW, h, kW, h);
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    const auto& l = lanes[i];
    const double y = kT + lane_h * static_cast<double>(i);
    o += fmt::format("<text x=\"{}\" y=\"{:.1f}\" class=\"tk\" text-anchor=\"end\">{}</text>", x0 - 6, y + 15, html_escape(l.name));
    o += fmt::format("<rect x=\"{}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"18\" class=\"idle\"><title>idle</title></rect>", x0, y, fx(l.step_ms) - x0);
    for (const auto& s : l.segments) {
      const double a = std::clamp(s.start_ms, 0.0, l.step_ms), b = std::clamp(s.end_ms, 0.0, l.step_ms);
      if (b <= a) continue;
      const bool comm = s.kind == "communication";
      o += fmt::format("<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{}\" class=\"k-{}\"><title>{} {:.3f}–{:.3f} ms</title></rect>", fx(a),
                       y + (comm ? 10 : 0), std::max(0.3, fx(b) - fx(a)), comm ? 8 : 10, html_escape(s.kind), html_escape(s.kind), a, b);
    }
  }
  const double ay = kT + lane_h * static_cast<double>(lanes.size()) + 4;
  o += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" class=\"ax\"/>", x0, ay, fx(longest));
  for (int i = 0; i <= 4; ++i)
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tk\" text-anchor=\"middle\">{} ms</text>", fx(longest * i / 4), ay + 14, number_text(longest * i / 4));
  return o + "</svg>";
}

std::string cls_of_link(const std::string& token) {
  if (token.rfind("NV", 0) == 0) return "l-nv";
  if (token == "PIX" || token == "PXB") return "l-pix";
  if (token == "PHB" || token == "NODE") return "l-phb";
  if (token == "SYS") return "l-sys";
  return "l-x";
}

std::string evidence_list(const nlohmann::json& ev) {
  if (!ev.is_array() || ev.empty()) return "";
  std::string o = "<ul class=\"ev\">";
  for (const auto& e : ev) {
    std::string where = e.value("source", "");
    if (e.contains("line") && e["line"].is_number() && e["line"].get<long>() > 0) where += fmt::format(":{}", e["line"].get<long>());
    o += "<li>" + html_escape(e.value("says", "")) + (where.empty() ? "" : " <span class=\"src\">[" + html_escape(where) + "]</span>");
    if (e.contains("excerpt") && e["excerpt"].is_string() && !e["excerpt"].get<std::string>().empty())
      o += "<pre>" + html_escape(e["excerpt"].get<std::string>()) + "</pre>";
    o += "</li>";
  }
  return o + "</ul>";
}

std::string cause_block(const nlohmann::json& a, bool primary) {
  std::string o = fmt::format("<div class=\"cause {}\"><h3><code>{}</code> <span class=\"conf\">{}</span></h3><p>{}</p>", primary ? "primary" : "",
                              html_escape(a.value("cause", "")), html_escape(a.value("confidence", "")), html_escape(a.value("summary", "")));
  if (a.contains("cost") && a["cost"].is_object() && !a["cost"].value("text", "").empty())
    o += "<p><b>cost:</b> " + html_escape(a["cost"].value("text", "")) + "</p>";
  o += evidence_list(a.value("evidence", nlohmann::json()));
  if (a.contains("against") && a["against"].is_array() && !a["against"].empty())
    o += "<details><summary>against</summary>" + evidence_list(a["against"]) + "</details>";
  if (!a.value("fix", "").empty()) o += "<p><b>fix:</b> " + html_escape(a.value("fix", "")) + "</p>";
  if (a.contains("predicted") && a["predicted"].is_string()) o += "<p><b>predicted:</b> " + html_escape(a["predicted"].get<std::string>()) + "</p>";
  if (a.contains("confirm") && a["confirm"].is_string()) o += "<p><b>confirm:</b> <code>" + html_escape(a["confirm"].get<std::string>()) + "</code></p>";
  return o + "</div>";
}

std::string diagnosis_html(const nlohmann::json& d) {
  if (!d.is_object()) return "<p class=\"none\">no diagnosis for these inputs</p>";
  std::string o;
  // A job that failed by itself: that first, in its own words (diagnose::Diagnosis::failure).
  if (d.contains("failure") && d["failure"].is_object()) {
    const auto& f = d["failure"];
    const auto text = [&](const char* k) { return f.contains(k) && f[k].is_string() ? f[k].get<std::string>() : std::string(); };
    const bool launcher = f.contains("launcher_crash") && f["launcher_crash"].is_boolean() && f["launcher_crash"].get<bool>();
    std::string who = f.contains("rank") && f["rank"].is_number_integer() ? fmt::format("rank {}: ", f["rank"].get<int>()) : "";
    o += fmt::format("<div class=\"cause primary\"><h3>the job FAILED ({})</h3><p>{}{}</p>", html_escape(text("ended")),
                     launcher ? "the launcher itself failed before starting any worker: " : html_escape(who),
                     html_escape(text("exception").empty() ? "no exception in its output" : text("exception")));
    if (!text("fix").empty())
      o += "<p><b>fix:</b> " + html_escape(text("fix")) + "</p><p><b>known from:</b> " + html_escape(text("fix_source")) + "</p>";
    o += "</div>";
  }
  if (d.contains("primary") && d["primary"].is_object())
    o += cause_block(d["primary"], true);
  else if (d.contains("failure") && d["failure"].is_object())
    o += "<p class=\"none\">primary: none — nothing else in the evidence names a cause of slow scaling: a run that failed measured none</p>";
  else
    o += "<p class=\"none\">primary: none — the evidence does not single out a cause</p>";
  if (d.contains("ceiling") && d["ceiling"].is_string()) o += "<p><b>ceiling:</b> " + html_escape(d["ceiling"].get<std::string>()) + "</p>";
  if (d.contains("contributing") && !d["contributing"].empty()) {
    o += "<h3>contributing</h3>";
    for (const auto& c : d["contributing"]) o += cause_block(c, false);
  }
  if (d.contains("ruled_out") && !d["ruled_out"].empty()) {
    o += "<details><summary>ruled out (" + std::to_string(d["ruled_out"].size()) + ")</summary><ul>";
    for (const auto& r : d["ruled_out"]) o += "<li><code>" + html_escape(r.value("cause", "")) + "</code>: " + html_escape(r.value("why", "")) + "</li>";
    o += "</ul></details>";
  }
  if (d.contains("missing_evidence") && !d["missing_evidence"].empty()) {
    o += "<h3>missing evidence</h3><ul>";
    for (const auto& m : d["missing_evidence"])
      o += "<li>" + html_escape(m.value("what", "")) + " — <code>" + html_escape(m.value("command", "")) + "</code> (" +
           html_escape(m.value("decides", "")) + ")</li>";
    o += "</ul>";
  }
  return o;
}

/// The answer (report/answer.h) as the page's first section: its headline, cost and fix, and the figures beside it.
std::string answer_html(const Answer& a) {
  std::string o = "<section id=\"answer\" class=\"answer k-" + html_escape(a.kind) + "\"><h2>Answer</h2><p class=\"headline\">" +
                  html_escape(a.headline) + "</p>";
  if (!a.cost.empty()) o += "<p><b>cost:</b> " + html_escape(a.cost) + "</p>";
  if (!a.fix.empty()) o += "<p><b>fix:</b> " + html_escape(a.fix) + "</p>";
  if (!a.figures.empty()) {
    o += "<table class=\"figures\">";
    for (const auto& f : a.figures) o += "<tr><th>" + html_escape(f.label) + "</th><td>" + html_escape(f.value) + "</td></tr>";
    o += "</table>";
  }
  return o + "</section>";
}

const char* kStyle = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:980px;padding:16px 24px;color:#111827}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:17px;border-bottom:1px solid #e5e7eb;padding-bottom:4px;margin-top:28px}
h3{font-size:15px;margin:10px 0 4px}code{background:#f3f4f6;padding:0 3px;border-radius:3px}
pre{background:#f9fafb;border:1px solid #e5e7eb;padding:6px;overflow-x:auto;font-size:12px;margin:4px 0}
.none{color:#6b7280;font-style:italic}.cause{border-left:4px solid #9ca3af;padding:2px 12px;margin:8px 0}
.cause.primary{border-color:#dc2626;background:#fef2f2}.conf{font-size:12px;color:#6b7280;font-weight:normal}
.src{color:#6b7280;font-size:12px}ul.ev{margin:4px 0}
svg.chart{display:block;margin:8px 0;max-width:100%;height:auto;background:#fff}
.ax{stroke:#374151;stroke-width:1}.grid{stroke:#e5e7eb;stroke-width:1}.tk{font-size:11px;fill:#374151}
.al{font-size:12px;fill:#111827}.ct{font-size:13px;font-weight:600;fill:#111827}.lg{font-size:12px;fill:#111827}
.wf-base{fill:#9ca3af}.wf-up{fill:#dc2626}.wf-down{fill:#16a34a}.wf-end{fill:#1f5fa8}
.idle{fill:#f3f4f6;stroke:#d1d5db}.k-compute{fill:#1f5fa8}.k-communication{fill:#ea580c}.k-copy{fill:#16a34a}.k-cpu{fill:#7c3aed}
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}
table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #e5e7eb;padding:3px 8px;text-align:left;font-size:13px}
.answer{border:1px solid #d1d5db;border-radius:6px;padding:4px 16px 10px;background:#f9fafb}.answer h2{border:0;margin-top:8px}
.answer.k-failure{border-color:#dc2626;background:#fef2f2}.headline{font-size:17px;font-weight:600;margin:4px 0 8px}
td.l-nv{background:#dcfce7}td.l-pix{background:#fef9c3}td.l-phb{background:#ffedd5}td.l-sys{background:#fee2e2}td.l-x{color:#9ca3af}
)";

}  // namespace

std::string render_html(const HtmlPage& page) {
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  // No script, no remote resource: the page renders offline and nothing in it runs.
  o += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">";
  o += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  o += "<title>" + html_escape(page.title) + "</title><style>" + kStyle + "</style></head><body>";
  o += "<h1>" + html_escape(page.title) + "</h1>";

  if (page.answer) o += answer_html(*page.answer);
  if (page.diagnosis.is_object()) o += "<section id=\"diagnosis\"><h2>Diagnosis</h2>" + diagnosis_html(page.diagnosis) + "</section>";

  // Measured before predicted, each chart with what it has; a section with nothing to show is left out.
  const auto drawings = [&](const char* id, const char* title, const auto& items, const auto& draw) {
    if (items.empty()) return;
    o += fmt::format("<section id=\"{}\"><h2>{}</h2>", id, title);
    for (const auto& item : items) o += draw(item);
    o += "</section>";
  };
  drawings("scaling", "Scaling", page.scaling, chart_svg);
  drawings("waterfall", "Where the time went", page.waterfalls, waterfall_svg);
  drawings("busbw", "Bus bandwidth against message size", page.busbw, chart_svg);
  if (!page.lanes.empty()) {
    o += "<section id=\"swimlanes\"><h2>One step of each rank</h2>";
    o += "<p class=\"legend\"><span><i class=\"k-compute\" style=\"background:#1f5fa8\"></i>compute</span><span><i style=\"background:#ea580c\"></i>communication</span>"
         "<span><i style=\"background:#16a34a\"></i>copies (data)</span><span><i style=\"background:#7c3aed\"></i>CPU work (CPU ranks)</span>"
         "<span><i style=\"background:#f3f4f6;border:1px solid #d1d5db\"></i>idle</span></p>";
    o += lanes_svg(page.lanes);
    if (!page.lanes_note.empty()) o += "<p class=\"src\">" + html_escape(page.lanes_note) + "</p>";
    o += "</section>";
  }
  if (page.topology && !page.topology->labels.empty()) {
    o += "<section id=\"topology\"><h2>Topology</h2>";
    const auto& m = *page.topology;
    o += "<table><tr><th></th>";
    for (const auto& l : m.labels) o += "<th>" + html_escape(l) + "</th>";
    o += "</tr>";
    for (std::size_t i = 0; i < m.labels.size(); ++i) {
      o += "<tr><th>" + html_escape(m.labels[i]) + "</th>";
      for (std::size_t j = 0; j < m.labels.size(); ++j) {
        const std::string c = i < m.cells.size() && j < m.cells[i].size() ? m.cells[i][j] : "";
        o += "<td class=\"" + cls_of_link(c) + "\">" + html_escape(c) + "</td>";
      }
      o += "</tr>";
    }
    o += "</table></section>";
  }

  for (const auto& [title, text] : page.tables) o += "<section><h2>" + html_escape(title) + "</h2><pre>" + html_escape(text) + "</pre></section>";

  o += "<section id=\"provenance\"><h2>Provenance</h2><table>";
  for (const auto& [k, v] : page.provenance) o += "<tr><th>" + html_escape(k) + "</th><td>" + html_escape(v) + "</td></tr>";
  o += "</table></section></body></html>\n";
  return o;
}

}  // namespace scalescope::report
