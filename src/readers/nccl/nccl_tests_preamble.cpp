#include "readers/nccl/nccl_tests_preamble.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/parse_count.h"
#include "readers/job/launch_env.h"
#include "text/log_text.h"

namespace scalescope::analyze {
namespace {

using diagnose::at;

std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    const std::size_t b = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
    if (i > b) out.push_back(s.substr(b, i - b));
  }
  return out;
}

std::optional<long long> number(std::string_view t) {
  if (auto v = parse_decimal(t)) return static_cast<long long>(*v);
  return std::nullopt;
}

// The text after the first '#' run and blanks (nccl-tests prints its preamble as comments); launch prefixes
// ("[1,0]<stdout>:") before the '#' are skipped.
std::string_view comment_body(std::string_view line) {
  const auto h = line.find('#');
  if (h == std::string_view::npos) return {};
  std::string_view rest = line.substr(h);
  while (!rest.empty() && rest.front() == '#') rest.remove_prefix(1);
  return trim_blanks(rest);
}

struct Device {
  long long rank = -1;
  std::optional<long long> pid;
  std::string host;
  std::optional<long long> device;
  std::string bus;
  std::string name;
  std::size_t line = 0;
  std::string_view text;
};

// "Rank  0 Group  0 Pid 3621216 on host-a device  0 [0x10] NVIDIA A100-SXM4-40GB" (Group since 2.13; rccl-tests
// the same). Nothing when the line is not one.
std::optional<Device> device_line(std::string_view body) {
  auto w = words(body);
  if (w.size() < 2 || w[0] != "Rank") return std::nullopt;
  Device d;
  auto r = number(w[1]);
  if (!r) return std::nullopt;
  d.rank = *r;
  std::size_t i = 2;
  for (; i < w.size(); ++i) {
    if (w[i] == "Pid" && i + 1 < w.size()) d.pid = number(w[i + 1]);
    if (w[i] == "on" && i + 1 < w.size()) d.host = std::string(w[i + 1]);
    if (w[i] == "device" && i + 1 < w.size()) {
      d.device = number(w[i + 1]);
      i += 2;
      break;
    }
  }
  if (!d.device) return std::nullopt;
  if (i < w.size() && w[i].front() == '[') {
    std::string_view b = w[i];
    b.remove_prefix(1);
    if (!b.empty() && b.back() == ']') b.remove_suffix(1);
    d.bus = std::string(b);
    ++i;
  }
  std::string name;
  for (; i < w.size(); ++i) name += (name.empty() ? "" : " ") + std::string(w[i]);
  d.name = to_valid_utf8(name);
  return d;
}

}  // namespace

bool looks_like_nccl_tests_preamble(std::string_view text) {
  for (auto l : split_lines(text)) {
    const auto body = comment_body(l);
    if (body.rfind("nThread ", 0) == 0 || device_line(body)) return true;
    if (l.find("Test NCCL failure") != std::string_view::npos || l.find("Test CUDA failure") != std::string_view::npos) return true;
  }
  return false;
}

