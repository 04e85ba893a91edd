#include "predict/expected_scaling.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "core/error.h"
#include "core/suggest.h"
#include "predict/link_model.h"
#include "topo/smi_topo_parser.h"

namespace scalescope::predict {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string band_ms(const knowledge::Band& b) { return fmt::format("{:.1f}–{:.1f}", b.low * 1e3, b.high * 1e3); }
std::string band_pct(const knowledge::Band& b) { return fmt::format("{:.0f}–{:.0f} %", b.low * 100, b.high * 100); }

}  // namespace

ExpectedScaling expect_scaling(std::string_view model, std::string_view link, const std::vector<int>& gpus,
                               std::optional<double> batch_per_gpu, knowledge::Precision precision) {
  ExpectedScaling e;
  e.model = knowledge::find_model(model);
  if (!e.model) {
    std::vector<std::string> names;
    for (const auto& m : knowledge::model_table()) {
      names.push_back(m.name);
      names.insert(names.end(), m.aliases.begin(), m.aliases.end());
    }
    const auto c = core::closest_name(model, names);
    throw core::UsageError(fmt::format("--model '{}': not in the model table{}", model, c.empty() ? "" : " (did you mean " + c + "?)"),
                           "`scalescope knowledge models` lists the models and the names they are known by");
  }
  if (batch_per_gpu && !(*batch_per_gpu > 0 && *batch_per_gpu < 1e7))
    throw core::UsageError(fmt::format("--batch {}: a batch per GPU is a positive count", *batch_per_gpu), "give samples per GPU per step");
  // The link: GPU:PATH, or GPU:net:GBIT.
  const auto colon = link.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 >= link.size())
    throw core::UsageError(fmt::format("--link '{}': not GPU:PATH or GPU:net:GBIT", link),
                           "e.g. --link H200:NV18, --link \"RTX 4090:PHB\", --link A100:net:100 (GPUs in separate nodes)");
  const std::string left(link.substr(0, colon)), right(link.substr(colon + 1));
  std::string gpu_note;
  {
    std::string note;
    const auto token = right.rfind("net:", 0) == 0 ? std::nullopt : topo::parse_link_token(right);
    e.gpu = gpu_for_link(left, link, token, &note);
    if (!note.empty()) gpu_note = note;
  }
  if (right.rfind("net:", 0) == 0) {
    const auto rate = parse_port_gbit(right.substr(4));
    if (!rate) throw core::UsageError(fmt::format("--link '{}': '{}' is no port's line rate", link, right.substr(4)), "give Gb/s, e.g. net:100");
    e.link.kind = knowledge::LinkAssumption::Kind::network;
    e.link.network_gbit = *rate;
    e.link.said = fmt::format("one {:g} Gb/s port per node between nodes of one GPU each", *rate);
  } else {
    const auto path = topo::parse_link_token(right);
    if (!path || path->cls == topo::LinkClass::self)
      throw core::UsageError(fmt::format("--link '{}': '{}' is no path class", link, right),
                             "name nvidia-smi topo -m's token: NV# (NV12, NV18), PIX, PXB, PHB, NODE or SYS");
    e.link.kind = path->cls == topo::LinkClass::nvlink ? knowledge::LinkAssumption::Kind::nvlink : knowledge::LinkAssumption::Kind::pcie;
    e.link.path = *path;
    e.link.nvswitch = knowledge::through_nvswitch(e.gpu);
    e.link.said = fmt::format("{} between {} GPUs{}", right, e.gpu->model, e.link.nvswitch ? " (through NVSwitch)" : "");
  }
  e.busbw = knowledge::expected_busbw(e.gpu, e.link);
  if (!e.busbw.known()) throw core::UsageError(fmt::format("--link '{}': {}", link, e.busbw.basis), "name another path");
  e.batch_per_gpu = batch_per_gpu;
  for (int n : gpus) {
    if (n < 2) continue;
    knowledge::StepInputs in;
    in.model = e.model;
    in.gpu = e.gpu;
    in.gpus = n;
    in.busbw = e.busbw;
    in.precision = precision;
    if (batch_per_gpu) in.units_per_gpu = *batch_per_gpu * (e.model->unit == "token" ? e.model->context.value_or(512) : 1.0);
    e.rows.push_back({n, knowledge::expect_step(in)});
  }
  if (e.rows.empty()) throw core::UsageError("--gpus: no count of 2 or more", "e.g. --gpus 2,4,8");
  e.assumptions = e.rows.front().step.assumptions;
  if (!gpu_note.empty()) e.assumptions.insert(e.assumptions.begin(), gpu_note);
  if (batch_per_gpu && e.model->unit == "token")
    e.assumptions.push_back(fmt::format("sequences of {:.0f} tokens (the model's context in the model table)", e.model->context.value_or(512)));
  return e;
}

std::string render_expected(const ExpectedScaling& e) {
  std::string o = fmt::format("expected data-parallel scaling of {} ({:.3g} parameters) on {} — {}\n", e.model->name, e.model->params,
                              e.gpu->model, e.link.said);
  o += fmt::format("  all-reduce busbw expected: {:.1f}–{:.1f} GB/s\n\n", e.busbw.low, e.busbw.high);
  o += fmt::format("  {:>5} {:>10} {:>15} {:>17} {:>13} {:>13}\n", "GPUs", "grad GB", "all-reduce ms", "compute ms", "comm ratio", "efficiency");
  for (const auto& r : e.rows) {
    const auto& s = r.step;
    if (!s.comm_ratio.known()) {
      o += fmt::format("  {:>5} {:>10.3g} {:>15} {:>17} {:>13} {:>13}\n", r.gpus, s.gradient_bytes.high / 1e9, band_ms(s.allreduce_s), "unknown", "–", "–");
      continue;
    }
    o += fmt::format("  {:>5} {:>10.3g} {:>15} {:>17} {:>13} {:>13}\n", r.gpus, s.gradient_bytes.high / 1e9, band_ms(s.allreduce_s),
                     band_ms(s.compute_s), band_pct(s.comm_ratio), band_pct(s.efficiency));
  }
  o += "\n  read the comm ratio as the seed does: healthy under 15 %, investigate over 30 %; efficiency spans no overlap "
       "(all-reduce after backward) to full overlap.\n  assumptions:\n";
  for (const auto& a : e.assumptions) o += "    - " + a + "\n";
  o += "  with a run, `scalescope predict RUN --link …` replays its measured buckets instead of this band.\n";
  return o;
}

nlohmann::json expected_json(const ExpectedScaling& e) {
  auto band = [](const knowledge::Band& b) { return nlohmann::json::array({b.low, b.high}); };
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : e.rows)
    rows.push_back({{"gpus", r.gpus}, {"gradient_bytes", band(r.step.gradient_bytes)}, {"allreduce_s", band(r.step.allreduce_s)},
                    {"compute_s", band(r.step.compute_s)}, {"comm_ratio", band(r.step.comm_ratio)}, {"efficiency", band(r.step.efficiency)}});
  return {{"schema", "scalescope.expect/1"}, {"model", e.model->name}, {"gpu", std::string(e.gpu->model)}, {"link", e.link.said},
          {"busbw_gbps", band(e.busbw)}, {"batch_per_gpu", e.batch_per_gpu ? nlohmann::json(*e.batch_per_gpu) : nlohmann::json()},
          {"rows", rows}, {"assumptions", e.assumptions}};
}

}  // namespace scalescope::predict
