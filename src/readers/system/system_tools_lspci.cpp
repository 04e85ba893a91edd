// lspci: device headers ("03:00.0 PCI bridge: PLX Technology, Inc. PEX 8747 … (rev ca) (prog-if 00 [Normal
// decode])"), the LnkCap / LnkSta / ACSCtl lines of -vv / -vvv (or a grep of them, with or without their headers),
// and the -tv tree. Formats as printed by pciutils 3.x (e.g. the NVIDIA/nccl#304 and linux-pci threads' -vvv pastes;
// "LnkSta:\tSpeed 8GT/s (ok), Width x8 (downgraded)" from newer pciutils, "LnkSta:\tSpeed 8GT/s, Width x16, TrErr-
// …" from older ones).

#include <cctype>
#include <cmath>

#include "text/log_text.h"
#include "readers/system/system_tools_internal.h"

namespace scalescope::analyze::system_tools_detail {
namespace {

struct Device {
  std::string address;                 // "03:00.0" as printed; "" when the text gives none
  std::optional<std::string> name;     // "PLX Technology, Inc. PEX 8747 …" (class, revision and prog-if cut)
  std::string device_class;            // "PCI bridge"
};

// PCIe generation of a transfer rate in GT/s: 2.5 → 1, 5 → 2, 8 → 3, 16 → 4, 32 → 5, 64 → 6.
std::optional<int> generation(double gts) {
  static constexpr double kRates[] = {2.5, 5, 8, 16, 32, 64};
  for (int g = 0; g < 6; ++g)
    if (std::fabs(gts - kRates[g]) < 0.05) return g + 1;
  return std::nullopt;
}

struct LinkFields {
  std::optional<int> gen, width;
  bool speed_unknown = false;
  bool downgraded = false, ok = false;
};

// "Port #0, Speed 8GT/s, Width x16, ASPM L0s L1, …" or "Speed 2.5GT/s (downgraded), Width x8 (downgraded)".
LinkFields parse_link(std::string_view rest) {
  LinkFields f;
  if (const std::size_t s = rest.find("Speed "); s != std::string_view::npos) {
    const std::string_view after = rest.substr(s + 6);
    if (const auto n = leading_number(after)) {
      std::string_view unit = trim_blanks(after.substr(n->second));
      if (starts_with(unit, "GT/s")) f.gen = generation(n->first);
    } else if (istarts_with(trim_blanks(after), "unknown")) {
      f.speed_unknown = true;
    }
  }
  if (const std::size_t w = rest.find("Width x"); w != std::string_view::npos) {
    if (const auto n = leading_int(rest.substr(w + 7)); n && *n > 0) f.width = *n;
  }
  f.downgraded = rest.find("(downgraded)") != std::string_view::npos;
  f.ok = rest.find("(ok)") != std::string_view::npos;
  return f;
}

struct LinkRecord {
  bool has_cap = false, has_sta = false;
  LinkFields cap, sta;
  const Line* cap_line = nullptr;
  const Line* sta_line = nullptr;
};

// "(rev ca)", "(prog-if 00 [Normal decode])" and "[10b5:8747]" are cut from the end of a device name.
std::string clean_name(std::string_view name) {
  for (bool cut = true; cut;) {
    cut = false;
    name = trim_blanks(name);
    for (std::string_view marker : {std::string_view(" (prog-if "), std::string_view(" (rev ")}) {
      const std::size_t at = name.rfind(marker);
      if (at != std::string_view::npos && at > 0) {
        name = name.substr(0, at);
        cut = true;
      }
    }
    // a trailing "[vvvv:dddd]" (lspci -nn)
    if (name.size() > 12 && name.back() == ']') {
      const std::size_t open = name.rfind(" [");
      if (open != std::string_view::npos && name.size() - open == 12 && name[open + 6] == ':') {
        name = name.substr(0, open);
        cut = true;
      }
    }
  }
  return std::string(name);
}

// A device header: "03:00.0 PCI bridge: PLX …", "0000:3b:00.0 3D controller [0302]: NVIDIA …", or a bare "31:00.0".
// `with_class` says whether it names a class (a bare address says nothing about the tool by itself).
std::optional<Device> parse_header(std::string_view t, bool& with_class) {
  with_class = false;
  const std::size_t len = pci_address_length(t);
  if (len == 0) return std::nullopt;
  Device d;
  d.address = std::string(t.substr(0, len));
  std::string_view rest = t.substr(len);
  if (rest.empty()) return d;
  if (!is_blank(rest.front())) return std::nullopt;
  rest = trim_blanks(rest);
  const std::size_t colon = rest.find(": ");
  if (colon == std::string_view::npos || colon == 0 || colon > 60) return std::nullopt;
  std::string_view cls = rest.substr(0, colon);
  if (const std::size_t b = cls.find(" ["); b != std::string_view::npos) cls = cls.substr(0, b);
  if (cls.empty()) return std::nullopt;
  for (char c : cls)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == ' ' || c == '-' || c == '/' || c == '(' || c == ')'))
      return std::nullopt;
  if (!std::isalnum(static_cast<unsigned char>(cls.front()))) return std::nullopt;
  d.device_class = std::string(cls);
  const std::string name = clean_name(rest.substr(colon + 2));
  if (!name.empty()) d.name = name;
  with_class = true;
  return d;
}

