// nvidia-smi -L ("GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-…)", MIG lines under it), nvidia-smi nvlink -s / --status
// ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-…)" then "\t Link 0: 26.562 GB/s" or "\t Link 1: <inactive>"), nvlink -e
// ("\t Link 0: Replay Errors: 0"), and nvidia-smi topo -p2p r|w|n|a|p (a GPU×GPU matrix of OK / NS / CNS / GNS / TNS /
// U / DR cells with its Legend; a topo -m matrix before it is left to the topo -m parser). Formats as in
// stas00/ml-engineering (nvlink -e / --status of an H100 node), the V100 `nvidia-smi nvlink --status` pastes of public
// issues, and the topo -p2p matrices of ../shared/corpus/topo (AutoDL 2x2080 Ti, club-3090 #1125).

#include "text/log_text.h"
#include "readers/system/system_tools_internal.h"

namespace scalescope::analyze::system_tools_detail {
namespace {

// ───────────────────────── nvidia-smi -L and nvlink ─────────────────────────

struct GpuLine {
  int index = 0;
  std::string name;
  bool uuid = false;        // "(UUID: …)" follows the name (nvidia-smi -L always prints it)
  bool nvml_note = false;   // "NVML: Unable to retrieve NVLink information …" on the same line
};

// "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-…)", "GPU 0: Tesla V100-SXM2-32GB", "GPU 0:".
std::optional<GpuLine> parse_gpu_line(std::string_view t) {
  if (!starts_with(t, "GPU ")) return std::nullopt;
  std::string_view rest = t.substr(4);
  const auto idx = leading_int(rest);
  if (!idx) return std::nullopt;
  std::size_t digits = 0;
  while (digits < rest.size() && is_digit(rest[digits])) ++digits;
  rest = rest.substr(digits);
  if (rest.empty() || rest.front() != ':') return std::nullopt;
  rest = trim_blanks(rest.substr(1));
  GpuLine g;
  g.index = *idx;
  if (const std::size_t nvml = rest.find("NVML:"); nvml != std::string_view::npos) {
    g.nvml_note = true;
    rest = trim_blanks(rest.substr(0, nvml));
  }
  if (const std::size_t u = rest.find("(UUID:"); u != std::string_view::npos) {
    g.uuid = true;
    rest = trim_blanks(rest.substr(0, u));
  }
  g.name = std::string(rest);
  return g;
}

// "Link 3: …" → {3, "…"}.
std::optional<std::pair<int, std::string_view>> parse_link_line(std::string_view t) {
  if (!starts_with(t, "Link ")) return std::nullopt;
  std::string_view rest = t.substr(5);
  const auto n = leading_int(rest);
  if (!n) return std::nullopt;
  std::size_t digits = 0;
  while (digits < rest.size() && is_digit(rest[digits])) ++digits;
  rest = rest.substr(digits);
  if (rest.empty() || rest.front() != ':') return std::nullopt;
  return std::pair{*n, trim_blanks(rest.substr(1))};
}

bool nvml_no_nvlink(std::string_view t) { return icontains(t, "Unable to retrieve NVLink information"); }

bool mig_line(std::string_view t) { return starts_with(t, "MIG ") && t.find("(UUID:") != std::string_view::npos; }

class ListReader {
 public:
  explicit ListReader(Scan& scan) : scan_(scan) {}

  void run(const std::vector<Line>& lines) {
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const Line& l = lines[i];
      const std::string_view t = l.text;
      if (t.empty() || is_elision(t)) continue;
      if (auto g = parse_gpu_line(t)) {
        if (g->nvml_note || followed_by_links(lines, i)) {
          end_list();
          nvlink_gpu_ = "GPU " + std::to_string(g->index);
          nvlink_name_ = g->name.empty() ? std::nullopt : std::optional<std::string>(g->name);
          if (g->nvml_note) no_nvlink(l);
          continue;
        }
        if (g->uuid) {
          list_entry(l, *g);
          continue;
        }
      }
      if (mig_line(t)) continue;
      if (auto link = parse_link_line(t)) {
        end_list();
        link_line(l, link->first, link->second);
        continue;
      }
      if (nvml_no_nvlink(t)) {
        end_list();
        no_nvlink(l);
        continue;
      }
      // anything else ends a list and a GPU's links
      end_list();
      nvlink_gpu_.clear();
      nvlink_name_.reset();
    }
    end_list();
  }

 private:
  static bool followed_by_links(const std::vector<Line>& lines, std::size_t i) {
    for (std::size_t j = i + 1; j < lines.size() && j < i + 8; ++j) {
      const std::string_view t = lines[j].text;
      if (t.empty() || is_elision(t) || t == "[snip]") continue;
      return parse_link_line(t).has_value() || nvml_no_nvlink(t);
    }
    return false;
  }

