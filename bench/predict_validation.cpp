// Issue #28's validation: every multi-GPU step already measured (bench/predict_rows.csv, extracted from
// bench/RESULTS.md and ../shared/anchors.md with line references) predicted by src/predict from its 1-GPU step and
// the link's measured all-reduce only; the model's constants fitted on the odd rows of the file and checked on the
// even ones. Prints predicted vs measured with the error per row, then the median and largest error of the
// check rows per engine. CPU only; reads ../shared/anchors.md for the links.
//
//   build/bench/bench_predict_validation [bench/predict_rows.csv] [../shared/anchors.md]
//
// Links: NVLink — anchors' all_reduce_perf table at 2 and 4 GPUs (time per size); NCCL_P2P_DISABLE=1 — anchors'
// plateau (28.7 / 24.5 GB/s) and small-message time (22 / 44 µs) as α + bytes·f(n)/busbw. Rows without a 1-GPU
// step, a gradient size (DDP anchors rows: parameters × 4 B), or with another link are listed as skipped.
// A row's 1-GPU phases are used where the record printed them; else backward = `share` of the step less 3 % for
// the optimizer (gpt2-124m: 1.13 of 38.67 ms, RESULTS.md 2026-11-29) and the rest forward.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "comm/sweep.h"
#include "core/stats.h"
#include "predict/link_model.h"
#include "predict/step_model.h"

using namespace scalescope;

namespace {

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string t = ss.str();
  std::vector<std::vector<std::string>> rows(1);
  std::string cell;
  bool quoted = false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (quoted) {
      if (c == '"' && i + 1 < t.size() && t[i + 1] == '"') cell += '"', ++i;
      else if (c == '"') quoted = false;
      else cell += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(cell), cell.clear();
    } else if (c == '\n') {
      rows.back().push_back(cell), cell.clear();
      rows.emplace_back();
    } else if (c != '\r') {
      cell += c;
    }
  }
  if (!cell.empty() || !rows.back().empty()) rows.back().push_back(cell);
  while (!rows.empty() && rows.back().size() <= 1) rows.pop_back();
  return rows;
}

double num(const std::string& s) {
  if (s.empty()) return NAN;
  try {
    return std::stod(s);
  } catch (...) {
    return NAN;
  }
}

double bytes_of(const std::string& s) {
  std::smatch m;
  static const std::regex re(R"(^\s*([0-9.]+)\s*(B|KiB|MiB|GiB)?\s*$)");
  if (!std::regex_match(s, m, re)) return NAN;
  double v = std::stod(m[1]);
  const std::string u = m[2];
  if (u == "KiB") v *= 1024;
  if (u == "MiB") v *= 1024 * 1024;
  if (u == "GiB") v *= 1024.0 * 1024 * 1024;
  return v;
}

// anchors.md's all_reduce_perf table: "| bytes | 2 GPUs time µs | 2 GPUs busbw | 4 GPUs time µs | 4 GPUs busbw |".
std::vector<analyze::Sweep> anchors_nvlink(const std::string& path) {
  std::ifstream in(path);
  analyze::Sweep s2, s4;
  s2.ranks = 2, s4.ranks = 4;
  s2.source = s4.source = "anchors.md all_reduce_perf";
  bool in_table = false;
  for (std::string line; std::getline(in, line);) {
    if (line.find("| bytes | 2 GPUs time") != std::string::npos) in_table = true;
    else if (in_table && line.rfind("|", 0) != 0) break;
    else if (in_table && line.find("---") == std::string::npos) {
      std::vector<std::string> c;
      std::stringstream ls(line);
      for (std::string x; std::getline(ls, x, '|');) c.push_back(x);
      if (c.size() < 6) continue;
      const double b = bytes_of(c[1]), t2 = num(c[2]), t4 = num(c[4]);
      if (std::isnan(b) || std::isnan(t2) || std::isnan(t4)) continue;
      analyze::SweepRow r2, r4;
      r2.size_bytes = r4.size_bytes = static_cast<std::uint64_t>(b);
      r2.out_of_place.time_us = t2;
      r4.out_of_place.time_us = t4;
      s2.rows.push_back(r2), s4.rows.push_back(r4);
    }
  }
  return {s2, s4};
}