// A line of `lspci -t(v)`: "-[0000:00]-+-00.0  Intel …", " +-01.1-[43-53]--+-00.0-[44-53]--…", " |  \-03.0  Red Hat, Inc.
// Virtio network device". Gives the name of the last device on the line ("" when the line names none).
bool tree_line(std::string_view t, std::string& name) {
  if (!(starts_with(t, "-[") || starts_with(t, "+-") || starts_with(t, "\\-") || starts_with(t, "|"))) return false;
  std::size_t last = std::string_view::npos;
  for (std::size_t i = 0; i + 5 <= t.size(); ++i) {
    if (t[i] == '-' && is_hex(t[i + 1]) && is_hex(t[i + 2]) && t[i + 3] == '.' && t[i + 4] >= '0' && t[i + 4] <= '7' &&
        (i + 5 == t.size() || t[i + 5] == ' ' || t[i + 5] == '-'))
      last = i + 5;
  }
  if (last == std::string_view::npos) {
    // "-[0000:00]-" alone (a root with its first device on the same line is the usual case, but be lenient)
    if (!(starts_with(t, "-[") || t.find("-[") != std::string_view::npos)) return false;
    name.clear();
    return t.find("]-") != std::string_view::npos;
  }
  name = std::string(trim_blanks(t.substr(last)));
  if (!name.empty() && name.front() == '-') name.clear();  // a bridge with its subtree on the same line
  return true;
}

// "Word words: …": the form of every lspci -vvv field line (so that an unindented paste of one keeps its device).
bool looks_like_field(std::string_view t) {
  const std::size_t colon = t.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon > 40) return false;
  if (!std::isalpha(static_cast<unsigned char>(t.front()))) return false;
  for (std::size_t i = 0; i < colon; ++i) {
    const char c = t[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == ' ' || c == '/' || c == '_' || c == '-' || c == '(' ||
          c == ')' || c == '.' || c == '[' || c == ']' || c == '#'))
      return false;
  }
  return true;
}

// "EgressCtrl- DirectTrans+": flags only, as a wrapped lspci line continues.
bool flags_only(std::string_view t) {
  const auto w = words(t);
  if (w.empty()) return false;
  for (auto x : w)
    if (x.size() < 2 || (x.back() != '+' && x.back() != '-')) return false;
  return true;
}

constexpr std::string_view kAcsBits[] = {"SrcValid", "TransBlk", "ReqRedir", "CmpltRedir", "UpstreamFwd",
                                         "EgressCtrl", "DirectTrans"};

