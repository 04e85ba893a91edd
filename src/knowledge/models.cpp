#include "knowledge/models.h"

#include <algorithm>
#include <cctype>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "knowledge/embedded_data.h"

namespace scalescope::knowledge {
namespace {

using nlohmann::json;

std::optional<double> number_at(const json& row, const char* key) {
  if (!row.contains(key) || row[key].is_null()) return std::nullopt;
  if (!row[key].is_number()) throw core::Error(fmt::format("'{}' is not a number", key));
  return row[key].get<double>();
}

std::string string_at(const json& row, const char* key, bool required) {
  if (!row.contains(key) || row[key].is_null()) {
    if (required) throw core::Error(fmt::format("'{}' is missing", key));
    return {};
  }
  if (!row[key].is_string()) throw core::Error(fmt::format("'{}' is not a string", key));
  return row[key].get<std::string>();
}

struct Table {
  std::vector<ModelSpec> rows;
  std::map<std::string, std::size_t> by_name;  ///< normal form → row
  std::size_t longest_words = 1;               ///< words in the longest name or alias
};

std::size_t words_of(std::string_view s) {
  std::size_t n = 0;
  bool in = false;
  for (char c : s) {
    const bool w = std::isalnum(static_cast<unsigned char>(c)) != 0;
    if (w && !in) ++n;
    in = w;
  }
  return n;
}

Table load() {
  Table t;
  const std::string_view text = embedded_data("models");
  if (text.empty()) return t;  // a build without data/models.json: no model is known
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    throw core::Error(std::string("data/models.json does not parse: ") + e.what(), "fix the data file and rebuild");
  }
  if (!doc.is_object() || !doc.contains("rows") || !doc["rows"].is_array())
    throw core::Error("data/models.json has no \"rows\" array", "fix the data file and rebuild");
  std::size_t i = 0;
  for (const auto& row : doc["rows"]) {
    ++i;
    try {
      ModelSpec m;
      m.name = string_at(row, "name", true);
      m.family = string_at(row, "family", false);
      m.input = string_at(row, "input", false);
      m.unit = string_at(row, "unit", false);
      m.source = string_at(row, "source", true);
      m.params = number_at(row, "params").value_or(0);
      m.active_params = number_at(row, "active_params");
      m.forward_gflops_per_unit = number_at(row, "forward_gflops_per_unit").value_or(0);
      m.context = number_at(row, "context");
      if (row.contains("aliases")) {
        if (!row["aliases"].is_array()) throw core::Error("'aliases' is not an array");
        for (const auto& a : row["aliases"]) {
          if (!a.is_string()) throw core::Error("an alias is not a string");
          m.aliases.push_back(a.get<std::string>());
        }
      }
      if (!(m.params > 0)) throw core::Error("'params' must be a positive count");
      if (m.forward_gflops_per_unit < 0) throw core::Error("'forward_gflops_per_unit' must be positive (or absent: unknown)");
      if (m.unit != "sample" && m.unit != "token") throw core::Error("'unit' must be \"sample\" or \"token\"");
      if (m.source.size() < 8) throw core::Error("'source' must cite where the figures come from");
      const std::size_t at = t.rows.size();
      for (const auto& n : [&] {
             std::vector<std::string> all{m.name};
             all.insert(all.end(), m.aliases.begin(), m.aliases.end());
             return all;
           }()) {
        const auto key = normalise_model_name(n);
        if (key.empty()) continue;
        auto [it, fresh] = t.by_name.emplace(key, at);
        if (!fresh && it->second != at)
          throw core::Error(fmt::format("the name '{}' is also a name of '{}'", n, t.rows[it->second].name));
        t.longest_words = std::max(t.longest_words, words_of(n));
      }
      t.rows.push_back(std::move(m));
    } catch (const core::Error& e) {
      throw core::Error(fmt::format("data/models.json, row {}: {}", i, e.what()), "fix the data file and rebuild");
    }
  }
  return t;
}

const Table& table() {
  static const Table t = load();
  return t;
}

bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.' || c == '/';
}

}  // namespace

std::span<const ModelSpec> model_table() { return table().rows; }

std::string normalise_model_name(std::string_view name) {
  std::string out;
  for (char c : name)
    if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

const ModelSpec* find_model(std::string_view name) {
  const auto& t = table();
  for (std::string_view candidate : {name, name.substr(name.rfind('/') == std::string_view::npos ? 0 : name.rfind('/') + 1)}) {
    auto it = t.by_name.find(normalise_model_name(candidate));
    if (it != t.by_name.end()) return &t.rows[it->second];
  }
  return nullptr;
}

std::vector<ModelMention> models_in_text(std::string_view text) {
  const auto& t = table();
  std::vector<ModelMention> out;
  if (t.rows.empty()) return out;
  // Words: runs of letters, digits and '-', '_', '.', '/' (trailing '.' of a sentence dropped).
  std::vector<std::pair<std::size_t, std::size_t>> words;
  for (std::size_t i = 0; i < text.size();) {
    if (!word_char(text[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < text.size() && word_char(text[j])) ++j;
    std::size_t e = j;
    while (e > i && (text[e - 1] == '.' || text[e - 1] == '-' || text[e - 1] == '/')) --e;
    if (e > i) words.push_back({i, e});
    i = j;
  }
  for (std::size_t w = 0; w < words.size();) {
    bool hit = false;
    for (std::size_t n = std::min(t.longest_words + 1, words.size() - w); n >= 1 && !hit; --n) {
      const std::size_t b = words[w].first, e = words[w + n - 1].second;
      const std::string_view span = text.substr(b, e - b);
      const ModelSpec* m = nullptr;
      auto it = t.by_name.find(normalise_model_name(span));
      if (it != t.by_name.end()) m = &t.rows[it->second];
      // A Hugging Face path in one word: "meta-llama/Llama-2-7b-hf" by its last part.
      if (!m && n == 1 && span.find('/') != std::string_view::npos) m = find_model(span);
      if (m) {
        out.push_back({m, b, e});
        w += n;
        hit = true;
      }
    }
    if (!hit) ++w;
  }
  return out;
}

}  // namespace scalescope::knowledge
