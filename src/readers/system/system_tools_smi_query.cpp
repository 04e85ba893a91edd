// nvidia-smi -q (and -q -d …, and greps of its sections): per GPU block ("GPU 00000000:3B:00.0" then indented
// "Key : Value" lines and section names), the product name, "GPU Link Info" (PCIe Generation Max / Current /
// Device Current / Device Max / Host Max, Link Width Max / Current), Clocks / Max Clocks (SM), "GPU Power Readings"
// (driver ≥ 530: Average / Instantaneous Power Draw, Current Power Limit) or "Power Readings" (older: Power Draw,
// Power Limit, Enforced Power Limit), Temperature (GPU Current Temp), "Clocks Event Reasons" (driver ≥ 535) or
// "Clocks Throttle Reasons" (older), Utilization, "GPU Virtualization Mode", and "Attached GPUs". Formats as in
// leptonai/gpud's e2e/mock/nvidia-smi/test_data.go (driver 550), the GTX 1650 `nvidia-smi -a` paste of driver 450 and
// the `-q -d POWER` pastes of drivers 550–580 found in public repositories.
//
// Sections are found by indentation when the paste kept it, else by the nearest section name above (a paste whose
// indentation was stripped reads the same).

#include <cctype>

#include "text/log_text.h"
#include "readers/system/system_tools_internal.h"

namespace scalescope::analyze::system_tools_detail {
namespace {

bool gpu_block_header(std::string_view t, std::string& bus) {
  if (!starts_with(t, "GPU ")) return false;
  const std::string_view rest = t.substr(4);
  const std::size_t len = pci_address_length(rest);
  if (len == 0 || len != rest.size() || rest.find(':') == 2) return false;  // needs the domain: "GPU 0000:3b:00.0"
  bus = std::string(rest);
  return true;
}

bool section_name(std::string_view t) {
  if (t.empty() || t.size() > 60 || !std::isupper(static_cast<unsigned char>(t.front()))) return false;
  for (char c : t)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == ' ' || c == '.' || c == '-' || c == '/' || c == '(' ||
          c == ')'))
      return false;
  return words(t).size() <= 7;
}

// Section names that only nvidia-smi -q prints: they start a block even without its "GPU …" line (a grep -A of one
// section).
bool query_only_section(std::string_view t) {
  return t == "GPU Link Info" || t == "PCIe Generation" || t == "Clocks Throttle Reasons" ||
         t == "Clocks Event Reasons" || t == "GPU Power Readings" || t == "Power Readings" || t == "Max Clocks";
}

bool not_available(std::string_view v) {
  return v.empty() || iequals(v, "N/A") || iequals(v, "Unknown") || iequals(v, "Unknown Error") ||
         iequals(v, "Not Supported") || iequals(v, "Not Available") || starts_with(v, "[");
}

struct Block {
  bool open = false;
  bool implicit = false;      // opened by a section name, without a "GPU …" line
  std::string label;          // "GPU 00000000:3B:00.0"; "" when implicit
  std::string bus;
  const Line* header = nullptr;  // the "GPU …" line, or the section name that opened an implicit block
  std::size_t base_indent = 0;
  bool reliable = false;      // the paste kept nvidia-smi's indentation
  std::vector<std::pair<std::size_t, std::string_view>> sections;

  std::optional<std::string> name;
  const Line* name_line = nullptr;
  std::optional<int> gen_max, gen_cur, gen_dev_max, gen_dev_cur, width_max, width_cur;
  const Line* link_line = nullptr;
  std::optional<double> sm, sm_max, power_avg, power_draw, power_inst, limit_cur, limit_enforced, limit_plain, temp;
  const Line* clock_line = nullptr;
  bool reasons_seen = false;
  std::vector<std::string> reasons;
  const Line* reason_line = nullptr;
  std::optional<bool> idle;
  std::optional<double> utilization;
};

class QueryReader {
 public:
  explicit QueryReader(Scan& scan) : scan_(scan) {}

