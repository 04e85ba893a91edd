#pragma once
// The answer first (issue #39): one report model that every rendering of a command's result leads with. It is built
// from the JSON document the command writes (analyze and profile: scalescope.analyze/1; doctor: scalescope.doctor/1;
// predict: scalescope.predict/1), so the terminal, the JSON (`"answer"`) and the HTML page (its first section) say
// the same sentence and the same figures in the same order: what happened or what limits the job, with its cost, in
// one sentence a manager can read; the fix when one is known; then the measured figures that support it.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace scalescope::report {

/// One measured or predicted figure that supports the answer: a label and its value with its unit, as text
/// ("step (rank 0)", "11.96 ms").
struct AnswerFigure {
  std::string label, value;
};

struct Answer {
  std::string command;   ///< "analyze", "profile", "doctor", "predict"
  /// What the headline is: "failure" (the job failed by itself), "cause" (a primary cause named), "verdict" (the
  /// seed's verdict from measured scaling, no cause), "prediction", or "undecided" (nothing singled out).
  std::string kind;
  std::string headline;  ///< one sentence, ending with a full stop
  std::string cost;      ///< what it costs, as the diagnosis says it ("" when not known)
  std::string fix;       ///< the fix or next step ("" when none)
  std::vector<AnswerFigure> figures;
};

/// The answer of an analysis document (scalescope.analyze/1, from `analyze` or `profile`): the job's failure first,
/// then the primary cause with its cost and fix, then the seed's verdict, else what would decide. Figures: the ranks'
/// mean step time, communication and idle shares from the traces, the verdict's speedup and comm ratio. `command`
/// names the command. Throws nothing (missing parts are left out).
Answer answer_of_analysis(const nlohmann::json& analysis, const std::string& command);

/// The answer of a doctor report (scalescope.doctor/1): the seed's verdict at the largest world size with its speedup,
/// efficiency and comm ratio, and the diagnosis's primary cause; figures per world size. Throws nothing.
Answer answer_of_doctor(const nlohmann::json& doctor);

/// The answer of a prediction (scalescope.predict/1): the efficiency and step at the largest rank count with their
/// bands and verdict; figures per rank count. Throws nothing.
Answer answer_of_prediction(const nlohmann::json& predict);

/// The terminal block: "answer: HEADLINE", the cost and fix lines, then the figures, one per line. Ends with a
/// blank line.
std::string render_answer(const Answer& answer);

/// {"kind", "headline", "cost", "fix", "figures": [{"label", "value"}…]}: the object the JSON documents carry as
/// "answer".
nlohmann::json answer_json(const Answer& answer);

}  // namespace scalescope::report