  void list_entry(const Line& l, const GpuLine& g) {
    scan_.saw(Tool::smi_list);
    if (!list_.empty() && g.index <= last_index_) end_list();  // "GPU 0" again: another host's list
    list_.push_back(&l);
    last_index_ = g.index;
    diagnose::GpuSeen s;
    s.name = g.name;
    s.index = g.index;
    scan_.add(std::move(s), l);
  }

  void end_list() {
    if (list_.empty()) return;
    diagnose::GpuCount c;
    c.count = static_cast<int>(list_.size());
    c.scope = "exist";
    const std::string summary = "nvidia-smi -L lists " + std::to_string(list_.size()) + " GPU" +
                                (list_.size() == 1 ? "" : "s") + " (lines " + std::to_string(list_.front()->number) +
                                "-" + std::to_string(list_.back()->number) + ")";
    scan_.add(std::move(c), diagnose::at(scan_.source(), 0, summary));
    list_.clear();
    last_index_ = -1;
  }

  void no_nvlink(const Line& l) {
    scan_.saw(Tool::smi_nvlink);
    scan_.note(l, "nvidia-smi reports no NVLink information" +
                      (nvlink_gpu_.empty() ? std::string() : " for " + nvlink_gpu_) + " (" + excerpt(l.text, 100) +
                      "); no NvlinkState read");
  }

  void link_line(const Line& l, int link, std::string_view rest) {
    if (iequals(rest, "<inactive>") || iequals(rest, "inactive")) {
      scan_.saw(Tool::smi_nvlink);
      diagnose::NvlinkState s;
      s.gpu = nvlink_gpu_;
      s.gpu_name = nvlink_name_;
      s.link = link;
      s.active = false;
      scan_.add(std::move(s), l);
      return;
    }
    if (const auto n = leading_number(rest)) {
      const std::string_view unit = trim_blanks(rest.substr(n->second));
      if (starts_with(unit, "GB/s") && n->first >= 0) {
        scan_.saw(Tool::smi_nvlink);
        diagnose::NvlinkState s;
        s.gpu = nvlink_gpu_;
        s.gpu_name = nvlink_name_;
        s.link = link;
        s.active = n->first > 0;
        s.gbps = n->first;
        scan_.add(std::move(s), l);
        return;
      }
    }
    // error counters: "Replay Errors: 0", or several on one line: "Replay Errors: 142, Recovery Errors: 3, …"
    bool any = false;
    std::string_view left = rest;
    while (!left.empty()) {
      const std::size_t comma = left.find(", ");
      const std::string_view part = comma == std::string_view::npos ? left : left.substr(0, comma);
      left = comma == std::string_view::npos ? std::string_view() : left.substr(comma + 2);
      const auto kv = split_key_value(part);
      if (!kv) continue;
      const auto value = parse_decimal(kv->second);
      if (!value) {
        if (!iequals(kv->second, "N/A")) scan_.note(l, "NVLink counter '" + std::string(part) + "' is not a count; not read");
        continue;
      }
      scan_.saw(Tool::smi_nvlink);
      diagnose::NvlinkCounter c;
      c.gpu = nvlink_gpu_;
      c.link = link;
      c.counter = std::string(kv->first);
      c.value = *value;
      scan_.add(std::move(c), l);
      any = true;
    }
    if (!any && !rest.empty() && rest.find(':') == std::string_view::npos)
      scan_.note(l, "NVLink line not understood ('" + std::string(excerpt(rest, 60)) + "'); not read");
  }

