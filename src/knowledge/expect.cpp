#include "knowledge/expect.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "knowledge/embedded_data.h"
#include "topo/bandwidth.h"

namespace scalescope::knowledge {
namespace {

std::string gb(double bytes) { return fmt::format("{:.3g} GB", bytes / 1e9); }
std::string gbps(double v) { return fmt::format("{:.3g} GB/s", v); }

}  // namespace

const std::vector<TransportSpec>& transport_table() {
  static const std::vector<TransportSpec> rows = [] {
    std::vector<TransportSpec> out;
    const std::string_view text = embedded_data("nccl");
    if (text.empty()) return out;
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw core::Error(std::string("data/nccl.json does not parse: ") + e.what(), "fix the data file and rebuild");
    }
    std::size_t i = 0;
    for (const auto& r : doc.at("rows")) {
      ++i;
      TransportSpec t;
      auto opt = [&](const char* k) -> std::optional<double> {
        if (!r.contains(k) || r[k].is_null()) return std::nullopt;
        if (!r[k].is_number()) throw core::Error(fmt::format("data/nccl.json, row {}: '{}' is not a number", i, k), "fix the data file and rebuild");
        return r[k].get<double>();
      };
      t.key = r.value("key", "");
      t.transport = r.value("transport", "");
      t.algorithm = r.value("algorithm", "");
      t.source = r.value("source", "");
      t.share_low = opt("share_low");
      t.share_high = opt("share_high");
      t.latency_us = opt("latency_us");
      if (t.key.empty() || t.source.size() < 8)
        throw core::Error(fmt::format("data/nccl.json, row {}: every row needs a 'key' and a 'source'", i), "fix the data file and rebuild");
      if (t.share_low && t.share_high && *t.share_low > *t.share_high)
        throw core::Error(fmt::format("data/nccl.json, row {} ({}): share_low above share_high", i, t.key), "fix the data file and rebuild");
      out.push_back(std::move(t));
    }
    return out;
  }();
  return rows;
}

const TransportSpec* find_transport(std::string_view key) {
  for (const auto& t : transport_table())
    if (t.key == key) return &t;
  return nullptr;
}

bool through_nvswitch(const topo::GpuSpec* gpu) {
  return gpu && (gpu->form == topo::GpuForm::sxm || gpu->form == topo::GpuForm::superchip) && gpu->nvlink_gen >= 3;
}

Band expected_busbw(const topo::GpuSpec* gpu, const LinkAssumption& link) {
  Band b;
  double rate = 0;             // per-direction line rate of the path, GB/s
  std::string rate_basis;
  const TransportSpec* row = nullptr;
  const TransportSpec* upper = nullptr;  // a faster algorithm the same path allows (NVLS)
  const std::string gpu_name = gpu ? std::string(gpu->model) : std::string("an unknown GPU");
  switch (link.kind) {
    case LinkAssumption::Kind::unknown:
      b.basis = "the link between the GPUs is not known";
      return b;
    case LinkAssumption::Kind::network:
      if (link.network_gbit <= 0) {
        b.basis = "the network's rate is not known";
        return b;
      }
      rate = std::max(1, link.nics) * link.network_gbit / 8;
      rate_basis = fmt::format("{} × {:.0f} Gb/s per node = {}", std::max(1, link.nics), link.network_gbit, gbps(rate));
      row = find_transport(link.socket ? "socket" : "ib-gdr");
      break;
    case LinkAssumption::Kind::nvlink: {
      const int links = link.path.nvlinks;
      const double per = gpu && gpu->nvlink_link_gbps > 0 ? gpu->nvlink_link_gbps : topo::kAssumedNvlinkGbps;
      if (links <= 0) {
        b.basis = "the NVLink count is not known";
        return b;
      }
      rate = links * per;
      rate_basis = fmt::format("{} NVLinks × {:.4g} GB/s{} = {}", links, per, gpu && gpu->nvlink_link_gbps > 0 ? "" : " (assumed)", gbps(rate));
      row = find_transport(link.nvswitch ? "nvlink-switch" : "nvlink-direct");
      if (link.nvswitch && gpu && gpu->nvlink_gen >= 4) upper = find_transport("nvls");
      break;
    }
    case LinkAssumption::Kind::pcie: {
      const int gen = gpu && gpu->pcie_gen > 0 ? gpu->pcie_gen : topo::kAssumedPcieGen;
      const int width = gpu && gpu->pcie_gen > 0 ? gpu->pcie_width : topo::kAssumedPcieWidth;
      rate = topo::pcie_link_gbps(gen, width);
      rate_basis = fmt::format("PCIe Gen{} x{}{} = {}", gen, width, gpu && gpu->pcie_gen > 0 ? "" : " (assumed)", gbps(rate));
      const auto cls = link.path.cls;
      const bool p2p = link.p2p.value_or(!gpu || gpu->pcie_p2p);
      if (!p2p || cls == topo::LinkClass::sys) row = find_transport("shm");
      else if (cls == topo::LinkClass::pix || cls == topo::LinkClass::pxb) row = find_transport("pcie-switch");
      else row = find_transport("pcie-host-bridge");
      break;
    }
  }
  if (!row || !row->share_low || !row->share_high) {
    b.basis = "no share band for this transport in data/nccl.json";
    return b;
  }
  b.low = rate * *row->share_low;
  b.high = rate * *row->share_high;
  std::string extra;
  if (upper && upper->share_high && rate * *upper->share_high > b.high) {
    b.high = rate * *upper->share_high;
    extra = fmt::format(", up to {:.2f} with NVLS (the switch reduces in place)", *upper->share_high);
  }
  if (link.kind == LinkAssumption::Kind::network && link.nodes == 2) {
    b.high *= 2;
    extra += "; on exactly two nodes NCCL's tree sends each byte over the network once, so busbw can reach up to twice the ring's figure";
  }
  b.basis = fmt::format("{} of {}: {:.2f}–{:.2f} of {} (data/nccl.json '{}'){}", row->transport, gpu_name, *row->share_low,
                        *row->share_high, rate_basis, row->key, extra);
  return b;
}