// Reads "Name+" / "Name-" tokens of the ACS bits into `bits` (index as kAcsBits, -1 unread); how many were ACS bits,
// and whether every token was one.
std::pair<int, bool> read_acs_bits(std::string_view s, std::array<int, 7>& bits) {
  int read = 0;
  bool all = true;
  for (std::string_view w : words(s)) {
    if (w.size() < 2 || (w.back() != '+' && w.back() != '-')) {
      all = false;
      continue;
    }
    const std::string_view name = w.substr(0, w.size() - 1);
    bool known = false;
    for (std::size_t k = 0; k < 7; ++k) {
      if (name == kAcsBits[k]) {
        bits[k] = w.back() == '+' ? 1 : 0;
        known = true;
        ++read;
      }
    }
    all = all && known;
  }
  return {read, all};
}

std::string virtual_device_kind(std::string_view name) {
  if (icontains(name, "virtio")) return "virtio";
  if (icontains(name, "QEMU")) return "QEMU";
  if (icontains(name, "VMware")) return "VMware";
  if (icontains(name, "Hyper-V")) return "Hyper-V";
  if (icontains(name, "Xen Platform")) return "Xen";
  return "";
}

class LspciReader {
 public:
  explicit LspciReader(Scan& scan) : scan_(scan) {}

