#pragma once
// Private to the system-tools reader (analyze/system_tools*.cpp): the lines of one text as every tool's reader sees
// them, the text helpers they share, and one reader per tool. Not part of scalescope's interface; include it only
// from those files. Pure; nothing here throws.

#include <array>
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "facts/facts.h"

namespace scalescope::analyze::system_tools_detail {

/// One line of the text as the tool readers see it.
struct Line {
  std::size_t number = 0;   ///< 1-based line number in the file
  std::string_view raw;     ///< the line as in the file (provenance)
  std::string_view body;    ///< without e-mail / markdown quote markers ("> ", "> > "), blanks kept
  std::string_view text;    ///< body without leading and trailing blanks
  std::size_t indent = 0;   ///< columns of leading blanks in body (a tab advances to the next multiple of 8)
};

/// Splits `text` into Lines (CR, LF and CRLF line ends; quote markers removed).
std::vector<Line> make_lines(std::string_view text);

/// The tools, in the order detect_system_tools names them.
enum class Tool : std::size_t {
  lspci,
  smi_query,
  smi_nvlink,
  smi_p2p,
  smi_list,
  kernel_log,
  p2p_test,
  ibstat,
  hypervisor,
  smi_table,
  iperf,
  health_check,
  count_
};
const char* tool_name(Tool t);

/// What the readers found in one text: the facts (in the order read; read_system_tools sorts them by line), notes on
/// damaged or ambiguous lines, and which tools' output was recognised.
class Scan {
 public:
  explicit Scan(std::string source) : source_(std::move(source)) {}

  void add(diagnose::FactValue value, const Line& line);
  void add(diagnose::FactValue value, diagnose::Provenance where);
  /// A note on `line` ("line 12: …"); at most 64 notes are kept, then one saying how many more there were.
  void note(const Line& line, const std::string& message);
  void note(const std::string& message);
  void saw(Tool t) { seen_[static_cast<std::size_t>(t)] = true; }
  bool seen(Tool t) const { return seen_[static_cast<std::size_t>(t)]; }
  /// A sign of a hypervisor; one fact per `key` (default: `what` itself), from the first line that shows it.
  void hypervisor(const std::string& what, const Line& line, const std::string& key = "");

  const std::string& source() const { return source_; }
  std::vector<diagnose::Fact>& facts() { return facts_; }
  std::vector<std::string>& notes() { return notes_; }

 private:
  std::string source_;
  std::vector<diagnose::Fact> facts_;
  std::vector<std::string> notes_;
  std::size_t dropped_notes_ = 0;
  std::array<bool, static_cast<std::size_t>(Tool::count_)> seen_{};
  std::set<std::string> hypervisors_;
};

// ───────────────────────── text helpers ─────────────────────────

bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);
bool iequals(std::string_view a, std::string_view b);
bool istarts_with(std::string_view s, std::string_view prefix);
/// Position of `needle` in `s` ignoring ASCII case, or npos.
std::size_t ifind(std::string_view s, std::string_view needle);
bool icontains(std::string_view s, std::string_view needle);
bool is_blank(char c);
bool is_hex(char c);
bool is_digit(char c);

/// Blank-separated words of `s` (spaces and tabs).
std::vector<std::string_view> words(std::string_view s);
/// "Key : Value" → {"Key", "Value"} (both trimmed) at the first ':'; nothing when there is no ':' or no key.
std::optional<std::pair<std::string_view, std::string_view>> split_key_value(std::string_view s);

/// A decimal number making up all of `s` ("26.562", "-3", "1e3"); nothing otherwise.
std::optional<double> number(std::string_view s);
/// The decimal number `s` starts with (leading blanks skipped) and the characters it took; nothing when none.
std::optional<std::pair<double, std::size_t>> leading_number(std::string_view s);
/// A non-negative integer making up all of `s`, at most 9 digits.
std::optional<int> small_int(std::string_view s);
/// The non-negative integer `s` starts with (at most 9 digits).
std::optional<int> leading_int(std::string_view s);

/// Length of the PCI address `s` starts with: [domain (4 or 8 hex digits) ":"] bus ":" device "." function
/// ("03:00.0", "0000:3b:00.0", "00000000:06:00.0"); 0 when it does not start with one.
std::size_t pci_address_length(std::string_view s);

/// A shell prompt line ("$ lspci -vvv", "root@host:~# nvidia-smi -q", "(base) user@host:~$ …", "[user@host ~]$ …").
bool is_prompt(std::string_view text);
/// A markdown code fence ("```", "```text").
bool is_fence(std::string_view text);
/// A line that stands for lines left out of a paste ("...", "[...]", "…", "[snip]").
bool is_elision(std::string_view text);
/// Whether the text before a kernel-log marker (a dmesg time stamp, "host kernel: ", an ISO time) may precede a
/// real log line: no quote or backtick characters, so prose and source code that quote the line do not count.
bool plain_log_prefix(std::string_view prefix);

// ───────────────────────── the readers, one per tool ─────────────────────────

void read_lspci(const std::vector<Line>& lines, Scan& scan);
void read_smi_query(const std::vector<Line>& lines, Scan& scan);
void read_smi_lists(const std::vector<Line>& lines, Scan& scan);   // nvidia-smi -L and nvlink -s / -e
void read_smi_table(const std::vector<Line>& lines, Scan& scan);   // nvidia-smi's default table
void read_iperf(const std::vector<Line>& lines, Scan& scan);       // iperf / iperf3 client output
void read_health_checks(const std::vector<Line>& lines, Scan& scan);  // node health checks (NHC) that failed
void read_smi_p2p(const std::vector<Line>& lines, Scan& scan);     // nvidia-smi topo -p2p
void read_kernel_log(const std::vector<Line>& lines, Scan& scan);  // Xid, IOMMU, hypervisor signs
void read_p2p_test(const std::vector<Line>& lines, Scan& scan);    // p2pBandwidthLatencyTest
void read_ib_tools(const std::vector<Line>& lines, Scan& scan);    // ibstat, ibstatus, ibv_devinfo

}  // namespace scalescope::analyze::system_tools_detail
