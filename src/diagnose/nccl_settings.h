#pragma once
// What NCCL's environment variables do when set: NCCL's default for each, and whether a value forces a slower
// path than the default would choose. A setting equal to the default is no override (NCCL_IB_DISABLE=0 changes
// nothing); one that turns a transport off, pins an algorithm or protocol, or caps channels is. Source: NCCL's
// environment-variable documentation (docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html) and
// src/graph/paths.cc for the P2P / GDR levels. Pure data.

#include <optional>
#include <string>
#include <string_view>

namespace scalescope::diagnose {

/// How a set value compares with NCCL's default.
enum class SettingEffect {
  unknown,      ///< not an NCCL variable this table knows
  default_value,///< the value NCCL uses anyway
  harmless,     ///< differs from the default without changing the data path (debug output, a dump file)
  changes,      ///< changes a choice NCCL would make (an interface, an HCA list, a GID index): right or wrong
                ///< depending on the machine
  slows,        ///< forces a path or choice slower than the default on machines that have the faster one
};

struct SettingJudgement {
  SettingEffect effect = SettingEffect::unknown;
  std::string default_text;   ///< NCCL's default in words ("0", "auto: P2P wherever the topology allows")
  std::string what_it_does;   ///< for this value, one sentence: "turns off P2P: GPUs of one node exchange data through host memory (SHM)"
  /// The transport or feature the value turns off, for comparing with what a log shows: "p2p", "shm", "ib"
  /// (inter-node RDMA, InfiniBand and RoCE alike), "gdr", "nvls", "collnet", "" when none.
  std::string turns_off;
};

/// Judges NAME=value (name as written, value trimmed; case of values such as "LOC", "Ring" ignored).
SettingJudgement judge_setting(std::string_view name, std::string_view value);

/// The setting that turns a feature off, for a table row that says so ("RoCE disabled" → "NCCL_IB_DISABLE=1";
/// "w/o NVLink" → "NCCL_P2P_DISABLE=1"): feature "nvlink", "p2p", "shm", "ib", "roce", "rdma", "gdr", "nvls".
/// Empty for others.
std::string setting_turning_off(std::string_view feature);

}  // namespace scalescope::diagnose