  Scan& scan_;
  std::vector<const Line*> list_;
  int last_index_ = -1;
  std::string nvlink_gpu_;
  std::optional<std::string> nvlink_name_;
};

// ───────────────────────── nvidia-smi topo -p2p ─────────────────────────

bool gpu_label(std::string_view w) {
  if (w.size() < 4 || !starts_with(w, "GPU")) return false;
  for (std::size_t i = 3; i < w.size(); ++i)
    if (!is_digit(w[i])) return false;
  return w.size() <= 6;
}

// Blank- and '|'-separated cells (a markdown table of the matrix reads too).
std::vector<std::string_view> cells(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  auto sep = [](char c) { return is_blank(c) || c == '|'; };
  while (i < s.size()) {
    while (i < s.size() && sep(s[i])) ++i;
    const std::size_t start = i;
    while (i < s.size() && !sep(s[i])) ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

// The access of a command "nvidia-smi topo -p2p r" / "--p2pstatus=w" on `t`, or "" when `t` holds none.
std::string p2p_access(std::string_view t) {
  std::size_t at = t.find("--p2pstatus");
  std::size_t skip = 11;
  if (at == std::string_view::npos) {
    at = t.find("-p2p");
    skip = 4;
  }
  if (at == std::string_view::npos) return "";
  std::string_view rest = t.substr(at + skip);
  if (!rest.empty() && (rest.front() == '=' || rest.front() == ' ')) rest.remove_prefix(1);
  rest = trim_blanks(rest);
  if (rest.empty() || (rest.size() > 1 && !is_blank(rest[1]))) return "?";
  switch (rest.front()) {
    case 'r': return "read";
    case 'w': return "write";
    case 'n': return "nvlink";
    case 'a': return "atomics";
    case 'p': return "prop";
    default: return "?";
  }
}

class P2pReader {
 public:
  explicit P2pReader(Scan& scan) : scan_(scan) {}

  void run(const std::vector<Line>& lines) {
    legend(lines);
    for (const Line& l : lines) {
      const std::string_view t = l.text;
      if (t.empty()) continue;
      if (const std::string a = p2p_access(t); !a.empty() && t.find("topo") != std::string_view::npos) {
        end_matrix();
        access_ = a == "?" ? "" : a;
        continue;
      }
      const auto c = cells(t);
      if (c.empty()) continue;
      bool all_labels = true;
      for (auto w : c) all_labels = all_labels && gpu_label(w);
      if (all_labels) {
        end_matrix();
        labels_.assign(c.begin(), c.end());
        continue;
      }
      if (c.size() >= 2 && gpu_label(c[0]) && row(l, c)) continue;
      if (rows_ > 0 || !labels_.empty()) end_matrix();
    }
  }

 private:
  void legend(const std::vector<Line>& lines) {
    for (const Line& l : lines) {
      const std::string_view t = l.text;
      const std::size_t eq = t.find('=');
      if (eq == std::string_view::npos || eq == 0 || eq > 6) continue;
      const std::string_view token = trim_blanks(t.substr(0, eq));
      const std::string_view what = trim_blanks(t.substr(eq + 1));
      if (token.empty() || token.size() > 4) continue;
      bool upper = true;
      for (char ch : token) upper = upper && ch >= 'A' && ch <= 'Z';
      if (!upper) continue;
      if (icontains(what, "not supported") || iequals(what, "Status Ok") || istarts_with(what, "Disabled by") ||
          iequals(what, "Unknown")) {
        tokens_.insert(std::string(token));
        if (iequals(what, "Chipset not supported") || iequals(what, "Status Ok")) scan_.saw(Tool::smi_p2p);
      }
    }
  }

  bool p2p_token(std::string_view w) const { return w == "X" || tokens_.count(std::string(w)) > 0; }

  // One row "GPU0   X       OK      CNS": true when it is a -p2p row (and read).
  bool row(const Line& l, const std::vector<std::string_view>& c) {
    for (std::size_t k = 1; k < c.size(); ++k)
      if (!p2p_token(c[k])) return false;
    std::vector<std::string> labels = labels_;
    if (labels.empty()) {  // no header (cut): columns are GPU0, GPU1, … in order
      for (std::size_t k = 0; k + 1 < c.size(); ++k) labels.push_back("GPU" + std::to_string(k));
    }
    const std::size_t n = c.size() - 1;
    if (n > labels.size()) return false;
    const std::string me(c[0]);
    std::size_t self = labels.size();
    for (std::size_t k = 0; k < labels.size(); ++k)
      if (labels[k] == me) self = k;
    if (self < n && c[self + 1] != "X") return false;  // the diagonal of a -p2p matrix is X
    scan_.saw(Tool::smi_p2p);
    ++rows_;
    if (n < labels.size())
      scan_.note(l, "P2P matrix row of " + std::to_string(n) + " cells where the header names " +
                        std::to_string(labels.size()) + " GPUs (cut line?); the rest not read");
    for (std::size_t k = 0; k < n; ++k) {
      if (k == self || c[k + 1] == "X" || labels[k] == me) continue;
      diagnose::P2pStatus s;
      s.a = me;
      s.b = labels[k];
      s.status = std::string(c[k + 1]);
      s.access = access_;
      scan_.add(std::move(s), l);
    }
    return true;
  }

  void end_matrix() {
    if (rows_ > 0) access_.clear();  // the next matrix names its own command (or none)
    rows_ = 0;
    labels_.clear();
  }

  Scan& scan_;
  std::set<std::string> tokens_{"OK", "NS", "CNS", "GNS", "TNS", "U", "DR"};
  std::vector<std::string> labels_;
  std::size_t rows_ = 0;
  std::string access_;
};

}  // namespace

void read_smi_lists(const std::vector<Line>& lines, Scan& scan) { ListReader(scan).run(lines); }
void read_smi_p2p(const std::vector<Line>& lines, Scan& scan) { P2pReader(scan).run(lines); }

}  // namespace scalescope::analyze::system_tools_detail
