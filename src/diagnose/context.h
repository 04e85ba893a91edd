#pragma once
// The facts of all files of one call, put together the way an expert reads them side by side: which GPU model
// the job runs on (named in one file, applied to the others), how many ranks and nodes it spans and how we know,
// which GPUs of a topology matrix it uses (CUDA_VISIBLE_DEVICES in a command line or log), the paths between
// them, the settings in force judged against NCCL's defaults, the measured bandwidth plateaus and step times, and
// the comparison of measured variants. The cause assessors (diagnose/causes.h) read only this.

#include <map>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "diagnose/engine.h"
#include "diagnose/expectations.h"
#include "facts/facts.h"
#include "diagnose/nccl_settings.h"
#include "diagnose/variants.h"
#include "knowledge/hardware.h"

namespace scalescope::diagnose {

/// How far the job reaches.
enum class Span { unknown, single_node, multi_node };

struct Context {
  explicit Context(const FactSet& facts);

  const FactSet& facts;

  // ---- GPUs ----
  struct Model {
    std::string name;                   ///< as first printed
    const topo::GpuSpec* spec = nullptr;
    Provenance where;
    int seen = 0;                       ///< facts naming it
  };
  std::vector<Model> models;            ///< distinct models (by table entry, else by name)
  /// The table entry of the job's GPU when every named GPU is the same known model; nullptr otherwise.
  const topo::GpuSpec* gpu = nullptr;
  std::string gpu_name;                 ///< "Tesla T4" (first name), "" when none
  std::optional<EvidenceLine> gpu_evidence;
  bool mixed_models = false;

  // ---- the job's shape ----
  Span span = Span::unknown;
  std::vector<EvidenceLine> span_evidence;   ///< why single or multi node
  std::optional<int> ranks, nodes, ranks_per_node;
  std::vector<std::string> hosts;

  // ---- settings ----
  struct SettingView {
    std::string name, value, origin;
    Provenance where;
    SettingJudgement judgement;
    /// Every value the same file gives the name ("Runs: default, NCCL_ALGO=Tree, NCCL_ALGO=Ring"): two or more are
    /// variants a text compares, not the one environment of a job.
    std::set<std::string> values_in_source;
  };
  std::map<std::string, SettingView> settings;   ///< last seen value per name
  const SettingView* setting(const std::string& name) const;

  // ---- topology ----
  std::vector<Seen<LinkClass>> links;            ///< every matrix cell read
  std::vector<std::string> matrix_gpus;          ///< GPU labels of the matrix, in order
  /// GPU labels the job uses: those named by CUDA_VISIBLE_DEVICES (GPU i of the matrix for index i), else every
  /// GPU of the matrix. `job_gpus_from` says which.
  std::vector<std::string> job_gpus;
  std::optional<EvidenceLine> job_gpus_from;
  /// GPU–GPU cells among the job's GPUs.
  std::vector<Seen<LinkClass>> job_pairs() const;
  /// The cell between two labels, nullptr when not read.
  const Seen<LinkClass>* link(const std::string& a, const std::string& b) const;

  // ---- measurements ----
  std::vector<Seen<BusbwPlateau>> plateaus;
  VariantAnalysis variants;

  // ---- what the job should give (diagnose/expectations.h): model, link, busbw band, step ----
  JobExpectation expected;

  /// Whether any fact of type T was read.
  template <class T>
  bool has() const {
    return facts.count<T>() > 0;
  }
};

/// Evidence line from a fact's provenance.
inline EvidenceLine line(std::string says, const Provenance& where) { return {std::move(says), where}; }

}  // namespace scalescope::diagnose
