#include "readers/job/launch_env.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <functional>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/parse_count.h"
#include "text/log_text.h"
#include "readers/job/launch_env_words.h"

namespace scalescope::analyze {
namespace {

using namespace launch_env_detail;

}  // namespace

std::optional<double> known_model_parameters(std::string_view name) {
  std::string n = lower(trim_blanks(name));
  while (!n.empty() && (n.back() == '/' || n.back() == '\'' || n.back() == '"')) n.pop_back();
  // "openai-community/gpt2", "/models/bert-base-uncased", "models--meta-llama--Llama-3.2-3B" → the last part.
  if (auto slash = n.rfind('/'); slash != std::string::npos) n = n.substr(slash + 1);
  if (auto dd = n.rfind("--"); dd != std::string::npos && starts_with(n, "models--")) n = n.substr(dd + 2);
  if (n.empty()) return std::nullopt;
  for (const auto& m : kKnownModels) {
    const std::string_view k = m.name;
    if (n == k || (starts_with(n, k) && n.size() > k.size() && (n[k.size()] == '-' || n[k.size()] == '_')))
      return m.parameters;
  }
  // A size in the name: "Llama-3.2-3B-Instruct", "pythia-1.4b", "tiny-14m", "opt-125m" ("8x7B" is left alone).
  std::size_t i = 0;
  while (i < n.size()) {
    std::size_t j = i;
    while (j < n.size() && n[j] != '-' && n[j] != '_' && n[j] != '/') ++j;
    if (auto v = size_token(std::string_view(n).substr(i, j - i))) return v;
    i = j + 1;
  }
  return std::nullopt;
}

bool looks_like_environment(std::string_view text) {
  std::size_t known = 0, setting_lines = 0, other = 0;
  std::optional<std::string> k8s;
  std::size_t lines = 0;
  for (auto l : split_lines(text)) {
    if (++lines > 20000) break;
    const EnvLine e = env_line(l, k8s);
    if (e.what == EnvLine::What::other) {
      ++other;
      continue;
    }
    if (e.what != EnvLine::What::settings) continue;
    ++setting_lines;
    bool k = false;
    for (const auto& [n, v] : e.settings) k = k || well_known_name(n);
    known += k ? 1 : 0;
  }
  if (known == 0) return false;
  // A launch script's exports are read with its commands (read_commands), not twice.
  if (other > 0 && looks_like_command(text)) return false;
  return known >= 3 || setting_lines * 2 >= setting_lines + other;
}

bool looks_like_command(std::string_view text) {
  for (const auto& l : logical_lines(text)) {
    const auto words = shell_words(strip_quote_markers(l.text));
    for (const auto& seg : segments(words.words))
      if (has_launcher(seg)) return true;
  }
  return false;
}

Reading read_environment(std::string_view text, const std::string& source) {
  core::count_parse("environment", text);
  Reading r;
  try {
    std::optional<std::string> k8s;
    std::set<std::pair<std::string, std::string>> seen;
    const auto lines = split_lines(text);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const EnvLine e = env_line(lines[i], k8s);
      if (e.what == EnvLine::What::other) {
        const auto t = trim_blanks(lines[i]);
        if (!t.empty()) r.notes.push_back(fmt::format("line {}: not a NAME=value setting, skipped", i + 1));
        continue;
      }
      for (const auto& [n, v] : e.commented)
        r.notes.push_back(fmt::format("line {}: {}={} is commented out: not in force, not read", i + 1, n, v));
      for (const auto& [n, v] : e.settings) {
        if (computed_value(v)) {
          r.notes.push_back(fmt::format("line {}: {}={} is computed by the shell when the script runs; its value is "
                                        "not in the text, not read", i + 1, n, excerpt(v, 60)));
          continue;
        }
        if (!seen.insert({n, v}).second) continue;  // the same setting twice (a dump pasted twice)
        add_setting(r, n, v, "environment", source, i + 1, lines[i]);
      }
    }
    if (r.notes.size() > 50) {
      const auto n = r.notes.size();
      r.notes.resize(50);
      r.notes.push_back(fmt::format("… and {} more lines that are not settings", n - 50));
    }
  } catch (const std::exception& e) {
    r.notes.push_back(std::string("environment reader stopped: ") + e.what());
  }
  return r;
}

Reading read_command_line(std::string_view command, const std::string& source, std::size_t line) {
  Reading r;
  try {
    const std::string_view text = strip_quote_markers(command);
    const auto words = shell_words(text);
    if (words.unterminated_quote)
      r.notes.push_back(fmt::format("line {}: a quote is not closed (the command may be cut)", line));
    bool any = false;
    for (const auto& seg : segments(words.words)) any |= read_segment(seg, r, source, line, command, 0);
    if (!any && r.facts.empty()) r.notes.clear();
  } catch (const std::exception& e) {
    r.notes.push_back(fmt::format("line {}: command reader stopped: {}", line, e.what()));
  }
  return r;
}

Reading read_commands(std::string_view text, const std::string& source) {
  core::count_parse("launch_command", text);
  Reading r;
  try {
    // Markdown headings are no root prompts: outside the fenced blocks of a text that has some, and a title line
    // followed by a blank line ("# all_reduce_perf blocks" above a post), "# …" is a heading, not "# <command>".
    const auto lines = logical_lines(text);
    const bool fenced = text.find("```") != std::string_view::npos;
    bool in_fence = false;
    for (std::size_t k = 0; k < lines.size(); ++k) {
      const auto& l = lines[k];
      const std::string_view t = trim_blanks(l.text);
      if (t.rfind("```", 0) == 0) in_fence = !in_fence;
      if (t.empty()) continue;
      if (t.rfind("# ", 0) == 0 && !in_fence &&
          (fenced || (k + 1 < lines.size() && trim_blanks(lines[k + 1].text).empty())))
        continue;
      auto one = read_command_line(l.text, source, l.line);
      // Provenance shows the first physical line of a continued command.
      for (auto f : one.facts.all()) {
        f.where = at(source, l.line, l.first);
        r.facts.add(std::move(f));
      }
      for (auto& n : one.notes) r.notes.push_back(std::move(n));
    }
  } catch (const std::exception& e) {
    r.notes.push_back(std::string("command reader stopped: ") + e.what());
  }
  return r;
}

}  // namespace scalescope::analyze
