#pragma once
// From the files of one call to the facts of all of them: each text file through the readers of the kinds input
// detection found (readers/input_kind.h), profiler traces through the trace analysis, watchdog messages of several
// files compared across ranks — then the diagnosis. What `scalescope analyze` runs, as a library.

#include <string>
#include <vector>

#include "readers/input_kind.h"
#include "analysis/trace_analysis.h"
#include "diagnose/engine.h"
#include "facts/facts.h"

namespace scalescope::diagnose {

/// The facts of one text input (any kind but traces), each kind through its reader; the notes say how damaged
/// parts were read. Throws nothing.
Reading facts_of_text(const analyze::InputFile& input);

/// What one file gave the diagnosis.
struct FileEvidence {
  std::string path;
  std::vector<std::string> kinds;   ///< analyze::to_string of each kind read
  std::size_t facts = 0;
  std::vector<std::string> notes;
  std::string error;                ///< why it was not read ("" when it was)
};

/// Every input of one call: text files read and their facts; traces analysed together (one per rank, with an
/// optional 1-rank baseline); watchdog messages of several files compared. Unreadable files are listed with their
/// error; none throws.
struct Evidence {
  FactSet facts;
  std::vector<FileEvidence> files;
};

/// Reads `paths` (and `baseline`, a 1-rank trace, when not empty) with `trace_options` for the traces.
Evidence gather_evidence(const std::vector<std::string>& paths, const std::string& baseline = "",
                         const analyze::TraceOptions& trace_options = {});

/// gather_evidence then diagnose.
Diagnosis diagnose_files(const std::vector<std::string>& paths);

}  // namespace scalescope::diagnose
