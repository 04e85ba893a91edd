#include "report/nccl_tests_table.h"

#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "report/table.h"

namespace scalescope::report {
namespace {

using analyze::Sweep;
using analyze::SweepRow;
using analyze::SweepTiming;

// A number in exactly `width` characters, as precise as fits: 2 decimals, else 1, else 0, else an exponent
// (1 decimal when width ≥ 7). Same cascade as nccl-tests so column widths never grow.
std::string fit_number(std::optional<double> v, int width) {
  if (!v || !std::isfinite(*v)) return fmt::format("{:>{}}", "N/A", width);
  for (int decimals = 2; decimals >= 0; --decimals) {
    std::string s = fmt::format("{:>{}.{}f}", *v, width, decimals);
    if (static_cast<int>(s.size()) <= width) return s;
  }
  return fmt::format("{:>{}.{}e}", *v, width, width >= 7 ? 1 : 0);
}

std::string wrong_text(std::optional<double> v) {
  if (!v) return "   N/A";
  return fmt::format("{:>6}", fmt::format("{:g}", *v));
}

std::string direction_cells(const SweepTiming& t) {
  return fmt::format("  {}  {}  {}  {}", fit_number(t.time_us, 7), fit_number(t.algbw_gbps, 6), fit_number(t.busbw_gbps, 6),
                     wrong_text(t.wrong));
}

std::string type_text(const SweepRow& r) {
  if (r.type) return std::string(comm::to_string(*r.type));
  return r.type_name.empty() ? "N/A" : r.type_name;
}

std::string redop_text(const SweepRow& r) {
  if (r.redop) return std::string(comm::to_string(*r.redop));
  return r.redop_name.empty() ? "none" : r.redop_name;
}

std::string bytes_text(std::uint64_t b) {
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) return fmt::format("{} GiB", b >> 30);
  if (b >= (1ull << 20) && b % (1ull << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= (1ull << 10) && b % (1ull << 10) == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

std::string opt_text(std::optional<double> v, const char* fmtspec) {
  return v ? fmt::format(fmt::runtime(fmtspec), *v) : std::string("-");
}

}  // namespace

std::string render_nccl_tests_table(const Sweep& sweep) {
  std::string out = "#\n";
  out += fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}           out-of-place                       in-place          \n",
                     "", "", "", "", "");
  out += fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6} \n", "size",
                     "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  out += fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6} \n", "(B)",
                     "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  for (const auto& r : sweep.rows) {
    out += fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}", r.size_bytes, r.count ? std::to_string(*r.count) : "N/A",
                       type_text(r), redop_text(r), r.root ? *r.root : -1);
    out += direction_cells(r.out_of_place) + direction_cells(r.in_place) + "\n";
  }
  return out;
}

std::string render_sweep_statistics(const Sweep& sweep) {
  auto has_stats = [](const SweepTiming& t) { return t.median_us || t.p95_us || t.cv || t.min_us || t.max_us || t.rank_skew_us; };
  bool any = false;
  for (const auto& r : sweep.rows) any = any || has_stats(r.out_of_place) || has_stats(r.in_place);
  if (!any) return {};
  std::vector<std::string> headers = {"size (B)"};
  for (const char* d : {"oop", "ip"})
    for (const char* c : {"median", "p95", "min", "max", "cv %", "skew"}) headers.push_back(fmt::format("{} {}", d, c));
  TextTable table(headers);
  for (const auto& r : sweep.rows) {
    std::vector<std::string> cells = {std::to_string(r.size_bytes)};
    for (const auto* t : {&r.out_of_place, &r.in_place}) {
      cells.push_back(opt_text(t->median_us, "{:.2f}"));
      cells.push_back(opt_text(t->p95_us, "{:.2f}"));
      cells.push_back(opt_text(t->min_us, "{:.2f}"));
      cells.push_back(opt_text(t->max_us, "{:.2f}"));
      cells.push_back(t->cv ? fmt::format("{:.1f}", *t->cv * 100.0) : "-");
      cells.push_back(opt_text(t->rank_skew_us, "{:.2f}"));
    }
    table.add_row(std::move(cells));
  }
  std::string out =
      "#\n# scalescope per-size statistics over the timed iterations (µs; cv = stddev/mean; skew = slowest minus "
      "fastest rank's mean)\n";
  const std::string body = table.render();
  std::size_t start = 0;
  while (start < body.size()) {
    std::size_t nl = body.find('\n', start);
    if (nl == std::string::npos) nl = body.size();
    out += "# " + body.substr(start, nl - start) + "\n";
    start = nl + 1;
  }
  return out;
}