diagnose::Reading read_nccl_tests_preamble(std::string_view text, const std::string& source, bool has_rows) {
  core::count_parse("nccl_tests_header", text);
  diagnose::Reading r;
  const auto lines = split_lines(text);
  std::vector<Device> devices;
  std::optional<long long> per_process;
  std::size_t per_process_line = 0;
  bool list_closed = has_rows;  // something nccl-tests prints after its device list followed it
  bool in_list = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string_view l = lines[i];
    const std::size_t n = i + 1;
    const auto body = comment_body(l);
    if (auto d = device_line(body)) {
      d->line = n;
      d->text = l;
      devices.push_back(std::move(*d));
      in_list = true;
      continue;
    }
    if (in_list && (body.empty() || l.find("failure") != std::string_view::npos || body.find("size") != std::string_view::npos)) {
      list_closed = true;
      in_list = false;
    }
    if (body.rfind("nThread ", 0) == 0) {
      auto w = words(body);
      std::optional<long long> t, g;
      for (std::size_t k = 0; k + 1 < w.size(); ++k) {
        if (w[k] == "nThread") t = number(w[k + 1]);
        if (w[k] == "nGpus") g = number(w[k + 1]);
      }
      if (t && g && !per_process) {
        per_process = *t * *g;
        per_process_line = n;
      }
      continue;
    }
    // "# nccl-tests version 2.17.8 nccl-headers=23004 nccl-library=23004": NCCL_VERSION_CODE = major·10000 +
    // minor·100 + patch since NCCL 2.9.
    if (auto p = body.find("nccl-library="); p != std::string_view::npos) {
      if (auto code = leading_decimal(body.substr(p + 13)); code && code->first >= 20900 && code->first < 1000000)
        r.facts.add(diagnose::NcclVersion{fmt::format("{}.{}.{}", code->first / 10000, code->first / 100 % 100, code->first % 100)},
                    at(source, n, l));
      continue;
    }
    // Failure lines: "host-a: Test NCCL failure common.cu:777 'unhandled system error'".
    for (std::string_view kind : {"Test NCCL failure", "Test CUDA failure"}) {
      const auto p = l.find(kind);
      if (p == std::string_view::npos) continue;
      diagnose::NcclFailure f;
      f.reporter = "nccl-tests";
      f.phase = has_rows ? "collective" : "init";
      const auto q = l.find('\'', p);
      const auto q2 = q == std::string_view::npos ? q : l.find('\'', q + 1);
      if (q != std::string_view::npos && q2 != std::string_view::npos) f.name = to_valid_utf8(trim_blanks(l.substr(q + 1, q2 - q - 1)));
      if (f.name.empty()) f.name = std::string(kind == "Test CUDA failure" ? "CUDA failure" : "NCCL failure");
      if (kind == "Test CUDA failure") f.name = "CUDA: " + f.name;
      if (f.name.find("system error") != std::string::npos) f.code = 2;
      else if (f.name.find("unhandled cuda error") != std::string::npos) f.code = 1;
      else if (f.name.find("internal error") != std::string::npos) f.code = 3;
      else if (f.name.find("invalid usage") != std::string::npos) f.code = 5;
      else if (f.name.find("remote error") != std::string::npos) f.code = 6;
      r.facts.add(std::move(f), at(source, n, l));
      break;
    }
    // A command line that ran a test program ("# NCCL_DEBUG=INFO CUDA_VISIBLE_DEVICES=1,2 ./build/all_reduce_perf …",
    // "mpirun -np 4 … ./build/alltoall_perf …").
    if (l.find("_perf") != std::string_view::npos && l.find("Collective test") == std::string_view::npos) {
      std::string_view cmd = trim_blanks(l);
      while (!cmd.empty() && (cmd.front() == '#' || cmd.front() == '$')) cmd = trim_blanks(cmd.substr(1));
      auto c = read_command_line(cmd, source, n);
      r.facts.append(std::move(c.facts));
      for (auto& note : c.notes) r.notes.push_back(std::move(note));
    }
  }
  if (devices.empty()) {
    if (per_process) {
      diagnose::WorldShape w;
      w.gpus_per_process = static_cast<int>(*per_process);
      w.basis = "nccl-tests preamble (nThread × nGpus per process)";
      r.facts.add(std::move(w), at(source, per_process_line, lines[per_process_line - 1]));
    }
    return r;
  }
  // A run that printed its device list and then neither a result nor an error: it hung, was stopped, or the paste
  // was cut there.
  bool failed = false;
  for (const auto& f : r.facts.all()) failed |= std::holds_alternative<diagnose::NcclFailure>(f.value);
  if (!has_rows && !failed && !devices.back().name.empty())
    r.facts.add(diagnose::Stall{fmt::format("nccl-tests printed its device list ({} rank(s)) and no result row after it",
                                            devices.size())},
                at(source, devices.back().line, devices.back().text));
  std::set<std::pair<std::string, long long>> processes;
  std::vector<std::string> hosts;
  long long max_rank = -1;
  for (const auto& d : devices) {
    diagnose::GpuSeen g;
    g.name = d.name;
    g.index = static_cast<int>(*d.device);
    if (!d.bus.empty()) g.bus_id = d.bus;
    if (!d.host.empty()) g.host = d.host;
    g.rank = static_cast<int>(d.rank);
    if (!g.name.empty() || g.bus_id) r.facts.add(std::move(g), at(source, d.line, d.text));
    if (d.pid) processes.insert({d.host, *d.pid});
    if (!d.host.empty() && std::find(hosts.begin(), hosts.end(), d.host) == hosts.end()) hosts.push_back(d.host);
    max_rank = std::max(max_rank, d.rank);
  }
  // A list whose last line lost its name, or that the text ends inside, may be cut: its rank count is no world size.
  const bool last_cut = devices.back().name.empty();
  const bool complete = list_closed && !last_cut && static_cast<long long>(devices.size()) == max_rank + 1 &&
                        (!per_process || static_cast<long long>(devices.size()) % *per_process == 0);
  diagnose::WorldShape w;
  w.hosts = hosts;
  if (per_process) w.gpus_per_process = static_cast<int>(*per_process);
  if (complete) {
    w.ranks = static_cast<int>(devices.size());
    if (!processes.empty()) w.processes = static_cast<int>(processes.size());
    w.nodes = static_cast<int>(hosts.empty() ? 1 : hosts.size());
    w.basis = fmt::format("nccl-tests device list: {} rank(s) in {} process(es) on {}", devices.size(), processes.size(),
                          hosts.size() == 1 ? hosts.front() : fmt::format("{} hosts", hosts.size()));
  } else {
    w.basis = fmt::format("nccl-tests device list, cut after {} rank(s): the world size is not in it", devices.size());
    r.notes.push_back(fmt::format("the device list ends at line {} without what follows it: it may be cut, so its {} rank(s) "
                                  "are not taken as the world size",
                                  devices.back().line, devices.size()));
  }
  r.facts.add(std::move(w), at(source, devices.front().line, devices.front().text));
  return r;
}

}  // namespace scalescope::analyze
