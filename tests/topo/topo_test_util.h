#pragma once
// Helpers for the topo tests: look up a pair's link token and search warnings.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "topo/topology.h"

namespace scalescope::topo::testing {

/// The nvidia-smi token of the link between two labelled devices, or "absent" when a label is missing.
inline std::string link(const Topology& t, const std::string& a, const std::string& b) {
  int i = t.find(a), j = t.find(b);
  if (i < 0 || j < 0) return "absent";
  return to_string(t.links[i][j]);
}

inline bool mentions(const std::vector<std::string>& lines, const std::string& what) {
  for (const auto& l : lines)
    if (l.find(what) != std::string::npos) return true;
  return false;
}

inline std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += "  " + l + "\n";
  return s;
}

inline std::string cpus(const Topology& t, const std::string& label) {
  int i = t.find(label);
  if (i < 0) return "absent";
  return t.devices[i].cpu_affinity ? t.devices[i].cpu_affinity->to_string() : "none";
}

}  // namespace scalescope::topo::testing