  void run(const std::vector<Line>& lines) {
    for (const Line& l : lines) {
      const std::string_view t = l.text;
      if (t.empty() || is_elision(t)) continue;  // "[...]" where the paster left lines out
      if (is_prompt(t) || is_fence(t)) {
        flush();
        continue;
      }
      if (t.find("NVSMI LOG") != std::string_view::npos && starts_with(t, "==")) {
        flush();
        scan_.saw(Tool::smi_query);
        continue;
      }
      std::string bus;
      if (gpu_block_header(t, bus)) {
        flush();
        block_ = {};
        block_.open = true;
        block_.label = "GPU " + bus;
        block_.bus = bus;
        block_.header = &l;
        block_.base_indent = l.indent;
        continue;
      }
      const auto kv = split_key_value(t);
      if (kv && kv->first == "Attached GPUs") {
        flush();
        scan_.saw(Tool::smi_query);
        if (const auto n = small_int(kv->second)) {
          diagnose::GpuCount c;
          c.count = *n;
          c.scope = "exist";
          scan_.add(std::move(c), l);
        } else if (!not_available(kv->second)) {
          scan_.note(l, "\"Attached GPUs\" is not a number; not read");
        }
        continue;
      }
      if (block_.open && block_.reliable &&
          (l.indent < block_.base_indent || (l.indent == block_.base_indent && !block_.implicit)))
        flush();  // the block's indentation ended: other text follows
      if (!kv) {
        if (!section_name(t)) continue;
        if (!block_.open) {
          if (!query_only_section(t)) continue;
          block_ = {};
          block_.open = true;
          block_.implicit = true;
          block_.header = &l;
          block_.base_indent = l.indent;
        }
        if (l.indent > block_.base_indent) block_.reliable = true;
        while (!block_.sections.empty() && block_.sections.back().first >= l.indent) block_.sections.pop_back();
        block_.sections.emplace_back(l.indent, t);
        if (t == "GPU Link Info" && !block_.link_line) block_.link_line = &l;
        if (t == "Clocks Throttle Reasons" || t == "Clocks Event Reasons") block_.reasons_seen = true;
        continue;
      }
      if (!block_.open) continue;
      if (l.indent > block_.base_indent) block_.reliable = true;
      if (block_.reliable)
        while (!block_.sections.empty() && block_.sections.back().first >= l.indent) block_.sections.pop_back();
      value(l, kv->first, kv->second);
    }
    flush();
  }

 private:
  std::optional<int> read_int(const Line& l, std::string_view v) {
    if (not_available(v)) return std::nullopt;
    if (const auto n = leading_int(v)) return n;
    scan_.note(l, "'" + std::string(v) + "' is not a number; not read");
    return std::nullopt;
  }
  std::optional<double> read_number(const Line& l, std::string_view v) {
    if (not_available(v)) return std::nullopt;
    if (const auto n = leading_number(v)) return n->first;
    scan_.note(l, "'" + std::string(v) + "' is not a number; not read");
    return std::nullopt;
  }