  void run(const std::vector<Line>& lines) {
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const Line& l = lines[i];
      const std::string_view t = l.text;
      if (t.empty() || is_prompt(t) || is_fence(t)) {
        reset();
        continue;
      }
      bool with_class = false;
      if (auto d = parse_header(t, with_class)) {
        flush();
        device_ = std::move(*d);
        has_device_ = true;
        if (with_class) {
          scan_.saw(Tool::lspci);
          header_facts(l);
        }
        continue;
      }
      std::string tree_name;
      if (tree_line(t, tree_name)) {
        scan_.saw(Tool::lspci);
        // A GPU of the tree (-tv names each device): "+-01.0  NVIDIA Corporation GA100 [A100 SXM4 80GB]". Its other
        // NVIDIA functions (NVSwitch, audio, USB, bridges) are not GPUs.
        if (icontains(tree_name, "NVIDIA") && !icontains(tree_name, "NVSwitch") && !icontains(tree_name, "Audio") &&
            !icontains(tree_name, "USB") && !icontains(tree_name, "bridge") && !icontains(tree_name, "Serial")) {
          diagnose::GpuSeen g;
          g.name = tree_name;
          scan_.add(std::move(g), l);
        }
        if (const std::string kind = virtual_device_kind(tree_name); !kind.empty())
          scan_.hypervisor("virtual PCI device (" + kind + "): " + tree_name, l, "pci:" + kind);
        continue;
      }
      if (starts_with(t, "LnkCap:")) {
        scan_.saw(Tool::lspci);
        link_cap(l, t.substr(7));
        continue;
      }
      if (starts_with(t, "LnkSta:")) {
        scan_.saw(Tool::lspci);
        link_sta(l, t.substr(7));
        continue;
      }
      if (starts_with(t, "ACSCtl:")) {
        scan_.saw(Tool::lspci);
        acs(lines, i);
        continue;
      }
      if (l.indent == 0 && !is_elision(t) && !looks_like_field(t) && !flags_only(t)) reset();
    }
    flush();
  }

 private:
  void reset() {
    flush();
    device_ = {};
    has_device_ = false;
  }

  void header_facts(const Line& l) {
    if (!device_.name) return;
    const std::string& cls = device_.device_class;
    const bool display = starts_with(cls, "VGA compatible controller") || starts_with(cls, "3D controller") ||
                         starts_with(cls, "Display controller");
    if (display && icontains(*device_.name, "NVIDIA")) {
      diagnose::GpuSeen g;
      g.name = *device_.name;
      g.bus_id = device_.address;
      scan_.add(std::move(g), l);
    }
    if (const std::string kind = virtual_device_kind(*device_.name); !kind.empty())
      scan_.hypervisor("virtual PCI device (" + kind + "): " + *device_.name, l, "pci:" + kind);
  }

  void link_cap(const Line& l, std::string_view rest) {
    if (record_.has_cap) flush();
    record_.has_cap = true;
    record_.cap = parse_link(rest);
    record_.cap_line = &l;
    if (!record_.cap.gen && !record_.cap.width && !record_.cap.speed_unknown)
      scan_.note(l, "LnkCap without a readable speed or width (cut line?)");
  }

  void link_sta(const Line& l, std::string_view rest) {
    if (record_.has_sta) flush();
    record_.has_sta = true;
    record_.sta = parse_link(rest);
    record_.sta_line = &l;
    if (!record_.sta.gen && !record_.sta.width && !record_.sta.speed_unknown && !record_.sta.downgraded)
      scan_.note(l, "LnkSta without a readable speed or width (cut line?)");
  }

  void flush() {
    if (!record_.has_cap && !record_.has_sta) return;
    diagnose::PcieLinkState p;
    p.device = has_device_ ? device_.address : "";
    if (has_device_) p.device_name = device_.name;
    if (record_.has_cap) {
      p.device_max_gen = record_.cap.gen;
      p.device_max_width = record_.cap.width;
    }
    if (record_.has_sta) {
      p.current_gen = record_.sta.gen;
      p.current_width = record_.sta.width;
      if (record_.sta.downgraded) p.downgraded = true;
      else if (record_.sta.ok) p.downgraded = false;
    }
    const Line* where = record_.sta_line ? record_.sta_line : record_.cap_line;
    const bool any = p.device_max_gen || p.device_max_width || p.current_gen || p.current_width || p.downgraded;
    if (any) scan_.add(std::move(p), *where);
    record_ = {};
  }

  void acs(const std::vector<Line>& lines, std::size_t& i) {
    const Line& l = lines[i];
    std::array<int, 7> bits;
    bits.fill(-1);
    read_acs_bits(l.text.substr(7), bits);
    auto unread = [&] {
      int n = 0;
      for (int b : bits) n += b < 0 ? 1 : 0;
      return n;
    };
    // A line wrapped by a mail client or a narrow terminal: "… UpstreamFwd+ \nEgressCtrl- DirectTrans-".
    if (unread() > 0 && i + 1 < lines.size()) {
      std::array<int, 7> more = bits;
      const auto [read, all] = read_acs_bits(lines[i + 1].text, more);
      if (read > 0 && all) {
        bits = more;
        ++i;
      }
    }
    const int missing = unread();
    if (missing == 7) {
      scan_.note(l, "ACSCtl line without readable bits; not read");
      return;
    }
    if (missing > 0) {
      std::string names;
      for (std::size_t k = 0; k < 7; ++k)
        if (bits[k] < 0) names += (names.empty() ? "" : ", ") + std::string(kAcsBits[k]);
      scan_.note(l, "ACSCtl line lacks " + names + " (cut line?); read as '-'");
    }
    diagnose::AcsControl a;
    a.device = has_device_ ? device_.address : "";
    if (has_device_) a.device_name = device_.name;
    a.src_valid = bits[0] == 1;
    a.trans_blk = bits[1] == 1;
    a.req_redir = bits[2] == 1;
    a.cmplt_redir = bits[3] == 1;
    a.upstream_fwd = bits[4] == 1;
    a.egress_ctrl = bits[5] == 1;
    a.direct_trans = bits[6] == 1;
    scan_.add(std::move(a), l);
  }

  Scan& scan_;
  Device device_;
  bool has_device_ = false;
  LinkRecord record_;
};

}  // namespace

void read_lspci(const std::vector<Line>& lines, Scan& scan) { LspciReader(scan).run(lines); }

}  // namespace scalescope::analyze::system_tools_detail
