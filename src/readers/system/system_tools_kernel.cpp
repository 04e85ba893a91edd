// Kernel log and host facts: NVIDIA driver Xid lines ("NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python3, GPU has
// fallen off the bus."), the IOMMU's mode (dmesg "iommu: Default domain type: Passthrough (set via kernel command
// line)" / "Translated", the kernel command line's intel_iommu= / amd_iommu= / iommu=, "DMAR: IOMMU enabled"), and
// signs of a hypervisor (dmesg "Hypervisor detected: KVM", "Booting paravirtualized kernel on KVM", "DMI: QEMU
// Standard PC …", lscpu "Hypervisor vendor:", the "hypervisor" CPU flag, dmidecode "Manufacturer: QEMU" / "Product
// Name: VirtualBox"). Lines may carry any dmesg / syslog / journal prefix ("[ 0.718058] ", "host kernel: ", an ISO
// time); a line quoted in prose or source code (a backtick or quote before the marker) is not read. Formats as in
// the `dmesg | grep -i -e DMAR -e IOMMU` and guest-boot dmesg pastes of public threads.

#include "text/log_text.h"
#include "readers/system/system_tools_internal.h"

namespace scalescope::analyze::system_tools_detail {
namespace {

// Finds `marker` in `t` after a plain log prefix; the text after it, or nothing.
std::optional<std::string_view> after_marker(std::string_view t, std::string_view marker) {
  const std::size_t at = t.find(marker);
  if (at == std::string_view::npos || !plain_log_prefix(t.substr(0, at))) return std::nullopt;
  return t.substr(at + marker.size());
}

bool names_vm(std::string_view s) {
  static constexpr std::string_view kVm[] = {"QEMU", "KVM", "VMware", "VirtualBox", "Virtual Machine", "Amazon EC2",
                                             "Google Compute Engine", "OpenStack", "Xen", "Bochs", "Alibaba Cloud ECS",
                                             "BHYVE", "Parallels", "HVM domU"};
  for (auto k : kVm)
    if (s.find(k) != std::string_view::npos) return !(k == "Amazon EC2" && s.find(".metal") != std::string_view::npos);
  return false;
}

struct IommuEvidence {
  int rank = 0;            // 3: "Default domain type", 2: kernel command line, 1: "DMAR: IOMMU enabled/disabled"
  std::string mode;
  const Line* line = nullptr;
};

// The IOMMU mode a kernel command line sets, or "" when it sets none.
std::string command_line_mode(std::string_view cmdline) {
  bool pt = false, on = false, off = false;
  for (std::string_view w : words(cmdline)) {
    while (!w.empty() && (w.front() == '"' || w.front() == '\'')) w.remove_prefix(1);
    while (!w.empty() && (w.back() == '"' || w.back() == '\'')) w.remove_suffix(1);
    if (w == "iommu=pt" || w == "amd_iommu=pt") pt = true;
    else if (w == "intel_iommu=on" || w == "amd_iommu=on" || w == "iommu=on" || w == "iommu=force") on = true;
    else if (w == "intel_iommu=off" || w == "amd_iommu=off" || w == "iommu=off") off = true;
  }
  if (pt) return "passthrough";
  if (on) return "translated";
  if (off) return "off";
  return "";
}

class KernelReader {
 public:
  explicit KernelReader(Scan& scan) : scan_(scan) {}

  void run(const std::vector<Line>& lines) {
    for (const Line& l : lines) {
      const std::string_view t = l.text;
      if (t.size() < 8) continue;
      if (auto rest = after_marker(t, "NVRM: Xid")) xid(l, *rest);
      iommu(l, t);
      hypervisor(l, t);
    }
    if (best_.line) {
      diagnose::IommuMode m;
      m.mode = best_.mode;
      scan_.add(std::move(m), *best_.line);
    }
  }

