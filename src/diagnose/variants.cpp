#include "diagnose/variants.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

namespace scalescope::diagnose {
namespace {

using Dims = std::map<std::string, std::string>;

// Keys that describe a row without being a condition of the measurement.
bool descriptive(const std::string& key) { return key == "note" || key == "pair" || key == "repeat"; }

// Feature toggles ("on"/"off"): a row that does not mention one had it on (the default).
bool toggle_value(const std::string& v) { return v == "on" || v == "off"; }

Dims conditions(const Measurement& m) {
  Dims d;
  for (const auto& [k, v] : m.dims)
    if (!descriptive(k)) d[k] = v;
  // GPUs per node follow from the GPUs and the nodes when both are given: one condition, not a second one ("2 nodes
  // x 1 T4" against "1 node x 2 T4" differ in where the GPUs are, nothing else).
  if (d.count("gpus_per_node") && d.count("gpus") && d.count("nodes")) d.erase("gpus_per_node");
  return d;
}

// The keys in which two condition maps differ; a toggle absent on one side counts as "on" there.
std::vector<std::string> differing(const Dims& a, const Dims& b) {
  std::set<std::string> keys;
  for (const auto& [k, v] : a) keys.insert(k);
  for (const auto& [k, v] : b) keys.insert(k);
  std::vector<std::string> out;
  for (const auto& k : keys) {
    auto ia = a.find(k), ib = b.find(k);
    std::string va = ia == a.end() ? "" : ia->second, vb = ib == b.end() ? "" : ib->second;
    if (va.empty() && toggle_value(vb)) va = "on";
    if (vb.empty() && toggle_value(va)) vb = "on";
    if (va != vb) out.push_back(k);
  }
  return out;
}

std::string value_of(const Dims& d, const std::string& k) {
  auto it = d.find(k);
  if (it != d.end()) return it->second;
  return "";
}

bool is_time(const Measurement& m) {
  return !m.higher_is_better && (m.unit == "s" || m.unit == "ms" || m.unit == "us" || m.unit == "min" || m.unit == "h" ||
                                 m.quantity.find("time") != std::string::npos);
}

std::optional<int> gpus_of(const Dims& d) {
  auto it = d.find("gpus");
  if (it == d.end()) return std::nullopt;
  try {
    std::size_t used = 0;
    const int n = std::stoi(it->second, &used);
    if (used == it->second.size() && n >= 1 && n <= 1000000) return n;
  } catch (...) {
  }
  return std::nullopt;
}

double to_seconds(const Measurement& m) {
  if (m.unit == "ms") return m.value / 1e3;
  if (m.unit == "us") return m.value / 1e6;
  if (m.unit == "min") return m.value * 60;
  if (m.unit == "h") return m.value * 3600;
  return m.value;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Group {
  std::vector<Row> rows;
};

}  // namespace

std::string conditions_text(const std::map<std::string, std::string>& dims, const std::string& except) {
  std::string out;
  for (const auto& [k, v] : dims) {
    if (k == except || descriptive(k)) continue;
    out += (out.empty() ? "" : ", ") + (k == "label" ? v : k + " " + v);
  }
  return out;
}

VariantAnalysis analyse_variants(const FactSet& facts) {
  VariantAnalysis a;
  // Rows by (source, table, quantity).
  std::map<std::tuple<std::string, std::string, std::string>, Group> groups;
  for (const auto& f : facts.all())
    if (const auto* m = std::get_if<Measurement>(&f.value))
      if (std::isfinite(m->value)) groups[{f.where.source, m->table, m->quantity}].rows.push_back({m, &f.where});

  for (auto& [key, g] : groups) {
    const auto& rows = g.rows;
    if (rows.size() < 2) continue;

    // ---- pair lists ----
    std::vector<Row> pairs;
    for (const auto& r : rows)
      if (r.m->members.size() == 2) pairs.push_back(r);
    if (pairs.size() >= 3) {
      const bool hib = pairs.front().m->higher_is_better;
      std::vector<Row> sorted = pairs;
      std::sort(sorted.begin(), sorted.end(), [](const Row& x, const Row& y) { return x.m->value < y.m->value; });
      double best_gap = 1;
      std::size_t cut = 0;
      for (std::size_t i = 0; i + 1 < sorted.size(); ++i) {
        const double lo = sorted[i].m->value, hi = sorted[i + 1].m->value;
        if (lo > 0 && hi / lo > best_gap) best_gap = hi / lo, cut = i + 1;
      }
      if (best_gap >= 1.3) {
        PairSplit s;
        s.higher_is_better = hib;
        std::vector<Row> low(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(cut)),
            high(sorted.begin() + static_cast<std::ptrdiff_t>(cut), sorted.end());
        s.slow = hib ? low : high;
        s.fast = hib ? high : low;
        std::vector<double> sv, fv;
        for (const auto& r : s.slow) {
          sv.push_back(r.m->value);
          for (const auto& mem : r.m->members) ++s.slow_pairs_of[mem];
        }
        for (const auto& r : s.fast) {
          fv.push_back(r.m->value);
          for (const auto& mem : r.m->members) ++s.fast_pairs_of[mem];
        }
        s.slow_median = median(sv);
        s.fast_median = median(fv);
        for (const auto& [mem, n] : s.slow_pairs_of)
          if (!s.fast_pairs_of.count(mem)) s.suspects.push_back(mem);
        std::stable_sort(s.suspects.begin(), s.suspects.end(),
                         [&](const std::string& x, const std::string& y) { return s.slow_pairs_of[x] > s.slow_pairs_of[y]; });
        if (!s.suspects.empty())
          for (const auto& r : s.slow)
            if (std::find(r.m->members.begin(), r.m->members.end(), s.suspects.front()) == r.m->members.end())
              s.unexplained.push_back(r);
        a.pairs.push_back(std::move(s));
      }
    }

    // ---- one-condition comparisons ----
    // Every pair of rows: a table longer than kMaxComparedRows is a series (trials, samples), not a set of variants,
    // and its pairs (quadratic in rows) would cost seconds and gigabytes for nothing.
    std::vector<Dims> cond;
    cond.reserve(rows.size());
    for (const auto& r : rows) cond.push_back(conditions(*r.m));
    const std::size_t compared = rows.size() <= kMaxComparedRows ? rows.size() : 0;
    for (std::size_t i = 0; i < compared; ++i)
      for (std::size_t j = i + 1; j < compared; ++j) {
        const Dims& ci = cond[i];
        const Dims& cj = cond[j];
        if (ci.empty() && cj.empty()) continue;
        auto diff = differing(ci, cj);
        // Rows named by an experiment's id ("e-15-5-3", "run 2") beside one condition that differs: the condition is
        // what the comparison is about, the names differ because the runs do.
        if (diff.size() == 2 && (diff[0] == "label" || diff[1] == "label"))
          diff.erase(std::find(diff.begin(), diff.end(), std::string("label")));
        if (diff.size() != 1) continue;
        const auto& k = diff.front();
        const double vi = rows[i].m->value, vj = rows[j].m->value;
        if (vi <= 0 || vj <= 0) continue;
        const bool hib = rows[i].m->higher_is_better;
        const bool i_worse = hib ? vi < vj : vi > vj;
        Comparison c;
        c.dim = k;
        c.worse = i_worse ? rows[i] : rows[j];
        c.better = i_worse ? rows[j] : rows[i];
        const Dims& cw = i_worse ? ci : cj;
        const Dims& cb = i_worse ? cj : ci;
        c.worse_value = value_of(cw, k);
        c.better_value = value_of(cb, k);
        if (c.worse_value.empty() && toggle_value(c.better_value)) c.worse_value = "on";
        if (c.better_value.empty() && toggle_value(c.worse_value)) c.better_value = "on";
        c.ratio = std::max(vi, vj) / std::min(vi, vj);
        c.beyond_noise = c.ratio - 1 > kNoise;
        c.quantity = rows[i].m->quantity;
        a.comparisons.push_back(std::move(c));
      }

    // ---- spreads: one condition moving the figure by ≥ 2× ----
    std::set<std::string> keys;
    for (const auto& c : cond)
      for (const auto& [k, v] : c) keys.insert(k);
    if (keys.size() > 16) keys.clear();  // a wide table of free-form labels: no variant dimension to read
    for (const auto& k : keys) {
      if (k == "gpus" || k == "nodes") continue;  // scaling, not a variant
      std::map<Dims, std::vector<Row>> by_rest;
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto& r = rows[i];
        Dims rest = cond[i];
        if (!rest.count(k)) continue;
        rest.erase(k);
        by_rest[rest].push_back(r);
      }
      for (const auto& [rest, rs] : by_rest) {
        std::set<std::string> values;
        for (const auto& r : rs) values.insert(r.m->dims.at(k));
        if (values.size() < 2) continue;
        const bool hib = rs.front().m->higher_is_better;
        auto [mn, mx] = std::minmax_element(rs.begin(), rs.end(), [](const Row& x, const Row& y) { return x.m->value < y.m->value; });
        if (mn->m->value <= 0) continue;
        const double factor = mx->m->value / mn->m->value;
        if (factor < 2) continue;
        Spread s;
        s.dim = k;
        s.factor = factor;
        s.best = hib ? *mx : *mn;
        s.worst = hib ? *mn : *mx;
        s.fixed = rest;
        s.values = static_cast<int>(values.size());
        a.spreads.push_back(std::move(s));
      }
    }
  }

