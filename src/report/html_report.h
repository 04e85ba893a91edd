#pragma once
// One self-contained HTML page of a scalescope result (`--html FILE` on doctor, analyze, profile and predict):
// inline CSS and SVG only — no script, no font, no fetch — so it opens offline and can be mailed. Sections, each
// with an id: diagnosis (with its evidence), scaling (measured, ideal, predicted), waterfall (where the time beyond
// the ideal step went), busbw (against message size, beside the link's expected ceiling), swimlanes (one step of
// each rank: compute, communication, copies, idle), topology (the link matrix) and provenance (machine, commit,
// command, protocol), after the answer (report/answer.h): the headline the terminal and the JSON lead with too. A
// section with nothing to show is left out. Every string from inputs is HTML-escaped.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/answer.h"

namespace scalescope::report {

struct HtmlSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  ///< x, y
  std::string style = "measured";                 ///< "measured", "ideal", "predicted", "ceiling"
};

struct HtmlChart {
  std::string title, x_label, y_label;
  bool log_x = false;
  std::vector<HtmlSeries> series;
};

/// A waterfall: the start bar (the ideal step), each part added (negative parts go down), the end bar.
struct HtmlWaterfall {
  std::string title;
  std::string start_label;
  double start = 0;
  std::vector<std::pair<std::string, double>> parts;
  std::string end_label;
  std::string unit = "ms";
};

/// One interval of a rank's step, ms from the step's start. kind: "compute", "communication", "copy", "cpu".
struct HtmlSegment {
  double start_ms = 0, end_ms = 0;
  std::string kind;
};
struct HtmlLane {
  std::string name;
  double step_ms = 0;
  std::vector<HtmlSegment> segments;
};

struct HtmlMatrix {
  std::vector<std::string> labels;
  std::vector<std::vector<std::string>> cells;  ///< labels.size() × labels.size()
};

struct HtmlPage {
  std::string title;  ///< names the command: "scalescope profile — …"
  std::optional<Answer> answer;                                 ///< the first section when given
  std::vector<std::pair<std::string, std::string>> provenance;  ///< ("machine", "…"), ("commit", "…") …
  nlohmann::json diagnosis;                                     ///< diagnose::to_json's object, or null
  std::vector<HtmlChart> scaling;
  std::vector<HtmlWaterfall> waterfalls;
  std::vector<HtmlChart> busbw;
  std::vector<HtmlLane> lanes;
  std::string lanes_note;
  std::optional<HtmlMatrix> topology;
  std::vector<std::pair<std::string, std::string>> tables;      ///< extra (title, preformatted text) blocks
};

/// The page. Throws nothing.
std::string render_html(const HtmlPage& page);

/// `s` with &, <, >, " and ' escaped; invalid UTF-8 replaced. Throws nothing.
std::string html_escape(std::string_view s);

/// The page's provenance lines every command adds: scalescope's version and commit (as built), the command line,
/// the host name and the date (UTC).
std::vector<std::pair<std::string, std::string>> default_provenance(const std::vector<std::string>& argv);

}  // namespace scalescope::report