 private:
  void xid(const Line& l, std::string_view rest) {
    rest = trim_blanks(rest);
    if (rest.empty() || rest.front() != '(') return;
    scan_.saw(Tool::kernel_log);
    const std::size_t close = rest.find(')');
    if (close == std::string_view::npos) {
      scan_.note(l, "Xid line without its device and code (cut line?); not read");
      return;
    }
    std::string_view bus = trim_blanks(rest.substr(1, close - 1));
    if (starts_with(bus, "PCI:")) bus.remove_prefix(4);
    std::string_view after = trim_blanks(rest.substr(close + 1));
    if (!after.empty() && after.front() == ':') after = trim_blanks(after.substr(1));
    const auto code = leading_int(after);
    if (!code) {
      scan_.note(l, "Xid line without its code (cut line?); not read");
      return;
    }
    std::size_t digits = 0;
    while (digits < after.size() && is_digit(after[digits])) ++digits;
    std::string_view text = trim_blanks(after.substr(digits));
    if (!text.empty() && text.front() == ',') text = trim_blanks(text.substr(1));
    // "pid=1234, name=python3, " and "pid='<unknown>', name=<unknown>, " come before the message.
    while (starts_with(text, "pid=") || starts_with(text, "name=")) {
      const std::size_t comma = text.find(", ");
      text = comma == std::string_view::npos ? std::string_view() : trim_blanks(text.substr(comma + 2));
    }
    diagnose::XidEvent x;
    x.bus_id = std::string(bus);
    x.code = *code;
    x.text = std::string(text);
    scan_.add(std::move(x), l);
  }

  void evidence(int rank, std::string mode, const Line& l) {
    scan_.saw(Tool::kernel_log);
    if (mode.empty() || rank < best_.rank) return;
    best_ = {rank, std::move(mode), &l};
  }

  void iommu(const Line& l, std::string_view t) {
    if (const std::size_t at = t.find("Default domain type:");
        at != std::string_view::npos && ends_with(t.substr(0, at), "iommu: ") && plain_log_prefix(t.substr(0, at))) {
      const auto w = words(t.substr(at + 20));
      if (!w.empty()) {
        if (w[0] == "Passthrough" || w[0] == "Identity") evidence(3, "passthrough", l);
        else if (w[0] == "Translated" || starts_with(w[0], "DMA")) evidence(3, "translated", l);
      }
      return;
    }
    if (auto rest = after_marker(t, "ommand line:")) {  // "Command line:" and "Kernel command line:"
      if (const std::string m = command_line_mode(*rest); !m.empty()) evidence(2, m, l);
      return;
    }
    if (starts_with(t, "BOOT_IMAGE=") || starts_with(t, "GRUB_CMDLINE_LINUX")) {
      if (const std::string m = command_line_mode(starts_with(t, "GRUB") ? t.substr(t.find('=') + 1) : t); !m.empty())
        evidence(2, m, l);
      return;
    }
    if (auto rest = after_marker(t, "DMAR: IOMMU ")) {
      if (starts_with(*rest, "enabled")) evidence(1, "translated", l);
      else if (starts_with(*rest, "disabled")) evidence(1, "off", l);
    }
  }

  void hypervisor(const Line& l, std::string_view t) {
    if (auto rest = after_marker(t, "Hypervisor detected:")) {
      const std::string_view what = trim_blanks(*rest);
      if (!what.empty()) scan_.hypervisor("Hypervisor detected: " + std::string(what), l);
      return;
    }
    if (auto rest = after_marker(t, "Booting paravirtualized kernel on ")) {
      const std::string_view what = trim_blanks(*rest);
      if (!what.empty() && !istarts_with(what, "bare hardware"))
        scan_.hypervisor("Booting paravirtualized kernel on " + std::string(what), l);
      return;
    }
    if (auto rest = after_marker(t, "DMI: ")) {
      std::string_view what = trim_blanks(*rest);
      if (const std::size_t bios = what.find(", BIOS"); bios != std::string_view::npos) what = what.substr(0, bios);
      if (names_vm(what)) scan_.hypervisor("DMI: " + std::string(what), l);
      return;
    }
    if (starts_with(t, "Hypervisor vendor:")) {
      const std::string_view what = trim_blanks(t.substr(18));
      if (!what.empty()) scan_.hypervisor("Hypervisor vendor: " + std::string(what), l);
      return;
    }
    if (istarts_with(t, "flags")) {  // lscpu "Flags:", /proc/cpuinfo "flags\t\t:"
      const auto kv = split_key_value(t);
      if (kv && iequals(kv->first, "flags")) {
        for (std::string_view w : words(kv->second))
          if (w == "hypervisor") {
            scan_.hypervisor("CPU flag 'hypervisor' (lscpu / cpuinfo)", l);
            break;
          }
      }
      return;
    }
    if (starts_with(t, "Manufacturer:") || starts_with(t, "Product Name:")) {  // dmidecode -t system
      const auto kv = split_key_value(t);
      if (kv && names_vm(kv->second)) scan_.hypervisor(std::string(kv->first) + ": " + std::string(kv->second), l);
    }
  }

  Scan& scan_;
  IommuEvidence best_;
};

}  // namespace

void read_kernel_log(const std::vector<Line>& lines, Scan& scan) { KernelReader(scan).run(lines); }

}  // namespace scalescope::analyze::system_tools_detail