std::string render_comm_summary(const Sweep& sweep, const analyze::SweepAnalysis& a) {
  std::string out;
  // nccl-tests' footer: "Out of bounds values" counts the results (row × direction) with wrong elements.
  int checked = 0, failed = 0;
  for (const auto& r : sweep.rows)
    for (const auto* t : {&r.out_of_place, &r.in_place})
      if (t->wrong) {
        ++checked;
        failed += *t->wrong > 0 ? 1 : 0;
      }
  // A text read back gets its own footer repeated only when it had one: a footer it never printed would read as the
  // tool's (the recomputed average is in the summary below, named as such).
  const bool footer = !sweep.from_text || sweep.reported_avg_busbw_gbps;
  if (footer) {
    if (checked > 0) out += fmt::format("# {:<20} : {} {}\n", "Out of bounds values", failed, failed ? "FAILED" : "OK");
    else out += fmt::format("# {:<20} : N/A (results not checked)\n", "Out of bounds values");
    const auto avg = sweep.reported_avg_busbw_gbps ? sweep.reported_avg_busbw_gbps : a.nccl_tests_avg_busbw_gbps;
    if (avg) out += fmt::format("# {:<20} : {:g} \n", "Avg bus bandwidth", *avg);
    out += "#\n";
  }

  const char* dir = a.direction == analyze::Direction::out_of_place ? "out-of-place" : "in-place";
  out += fmt::format("# scalescope summary: {}, {} rank(s), {} results\n", comm::to_string(sweep.collective),
                     sweep.ranks ? std::to_string(*sweep.ranks) : "unknown", dir);
  if (a.plateau) {
    const auto& p = a.plateau;
    out += fmt::format("#   busbw plateau  : {:.2f} GB/s, median of the {} largest size(s) {} – {} (within 10 % of their maximum){}\n",
                       p->busbw_gbps, p->sizes, bytes_text(p->from_bytes), bytes_text(p->to_bytes),
                       p->saturated ? "" : "; too few sizes: a lower bound");
    out += fmt::format("#   busbw peak     : {:.2f} GB/s at {}\n", p->peak_busbw_gbps, bytes_text(p->peak_bytes));
  }
  if (a.latency)
    out += fmt::format("#   latency        : {:.2f} µs, mean time of {} size(s) {} – {} (min {:.2f} µs)\n", a.latency->mean_time_us,
                       a.latency->sizes, bytes_text(a.latency->from_bytes), bytes_text(a.latency->to_bytes),
                       a.latency->min_time_us);
  if (a.fit) {
    const auto& f = *a.fit;
    out += fmt::format("#   α–β fit        : time = {:.2f} µs + size / {:.2f} GB/s{}; relative error rms {:.1f} %, max {:.1f} %{}, R² {:.3f}{}\n",
                       f.alpha_us, f.beta_alg_gbps,
                       f.beta_bus_gbps ? fmt::format(" (β as busbw {:.2f} GB/s)", *f.beta_bus_gbps) : std::string(),
                       f.rms_relative_error * 100.0, f.max_relative_error * 100.0,
                       f.max_relative_error > 0 ? " at " + bytes_text(f.max_error_bytes) : std::string(), f.r2,
                       f.alpha_clamped ? " (α held at 0)" : "");
  }
  if (a.grade)
    out += fmt::format("#   grade          : {} — plateau is {:.1f} % of the expected {:g} GB/s (scalescope: good ≥ {:g} %, fair ≥ {:g} %)\n",
                       analyze::to_string(a.grade->label), a.grade->percent, a.grade->expected_gbps, analyze::kGoodPercent,
                       analyze::kFairPercent);
  if (a.nccl_tests_avg_busbw_gbps)
    out += fmt::format("#   nccl-tests avg : {:.2f} GB/s, the mean of every row's busbw (both directions, small sizes included): "
                       "it moves with the sweep's range, so the plateau is the figure to compare\n",
                       *a.nccl_tests_avg_busbw_gbps);
  for (const auto& n : a.notes) out += "#   note: " + n + "\n";
  return out;
}

std::string render_comm_report(const Sweep& sweep, const analyze::SweepAnalysis& analysis) {
  return render_nccl_tests_table(sweep) + render_sweep_statistics(sweep) + render_comm_summary(sweep, analysis);
}

}  // namespace scalescope::report
