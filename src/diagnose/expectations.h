#pragma once
// What this job should give, from the facts of one call and the knowledge (knowledge/expect.h): the model it trains,
// the GPU, how many GPUs, how they are linked (a topology matrix, the poster's words, or the platform's design: SXM
// boards through NVLink, PCIe cards through the host bridge), and from them the expected busbw band and the expected
// step (gradient all-reduce against compute, comm ratio, efficiency at N). Then the measured scaling set against it.
// Every assumption is said, so a cause that uses the expectation can show why it expected what it did.

#include <optional>
#include <string>
#include <vector>

#include "diagnose/engine.h"
#include "facts/facts.h"
#include "knowledge/expect.h"

namespace scalescope::diagnose {

struct Context;

/// An all-reduce of at least this long per step cannot be hidden by a usual training step's backward (0.1–1 s):
/// the link, not the compute, is what is short (bandwidth-bound-gradients rather than comm-bound-small-model).
inline constexpr double kLongAllReduceS = 0.2;

struct JobExpectation {
  const knowledge::ModelSpec* model = nullptr;
  std::optional<EvidenceLine> model_line;
  int gpus = 0;                                   ///< the largest multi-GPU count measured or stated; 0 unknown
  knowledge::LinkAssumption link;
  std::optional<EvidenceLine> link_line;          ///< where the link comes from (or the assumption in words)
  knowledge::Band busbw;
  std::optional<knowledge::StepExpectation> step; ///< when model and busbw are known
  /// The measured speedup at `gpus` (a table of GPU counts, a stated speedup), and where.
  std::optional<double> measured_speedup;
  std::optional<EvidenceLine> speedup_line;
  /// The speedup is inferred, not measured: the same time per iteration on N GPUs read as N (weak scaling). It
  /// answers whether the job scales, but never outranks a cause with evidence of its own.
  bool speedup_inferred = false;
  /// One line that states the expectation ("BERT-base's 0.44 GB of FP32 gradients over …: 61–88 ms per step against
  /// 40–320 ms of compute: comm ratio 0.2–2.2").
  std::optional<EvidenceLine> summary;
};

/// The expectation of the job the facts describe.
JobExpectation expect_job(const Context& ctx);

}  // namespace scalescope::diagnose