double peak_flops(const topo::GpuSpec* gpu, Precision p, std::string* basis) {
  if (!gpu || gpu->dense_bf16_tflops <= 0) {
    if (basis) *basis = gpu ? fmt::format("{}: no 16-bit tensor rate in the table", gpu->model) : "the GPU is not known";
    return 0;
  }
  if (p == Precision::fp32) {
    if (gpu->fp32_tflops > 0) {
      if (basis) *basis = fmt::format("{}: {:.3g} TFLOP/s FP32 (no tensor cores in FP32 training)", gpu->model, gpu->fp32_tflops);
      return gpu->fp32_tflops * 1e12;
    }
    if (basis) *basis = fmt::format("{}: {:.3g} TFLOP/s 16-bit / 4, assumed for FP32", gpu->model, gpu->dense_bf16_tflops);
    return gpu->dense_bf16_tflops * 1e12 / 4;
  }
  if (basis)
    *basis = fmt::format("{}: {:.3g} TFLOP/s dense 16-bit{}", gpu->model, gpu->dense_bf16_tflops,
                         p == Precision::unknown ? " (mixed precision assumed)" : "");
  return gpu->dense_bf16_tflops * 1e12;
}

StepExpectation expect_step(const StepInputs& in) {
  StepExpectation e;
  if (!in.model) {
    e.assumptions.push_back("no model named: its gradient size and compute are unknown");
    return e;
  }
  if (!in.busbw.known()) {
    e.assumptions.push_back(in.busbw.basis.empty() ? "the link's busbw is not known" : in.busbw.basis);
    return e;
  }
  const ModelSpec& m = *in.model;
  const int n = std::max(2, in.gpus);
  // Gradients: DDP all-reduces the parameters' gradients in their own dtype. With AMP (autocast) the parameters
  // and so the gradients stay FP32; only a model cast to 16 bits sends 2 bytes per value.
  const double bytes_per = 4;
  e.gradient_bytes = {m.params * 2, m.params * bytes_per,
                      fmt::format("{}: {:.3g} parameters × 4 bytes (FP32 gradients, as DDP with AMP keeps them; 2 bytes if the "
                                  "model itself is 16-bit)",
                                  m.name, m.params)};
  const double traffic = 2.0 * (n - 1) / n;
  e.allreduce_s = {e.gradient_bytes.high * traffic / (in.busbw.high * 1e9), e.gradient_bytes.high * traffic / (in.busbw.low * 1e9),
                   fmt::format("{} × 2(N−1)/N at {}–{} busbw ({})", gb(e.gradient_bytes.high), gbps(in.busbw.low),
                               gbps(in.busbw.high), in.busbw.basis)};
  e.assumptions.push_back(e.gradient_bytes.basis);
  // Compute.
  if (in.measured_compute_s && *in.measured_compute_s > 0) {
    e.compute_s = {*in.measured_compute_s, *in.measured_compute_s, "measured on one GPU"};
  } else {
    if (m.forward_gflops_per_unit <= 0) {
      e.assumptions.push_back(m.name + ": no sourced forward FLOPs, so compute per step is unknown");
      return e;
    }
    std::string peak_basis;
    const double peak = peak_flops(in.gpu, in.precision, &peak_basis);
    if (peak <= 0) {
      e.assumptions.push_back("compute per step unknown: " + peak_basis);
      return e;
    }
    double units_low, units_high;
    std::string units_basis;
    if (in.units_per_gpu && *in.units_per_gpu > 0) {
      units_low = units_high = *in.units_per_gpu;
      units_basis = fmt::format("{:.0f} {}s per GPU per step (stated)", *in.units_per_gpu, m.unit);
    } else if (m.unit == "token") {
      units_low = 2048;
      units_high = 16384;
      units_basis = "2 048–16 384 tokens per GPU per step assumed (the batch is not stated)";
    } else {
      units_low = 32;
      units_high = 256;
      units_basis = "32–256 samples per GPU per step assumed (the batch is not stated)";
    }
    const double flops_per_unit = 3 * m.forward_gflops_per_unit * 1e9;
    e.compute_s = {flops_per_unit * units_low / (peak * kMfuHigh), flops_per_unit * units_high / (peak * kMfuLow),
                   fmt::format("3 × {:.3g} GFLOP per {} × {} at {:.0f}–{:.0f} % of {}", m.forward_gflops_per_unit, m.unit, units_basis,
                               kMfuLow * 100, kMfuHigh * 100, peak_basis)};
    e.assumptions.push_back(units_basis);
  }
  e.assumptions.push_back(e.allreduce_s.basis);
  e.assumptions.push_back(e.compute_s.basis);
  // With the batch unknown the per-unit ratio is what is sure: scale the band by the compute's own spread.
  e.comm_ratio = {e.allreduce_s.low / e.compute_s.high, e.allreduce_s.high / e.compute_s.low, "all-reduce time / compute time"};
  // A ratio band this wide (unknown batch) is narrowed to its geometric middle decade for decisions by the caller.
  const auto eff = [](double ratio, bool overlap) { return overlap ? 1 / std::max(1.0, ratio) : 1 / (1 + ratio); };
  e.efficiency = {eff(e.comm_ratio.high, false), eff(e.comm_ratio.low, true),
                  "no overlap at the high ratio to full overlap at the low one"};
  return e;
}

}  // namespace scalescope::knowledge
