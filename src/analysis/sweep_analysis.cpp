#include "analysis/sweep_analysis.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/error.h"
#include "core/stats.h"

namespace scalescope::analyze {
namespace {

const SweepTiming& timing(const SweepRow& r, Direction d) { return d == Direction::out_of_place ? r.out_of_place : r.in_place; }

std::optional<double> median_of(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  return core::quantile(v, 0.5);
}

template <class T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::string bytes_text(std::uint64_t b) {
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) return fmt::format("{} GiB", b >> 30);
  if (b >= (1ull << 20) && b % (1ull << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= (1ull << 10) && b % (1ull << 10) == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

}  // namespace

std::vector<SizePoint> size_points(const Sweep& sweep, Direction direction) {
  std::map<std::uint64_t, std::pair<std::vector<double>, std::vector<double>>> by_size;
  std::map<std::uint64_t, std::size_t> rows;
  for (const auto& r : sweep.rows) {
    if (r.size_bytes == 0) continue;
    const auto& t = timing(r, direction);
    ++rows[r.size_bytes];
    auto& [times, busbws] = by_size[r.size_bytes];
    if (t.time_us && std::isfinite(*t.time_us)) times.push_back(*t.time_us);
    if (t.busbw_gbps && std::isfinite(*t.busbw_gbps)) busbws.push_back(*t.busbw_gbps);
  }
  std::vector<SizePoint> out;
  for (auto& [size, v] : by_size) out.push_back({size, median_of(v.first), median_of(v.second), rows[size]});
  return out;
}

double predict_time_us(const AlphaBetaFit& fit, double bytes) {
  if (!std::isfinite(bytes) || bytes < 0) throw core::Error(fmt::format("cannot predict the time of {} bytes", bytes));
  if (!(fit.beta_alg_gbps > 0))
    throw core::Error("the α–β fit has no positive bandwidth term", "fit a sweep whose time grows with size");
  return fit.alpha_us + bytes / (fit.beta_alg_gbps * 1e3);  // GB/s = 1e9 B/s = 1e3 B/µs
}

std::string_view to_string(GradeLabel g) {
  switch (g) {
    case GradeLabel::good: return "good";
    case GradeLabel::fair: return "fair";
    case GradeLabel::poor: return "poor";
  }
  return "poor";
}

Grade grade_bandwidth(double plateau_gbps, double expected_gbps) {
  if (!std::isfinite(expected_gbps) || expected_gbps <= 0)
    throw core::Error(fmt::format("expected bandwidth {} GB/s is not a positive number", expected_gbps),
                      "pass the link's bus bandwidth in GB/s, e.g. --expect 450 for H100 NVLink");
  if (!std::isfinite(plateau_gbps) || plateau_gbps < 0)
    throw core::Error(fmt::format("bandwidth {} GB/s cannot be graded", plateau_gbps));
  Grade g;
  g.expected_gbps = expected_gbps;
  g.percent = plateau_gbps / expected_gbps * 100.0;
  g.label = g.percent >= kGoodPercent ? GradeLabel::good : g.percent >= kFairPercent ? GradeLabel::fair : GradeLabel::poor;
  return g;
}

namespace {

std::optional<Plateau> find_plateau(const std::vector<SizePoint>& pts, const AnalysisOptions& o) {
  std::vector<const SizePoint*> with_bw;
  for (const auto& p : pts)
    if (p.busbw_gbps) with_bw.push_back(&p);
  if (with_bw.empty()) return std::nullopt;
  // Grow the run downwards from the largest size while every busbw in it stays within tolerance of its max.
  std::size_t first = with_bw.size() - 1;
  double run_max = *with_bw[first]->busbw_gbps, run_min = run_max;
  while (first > 0) {
    const double b = *with_bw[first - 1]->busbw_gbps;
    const double mx = std::max(run_max, b), mn = std::min(run_min, b);
    if (mn < (1.0 - o.plateau_tolerance) * mx) break;
    run_max = mx;
    run_min = mn;
    --first;
  }
  std::vector<double> run;
  for (std::size_t i = first; i < with_bw.size(); ++i) run.push_back(*with_bw[i]->busbw_gbps);
  Plateau p;
  p.busbw_gbps = core::quantile(run, 0.5);
  p.from_bytes = with_bw[first]->size_bytes;
  p.to_bytes = with_bw.back()->size_bytes;
  p.sizes = run.size();
  p.saturated = run.size() >= o.plateau_min_sizes;
  const auto* peak = *std::max_element(with_bw.begin(), with_bw.end(),
                                       [](const SizePoint* a, const SizePoint* b) { return *a->busbw_gbps < *b->busbw_gbps; });
  p.peak_busbw_gbps = *peak->busbw_gbps;
  p.peak_bytes = peak->size_bytes;
  return p;
}

std::optional<Latency> find_latency(const std::vector<SizePoint>& pts, const AnalysisOptions& o) {
  Latency l;
  double sum = 0;
  for (const auto& p : pts) {
    if (p.size_bytes > o.latency_max_bytes || !p.time_us) continue;
    if (l.sizes == 0) {
      l.from_bytes = p.size_bytes;
      l.min_time_us = *p.time_us;
    }
    l.to_bytes = p.size_bytes;
    l.min_time_us = std::min(l.min_time_us, *p.time_us);
    sum += *p.time_us;
    ++l.sizes;
  }
  if (l.sizes == 0) return std::nullopt;
  l.mean_time_us = sum / static_cast<double>(l.sizes);
  return l;
}

std::optional<AlphaBetaFit> fit_alpha_beta(const std::vector<SizePoint>& pts) {
  std::vector<double> x, y;
  for (const auto& p : pts)
    if (p.time_us && *p.time_us > 0) {
      x.push_back(static_cast<double>(p.size_bytes));
      y.push_back(*p.time_us);
    }
  if (x.size() < 2 || *std::max_element(x.begin(), x.end()) == *std::min_element(x.begin(), x.end())) return std::nullopt;
  // Minimise Σ w (y − α − γx)², w = 1/y²; γ = 1/β in µs per byte. Centred sums avoid cancellation (x up to 1e10).
  double W = 0, xm = 0, ym = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double w = 1.0 / (y[i] * y[i]);
    W += w;
    xm += w * x[i];
    ym += w * y[i];
  }
  xm /= W;
  ym /= W;
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double w = 1.0 / (y[i] * y[i]);
    sxx += w * (x[i] - xm) * (x[i] - xm);
    sxy += w * (x[i] - xm) * (y[i] - ym);
  }
  double gamma = sxy / sxx;
  double alpha = ym - gamma * xm;
  AlphaBetaFit f;
  if (alpha < 0) {  // a negative fixed cost is unphysical: refit through the origin, γ = Σwxy / Σwx²
    double num = 0, den = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double w = 1.0 / (y[i] * y[i]);
      num += w * x[i] * y[i];
      den += w * x[i] * x[i];
    }
    alpha = 0;
    gamma = num / den;
    f.alpha_clamped = true;
  }
  if (!(gamma > 0) || !std::isfinite(gamma)) return std::nullopt;  // time does not grow with size
  f.alpha_us = alpha;
  f.beta_alg_gbps = 1.0 / gamma / 1e3;  // B/µs → GB/s
  f.points = x.size();
  double sq = 0, res = 0, tot = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double model = alpha + gamma * x[i];
    const double rel = (model - y[i]) / y[i];
    sq += rel * rel;
    if (std::abs(rel) > f.max_relative_error) {
      f.max_relative_error = std::abs(rel);
      f.max_error_bytes = static_cast<std::uint64_t>(x[i]);
    }
    const double w = 1.0 / (y[i] * y[i]);
    res += w * (y[i] - model) * (y[i] - model);
    tot += w * (y[i] - ym) * (y[i] - ym);
  }
  f.rms_relative_error = std::sqrt(sq / static_cast<double>(x.size()));
  f.r2 = tot > 0 ? 1.0 - res / tot : 0.0;
  return f;
}

}  // namespace

