#include "report/nccl_profile_report.h"

#include <fmt/format.h>

namespace scalescope::report {

namespace {

std::string bytes_text(std::uint64_t b) {
  if (b >= 1000000000ull) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1000000ull) return fmt::format("{:.2f} MB", b / 1e6);
  if (b >= 1000ull) return fmt::format("{:.1f} kB", b / 1e3);
  return fmt::format("{} B", b);
}

std::string us_text(double us) { return us >= 1000 ? fmt::format("{:.3f} ms", us / 1000) : fmt::format("{:.1f} us", us); }

}  // namespace

std::string render_nccl_profile(const analyze::NcclProfile& p, const analyze::NcclProfileSummary& s, std::size_t max_rows) {
  std::string out = fmt::format("NCCL profiler plugin: rank {} of {} ({} node(s)), communicator {}{}, host {}: {} operation(s), "
                                "{} timed on the GPU\n",
                                p.rank, p.nranks, p.nnodes, p.comm_id, p.comm_name.empty() ? "" : " '" + p.comm_name + "'",
                                p.host, s.ops, s.timed);
  if (s.ops == 0) {
    out += "  no collective was recorded (the job made none, or ended before NCCL ran one)\n";
    for (const auto& w : p.warnings) out += "  note: " + w + "\n";
    return out;
  }
  out += fmt::format("  {:<14} {:>10} {:>7} {:>7} {:>12} {:>11} {:>10}  {}\n", "operation", "size", "calls", "timed",
                     "median GPU", "busbw GB/s", "total ms", "algorithm/protocol");
  std::size_t shown = 0;
  for (const auto& r : s.rows) {
    if (shown++ == max_rows) {
      out += fmt::format("  … {} more (see the JSON)\n", s.rows.size() - max_rows);
      break;
    }
    out += fmt::format("  {:<14} {:>10} {:>7} {:>7} {:>12} {:>11} {:>10.2f}  {}{}\n", r.op, r.size_bytes ? bytes_text(r.size_bytes) : "?", r.calls,
                       r.timed, r.timed ? us_text(r.median_gpu_us) : "-", r.busbw_gbps ? fmt::format("{:.1f}", *r.busbw_gbps) : "-",
                       r.total_gpu_us / 1000, r.algo.empty() ? "" : r.algo + "/", r.proto);
  }
  if (s.span_s >= 0.01)
    out += fmt::format("  GPU time in NCCL kernels: {:.1f} ms over {:.2f} s of enqueues ({:.1f} % of that span; kernels that "
                       "overlap compute are counted whole)\n",
                       s.gpu_us / 1000, s.span_s, 100 * s.gpu_us * 1e-6 / s.span_s);
  if (s.timed == 0)
    out += "  no GPU time: NCCL reported no kernel channel events (an NCCL before 2.26, or a one-rank communicator)\n";
  for (const auto& w : p.warnings) out += "  note: " + w + "\n";
  return out;
}

}  // namespace scalescope::report
