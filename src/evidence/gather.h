#pragma once
// The facts of the files of one call, in short: evidence::run() (evidence/run.h) reduced to what each file gave
// the diagnosis — the tests' and the corpus check's way in, through the same reading as `scalescope analyze`.

#include <string>
#include <vector>

#include "readers/input_kind.h"
#include "analysis/trace_analysis.h"
#include "diagnose/engine.h"
#include "facts/facts.h"

namespace scalescope::diagnose {

/// What one file gave the diagnosis.
struct FileEvidence {
  std::string path;
  std::vector<std::string> kinds;   ///< analyze::to_string of each kind read
  std::size_t facts = 0;
  std::vector<std::string> notes;
  std::string error;                ///< why it was not read, or the first of its errors ("" when none)
};

/// Every input of one call: its facts, and per file what it gave. Unreadable files are listed with their error;
/// none throws.
struct Evidence {
  FactSet facts;
  std::vector<FileEvidence> files;
};

/// evidence::run over `paths` (and `baseline`, a 1-rank trace, when not empty) with `trace_options` for the traces.
Evidence gather_evidence(const std::vector<std::string>& paths, const std::string& baseline = "",
                         const analyze::TraceOptions& trace_options = {});

/// gather_evidence then diagnose.
Diagnosis diagnose_files(const std::vector<std::string>& paths);

}  // namespace scalescope::diagnose
