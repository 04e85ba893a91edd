#include "knowledge/launcher_failures.h"

#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "knowledge/embedded_data.h"

namespace scalescope::knowledge {

namespace {

std::vector<LauncherFailure> load() {
  std::vector<LauncherFailure> out;
  const std::string_view text = embedded_data("launcher_failures");
  if (text.empty()) return out;
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw core::Error(std::string("data/launcher_failures.json does not parse: ") + e.what(), "fix the data file and rebuild");
  }
  if (!doc.is_object() || !doc.contains("rows") || !doc["rows"].is_array())
    throw core::Error("data/launcher_failures.json has no \"rows\" array", "fix the data file and rebuild");
  std::size_t i = 0;
  for (const auto& row : doc["rows"]) {
    ++i;
    const auto field = [&](const char* key) {
      if (!row.is_object() || !row.contains(key) || !row[key].is_string() || row[key].get<std::string>().empty())
        throw core::Error(fmt::format("data/launcher_failures.json, row {}: no '{}'", i, key), "fix the data file and rebuild");
      return row[key].get<std::string>();
    };
    out.push_back({field("launcher"), field("exception"), field("frame"), row.value("when", std::string()), field("fix"),
                   field("source")});
  }
  return out;
}

}  // namespace

std::span<const LauncherFailure> launcher_failures() {
  static const std::vector<LauncherFailure> rows = load();
  return rows;
}

const LauncherFailure* known_launcher_failure(std::string_view exception, std::string_view frame) {
  for (const auto& r : launcher_failures())
    if (exception.find(r.exception) != std::string_view::npos && frame.find(r.frame) != std::string_view::npos) return &r;
  return nullptr;
}

}  // namespace scalescope::knowledge
