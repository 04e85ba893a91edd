#include "comm/sweep_runner.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "core/stats.h"

namespace scalescope::comm {
namespace {

/// nccl-tests' size → (per-rank count, the size its "size" column prints) — collectives.h.
std::pair<std::uint64_t, std::uint64_t> count_for_size(Collective c, DataType t, std::uint64_t size_bytes, int n) {
  return {element_count(c, size_bytes, t, n), size_column_bytes(c, size_bytes, t, n)};
}

std::string describe(const BenchCase& c) {
  return fmt::format("{} {} {}{}", to_string(c.collective), to_string(c.type),
                     has_red_op(c.collective) ? std::string(to_string(c.op)) : std::string("-"),
                     has_root(c.collective) ? fmt::format(" root {}", c.root) : std::string());
}

/// Times one case: the nccl-tests pass (span of `iters` back-to-back calls / iters) and, if asked, a pass
/// with a marker between calls. Returns {mean seconds, per-iteration seconds}.
std::pair<double, std::vector<double>> time_case(BenchBackend& b, const BenchCase& c, const SweepConfig& cfg) {
  for (int i = 0; i < cfg.warmup_iters; ++i) b.launch(c);  // warm-up at this size (nccl-tests warms only min/max)
  b.launch(c);  // one untimed call, as nccl-tests' "sync" call
  b.synchronize();
  b.barrier();
  b.clear_records();
  const std::size_t start = b.record();
  for (int i = 0; i < cfg.iters; ++i) b.launch(c);
  const std::size_t end = b.record();
  const double mean = b.seconds_between(start, end) / cfg.iters;
  b.clear_records();
  std::vector<double> each;
  if (cfg.per_iteration_stats) {
    b.barrier();
    std::vector<std::size_t> marks{b.record()};
    for (int i = 0; i < cfg.iters; ++i) {
      b.launch(c);
      marks.push_back(b.record());
    }
    for (int i = 0; i < cfg.iters; ++i) each.push_back(b.seconds_between(marks[i], marks[i + 1]));
    b.clear_records();
  }
  return {mean, each};
}

}  // namespace

void SweepConfig::validate(int world_size) const {
  if (min_bytes > max_bytes)
    throw core::UsageError(fmt::format("-b {} is larger than -e {}", min_bytes, max_bytes));
  if (step_factor < 1) throw core::UsageError("-f must be at least 1");
  if (step_factor == 1 && step_bytes == 0 && min_bytes != max_bytes)
    throw core::UsageError("-i must be positive when -f is 1", "e.g. -f 2 for a doubling sweep");
  if (iters < 1) throw core::UsageError("-n must be at least 1");
  if (warmup_iters < 0) throw core::UsageError("-w must be at least 0");
  if (check < 0) throw core::UsageError("-c must be 0 or more");
  if (collectives.empty() || types.empty() || ops.empty() || roots.empty())
    throw core::UsageError("nothing to run: no collective, type, op or root selected");
  for (int r : roots)
    if (r < 0 || r >= world_size)
      throw core::UsageError(fmt::format("root {} is outside the {} ranks", r, world_size));
}

std::vector<std::uint64_t> SweepConfig::sizes() const {
  std::vector<std::uint64_t> out;
  for (std::uint64_t s = min_bytes; s <= max_bytes;) {
    out.push_back(s);
    std::uint64_t next = step_factor > 1 ? (s == 0 ? 1 : s * step_factor) : s + step_bytes;
    if (next <= s) break;  // overflow or step 0
    s = next;
  }
  return out;
}

std::pair<std::uint64_t, std::uint64_t> sweep_buffer_bytes(const SweepConfig& cfg, int n) {
  const auto sizes = cfg.sizes();
  if (sizes.empty()) return {0, 0};
  std::uint64_t max_send = 0, max_result = 0;
  for (auto c : cfg.collectives)
    for (auto t : cfg.types) {
      const std::uint64_t per_rank = count_for_size(c, t, sizes.back(), n).first * element_size(t);
      const bool big_send = c == Collective::reduce_scatter || c == Collective::all_to_all;
      const bool big_result = c == Collective::all_gather || c == Collective::all_to_all;
      max_send = std::max(max_send, big_send ? per_rank * n : per_rank);
      max_result = std::max(max_result, big_result ? per_rank * n : per_rank);
    }
  return {max_send, std::max(max_send, max_result)};
}

double sweep_size_weight(std::uint64_t bytes) { return 1.0 + static_cast<double>(bytes) / 262144.0; }

std::vector<analyze::Sweep> run_sweeps(BenchBackend& b, const SweepConfig& cfg,
                                       const std::function<void(const SweepProgress&)>& progress) {
  const int n = b.rank_info().world_size;
  const bool root_rank = b.rank_info().rank == 0;
  cfg.validate(n);
  const auto sizes = cfg.sizes();
  const auto [send_bytes, result_bytes] = sweep_buffer_bytes(cfg, n);
  b.reserve(send_bytes, result_bytes);

  SweepProgress done;  // the whole sweep's work, for the time left
  for (auto coll : cfg.collectives)
    for (auto type : cfg.types)
      for ([[maybe_unused]] auto op : has_red_op(coll) ? cfg.ops : std::vector<RedOp>{RedOp::sum})
        for (int root : has_root(coll) ? cfg.roots : std::vector<int>{-1})
          if (b.supports(BenchCase{coll, type, op, std::max(root, 0), 0, false}))
            for (std::uint64_t size : sizes) done.total += sweep_size_weight(count_for_size(coll, type, size, n).second);

  std::vector<analyze::Sweep> sweeps;
  for (auto coll : cfg.collectives)
    for (auto type : cfg.types)
      for (auto op : has_red_op(coll) ? cfg.ops : std::vector<RedOp>{RedOp::sum})
        for (int root : has_root(coll) ? cfg.roots : std::vector<int>{-1}) {
          analyze::Sweep sweep;
          sweep.collective = coll;
          sweep.ranks = n;
          sweep.source = fmt::format("scalescope comm ({})", b.name());
          BenchCase base{coll, type, op, std::max(root, 0), 0, false};
          if (!b.supports(base)) {
            sweep.warnings.push_back(fmt::format("{} is not supported by the {} backend: skipped", describe(base), b.name()));
            if (root_rank) sweeps.push_back(std::move(sweep));
            continue;
          }
          // Warm-up at the largest and the smallest size (nccl-tests does both before the sweep).
          for (std::uint64_t s : {sizes.back(), sizes.front()}) {
            BenchCase w = base;
            w.count = count_for_size(coll, type, s, n).first;
            for (int i = 0; i < cfg.warmup_iters; ++i) b.launch(w);
            b.synchronize();
          }
          for (std::uint64_t size : sizes) {
            analyze::SweepRow row;
            auto [count, measured] = count_for_size(coll, type, size, n);
            row.size_bytes = measured;
            row.count = count;
            row.type = type;
            // nccl-tests' sendrecv_perf prints the op it was given (sum by default) though nothing is reduced; its
            // layout is kept so that the table reads back (comm --from) and parses as nccl-tests' does.
            if (has_red_op(coll) || coll == Collective::send_recv) row.redop = op;
            row.root = has_root(coll) ? root : -1;
            for (bool in_place : {false, true}) {
              BenchCase c = base;
              c.count = count;
              c.in_place = in_place;
              b.fill(c);  // time on the check pattern, never on uninitialised memory
              auto [mean, each] = time_case(b, c, cfg);
              std::uint64_t wrong = 0;
              // In-place all-to-all and send/recv read and write one buffer concurrently: undefined, as in
              // nccl-tests, so their in-place result is not checked.
              const bool checkable = !(in_place && (coll == Collective::all_to_all || coll == Collective::send_recv));
              for (int k = 0; k < cfg.check && checkable; ++k) {
                b.fill(c);
                b.launch(c);
                b.synchronize();
                wrong += b.count_wrong(c);
              }
              // Gather [mean, wrong, per-iteration median, p95, cv, min, max] from every rank.
              std::vector<double> mine{mean, static_cast<double>(wrong)};
              if (!each.empty()) {
                auto s = core::summarize(each);
                mine.insert(mine.end(), {s.median, s.p95, s.cv, s.min, s.max});
              } else {
                mine.insert(mine.end(), {0, 0, 0, 0, 0});
              }
              const auto all = b.all_gather_host(mine);
              if (!root_rank) continue;
              double sum_mean = 0, lo = 1e300, hi = 0, total_wrong = 0;
              double med = 0, p95 = 0, cv = 0, mn = 1e300, mx = 0;
              for (int r = 0; r < n; ++r) {
                const double* v = all.data() + static_cast<std::size_t>(r) * mine.size();
                sum_mean += v[0];
                lo = std::min(lo, v[0]);
                hi = std::max(hi, v[0]);
                total_wrong += v[1];
                med = std::max(med, v[2]);  // slowest rank's figures: the collective ends with the slowest
                p95 = std::max(p95, v[3]);
                cv = std::max(cv, v[4]);
                mn = std::min(mn, v[5]);
                mx = std::max(mx, v[6]);
              }
              const double seconds = sum_mean / n;  // nccl-tests' default: the ranks' average
              analyze::SweepTiming t;
              t.time_us = seconds * 1e6;
              t.algbw_gbps = seconds > 0 ? static_cast<double>(measured) / seconds / 1e9 : 0.0;
              t.busbw_gbps = *t.algbw_gbps * bus_bandwidth_factor(coll, n);
              if (cfg.check > 0 && checkable) t.wrong = total_wrong;
              if (!each.empty()) {
                t.median_us = med * 1e6;
                t.p95_us = p95 * 1e6;
                t.cv = cv;
                t.min_us = mn * 1e6;
                t.max_us = mx * 1e6;
              }
              t.rank_skew_us = (hi - lo) * 1e6;
              (in_place ? row.in_place : row.out_of_place) = t;
            }
            if (root_rank) {
              done.done += sweep_size_weight(row.size_bytes);
              done.item = fmt::format("{} {} B", describe(base), row.size_bytes);
              done.result = fmt::format("{:.2f} us, busbw {:.2f} GB/s", row.out_of_place.time_us.value_or(0),
                                        row.out_of_place.busbw_gbps.value_or(0));
              if (progress) progress(done);
              sweep.rows.push_back(row);
            }
          }
          if (root_rank) sweeps.push_back(std::move(sweep));
        }
  return sweeps;
}

}  // namespace scalescope::comm
