#pragma once
// Helpers the cause assessors share: figures in words, scores, and evidence from measured rows. Internal to
// src/diagnose.

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "diagnose/catalogue.h"

namespace scalescope::diagnose::detail {

/// "95.7 GB/s" (one decimal below 100, none above).
inline std::string gbps(double v) { return v < 100 ? fmt::format("{:.1f} GB/s", v) : fmt::format("{:.0f} GB/s", v); }

/// A time in seconds as "850 µs", "12.3 ms" or "3.21 s".
inline std::string duration(double s) {
  if (s < 1e-3) return fmt::format("{:.0f} µs", s * 1e6);
  if (s < 1) return fmt::format("{:.1f} ms", s * 1e3);
  return fmt::format("{:.2f} s", s);
}

/// "77 %"; shares under 10 % with one decimal ("0.3 %"), so that a small cost does not read as none.
inline std::string percent(double share) {
  return std::abs(share) < 0.1 && share != 0 ? fmt::format("{:.1f} %", share * 100) : fmt::format("{:.0f} %", share * 100);
}

/// A measured figure of a table row with its unit: "2.51 s", "~365 GB/s".
inline std::string figure(const Measurement& m) {
  const std::string v = std::abs(m.value) >= 100 ? fmt::format("{:.0f}", m.value) : fmt::format("{:.3g}", m.value);
  return m.unit.empty() ? v : v + (m.unit == "%" ? " %" : " " + m.unit);
}

/// A row's label for evidence: its printed label, else its conditions.
inline std::string row_name(const Measurement& m) {
  if (!m.row.empty()) return "'" + m.row + "'";
  return "(" + conditions_text(m.dims) + ")";
}

/// A measured time converted to seconds (s, ms, us, min, h).
inline double seconds_of(const Measurement& m) {
  if (m.unit == "ms") return m.value / 1e3;
  if (m.unit == "us") return m.value / 1e6;
  if (m.unit == "min") return m.value * 60;
  if (m.unit == "h") return m.value * 3600;
  return m.value;
}

/// What a time of this quantity is per: "step", "epoch", else "run".
inline std::string per_of(const std::string& quantity) {
  return quantity == "step time" ? "step" : quantity == "epoch time" ? "epoch" : "run";
}

/// The first Claim of `kind` (facts/facts.h) among the facts, nullopt when none.
inline std::optional<Seen<Claim>> first_claim(const Context& ctx, std::string_view kind) {
  for (const auto& c : ctx.facts.of<Claim>())
    if (c.fact.kind == kind) return c;
  return std::nullopt;
}

/// Adds `v` to a score and keeps it in [0, 1].
inline void raise(double& score, double v) { score = std::clamp(score + v, 0.0, 1.0); }

}  // namespace scalescope::diagnose::detail
