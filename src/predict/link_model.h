#pragma once
// How long one all-reduce takes over the job's link, for the predictor (step_model.h): from measured sweeps
// (scalescope comm JSON, an nccl-tests output, the NCCL profiler plugin's record) at one or more rank counts, or
// from a named link of the hardware table. Pure C++.
//
// Measured: the sweep at the wanted rank count when there is one, interpolated log–log between its sizes (below
// the smallest size: the smallest size's time; above the largest: the largest size's busbw). Another rank count n
// from the nearest measured n0: latency α0 (the smallest size's time) × (n−1)/(n0−1), NCCL's ring steps, and the
// rest × f(n)/f(n0) with f(n) = 2(n−1)/n (busbw, nccl-tests' definition, unchanged with n).
// Named: time = α·(n−1) + bytes·f(n)/busbw, with busbw from topo::expected_path_busbw or nic_busbw_gbps and α the
// one measured figure (20 µs per ring step: 2 × H200 NVLink, 8 B, ../shared/anchors.md) — printed as an assumption.

#include <map>
#include <string>
#include <optional>
#include <string_view>
#include <vector>

#include "comm/sweep.h"
#include "knowledge/hardware.h"
#include "topo/topology.h"

namespace scalescope::predict {

/// The share of the ring's busbw taken for NCCL's tree on the same links: 0.9. NCCL's tuner (src/graph/tuning.cc)
/// models the tree with less bandwidth than the ring; the value here is an assumption, not measured (no multi-node
/// run was), and it is printed with every multi-node prediction.
inline constexpr double kTreeBandwidthShare = 0.9;

/// A measured sweep's busbw is taken as known to ±3 % at least: the same gpt2-124m bucket set all-reduced beside
/// backward over four calls on 2 × H200 NVLink gave 124.6–127.8 GB/s (±1.3 %, bench/RESULTS.md 2026-11-29), doubled.
inline constexpr double kMinLinkSpread = 0.03;
/// A named link's busbw (the line rate × the share NCCL reaches) is taken as known to ±15 %: an assumption, printed
/// with the band — public nccl-tests results on one link class differ by about that much (data/busbw_observations.json).
inline constexpr double kNamedLinkSpread = 0.15;

/// The fastest network port a named link may have, Gb/s: above any Ethernet or InfiniBand port sold (800 Gb/s
/// XDR/800GbE, 2025), with room for the next generation. A larger figure is a typo, not a port.
inline constexpr double kMaxPortGbit = 3200;
/// The slowest: 10 Mb/s Ethernet. A smaller figure gives steps of years, and at 1e-305 infinite ones.
inline constexpr double kMinPortGbit = 0.01;

/// The line rate of "GBIT" (the text after "net:"): a number from kMinPortGbit to kMaxPortGbit, written whole
/// (no trailing text). nullopt otherwise ("inf", "nan", "1e400", "-5", "25G"). Throws nothing.
std::optional<double> parse_port_gbit(std::string_view text);

/// The GPU model a --link names (`link` is the whole argument, for the message): the hardware table's entry for
/// `name`; else, of the models whose names hold it ("H100": H100 SXM5, H100 PCIe, H100 NVL), the one the path allows
/// — NV#: the one model with that many NVLinks; a PCIe path (PIX … SYS): the one PCIe card — and `note` (when given)
/// says which was taken. Throws core::UsageError naming the candidates (or the closest name) otherwise.
const topo::GpuSpec* gpu_for_link(const std::string& name, std::string_view link, const std::optional<topo::Link>& path,
                                  std::string* note = nullptr);

class LinkModel {
 public:
  /// From the all-reduce sweeps among `sweeps` (others are ignored); each needs its rank count and ≥ 1 row with a
  /// time. Several sweeps at one rank count: the later wins. Throws core::Error when none is usable, naming why.
  static LinkModel from_sweeps(const std::vector<analyze::Sweep>& sweeps, const std::string& source);
  /// "GPU:PATH" — a GPU model of the hardware table and nvidia-smi's path token ("H200:NV18", "A100:NV12",
  /// "RTX 4090:PHB", "H100:SYS") — or "net:GBIT" (a network port of that line rate: "net:25", "net:400").
  /// Throws core::UsageError naming the forms when `name` is none of them.
  static LinkModel named(std::string_view name);

  /// A link known by one busbw figure (GB/s, e.g. what a run measured) and the measured ring-step latency of
  /// 20.7 µs: time = 20.7 µs × (n−1) + bytes·f(n)/busbw at every rank count. Throws core::UsageError for a busbw ≤ 0, not finite, or above 100 000 GB/s.
  static LinkModel alpha_beta(double busbw_gbps, const std::string& description);

  /// Several nodes: this model inside a node of `gpus_per_node` GPUs, and `ports` network ports of `gbit` each per
  /// node between nodes. Beyond one node each all-reduce takes the faster of NCCL's ring and tree (its tuner picks
  /// the lower modelled time per message): the ring runs one step per rank (the node's measured step latency)
  /// at the lower of the node's inside busbw and its network busbw (ports × nic_busbw_gbps: rings leave a node
  /// through its NICs); the tree costs one node's latency plus 2·⌈log2 nodes⌉ network steps of 20.7 µs (the one
  /// measured step latency, NVLink's, taken as an assumption) at kTreeBandwidthShare of that busbw. Throws
  /// core::UsageError for gpus_per_node < 1, ports < 1 or gbit ≤ 0.
  LinkModel with_network(int gpus_per_node, double gbit, int ports) const;

  /// All-reduce of `bytes` (per rank's buffer) over `ranks` ≥ 2, seconds: the faster algorithm's. 0 for ranks ≤ 1.
  double all_reduce_s(double bytes, int ranks) const;
  /// Ring and tree apart (equal inside one node, where NCCL runs rings), seconds.
  struct Cost {
    double ring_s = 0, tree_s = 0;
  };
  Cost costs(double bytes, int ranks) const;
  /// "ring" or "tree": which all_reduce_s used.
  std::string algorithm(double bytes, int ranks) const;

  /// The relative uncertainty of this link's all-reduce times, for predict_band: a measured sweep's, from the
  /// difference of its out-of-place and in-place times at ≥ 1 MiB (twice the median relative half-difference, at
  /// least kMinLinkSpread); a named link's kNamedLinkSpread.
  double spread() const { return spread_; }
  /// This model with every all-reduce time × `factor` (> 0): a slower or faster link of the same shape.
  LinkModel scaled(double factor) const;

  const std::string& description() const { return description_; }
  const std::vector<std::string>& assumptions() const { return assumptions_; }
  /// What of the measured input was not used, each naming its source and line ("…: line 11: out-of-place time
  /// '-inf' is not a number"): rows whose figures are not finite or are negative, sweeps without a rank count.
  const std::vector<std::string>& warnings() const { return warnings_; }
  /// Rank counts measured (empty for a named link).
  std::vector<int> measured_ranks() const;

 private:
  struct Table {
    std::vector<std::pair<double, double>> points;  // bytes → seconds, sorted by bytes, bytes > 0
  };
  static double interpolate(const Table& t, double bytes);
  double inside_s(double bytes, int ranks) const;  // one node's model (no network)
  std::map<int, Table> tables_;
  double alpha_s_ = 0, busbw_gbps_ = 0;  // named
  double spread_ = 0, scale_ = 1;
  int gpus_per_node_ = 0;                 // 0: one node, whatever the rank count
  double net_busbw_gbps_ = 0;
  std::string description_;
  std::vector<std::string> assumptions_;
  std::vector<std::string> warnings_;
};

}  // namespace scalescope::predict