  // ---- scaling per GPU count (within each group) ----
  for (auto& [key, g] : groups) {
    // The 1-GPU rows once, with their conditions (a long series of trials must not cost rows × rows map copies).
    std::vector<std::pair<const Row*, Dims>> singles;
    for (const auto& b : g.rows)
      if (const auto nb = gpus_of(b.m->dims); nb && *nb == 1 && singles.size() < kMaxComparedRows)
        singles.emplace_back(&b, conditions(*b.m));
    for (const auto& r : g.rows) {
      const auto n = gpus_of(r.m->dims);
      if (!n || *n < 2) continue;
      // The 1-GPU row of the same table and quantity whose conditions the row shares (the multi-GPU row may add a
      // mode or a toggle the single GPU cannot have).
      const Row* base = nullptr;
      const Dims cr = conditions(*r.m);
      for (const auto& [bp, bc] : singles) {
        const Row& b = *bp;
        Dims cb = bc;
        cb.erase("gpus");
        cb.erase("mode");
        cb.erase("label");
        bool ok = true;
        for (const auto& [k, v] : cb)
          if (value_of(cr, k) != v) ok = false;
        if (ok) {
          base = &b;
          break;
        }
      }
      // No 1-GPU row ran the same variant ("2 GPUs (8192 envs)" against "1 GPU (4096 envs)" and "1 GPU (8192 envs)"):
      // a throughput is set against the best one-GPU throughput of the table, the conservative reference (the
      // speedup it gives is the least the figures allow), when only free-form variant labels differ.
      bool best_single = false;
      if (!base && r.m->higher_is_better && r.m->quantity == "throughput") {
        for (const auto& [bp, bc] : singles) {
          Dims cb = bc, crr = cr;
          for (auto* d : {&cb, &crr})
            for (const char* k : {"gpus", "mode", "label", "variant"}) d->erase(k);
          if (cb != crr || bp->m->quantity != r.m->quantity || bp->m->unit != r.m->unit) continue;
          if (!base || bp->m->value > base->m->value) base = bp;
        }
        best_single = base != nullptr;
      }
      if (!base || base->m->value <= 0 || r.m->value <= 0) continue;
      ScalingRow s;
      s.gpus = *n;
      s.row = r;
      s.base = *base;
      const auto& q = r.m->quantity;
      if (r.m->higher_is_better) {
        if (q != "throughput") continue;  // a bandwidth or share does not scale with GPUs
        if (r.m->unit == "it/s" && !best_single) {
          // Steps per second are 1 / step time: each step on N GPUs does N times the work of one when the per-GPU
          // batch is held (as for step times below; a training loop's batch size is per GPU).
          s.speedup = *n * r.m->value / base->m->value;
          s.how = "N × r(N) / r(1) of step rates (steps/s), the per-GPU batch taken as fixed (weak scaling)";
        } else {
          s.speedup = r.m->value / base->m->value;
          s.how = best_single ? "throughput ratio against the best one-GPU row (no one-GPU row ran the same variant)"
                              : "throughput ratio";
        }
      } else if (q == "step time") {
        s.speedup = *n * base->m->value / r.m->value;
        s.how = "N × t(1) / t(N) of per-step times, the per-GPU batch taken as fixed (weak scaling)";
      } else if (is_time(*r.m)) {
        s.speedup = base->m->value / r.m->value;
        s.how = "t(1) / t(N) for the same work";
      } else {
        continue;
      }
      s.efficiency = s.speedup / *n;
      // Against the best one-GPU row of another variant the speedup is a lower bound: at 85 % or more it proves the
      // scaling healthy; below, the rows may differ in what they ran (batch, precision), so it proves no loss.
      if (best_single && s.efficiency < 0.85) continue;
      s.conditions = conditions(*r.m);
      s.conditions.erase("gpus");
      a.scaling.push_back(std::move(s));
    }
  }