SweepAnalysis analyze_sweep(const Sweep& sweep, const AnalysisOptions& o) {
  if (!(o.plateau_tolerance >= 0 && o.plateau_tolerance < 1))
    throw core::Error(fmt::format("plateau tolerance {} is not in [0, 1)", o.plateau_tolerance));
  if (o.plateau_min_sizes == 0) throw core::Error("plateau_min_sizes must be at least 1");
  SweepAnalysis a;
  a.direction = o.direction;
  const auto pts = size_points(sweep, o.direction);
  const char* dir = o.direction == Direction::out_of_place ? "out-of-place" : "in-place";

  a.plateau = find_plateau(pts, o);
  if (sweep.ranks && *sweep.ranks == 1 && comm::bus_bandwidth_factor(sweep.collective, 1) == 0)
    a.notes.push_back("one rank: busbw is 0 by definition (bus factor (n−1)/n or 2(n−1)/n); the time and algbw "
                      "measure a local copy, not communication");
  if (!a.plateau) a.notes.push_back(fmt::format("no plateau: no row with a size above 0 has an {} busbw", dir));
  else if (!a.plateau->saturated)
    a.notes.push_back(fmt::format("plateau from {} size(s) only: the sweep may end before the bandwidth levels off, "
                                  "so {:.2f} GB/s is a lower bound",
                                  a.plateau->sizes, a.plateau->busbw_gbps));
  if (a.plateau && a.plateau->peak_busbw_gbps > a.plateau->busbw_gbps / (1.0 - o.plateau_tolerance))
    a.notes.push_back(fmt::format("busbw peaks at {:.2f} GB/s at {} but the largest sizes sustain {:.2f} GB/s",
                                  a.plateau->peak_busbw_gbps, bytes_text(a.plateau->peak_bytes), a.plateau->busbw_gbps));

  a.latency = find_latency(pts, o);
  if (!a.latency)
    a.notes.push_back(pts.empty() ? std::string("no small-message latency: no row with a size above 0")
                                  : fmt::format("no small-message latency: the sweep has no size from 1 B to {} (it starts at {})",
                                                bytes_text(o.latency_max_bytes), bytes_text(pts.front().size_bytes)));

  // Below 1 MiB the time of a collective is its latency (a few µs per hop): a bandwidth fitted there, or a "plateau"
  // of such sizes, is not the link's.
  constexpr std::uint64_t kBandwidthMinBytes = 1 << 20;
  const bool latency_only = !pts.empty() && pts.back().size_bytes < kBandwidthMinBytes;
  if (latency_only && a.plateau) {
    a.plateau->saturated = false;
    a.notes.push_back(fmt::format("the sweep ends at {}, under 1 MiB, where time is latency: its busbw says nothing about "
                                  "the link's bandwidth",
                                  bytes_text(pts.back().size_bytes)));
  }
  a.fit = latency_only ? std::nullopt : fit_alpha_beta(pts);
  if (latency_only) a.notes.push_back("no α–β fit: every size is under 1 MiB, where no bandwidth can be fitted");
  else if (!a.fit) a.notes.push_back("no α–β fit: it needs two sizes above 0 whose time grows with size");
  else {
    if (sweep.ranks && *sweep.ranks >= 1) {
      a.fit->bus_factor = comm::bus_bandwidth_factor(sweep.collective, *sweep.ranks);
      // The plateau and peak are the rows' printed busbw; β must be on the same scale. When the rows' own
      // busbw/algbw (their median) is not the rank count's factor, the text's rank count and its busbw disagree
      // (the parser warns): β then takes the rows' factor, so the summary's busbw figures agree with each other.
      std::vector<double> ratios;
      for (const auto& row : sweep.rows)
        if (const auto& t = row.out_of_place; t.algbw_gbps && t.busbw_gbps && *t.algbw_gbps > 0 && *t.busbw_gbps > 0 &&
                                               std::isfinite(*t.algbw_gbps) && std::isfinite(*t.busbw_gbps))
          ratios.push_back(*t.busbw_gbps / *t.algbw_gbps);
      if (!ratios.empty()) {
        std::nth_element(ratios.begin(), ratios.begin() + static_cast<std::ptrdiff_t>(ratios.size() / 2), ratios.end());
        const double rows_factor = ratios[ratios.size() / 2];
        if (std::abs(rows_factor - *a.fit->bus_factor) > 0.01 * *a.fit->bus_factor) {
          a.notes.push_back(fmt::format("β as busbw uses the rows' own busbw/algbw, {:.3f}, not {:.3f}, the factor of "
                                        "{} rank(s): the text's rank count and its busbw disagree",
                                        rows_factor, *a.fit->bus_factor, *sweep.ranks));
          a.fit->bus_factor = rows_factor;
        }
      }
      a.fit->beta_bus_gbps = a.fit->beta_alg_gbps * *a.fit->bus_factor;
    }
    if (a.fit->alpha_clamped) a.notes.push_back("α–β fit: the free fit gave a negative α; refitted with α = 0");
  }

  if (o.expected_busbw_gbps) {
    grade_bandwidth(0, *o.expected_busbw_gbps);  // rejects a bad expectation even without a plateau
    if (a.plateau && std::isfinite(a.plateau->busbw_gbps) && a.plateau->busbw_gbps >= 0)
      a.grade = grade_bandwidth(a.plateau->busbw_gbps, *o.expected_busbw_gbps);
    else
      a.notes.push_back("no grade: no plateau with a busbw of 0 or more");
  }

  double sum = 0;
  std::size_t n = 0;
  for (const auto& r : sweep.rows)
    for (const auto* t : {&r.out_of_place, &r.in_place})
      if (t->busbw_gbps) {
        sum += *t->busbw_gbps;
        ++n;
      }
  if (n > 0) a.nccl_tests_avg_busbw_gbps = sum / static_cast<double>(n);
  return a;
}