  void value(const Line& l, std::string_view key, std::string_view v) {
    Block& b = block_;
    const std::string_view sec = b.sections.empty() ? std::string_view() : b.sections.back().second;
    if (key == "Product Name" && !b.implicit) {
      if (!not_available(v)) {
        b.name = std::string(v);
        b.name_line = &l;
      }
      return;
    }
    if (key == "Bus Id" && b.bus.empty() && !not_available(v)) {
      b.bus = std::string(v);
      return;
    }
    if (key == "Virtualization Mode" && !not_available(v)) {
      if (iequals(v, "Pass-Through") || iequals(v, "VGPU"))
        scan_.hypervisor("GPU virtualization mode " + std::string(v) + " (nvidia-smi -q)", l);
      return;
    }
    if (sec == "PCIe Generation") {
      std::optional<int>* slot = key == "Max"              ? &b.gen_max
                                 : key == "Current"        ? &b.gen_cur
                                 : key == "Device Max"     ? &b.gen_dev_max
                                 : key == "Device Current" ? &b.gen_dev_cur
                                                           : nullptr;
      if (slot) {
        *slot = read_int(l, v);
        if (!b.link_line) b.link_line = &l;
      }
      return;
    }
    if (sec == "Link Width") {
      std::optional<int>* slot = key == "Max" ? &b.width_max : key == "Current" ? &b.width_cur : nullptr;
      if (slot) {
        *slot = read_int(l, v);
        if (*slot && **slot <= 0) *slot = std::nullopt;
        if (!b.link_line) b.link_line = &l;
      }
      return;
    }
    if ((sec == "Clocks" || sec == "Max Clocks") && key == "SM") {
      (sec == "Clocks" ? b.sm : b.sm_max) = read_number(l, v);
      if (!b.clock_line) b.clock_line = &l;
      return;
    }
    if (sec == "GPU Power Readings" || sec == "Power Readings") {
      std::optional<double>* slot = key == "Average Power Draw"         ? &b.power_avg
                                    : key == "Power Draw"               ? &b.power_draw
                                    : key == "Instantaneous Power Draw" ? &b.power_inst
                                    : key == "Current Power Limit"      ? &b.limit_cur
                                    : key == "Enforced Power Limit"     ? &b.limit_enforced
                                    : key == "Power Limit"              ? &b.limit_plain
                                                                        : nullptr;
      if (slot) {
        *slot = read_number(l, v);
        if (!b.clock_line) b.clock_line = &l;
      }
      return;
    }
    if (sec == "Temperature" && key == "GPU Current Temp") {
      b.temp = read_number(l, v);
      if (!b.clock_line) b.clock_line = &l;
      return;
    }
    if (sec == "Clocks Throttle Reasons" || sec == "Clocks Event Reasons") {
      b.reasons_seen = true;
      if (key == "Idle") b.idle = iequals(v, "Active");
      if (iequals(v, "Active")) {
        b.reasons.emplace_back(key);
        if (!b.reason_line) b.reason_line = &l;
      }
      return;
    }
    if (sec == "Utilization" && iequals(key, "Gpu")) b.utilization = read_number(l, v);
  }

  void flush() {
    Block& b = block_;
    if (!b.open) return;
    const bool any_link = b.gen_max || b.gen_cur || b.gen_dev_max || b.gen_dev_cur || b.width_max || b.width_cur;
    const bool any_clock = b.sm || b.sm_max || b.power_avg || b.power_draw || b.power_inst || b.limit_cur ||
                           b.limit_enforced || b.limit_plain || b.temp || b.reasons_seen;
    if (b.name || any_link || any_clock) scan_.saw(Tool::smi_query);
    if (b.name) {
      diagnose::GpuSeen g;
      g.name = *b.name;
      if (!b.bus.empty()) g.bus_id = b.bus;
      scan_.add(std::move(g), *b.name_line);
    }
    if (any_link) {
      diagnose::PcieLinkState p;
      p.device = b.label;
      p.device_name = b.name;
      p.current_gen = b.gen_cur ? b.gen_cur : b.gen_dev_cur;
      p.max_gen = b.gen_max;
      p.device_max_gen = b.gen_dev_max;
      p.current_width = b.width_cur;
      p.max_width = b.width_max;
      if (b.idle) p.under_load = !*b.idle;
      else if (b.utilization) p.under_load = *b.utilization > 0;
      scan_.add(std::move(p), b.link_line ? *b.link_line : *b.header);
    }
    if (any_clock) {
      diagnose::GpuClocks c;
      c.gpu = b.label;
      c.sm_mhz = b.sm;
      c.max_sm_mhz = b.sm_max;
      c.power_w = b.power_avg ? b.power_avg : b.power_draw ? b.power_draw : b.power_inst;
      c.power_limit_w = b.limit_cur ? b.limit_cur : b.limit_enforced ? b.limit_enforced : b.limit_plain;
      c.temperature_c = b.temp;
      c.active_throttle_reasons = b.reasons;
      const Line* where = b.reason_line ? b.reason_line : (!b.implicit && b.header) ? b.header : b.clock_line;
      if (!where) where = b.header;
      if (where) scan_.add(std::move(c), *where);
    }
    block_ = {};
  }

  Scan& scan_;
  Block block_;
};

}  // namespace

void read_smi_query(const std::vector<Line>& lines, Scan& scan) { QueryReader(scan).run(lines); }

}  // namespace scalescope::analyze::system_tools_detail