  // ---- step time grew while the GPU's busy time did not ----
  auto busy = [](const std::string& q) {
    return q == "GPU busy time" || q == "compute time" || q == "GPU time" || q == "GPU processing time";
  };
  std::vector<const Comparison*> busy_comparisons;
  for (const auto& d : a.comparisons)
    if (busy(d.quantity)) busy_comparisons.push_back(&d);
  for (const auto& c : a.comparisons) {
    if (busy_comparisons.empty()) break;
    if (!c.beyond_noise || !(c.quantity == "step time" || c.quantity == "run time" || c.quantity == "epoch time")) continue;
    for (const auto* dp : busy_comparisons) {
      const auto& d = *dp;
      if (d.dim != c.dim || d.worse.where->source != c.worse.where->source) continue;
      if (d.worse.m->table != c.worse.m->table) continue;
      if (conditions(*d.worse.m) != conditions(*c.worse.m) && conditions(*d.better.m) != conditions(*c.worse.m)) continue;
      if (d.ratio - 1 > kNoise) continue;
      ConstantCompute k;
      k.slow_step = c.worse;
      k.fast_step = c.better;
      k.slow_busy = conditions(*d.worse.m) == conditions(*c.worse.m) ? d.worse : d.better;
      k.fast_busy = conditions(*d.worse.m) == conditions(*c.worse.m) ? d.better : d.worse;
      k.extra_s = to_seconds(*c.worse.m) - to_seconds(*c.better.m);
      a.constant_compute.push_back(k);
    }
  }
  return a;
}

}  // namespace scalescope::diagnose