// α + bytes·f(n)/busbw sampled at the anchors' sizes, for the NCCL_P2P_DISABLE=1 figures.
std::vector<analyze::Sweep> alpha_beta(double a2_us, double b2, double a4_us, double b4) {
  std::vector<analyze::Sweep> out;
  for (auto [n, a, b] : {std::tuple{2, a2_us, b2}, std::tuple{4, a4_us, b4}}) {
    analyze::Sweep s;
    s.ranks = n;
    s.source = "anchors.md NCCL_P2P_DISABLE=1 plateau and small-message time";
    for (double sz = 8; sz <= 4.0 * 1024 * 1024 * 1024; sz *= 4) {
      analyze::SweepRow r;
      r.size_bytes = static_cast<std::uint64_t>(sz);
      r.out_of_place.time_us = a + sz * 2.0 * (n - 1) / n / (b * 1e3);
      s.rows.push_back(r);
    }
    out.push_back(s);
  }
  return out;
}

double params_of(const std::string& model) {
  if (model == "tiny-14m" || model == "tiny14m") return 14.1e6;
  if (model == "gpt2-124m") return 124.5e6;
  if (model == "gpt-1.3b") return 1.31e9;
  return NAN;
}

struct Row {
  std::string id, engine, model, link;
  int n = 0, index = 0;
  double step1 = 0, fwd1 = NAN, bwd1 = NAN, opt1 = NAN, grad = 0, cap_mb = 25, stepN = 0;
  bool overlap = true;
};

