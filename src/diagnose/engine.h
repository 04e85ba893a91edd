#pragma once
// The diagnosis engine: from the facts of every file of one call (facts/facts.h) to the root cause, ranked,
// with its cost, its fix and the command that would confirm it — the way an expert reads the same evidence.
//
// How it works:
//  1. Context (diagnose/context.h) puts the files together: a GPU model named in one file applies to the others;
//     the job's GPUs and nodes come from whichever file states them; settings are judged against NCCL's
//     defaults; measured figures against what the hardware table (knowledge/hardware.h) says the path should give;
//     tables of variants are compared row against row (diagnose/variants.h).
//  2. Every cause of the catalogue (diagnose/catalogue.h; ids from ../shared/diagnosis-causes.md) assesses the
//     context: the facts that support it, those that rule it out, its cost in the job's terms, the fix and the
//     confirming command. Each gives a score in [0, 1].
//  3. Ranking: the highest score is the primary cause (ties: the larger cost, then the more specific cause — one
//     that explains another, e.g. NCCL_IB_DISABLE=1 explains the socket fallback, ranks above it). Causes from
//     kContributingScore up are contributing; assessed causes that the evidence rules out are listed with why.
//  4. When no cause reaches kPrimaryScore and the figures were judged against a ceiling and met it (or the
//     topology is what the platform should have), the answer is `no-defect`, with that ceiling. When nothing
//     could be judged, the primary is null and the missing evidence says what would decide.
// Pure: no I/O.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "facts/facts.h"

namespace scalescope::diagnose {

/// A primary cause needs at least this score; below it the evidence is too thin to name a cause first.
inline constexpr double kPrimaryScore = 0.35;
/// A contributing cause needs at least this score.
inline constexpr double kContributingScore = 0.25;

/// Confidence words for scores: ≥ 0.75 "high", ≥ 0.5 "medium", else "low".
std::string confidence_label(double score);

/// One line of evidence: what a fact shows, in words, and where it was read.
struct EvidenceLine {
  std::string says;
  Provenance where;
};

/// What a cause costs the job, in its own terms, when the facts allow: time per step (or per run), its share of
/// the step, bandwidth against the ceiling. `text` says it in one sentence; absent figures stay absent.
struct Cost {
  std::optional<double> seconds;        ///< time lost per step (or per run when the evidence is whole runs)
  std::string per;                      ///< "step", "run", "epoch" — what `seconds` is per
  std::optional<double> share;          ///< of the measured time, 0–1
  std::optional<double> measured_gbps;  ///< bandwidth measured (GB/s)
  std::optional<double> ceiling_gbps;   ///< what the path should give (GB/s)
  std::string text;
};

/// Evidence the engine lacks, and the command that would supply it.
struct MissingEvidence {
  std::string what;
  std::string command;
  std::string decides;                  ///< which causes it would decide between, in words
};

/// One cause as the engine assessed it.
struct Assessment {
  std::string cause;                    ///< id, e.g. "net-socket-fallback"
  double score = 0;                     ///< 0–1
  std::string summary;                  ///< one sentence: what is wrong in this job
  std::vector<EvidenceLine> evidence;   ///< supporting facts
  std::vector<EvidenceLine> against;    ///< facts that speak against it (kept even when it wins)
  Cost cost;
  std::string fix;                      ///< the catalogue's fix, made specific where the facts allow
  /// The predictor's figure for the fix where it covers it (predict/fix_gain.h): "overlap on: 51.1 → 44.2 ms per
  /// step, efficiency 80 → 93 %". Empty otherwise.
  std::string predicted;
  std::string confirm;                  ///< one command that would confirm it
  std::vector<std::string> explains;    ///< other cause ids this one explains (a setting behind a fallback)
  bool ruled_out = false;               ///< the evidence excludes it (then `why_not` says how)
  std::string why_not;
  /// Evidence that would confirm or refute it (collected into Diagnosis::missing_evidence for the causes shown).
  std::vector<MissingEvidence> needs;
};

/// The answer.
/// The job failed on its own (a JobFailed fact of `scalescope profile`'s record): the first finding, before any cause
/// of slow scaling — a run that did not finish measures nothing.
struct JobFailure {
  std::string ended;       ///< "exited with status 1"
  std::string exception;   ///< its first exception ("" when the output shows none)
  std::optional<int> rank; ///< the rank that raised it
  std::vector<int> failed_ranks;
  bool launcher_crash = false;  ///< the launcher's own code failed before any worker ran
  std::string fix;         ///< from data/launcher_failures.json when known ("" otherwise)
  std::string fix_source;
  Provenance where;
};

struct Diagnosis {
  /// Set when the job failed: reported first; missing evidence about scaling is then not asked for.
  std::optional<JobFailure> failure;
  std::optional<Assessment> primary;    ///< null: nothing can be named from this evidence
  std::vector<Assessment> contributing;
  std::vector<Assessment> ruled_out;
  std::vector<MissingEvidence> missing_evidence;
  /// For no-defect: the ceiling the figures were judged against and where it comes from.
  std::string ceiling;
  /// Files read (with how many facts each gave) — what the diagnosis stands on.
  std::vector<std::string> considered;
};

/// Diagnoses the facts of one call. Throws nothing.
Diagnosis diagnose(const FactSet& facts);

/// JSON as the issue defines it: {"failure": {"ended", "exception", "rank", "failed_ranks", "launcher_crash", "fix",
/// "fix_source", "source", "line"} | null, "primary": {"cause", "confidence", "score", "summary", "cost": {...}, "evidence":
/// [{"says", "source", "line", "excerpt"}], "against": [...], "fix", "predicted" (string | null), "confirm",
/// "explains": [...]} | null,
/// "contributing": [...], "ruled_out": [{"cause", "why"} ...], "missing_evidence": [{"what", "command",
/// "decides"}], "ceiling": "..." | null, "considered": [...]}. Valid UTF-8.
void to_json(nlohmann::json& j, const Diagnosis& d);
void to_json(nlohmann::json& j, const Assessment& a);

/// The terminal form: "diagnosis:" then the primary cause with its confidence, cost, evidence lines (file:line),
/// fix and confirming command; contributing causes with their cost; ruled-out causes and why; missing evidence.
/// Input text is made terminal-safe (control characters removed).
std::string render(const Diagnosis& d);

}  // namespace scalescope::diagnose
