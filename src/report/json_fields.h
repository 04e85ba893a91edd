#pragma once
// Fields of the JSON documents the commands write, read by the report's builders (html_builders.cpp, answer.cpp):
// a missing or mistyped field gives the fallback, never an exception.

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

namespace scalescope::report {

/// j[key] when `j` is an object and the field a number, else `fallback` (NaN: "not given").
inline double json_number(const nlohmann::json& j, const char* key, double fallback = NAN) {
  if (!j.is_object()) return fallback;
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

/// j[key] when `j` is an object and the field a string, else "".
inline std::string json_string(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return {};
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace scalescope::report