predict::StepProfile profile_of(const Row& r, double share) {
  predict::StepProfile p;
  const double s = r.step1 * 1e-3;
  if (!std::isnan(r.fwd1) && !std::isnan(r.bwd1)) {
    p.forward_s = r.fwd1 * 1e-3;
    p.backward_s = r.bwd1 * 1e-3;
    p.optimizer_s = std::isnan(r.opt1) ? 0.03 * s : r.opt1 * 1e-3;
    p.other_s = std::max(0.0, s - p.forward_s - p.backward_s - p.optimizer_s);
  } else {
    p.optimizer_s = 0.03 * s;
    p.backward_s = share * (s - p.optimizer_s);
    p.forward_s = s - p.optimizer_s - p.backward_s;
  }
  p.buckets = predict::even_buckets(r.grad, p.backward_s, r.cap_mb * 1024 * 1024, 1024.0 * 1024);
  return p;
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string csv = argc > 1 ? argv[1] : "bench/predict_rows.csv";
  const std::string anchors = argc > 2 ? argv[2] : "../shared/anchors.md";
  const auto table = read_csv(csv);
  if (table.size() < 2) {
    std::fprintf(stderr, "no rows in %s\n", csv.c_str());
    return 1;
  }
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < table[0].size(); ++i) col[table[0][i]] = i;
  const auto nv = anchors_nvlink(anchors);
  if (nv[0].rows.empty()) {
    std::fprintf(stderr, "no all_reduce_perf table in %s: the NVLink link is measured there\n", anchors.c_str());
    return 1;
  }
  std::map<std::string, predict::LinkModel> links;
  links.emplace("nvlink", predict::LinkModel::from_sweeps(nv, "anchors.md"));
  links.emplace("p2p-disabled", predict::LinkModel::from_sweeps(alpha_beta(22, 28.7, 44, 24.5), "anchors.md"));
  std::vector<Row> rows;
  std::vector<std::string> skipped;
  int index = 0;
  for (std::size_t i = 1; i < table.size(); ++i) {
    const auto& c = table[i];
    auto get = [&](const char* k) { return col.count(k) && col[k] < c.size() ? c[col[k]] : std::string(); };
    Row r;
    r.id = get("id"), r.engine = get("engine"), r.model = get("model"), r.link = get("link");
    r.n = static_cast<int>(num(get("world_size")));
    r.step1 = num(get("step1_ms")), r.stepN = num(get("stepN_ms"));
    r.fwd1 = num(get("fwd1_ms")), r.bwd1 = num(get("bwd1_ms")), r.opt1 = num(get("opt1_ms"));
    r.grad = num(get("grad_bytes"));
    if (std::isnan(r.grad)) r.grad = params_of(r.model) * 4;
    if (const double cap = num(get("bucket_cap_mb")); !std::isnan(cap)) r.cap_mb = cap;
    r.overlap = get("overlap") != "off";
    std::string why;
    if (!links.count(r.link)) why = "link " + r.link + " not measured as a sweep";
    else if (std::isnan(r.step1) || std::isnan(r.stepN)) why = "no 1-GPU or N-GPU step";
    else if (std::isnan(r.grad)) why = "no gradient size";
    else if (r.n != 2 && r.n != 4) why = "world size " + std::to_string(r.n);
    if (!why.empty()) {
      skipped.push_back(r.id + ": " + why);
      continue;
    }
    r.index = index++;
    rows.push_back(r);
  }
  // Fit on the odd rows (in file order), check on the even ones.
  struct Fit {
    double contention, beside, share, err;
  } best{0, 0, 0, 1e9};
  const auto error_of = [&](const Row& r, double cont, double beside, double share) {
    predict::ModelConstants k;
    k.contention = cont;
    k.comm_beside = beside;
    predict::Scenario s;
    s.ranks = r.n;
    s.overlap = r.overlap;
    const auto p = predict::predict_step(profile_of(r, share), links.at(r.link), s, k);
    return std::pair{p.step_s * 1e3, p.step_s * 1e3 / r.stepN - 1};
  };
  for (double cont : {0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8})
    for (double beside : {0.0, 0.5, 1.0, 2.0, 3.0, 4.0})
      for (double share : {0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7}) {
        std::vector<double> e;
        for (const auto& r : rows)
          if (r.index % 2 == 1) e.push_back(std::abs(error_of(r, cont, beside, share).second));
        const double m = median(e);
        if (m < best.err) best = {cont, beside, share, m};
      }
  std::printf("fitted on %zu odd rows: contention %.2f, all-reduce beside backward x%.1f, backward share %.2f (median |error| %.2f %%)\n\n",
              static_cast<std::size_t>(std::count_if(rows.begin(), rows.end(), [](const Row& r) { return r.index % 2 == 1; })),
              best.contention, 1 + best.beside, best.share, 100 * best.err);
  std::printf("| row | engine | model | link | N | 1 GPU ms | measured ms | predicted ms | error | set |\n|---|---|---|---|---:|---:|---:|---:|---:|---|\n");
  std::map<std::string, std::vector<double>> check, naive;
  for (const auto& r : rows) {
    const auto [pred, err] = error_of(r, best.contention, best.beside, best.share);
    const bool is_check = r.index % 2 == 0;
    if (is_check) {
      check[r.engine].push_back(std::abs(err)), check["all"].push_back(std::abs(err));
      // The baseline a model must beat: N GPUs as fast as one (no communication cost at all).
      naive[r.engine].push_back(std::abs(r.step1 / r.stepN - 1)), naive["all"].push_back(std::abs(r.step1 / r.stepN - 1));
    }
    std::printf("| %s | %s | %s | %s | %d | %.2f | %.2f | %.2f | %+.1f %% | %s |\n", r.id.c_str(), r.engine.c_str(), r.model.c_str(),
                r.link.c_str(), r.n, r.step1, r.stepN, pred, 100 * err, is_check ? "check" : "fit");
  }
  std::printf("\n| check rows | count | median abs error | largest | baseline \"step as 1 GPU\": median / largest |\n|---|---:|---:|---:|---:|\n");
  for (const auto& [k, v] : check)
    std::printf("| %s | %zu | %.2f %% | %.2f %% | %.2f %% / %.2f %% |\n", k.c_str(), v.size(), 100 * median(v),
                100 * *std::max_element(v.begin(), v.end()), 100 * median(naive[k]), 100 * *std::max_element(naive[k].begin(), naive[k].end()));
  // Per link, on the check rows: the efficiency's error (measured efficiency / predicted − 1 = predicted step /
  // measured − 1 at the same one-GPU step) and whether the measured step lies inside predict_band's band. Each row's
  // step spread: half the range of the one-GPU steps of the rows of its engine, model and code version (commit), over
  // their median — the run-to-run spread the rows themselves show (a single row: 0), as a run's own rounds would.
  // The model's error for the band: the 80th percentile of |error| on the fit rows, with the fitted constants.
  std::vector<double> fit_errors;
  for (const auto& r : rows)
    if (r.index % 2 == 1) fit_errors.push_back(std::abs(error_of(r, best.contention, best.beside, best.share).second));
  const double model_error = fit_errors.empty() ? 0 : scalescope::core::quantile(fit_errors, 0.8);
  std::printf("\nmodel error (80th percentile of |error| on the %zu fit rows): %.2f %%\n", fit_errors.size(), 100 * model_error);
  std::map<std::pair<std::string, std::string>, std::vector<double>> ones;
  const bool with_spread = std::getenv("BAND_NO_STEP_SPREAD") == nullptr;
  // Rows of one code version: the id's 7-hex-digit commit token ("…-0653e1c-c3"), else the whole id.
  const auto version = [](const std::string& id) {
    std::string best = id;
    for (std::size_t i = 0; i + 7 <= id.size(); ++i) {
      const bool start = i == 0 || id[i - 1] == '-', end = i + 7 == id.size() || id[i + 7] == '-';
      if (start && end && std::all_of(id.begin() + static_cast<long>(i), id.begin() + static_cast<long>(i + 7),
                                      [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); }))
        best = id.substr(i, 7);
    }
    return best;
  };
  for (const auto& r : rows) ones[{r.engine, r.model + "@" + version(r.id)}].push_back(r.step1);
  std::map<std::string, std::vector<double>> eff_err;
  std::map<std::string, std::pair<int, int>> inside;  // link → (inside, rows)
  std::map<std::string, std::vector<double>> widths;  // link → the band's half-width over the predicted step
  for (const auto& r : rows) {
    if (r.index % 2 != 0) continue;
    auto v = ones[{r.engine, r.model + "@" + version(r.id)}];
    const double mid = median(v);
    const double spread = !with_spread ? 0
                          : v.size() >= 2 && mid > 0 ? (*std::max_element(v.begin(), v.end()) - *std::min_element(v.begin(), v.end())) / 2 / mid
                                                     : 0;
    auto prof = profile_of(r, best.share);
    prof.step_spread = spread;
    predict::ModelConstants k;
    k.contention = best.contention;
    k.comm_beside = best.beside;
    k.model_error = model_error;
    predict::Scenario s;
    s.ranks = r.n;
    s.overlap = r.overlap;
    const auto p = predict::predict_band(prof, links.at(r.link), s, k);
    const double e = std::abs(p.step_s * 1e3 / r.stepN - 1);
    const bool in = r.stepN >= p.step_lo_s * 1e3 && r.stepN <= p.step_hi_s * 1e3;
    for (const std::string key : {r.link, std::string("all")}) {
      widths[key].push_back((p.step_hi_s - p.step_lo_s) / 2 / p.step_s);
      eff_err[key].push_back(e);
      inside[key].first += in;
      inside[key].second += 1;
    }
  }
  std::printf("\n| link (check rows) | rows | median efficiency error | largest | measured step inside the band | band's median half-width |\n|---|---:|---:|---:|---:|---:|\n");
  for (const auto& [k, v] : eff_err)
    std::printf("| %s | %zu | %.2f %% | %.2f %% | %d of %d (%.0f %%) | ±%.1f %% |\n", k.c_str(), v.size(), 100 * median(v),
                100 * *std::max_element(v.begin(), v.end()), inside[k].first, inside[k].second,
                100.0 * inside[k].first / inside[k].second, 100 * median(widths[k]));
  // The constants fitted per link class (odd rows of that class only; the backward share as fitted on all), checked
  // on the class's even rows: whether a host-staged path (P2P off: NCCL's SHM transport through host memory) wants
  // its own contention and all-reduce slowdown beside backward.
  std::printf("\n| link | fitted contention | all-reduce beside backward | check rows | median abs error | largest |\n|---|---:|---:|---:|---:|---:|\n");
  for (const auto& [name, model] : links) {
    Fit f{0, 0, best.share, 1e9};
    for (double cont : {0.0, 0.1, 0.2, 0.3, 0.5, 0.8, 1.2})
      for (double beside : {0.0, 0.25, 0.5, 1.0, 2.0, 3.0, 4.0}) {
        std::vector<double> e;
        for (const auto& r : rows)
          if (r.link == name && r.index % 2 == 1) e.push_back(std::abs(error_of(r, cont, beside, best.share).second));
        if (e.empty()) continue;
        const double m = median(e);
        if (m < f.err) f = {cont, beside, best.share, m};
      }
    std::vector<double> c;
    for (const auto& r : rows)
      if (r.link == name && r.index % 2 == 0) c.push_back(std::abs(error_of(r, f.contention, f.beside, f.share).second));
    if (c.empty()) continue;
    std::printf("| %s | %.2f | x%.2f | %zu | %.2f %% | %.2f %% |\n", name.c_str(), f.contention, 1 + f.beside, c.size(),
                100 * median(c), 100 * *std::max_element(c.begin(), c.end()));
  }
  std::printf("\nskipped %zu row(s):\n", skipped.size());
  for (const auto& s : skipped) std::printf("  %s\n", s.c_str());
  return 0;
}