nlohmann::json comm_report_json(const Sweep& sweep, const SweepAnalysis& analysis) {
  return {{"schema", kCommSchema}, {"sweep", sweep}, {"analysis", analysis}};
}

nlohmann::json comm_reports_json(nlohmann::json reports) {
  return {{"schema", kCommSchema}, {"reports", std::move(reports)}};
}

void to_json(nlohmann::json& j, const Plateau& p) {
  j = {{"busbw_gbps", p.busbw_gbps}, {"from_bytes", p.from_bytes},         {"to_bytes", p.to_bytes},
       {"sizes", p.sizes},           {"saturated", p.saturated},           {"peak_busbw_gbps", p.peak_busbw_gbps},
       {"peak_bytes", p.peak_bytes}};
}

void to_json(nlohmann::json& j, const Latency& l) {
  j = {{"mean_time_us", l.mean_time_us}, {"min_time_us", l.min_time_us}, {"from_bytes", l.from_bytes},
       {"to_bytes", l.to_bytes},         {"sizes", l.sizes}};
}

void to_json(nlohmann::json& j, const AlphaBetaFit& f) {
  j = {{"alpha_us", f.alpha_us},
       {"beta_alg_gbps", f.beta_alg_gbps},
       {"beta_bus_gbps", opt(f.beta_bus_gbps)},
       {"bus_factor", opt(f.bus_factor)},
       {"alpha_clamped", f.alpha_clamped},
       {"points", f.points},
       {"rms_relative_error", f.rms_relative_error},
       {"max_relative_error", f.max_relative_error},
       {"max_error_bytes", f.max_error_bytes},
       {"r2", f.r2},
       {"weighting", "1/time^2 (relative error)"}};
}

void to_json(nlohmann::json& j, const Grade& g) {
  j = {{"expected_gbps", g.expected_gbps},
       {"percent", g.percent},
       {"label", to_string(g.label)},
       {"thresholds_percent", {{"good", kGoodPercent}, {"fair", kFairPercent}}}};
}

void to_json(nlohmann::json& j, const SweepAnalysis& a) {
  j = {{"direction", a.direction == Direction::out_of_place ? "out_of_place" : "in_place"},
       {"plateau", opt(a.plateau)},
       {"latency", opt(a.latency)},
       {"fit", opt(a.fit)},
       {"grade", opt(a.grade)},
       {"nccl_tests_avg_busbw_gbps", opt(a.nccl_tests_avg_busbw_gbps)},
       {"notes", a.notes}};
}

}  // namespace scalescope::analyze
