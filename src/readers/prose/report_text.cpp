// Reader of prose (issue text, a report beside the logs): see readers/prose/report_text.h.
//
// How it reads. The text is cut into lines and each line is classed: fenced or indented code, quoted lines ("> "),
// tables, log-looking lines (NCCL lines and NCCL's messages quoted without their prefix, "host:pid:tid", timestamps,
// Python tracebacks and exceptions, framework warnings and the lines wrapped after them), env-dump lines, headings,
// list items and text. Code, quotes, tables and log lines are left to the other readers. The rest is joined into
// paragraphs (a list item, a heading, an env line is one), the paragraphs cut into sentences, the sentences into
// clauses (at "but", "however", "whereas", "although", "though", "yet", ";", dashes, and at a comma with a verdict on
// both sides). Each clause is read against small phrase vocabularies — hang words, works words, slow words, fail
// words, negations ("not", "n't", "no longer", "without"), "only", trial words ("tried", "toggled"), suggestion words
// ("should", "please", "could you"), conditionals ("if", "whether") — and for the details near them: settings
// (NAME=value, "NAME set to value"; option and kernel-parameter names too, not CamelCase log fields), flags
// (--ipc=host), "X instead of Y" / "switching from Y to X", changes ("disabling VT-d", "with GPUDirect RDMA enabled")
// and path classes (SYS, NODE, PHB, PXB, PIX, NV#, NVLink, cross-socket). Reader::sentence turns what a clause holds
// into claims: works (or a denied hang) + a change → works-with (slow-with when it or a following clause is slow);
// works + a path → works-on-path (+ fails-on-path "others than P" with "only"); a denied "work" → fails-with;
// hang/fail + a change → fails-with only with "only" or beside a works-with in the same sentence, else the settings
// are the job's (in force); hang/fail + a path → fails-on-path; slow + a change → slow-with, else slow with the
// figures; trials, suggestions, questions, conditionals and "still"/"even" give no works-with and no setting in force.
// A sentence that says "it works now" after one that set something without a verdict reads that as the change.
// Headings set the section: under "Workaround" / "Solution" a named change works, under "What I tried" /
// "Suggestions" / "Expected" nothing is in force. Counts of nodes and GPU products are read per sentence. Pure;
// nothing here throws out of the public functions.
#include "readers/prose/report_text.h"

#include "core/parse_count.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <cstring>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "text/log_text.h"
#include "knowledge/hardware.h"
#include "readers/code/python_code.h"
#include "readers/prose/measures.h"
#include "readers/prose/report_text_grammar.h"

namespace scalescope::analyze {
namespace {

using namespace report_text_detail;

// ───────────────────────────── the reader ─────────────────────────────

// What the section a sentence stands in (by its heading) says of the settings it names.
enum class Section { plain, works, tried };

Section section_of(std::string_view heading) {
  const std::string h = lower(heading);
  for (std::string_view w : {"workaround", "work around", "solution", "resolution", "what works", "fix", "solved"})
    if (contains(h, w)) return Section::works;
  for (std::string_view w : {"tried", "attempt", "suggest", "next step", "expected", "recommend", "todo", "ideas"})
    if (contains(h, w)) return Section::tried;
  return Section::plain;
}

struct Reader {
  explicit Reader(const std::string& s) : source(s) {}
  Section section = Section::plain;
  const std::string& source;
  Reading r;
  std::set<std::pair<std::string, std::string>> claims_seen;
  std::set<std::pair<std::string, std::string>> settings_seen;
  std::set<std::string> gpus_seen;
  std::set<std::string> hypervisors_seen;
  std::set<double> nics_stated;
  std::vector<diagnose::Fact> hangs;  // emitted at the end (detail-less ones only when no other)
  MeasureState measure_state;         // what earlier sentences said (readers/prose/measures.h)
  struct Container {
    std::string runtime;
    std::vector<std::string> flags;
    diagnose::Provenance where;
  };
  std::vector<Container> containers;
  struct Nodes {
    int nodes = 0;
    std::optional<int> per_node;
    diagnose::Provenance where;
    std::string basis;
  };
  std::vector<Nodes> nodes;
  bool multi_node = false;
  diagnose::Provenance multi_where;
  // Settings of the previous sentence stated without a verdict: in force unless the next sentence says they fixed it.
  struct Pending {
    std::vector<std::pair<std::string, std::string>> env;
    Detail detail;
    diagnose::Provenance where;
    std::size_t line = 0;
  };
  std::optional<Pending> pending;

  void claim(const std::string& kind, const std::string& detail, const diagnose::Provenance& where) {
    if (kind == "hang") {
      hangs.push_back({Claim{kind, detail}, where});
      return;
    }
    if (!claims_seen.insert({kind, detail}).second) return;
    r.facts.add(Claim{kind, detail}, where);
  }

  void settings_in_force(const std::vector<std::pair<std::string, std::string>>& env, const diagnose::Provenance& where) {
    for (const auto& [n, v] : env) {
      if (v.empty() || !settings_seen.insert({n, v}).second) continue;
      r.facts.add(diagnose::Setting{.name = n, .value = v, .origin = "environment"}, where);
    }
  }

  void flush_pending() {
    if (pending) settings_in_force(pending->env, pending->where);
    pending.reset();
  }

  // What a sentence says of the platform, as stated facts: a hypervisor ("a VM", "SR-IOV VF pass-through", "KVM"),
  // the network's line rate ("4xEDR 100Gbps", "2 * HDR", "a 10G network card"), and a code path that only one rank
  // runs ("validation on just one GPU", "save on rank 0 only") — the shape of a collective the others never issue.
  void platform(const std::string& text, const std::vector<Tok>& t, const std::function<diagnose::Provenance(std::size_t)>& at_tok,
                bool imperative) {
    const std::string low = lower(text);
    // A reproduction step ("2. Run the validation step on just one GPU") still describes the job's code path.
    one_rank_path(text, low, at_tok);
    if (imperative) return;
    static const std::vector<std::pair<std::string_view, std::string_view>> hypervisors = {
        {"virtual machine", "a virtual machine"}, {"sr-iov", "SR-IOV"}, {"pass-through", "device pass-through"},
        {"passthrough", "device pass-through"}, {"kvm", "KVM"}, {"vmware", "VMware"}, {"hyper-v", "Hyper-V"},
        {"xen", "Xen"}, {"qemu", "QEMU"}};
    for (const auto& [word, what] : hypervisors)
      if (contains(low, word) && hypervisors_seen.insert(std::string(what)).second) {
        r.facts.add(diagnose::HypervisorSeen{"the poster says: " + std::string(what)}, at_tok(0));
        break;
      }
    for (std::size_t k = 0; k < t.size(); ++k)
      if (t[k].low == "vm" || t[k].low == "vms" || t[k].low == "guest") {
        if (hypervisors_seen.insert("a VM").second) r.facts.add(diagnose::HypervisorSeen{"the poster says: a VM"}, at_tok(k));
        break;
      }
    // Network line rates: "100Gbps", "100 Gb/s", "10G network", "EDR", "HDR", "NDR" (InfiniBand's per-port rates).
    static const std::regex rate(R"((\d{1,4}(?:\.\d+)?)\s*(?:gbps|gb/s|gbit/s|gbit|g\b)(?=[^a-z]|$))");
    const bool network = contains(low, "network") || contains(low, "nic") || contains(low, "ethernet") ||
                         contains(low, "infiniband") || contains(low, "roce") || contains(low, "gbe") || contains(low, "card") ||
                         contains(low, "interconnect") || contains(low, " ib ");
    std::optional<double> gbit;
    std::string layer;
    for (const auto& [name, g] : std::vector<std::pair<std::string, double>>{{"ndr", 400}, {"hdr", 200}, {"edr", 100}, {"fdr", 56}})
      for (const auto& x : t)
        if (x.low == name || (x.low.size() > name.size() && x.low.ends_with(name) && std::isdigit(static_cast<unsigned char>(x.low[0])))) {
          gbit = g;
          layer = "IB";
        }
    if (!gbit && network && low.size() < 2000) {
      std::smatch m;
      if (std::regex_search(low, m, rate)) {
        const double v = std::stod(m[1].str());
        if (v >= 1 && v <= 1600) gbit = v, layer = contains(low, "ethernet") || contains(low, "gbe") ? "Ethernet" : "";
      }
    }
    if (gbit && nics_stated.insert(*gbit).second) {
      diagnose::NicSeen n;
      n.name = "stated in the report";
      n.line_gbit = gbit;
      if (!layer.empty()) n.link_layer = layer;
      r.facts.add(std::move(n), at_tok(0));
    }
  }

  void one_rank_path(const std::string& text, const std::string& low, const std::function<diagnose::Provenance(std::size_t)>& at_tok) {
    const bool one_rank = contains(low, "only on rank 0") || contains(low, "on rank 0 only") || contains(low, "rank 0 only") ||
                          contains(low, "just one gpu") || contains(low, "only one gpu") || contains(low, "on one gpu") ||
                          contains(low, "only rank 0") || contains(low, "only the main process") || contains(low, "is_main_process") ||
                          contains(low, "local_rank == 0") || contains(low, "rank == 0") || contains(low, "is_main") ||
                          contains(low, "rank0 only") || contains(low, "only on the main process");
    const bool path = contains(low, "validation") || contains(low, "validate") || contains(low, "evaluat") || contains(low, "eval ") ||
                      contains(low, "checkpoint") || contains(low, "save") || contains(low, "logging") || contains(low, "test set") ||
                      contains(low, "test pass") || contains(low, "testing") || contains(low, "inference") ||
                      contains(low, "generat") || contains(low, "metric");
    if (one_rank && path) claim("one-rank-path", text.size() > 160 ? text.substr(0, 160) + "…" : text, at_tok(0));
  }

  void sentence(const Sentence& s) {
    const auto t = tokens(s.text);
    if (t.empty()) return;
    // Provenance: the sentence, at the line of the token a fact rests on.
    const std::function<diagnose::Provenance(std::size_t)> at_tok = [&](std::size_t k) {
      return diagnose::at(source, s.line_at(k < t.size() ? t[k].pos : 0), s.text);
    };
    const bool question = ends_with(s.text, "?") || ends_with(s.text, "？");
    // An instruction or suggestion ("Set X and rerun", "Next steps: …", "I'd suggest X"), or a sentence under a heading
    // that lists what was tried or suggested: what it names is no claim and no setting in force.
    bool imperative = (in(kImperatives, t.front().low) && !ends_with(t.front().raw, ":")) || section == Section::tried;
    if (t.front().low == "next" && t.size() > 1 && (t[1].low == "checks" || t[1].low == "steps" || t[1].low == "step"))
      imperative = true;
    for (const auto& x : t)
      if (in(kSuggestWords, x.low)) imperative = true;
    counts(t, at_tok);
    if (!imperative) read_sentence_measures(s.text, at_tok(0), r.facts, &measure_state);
    if (!imperative) container(t, at_tok);
    if (!question) platform(s.text, t, at_tok, imperative);

    const auto cl = clauses(t);
    std::vector<ClauseRead> reads;
    for (auto [b, e] : cl) reads.push_back(read_clause(t, b, e));
    bool any_works_with = false;
    // "no longer hangs", "it does not hang with X": a negated hang says it works; "X gives a better result": so does
    // an improvement that names its change.
    for (auto& c : reads) {
      if (c.hang_negated && !c.hang && !c.works_negated) c.works = true;
      if (c.better && !c.detail.empty() && !c.works_negated) c.works = true;
    }
    for (const auto& c : reads)
      if (c.works && !c.detail.empty()) any_works_with = true;

    bool used_pending = false;
    std::optional<std::string> detail_of_hang;
    std::vector<std::pair<std::string, std::string>> in_force;
    for (std::size_t k = 0; k < reads.size(); ++k) {
      ClauseRead& c = reads[k];
      if (c.consumed) continue;
      const std::string detail = c.detail.text();
      const auto where = at_tok(c.b);
      const bool suggestion = c.suggested || imperative || (c.tried && !(c.works && !question));
      if (c.conditional) {
        note_not_in_force(c, s.line, "stated as a condition");
        continue;
      }
      if (c.hang) {
        // (also in a question: "why does it hang?" presupposes the hang)
        if (!detail_of_hang) detail_of_hang = hang_detail(t);
        claim("hang", *detail_of_hang, where);
      }
      if (suggestion) {
        note_not_in_force(c, s.line, "tried or suggested");
        continue;
      }
      if (c.works && !question) {
        // Slow in this clause, or in a later clause of the sentence that names no change of its own: slow-with.
        bool slow = c.slow;
        for (std::size_t m = k + 1; m < reads.size() && !slow; ++m)
          if (reads[m].slow && reads[m].detail.empty() && !reads[m].works) {
            slow = true;
            reads[m].consumed = true;  // its slowness is this change's
          }
        if (!detail.empty()) {
          claim(slow ? "slow-with" : "works-with", detail, where);
          note_not_in_force(c, s.line, "stated as what makes it work");
        } else if (!c.paths.empty()) {
          for (const auto& p : c.paths) claim("works-on-path", p, where);
          if (c.only) claim("fails-on-path", "others than " + fmt::format("{}", fmt::join(c.paths, ", ")), where);
        } else if (pending && c.anaphora && !pending->detail.empty()) {
          claim(slow ? "slow-with" : "works-with", pending->detail.text(), where);
          r.notes.push_back(fmt::format("line {}: {} read as what made it work (\"{}\" on line {})", s.line,
                                        pending->detail.text(), excerpt(s.text, 60), pending->line));
          pending.reset();
          used_pending = true;
        }
        continue;
      }
      if (c.work_verb_negated && !question) {
        if (!detail.empty()) claim("fails-with", detail, where);
        else
          for (const auto& p : c.paths) claim("fails-on-path", p, where);
        note_not_in_force(c, s.line, "stated as what it fails with");
        continue;
      }
      if (c.works_negated) {
        note_not_in_force(c, s.line, "stated as what did not help");
        continue;
      }
      if (question && !c.hang) {
        note_not_in_force(c, s.line, "named in a question");
        continue;
      }
      if ((c.hang || c.fail) && !question) {
        if (c.still) {
          note_not_in_force(c, s.line, "it still hangs or fails with it");
          continue;
        }
        if (!detail.empty() && (c.only || any_works_with)) {
          claim("fails-with", detail, where);
          note_not_in_force(c, s.line, "stated as what it fails with");
          continue;
        }
        if (detail.empty() || c.detail.env.empty()) {
          if (!c.paths.empty() && detail.empty()) {
            for (const auto& p : c.paths) claim("fails-on-path", p, where);
            if (c.only) claim("works-on-path", "others than " + fmt::format("{}", fmt::join(c.paths, ", ")), where);
          }
        }
        for (const auto& x : c.detail.env) in_force.push_back(x);
        continue;
      }
      if (c.slow && !c.slow_negated && !question) {
        if (!detail.empty() && !c.still) {
          claim("slow-with", detail, where);
          note_not_in_force(c, s.line, "stated as what makes it slow");
        } else {
          claim("slow", slow_figures(t, c.b, c.e), where);
        }
        continue;
      }
      // No verdict: settings the text states are in force (unless the next sentence says they fixed it); under a
      // "Workaround" or "Solution" heading, what a line names is what makes it work.
      if (c.still) continue;
      if (section == Section::works && !detail.empty()) {
        claim("works-with", detail, where);
        note_not_in_force(c, s.line, "listed under a workaround heading");
        continue;
      }
      for (const auto& x : c.detail.env) in_force.push_back(x);
    }
    if (!used_pending) flush_pending();
    if (!in_force.empty()) {
      Pending p;
      p.env = in_force;
      for (const auto& [n, v] : in_force) p.detail.settings.push_back(n + "=" + v);
      p.where = at_tok(0);
      p.line = s.line;
      pending = std::move(p);
    }
  }

  void note_not_in_force(const ClauseRead& c, std::size_t line, const char* why) {
    for (const auto& [n, v] : c.detail.env)
      r.notes.push_back(fmt::format("line {}: {}={} is {}, not a setting in force: read as a claim only", line, n, v, why));
  }

  // Container runtimes and the flags stated with them.
  void container(const std::vector<Tok>& t, const std::function<diagnose::Provenance(std::size_t)>& at_tok) {
    std::string runtime;
    std::size_t at = 0;
    for (std::size_t i = 0; i < t.size(); ++i) {
      const std::string& w = t[i].low;
      std::string rt;
      if (w == "docker" || w == "nvidia-docker" || w == "podman" || w == "dockerfile") rt = "docker";
      else if (w == "kubernetes" || w == "k8s" || w == "kubeflow" || w == "kubectl") rt = "kubernetes";
      else if (w == "pod" && i > 0 && (t[i - 1].low == "a" || t[i - 1].low == "the" || t[i - 1].low == "k8s")) rt = "kubernetes";
      else if (w == "singularity" || w == "apptainer") rt = "singularity";
      else if (w == "enroot" || w == "pyxis") rt = "enroot";
      else if (w == "container" || w == "containers" || w == "containerized" || w == "containerised") rt = "container";
      if (rt.empty()) continue;
      bool denied = false;  // "not in a container", "without docker", "outside the container"
      for (std::size_t k = i; k > 0 && i - k < 3;) {
        --k;
        if (negator(t[k].low) || t[k].low == "outside") denied = true;
      }
      if (denied) continue;
      if (runtime.empty() || runtime == "container") {
        runtime = rt;
        at = i;
      }
    }
    if (runtime.empty()) return;
    const auto where = at_tok(at);
    std::vector<std::string> flags;
    bool verdict = false;
    for (const auto& x : t)
      if (in(kTryWords, x.low) || in(kWorksWords, x.low)) verdict = true;
    if (!verdict)
      for (std::size_t i = 0; i < t.size(); ++i)
        if (auto f = flag_at(t, i, t.size()); !f.empty()) {
          flags.push_back(f);
          if (f.find(' ') != std::string::npos) ++i;
        }
    for (auto& c : containers) {
      if (c.runtime == runtime || c.runtime == "container" || runtime == "container") {
        if (c.runtime == "container" && runtime != "container") {
          c.runtime = runtime;
          c.where = where;
        }
        for (auto& f : flags)
          if (std::find(c.flags.begin(), c.flags.end(), f) == c.flags.end()) c.flags.push_back(f);
        return;
      }
    }
    containers.push_back({runtime, flags, where});
  }

  // Node counts ("two nodes", "2-node", "2 nodes x 8 GPUs", "every node has 8 GPUs") and GPU products named with a
  // count ("2x NVIDIA RTX 5880 Ada Generation", "4 GeForce RTX 2080 GPUs").
  void counts(const std::vector<Tok>& t, const std::function<diagnose::Provenance(std::size_t)>& at_tok) {
    std::optional<int> per_node;
    for (std::size_t i = 0; i < t.size(); ++i) {
      // "every node has 8 gpu", "each node with 4 GPUs"
      if ((t[i].low == "every" || t[i].low == "each" || t[i].low == "per") && i + 1 < t.size() && node_word(t[i + 1].low)) {
        for (std::size_t k = i + 2; k < t.size() && k <= i + 4; ++k)
          if (auto n = count_of(t[k].low); n && k + 1 < t.size() && gpu_noun(t[k + 1].low)) per_node = n;
      }
      // "8 GPUs per node", "8 GPUs each", "8 GPUs/node"
      if (auto n = count_of(t[i].low); n && i + 1 < t.size() && gpu_noun(t[i + 1].low)) {
        const std::string a = i + 2 < t.size() ? t[i + 2].low : "", b = i + 3 < t.size() ? t[i + 3].low : "";
        if (((a == "per" || a == "each" || a == "in") && (node_word(b) || b == "each")) || ends_with(t[i + 1].low, "/node"))
          per_node = n;
      }
    }
    for (std::size_t i = 0; i < t.size(); ++i) {
      const std::string& w = t[i].low;
      const std::string prev = i > 0 ? t[i - 1].low : "";
      // multi-node words
      if (w == "multi-node" || w == "multinode" || w == "inter-node" || w == "internode" || w == "cross-node" ||
          (w == "multiple" && i + 1 < t.size() && (t[i + 1].low == "nodes" || t[i + 1].low == "machines")) ||
          (w == "across" && i + 1 < t.size() && (t[i + 1].low == "nodes" || t[i + 1].low == "machines"))) {
        if (!multi_node) multi_where = at_tok(i);
        multi_node = true;
      }
      // "two node(s)", "2 nodes", "2-node", "a single node"
      std::optional<int> n;
      std::size_t word_at = i + 1;
      if (auto dash = w.find('-'); dash != std::string::npos && node_word(w.substr(dash + 1))) {
        bool x = false;
        n = count_of(w.substr(0, dash), &x);
        if (x) n.reset();
        word_at = i;
      } else if (bool x = false; auto c = x ? std::nullopt : count_of(w, &x)) {
        if (x) continue;  // "an 8x H100 node": GPUs per node
        // "two nodes", "three A100 nodes", "2 DGX H100 nodes", "two separate machines"
        std::size_t k = i + 1;
        while (k < t.size() && k <= i + 2 && !node_word(t[k].low) &&
               (model_token(t[k].core) || brand_word(t[k].low) || qualifier_word(t[k].low) ||
                in(kNodeAdjectives, t[k].low)))
          ++k;
        if (k < t.size() && node_word(t[k].low) && t[k].core != "NODE") {
          n = c;
          word_at = k;
        }
      }
      if (!n) continue;
      if (prev == "numa" || prev == "gpu" || prev == "the" || (prev == "of" && *n == 1)) continue;
      // ("2 nodes of the cluster", "2 NUMA nodes" are no node count; "2 nodes of 8 GPUs" is)
      const bool of_gpus = word_at + 3 < t.size() && t[word_at + 1].low == "of" && count_of(t[word_at + 2].low) &&
                           gpu_noun(t[word_at + 3].low);
      if (word_at + 1 < t.size() && ((t[word_at + 1].low == "of" && !of_gpus) || t[word_at + 1].low == "numa")) continue;
      // Nodes of a network's layers ("3 layers of 1024 nodes", "a hidden layer with 512 nodes") are no machines.
      {
        bool layer = false;
        for (std::size_t k = i >= 4 ? i - 4 : 0; k < i; ++k)
          layer = layer || t[k].low == "layer" || t[k].low == "layers" || t[k].low == "hidden" || t[k].low == "neurons";
        if (layer) continue;
      }
      std::optional<int> pn = per_node;
      // "2 nodes x 8 GPUs", "2 nodes with 8 GPUs each"
      for (std::size_t k = word_at + 1; k < t.size() && k <= word_at + 3; ++k)
        if (auto g = count_of(t[k].low); g && k + 1 < t.size() && gpu_noun(t[k + 1].low) &&
                                          (t[k - 1].low == "x" || t[k - 1].low == "×" || t[k - 1].low == "with" ||
                                           t[k - 1].low == "of" || t[k - 1].low == "each"))
          pn = g;
      nodes.push_back({*n, pn, at_tok(i),
                       fmt::format("report text: {}", excerpt(word_at == i ? t[i].core : t[i].core + " " + t[word_at].core, 60))});
    }
    // GPU products with a count.
    for (std::size_t i = 0; i < t.size(); ++i) {
      bool x = false;
      auto n = count_of(t[i].low, &x);
      if (!n) continue;
      // The thing compared with ("compared to 8×RTX 4090 GPUs", "faster than 2 V100s") is not the job's hardware.
      if (i > 0 && (t[i - 1].low == "than" || t[i - 1].low == "versus" || t[i - 1].low == "vs" || t[i - 1].low == "vs." ||
                    (i > 1 && (t[i - 2].low == "compared" || t[i - 2].low == "similar") && (t[i - 1].low == "to" || t[i - 1].low == "with"))))
        continue;
      std::size_t k = i + 1;
      if (k < t.size() && (t[k].low == "x" || t[k].low == "×")) ++k;
      // The noun before the product's name ("one GPU 4090", "8 GPUs A800", "2 cards RTX 3090").
      // Not a count of hours, days or memory after the noun ("8 GPUs 4090 hours", "2 cards 5090 days ago").
      if (k + 1 < t.size() && gpu_noun(t[k].low) && (brand_word(t[k + 1].low) || model_token(t[k + 1].core)) &&
          !(k + 2 < t.size() && (t[k + 2].low == "hours" || t[k + 2].low == "hour" || t[k + 2].low == "hrs" ||
                                 t[k + 2].low == "days" || t[k + 2].low == "day" || t[k + 2].low == "minutes" ||
                                 t[k + 2].low == "min" || t[k + 2].low == "seconds" || t[k + 2].low == "years" ||
                                 t[k + 2].low == "weeks" || t[k + 2].low == "months" || t[k + 2].low == "ago")))
        ++k;
      std::vector<std::string> name;
      bool brand = false;
      std::string model;
      for (; k < t.size() && name.size() < 7; ++k) {
        const Tok& w = t[k];
        if (w.open_paren && !name.empty()) break;
        std::string core = w.core;
        bool take = false;
        if (brand_word(w.low)) {
          brand = take = true;
        } else if (model.empty() && model_token(core)) {
          if (core.size() > 2 && (core.back() == 's' || core.back() == 'S') && is_digit(core[core.size() - 2])) core.pop_back();
          model = core;
          take = true;
        } else if (model.empty() && core.find('-') != std::string::npos && topo::find_gpu(core)) {
          model = core;
          take = true;
        } else if (!name.empty() && qualifier_word(w.low)) {
          take = true;
        } else if (!name.empty() && lower(name.back()) == "titan" && (w.low == "v" || w.low == "xp" || w.low == "x")) {
          take = true;
        } else if (!name.empty() && all_digits(core) && k + 1 < t.size() && t[k + 1].low == "gb") {
          take = true;
        } else if (!name.empty() && w.low == "gb" && all_digits(name.back())) {
          take = true;
        }
        if (!take || core.empty()) break;
        name.push_back(core);
        if (std::string_view(",;:)").find(w.raw.back()) != std::string_view::npos) break;
      }
      if (name.empty()) continue;
      if (k < t.size() && node_word(t[k].low)) continue;  // "three A100 nodes": a node count
      const std::string full = fmt::format("{}", fmt::join(name, " "));
      if (model.empty() ? topo::find_gpu(full) == nullptr : !gpu_name_ok(full, brand, model)) continue;
      if (!gpus_seen.insert(lower(full)).second) continue;
      const auto where = at_tok(i);
      r.facts.add(diagnose::GpuSeen{full, std::nullopt, std::nullopt, std::nullopt, std::nullopt}, where);
      r.notes.push_back(fmt::format("line {}: {} × {} named", where.line, *n, full));
      if (*n >= 2 && *n <= 1024) r.facts.add(diagnose::GpuCount{*n, "stated", std::nullopt}, where);
    }
  }

  void finish() {
    flush_pending();
    // Hangs: one per detail; detail-less ones only when none says where.
    bool detailed = std::any_of(hangs.begin(), hangs.end(), [](const diagnose::Fact& f) {
      return !std::get<Claim>(f.value).detail.empty();
    });
    std::vector<diagnose::Fact> keep;
    for (auto& f : hangs) {
      const auto& c = std::get<Claim>(f.value);
      if (detailed && c.detail.empty()) continue;
      if (!claims_seen.insert({c.kind, c.detail}).second) continue;
      keep.push_back(std::move(f));
    }
    // Put the hang claims first: they are what the text is about.
    diagnose::FactSet all;
    for (auto& f : keep) all.add(std::move(f));
    // The sentence grammar's bare GPU names ("H100") where a fuller name of the same board was read ("8 × H100 80GB
    // HBM3"), and its "several nodes" where a node count was read, say nothing more: left out.
    std::vector<std::string> full_names;
    for (const auto& g : r.facts.of<diagnose::GpuSeen>()) full_names.push_back(lower(g.fact.name));
    bool counted_nodes = false;
    for (const auto& n : nodes) counted_nodes = counted_nodes || n.nodes >= 2;
    std::set<std::string> bare_seen;
    for (const auto& f : r.facts.all()) {
      if (const auto* g = std::get_if<diagnose::GpuSeen>(&f.value)) {
        const std::string l = lower(g->name);
        const bool fuller = std::any_of(full_names.begin(), full_names.end(),
                                        [&](const std::string& o) { return o != l && o.find(l) != std::string::npos; });
        if (fuller || !bare_seen.insert(l).second) continue;
      }
      if (const auto* c = std::get_if<Claim>(&f.value); c && c->kind == "nodes" && c->detail == "multi-node" && (counted_nodes || multi_node))
        continue;
      all.add(f);
    }
    for (const auto& c : containers) {
      std::string d = c.runtime;
      for (const auto& f : c.flags) d += " " + f;
      all.add(Claim{"container", d}, c.where);
    }
    // Nodes: a count of 1 is "one of the nodes" when the text names more.
    int most = 0;
    for (const auto& n : nodes) most = std::max(most, n.nodes);
    std::set<int> said;
    for (const auto& n : nodes) {
      if (most >= 2 && n.nodes == 1) continue;
      if (!said.insert(n.nodes).second) continue;
      all.add(Claim{"nodes", std::to_string(n.nodes)}, n.where);
      diagnose::WorldShape w;
      w.nodes = n.nodes;
      if (n.per_node) {
        w.ranks_per_node = n.per_node;
        w.ranks = n.nodes * *n.per_node;
      }
      w.basis = n.per_node ? fmt::format("{} ({} GPUs per node)", n.basis, *n.per_node) : n.basis;
      all.add(std::move(w), n.where);
    }
    if (multi_node && most < 2) all.add(Claim{"nodes", "multi-node"}, multi_where);
    r.facts = std::move(all);
  }
};

struct Layout {
  std::vector<std::string_view> lines;
  std::vector<Classified> cls;
};

Layout layout(std::string_view text, std::size_t max_lines, Reading* notes_to) {
  Layout l;
  l.lines = split_lines(text);
  for (auto& line : l.lines)
    if (line.size() > kMaxLineBytes) line = line.substr(0, kMaxLineBytes);
  if (l.lines.size() > max_lines) {
    l.lines.resize(max_lines);
    if (notes_to) notes_to->notes.push_back(fmt::format("only the first {} lines were read", max_lines));
  }
  l.cls = classify(l.lines);
  return l;
}

// Full-width punctuation as CJK input methods type it ("(2x3090)？", "，", "：") and the ideographic full stop and comma,
// as their ASCII forms: the grammar's words, figures and sentence ends are ASCII. U+FF01–U+FF5E map to U+0021–U+007E
// (the Unicode Halfwidth and Fullwidth Forms block); "。" is ". " and "、" is ", ". Line breaks are kept, so line
// numbers stay those of the file.
std::string ascii_punctuation(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c0 = static_cast<unsigned char>(text[i]);
    if (c0 == 0xEF && i + 2 < text.size()) {  // U+FF01–U+FF5E: EF BC 81 – EF BD 9E
      const auto c1 = static_cast<unsigned char>(text[i + 1]), c2 = static_cast<unsigned char>(text[i + 2]);
      const unsigned cp = ((c0 & 0x0Fu) << 12) | ((c1 & 0x3Fu) << 6) | (c2 & 0x3Fu);
      if ((c1 & 0xC0) == 0x80 && (c2 & 0xC0) == 0x80 && cp >= 0xFF01 && cp <= 0xFF5E) {
        out += static_cast<char>(cp - 0xFEE0);
        i += 2;
        continue;
      }
    }
    if (c0 == 0xE3 && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x80) {
      const auto c2 = static_cast<unsigned char>(text[i + 2]);
      if (c2 == 0x82 || c2 == 0x81) {  // U+3002 "。", U+3001 "、"
        out += c2 == 0x82 ? ". " : ", ";
        i += 2;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

/// A post stored as one blockquote (a forum page's copy quoting its poster: "> I am training …", "> > …"): when every
/// non-blank line but headings is quoted — or all but one line that asks a question of it —, the markers are removed
/// so that its lines are read as what they quote: sentences, code, logs. A reply that quotes someone and then speaks
/// of its own job keeps its quotes (another's words). Line breaks are kept, so line numbers do not move. Only the
/// first MiB.
std::string unquote_whole_post(std::string text) {
  if (text.size() > (1u << 20)) return text;
  std::size_t quoted = 0, own = 0;
  bool own_asks = false;
  for (std::size_t b = 0; b < text.size();) {
    std::size_t e = text.find('\n', b);
    if (e == std::string::npos) e = text.size();
    const auto f = text.find_first_not_of(" \t\r", b);
    if (f != std::string::npos && f < e) {
      if (text[f] == '>') ++quoted;
      else if (text[f] != '#') {
        ++own;
        const auto last = text.find_last_not_of(" \t\r", e == 0 ? 0 : e - 1);
        own_asks = last != std::string::npos && last >= f && text[last] == '?';
      }
    }
    b = e + 1;
  }
  if (quoted == 0 || !(own == 0 || (own == 1 && own_asks))) return text;
  std::string out;
  out.reserve(text.size());
  for (std::size_t b = 0; b < text.size();) {
    std::size_t e = text.find('\n', b);
    if (e == std::string::npos) e = text.size();
    std::string_view line(text.data() + b, e - b);
    // Every level of the quote: "> > text", ">> text".
    for (auto f = line.find_first_not_of(" \t"); f != std::string_view::npos && line[f] == '>'; f = line.find_first_not_of(" \t"))
      line.remove_prefix(f + 1);
    if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    out.append(line);
    if (e < text.size()) out += '\n';
    b = e + 1;
  }
  return out;
}

/// Chinese posts (a large share of public GPU-training threads: CSDN, Zhihu, GitCode, issues in Chinese) say their GPU
/// and node counts and the words the grammar keys on in a few fixed terms: "单卡" one card (GPU), "双卡" two, "8卡"
/// eight, "12机" twelve machines (nodes), "显卡" graphics card, "耗时" time taken, "速度" speed. Those terms are
/// replaced by the English the grammar reads, each set off by blanks; all other text is kept. Only text holding a CJK
/// ideograph is touched, and only its first MiB. The terms are the common ones of such posts, not of any one of them.
std::string cjk_terms(std::string text) {
  if (text.size() > (1u << 20)) return text;
  const auto ideograph = [&](std::size_t i) { return cjk_lead(text[i]) && i + 2 < text.size(); };
  bool cjk = false;
  for (std::size_t i = 0; i < text.size() && !cjk; ++i) cjk = ideograph(i);
  if (!cjk) return text;
  static const std::pair<std::string_view, std::string_view> terms[] = {
      {"机器", " machine "},   {"单卡", " one GPU "},     {"双卡", " two GPUs "},    {"两张卡", " two GPUs "},
      {"两块卡", " two GPUs "}, {"两卡", " two GPUs "},    {"四卡", " four GPUs "},   {"八卡", " eight GPUs "},
      {"多卡", " multiple GPUs "}, {"单机", " one node "}, {"多机", " multiple nodes "}, {"显卡", " GPU "},
      {"训练速度", " training speed "}, {"速度", " speed "}, {"耗时", " time "},      {"为什么", " why "},
      {"没有提升", " no improvement "}, {"数据加载", " data loading "}, {"通信", " communication "}};
  // After a count ("8卡", "8 张卡", "12机", "6台机"): GPUs or nodes.
  static const std::pair<std::string_view, std::string_view> counted[] = {
      {"张卡", " GPUs "}, {"块卡", " GPUs "}, {"卡", " GPUs "}, {"台机", " nodes "}, {"机", " nodes "}};
  const auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  bool after_ideograph = false;
  const std::string_view all(text);
  for (std::size_t i = 0; i < text.size();) {
    if (ideograph(i)) {
      bool done = false;
      for (const auto& [from, to] : terms)
        if (all.substr(i, from.size()) == from) {
          out += to;
          i += from.size();
          done = true;
          break;
        }
      if (!done) {
        // A count before it, blanks allowed: "8卡" → " 8 GPUs ".
        std::size_t e = out.size();
        while (e > 0 && out[e - 1] == ' ') --e;
        std::size_t b = e;
        while (b > 0 && std::isdigit(static_cast<unsigned char>(out[b - 1])) && e - b < 4) --b;
        if (b < e && (b == 0 || !alnum(out[b - 1])))
          for (const auto& [from, to] : counted)
            if (all.substr(i, from.size()) == from) {
              out.resize(e);
              if (b > 0 && out[b - 1] != ' ') out.insert(b, 1, ' ');
              out += to;
              i += from.size();
              done = true;
              break;
            }
      }
      if (done) {
        after_ideograph = false;
        continue;
      }
      // A blank where CJK text meets a letter or digit ("4090得8500min"): CJK sets none between words, the grammar's
      // figures and names need them.
      if (!out.empty() && alnum(out.back())) out += ' ';
      out.append(text, i, 3);
      i += 3;
      after_ideograph = true;
      continue;
    }
    if (after_ideograph && alnum(text[i])) out += ' ';
    after_ideograph = false;
    out += text[i++];
  }
  return out;
}

/// "4x4090", "8xA100", "2xH100": a count fused to a GPU's name, split ("4x 4090") so that it reads as "4x RTX 4090"
/// does. Only the first MiB (a prose post is far smaller); line breaks are kept, so line numbers do not move.
std::string split_fused_counts(std::string_view text) {  // after ascii_punctuation
  std::string ascii = cjk_terms(unquote_whole_post(ascii_punctuation(text)));
  if (ascii.size() > (1u << 20)) return ascii;
  static const std::regex fused(R"(\b(\d{1,2})([xX])([A-Za-z]{0,4}\d{3,4}[A-Za-z]{0,3})\b)");
  return std::regex_replace(ascii, fused, "$1$2 $3");
}

Reading read_layout(const Layout& l, const std::string& source) {
  Reader rd(source);
  std::size_t code = 0, logs = 0, quotes = 0, tables = 0;
  for (const auto& c : l.cls) {
    code += c.kind == LineKind::code;
    logs += c.kind == LineKind::log;
    quotes += c.kind == LineKind::quote;
    tables += c.kind == LineKind::table;
  }
  // A level-1 heading on the text's first line is its title.
  bool first = false;
  for (std::size_t i = 0; i < l.cls.size(); ++i)
    if (l.cls[i].kind != LineKind::blank) {
      first = l.cls[i].kind == LineKind::heading && starts_with(trim_blanks(l.lines[i]), "# ");
      break;
    }
  for (const auto& p : paragraphs(l.cls)) {
    // A heading ("## Workaround", "What I tried:") sets what the sentences under it say of their settings. The text's
    // first line, when a heading, is its title ("# Expected bandwidth results? …"): it names the topic, not a section.
    const std::string_view pt = trim_blanks(p.text);
    const bool label = !pt.empty() && pt.back() == ':' && std::count(pt.begin(), pt.end(), ' ') < 6;
    const bool title = first && p.heading;
    first = false;
    if ((p.heading && !title) || label) rd.section = section_of(pt);
    for (const auto& s : sentences(p)) rd.sentence(s);
  }
  rd.finish();
  // Code blocks: each run of code lines is read as Python (the training code a post pastes); fences are blanked.
  for (std::size_t i = 0; i < l.cls.size();) {
    if (l.cls[i].kind != LineKind::code) {
      ++i;
      continue;
    }
    const std::size_t from = i;
    std::string block;
    for (; i < l.cls.size() && l.cls[i].kind == LineKind::code; ++i) {
      const std::string_view t = trim_blanks(l.lines[i]);
      block += (starts_with(t, "```") || starts_with(t, "~~~")) ? std::string_view() : l.lines[i];
      block += '\n';
    }
    if (block.find("torch") == std::string::npos && block.find("DataLoader") == std::string::npos &&
        block.find(".item()") == std::string::npos && block.find("DataParallel") == std::string::npos) {
      // Not code but a tool's figures pasted as a block ("GPU e3:00.0  current link: 5 GT/s (Gen2) x16  maximum: 32 GT/s
      // (Gen5) x16"): a PCIe link's state line by line, in the figures' grammar, when no other reader knows the form.
      for (std::size_t k = from; k < i; ++k) {
        const std::string low = lower(l.lines[k]);
        if ((contains(low, "gt/s") || contains(low, "gen")) && contains(low, "link") &&
            (contains(low, "current") || contains(low, "max")))
          read_sentence_measures(l.lines[k], diagnose::at(source, k + 1, l.lines[k]), rd.r.facts, &rd.measure_state);
      }
      continue;
    }
    rd.r.facts.append(read_python_code(block, source, from + 1).facts);
  }
  if (code) rd.r.notes.push_back(fmt::format("{} line(s) of code blocks left to the other readers", code));
  if (logs) rd.r.notes.push_back(fmt::format("{} log-like line(s) left to the other readers", logs));
  if (quotes) rd.r.notes.push_back(fmt::format("{} quoted line(s) ('> ') not read: they may be someone else's words", quotes));
  if (tables) rd.r.notes.push_back(fmt::format("{} table line(s) left to the table reader", tables));
  return std::move(rd.r);
}

// Tokens of a line and how many are words: what tells prose from data.
std::pair<std::size_t, std::size_t> word_share(std::string_view line) {
  std::size_t tokens = 0, words = 0;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    std::size_t j = i;
    while (j < line.size() && !std::isspace(static_cast<unsigned char>(line[j]))) ++j;
    if (j > i) {
      std::string_view w = line.substr(i, j - i);
      while (!w.empty() && std::string_view("([{\"'*`<").find(w.front()) != std::string_view::npos) w.remove_prefix(1);
      while (!w.empty() && std::string_view(")]}\"'*`>,.;:!?").find(w.back()) != std::string_view::npos) w.remove_suffix(1);
      ++tokens;
      if (word_like(w)) ++words;
    }
    i = j;
  }
  return {tokens, words};
}

constexpr std::string_view kFunctionWords[] = {"the", "a", "an", "is", "it", "and", "with", "but", "i", "we", "to",
                                               "of", "on", "in", "when", "only", "this", "that", "was", "are", "my",
                                               "our", "not", "be", "have", "has", "can", "does", "did", "which"};

}  // namespace

namespace {

// Whether `text` is prose, judged over its head; `whole` receives the reading of the whole text when the head was
// all of it (the one parse), with `source` in its provenance.
bool judge_prose(std::string_view text, const std::string& source, std::optional<Reading>* whole) {
  try {
    const bool head_is_all = text.size() <= kDetectBytes;
    if (text.size() > kDetectBytes) text = text.substr(0, kDetectBytes);
    const std::string split = split_fused_counts(text);
    text = split;
    const auto first = text.find_first_not_of(" \t\r\n\xEF\xBB\xBF");
    if (first == std::string_view::npos) return false;
    if (text[first] == '{') return false;  // JSON
    if (text[first] == '[') {
      const auto next = text.find_first_not_of(" \t\r\n", first + 1);
      if (next == std::string_view::npos || text[next] == '{' || text[next] == '"' || text[next] == '[') return false;
    }
    const Layout l = layout(text, kDetectLines, nullptr);
    const bool all_lines = head_is_all && (l.lines.size() < kDetectLines || split_lines(text).size() <= kDetectLines);
    std::size_t all_tokens = 0, prose_tokens = 0, sentence_lines = 0, prose_lines = 0, nonblank = 0, foreign = 0;
    for (std::size_t i = 0; i < l.cls.size(); ++i) {
      const auto& c = l.cls[i];
      if (c.kind == LineKind::blank || c.kind == LineKind::code) continue;
      ++nonblank;
      const auto [tok, words] = word_share(trim_blanks(l.lines[i]));
      all_tokens += tok;
      if (c.kind == LineKind::log || c.kind == LineKind::table || c.kind == LineKind::quote) {
        ++foreign;
        continue;
      }
      if (c.kind == LineKind::text && env_line(c.text)) {
        ++foreign;
        continue;
      }
      // A line of eight or more CJK ideographs (after its common terms are read as English) is prose whatever its figures:
      // its words are runs, not tokens.
      const auto ideographs = static_cast<std::size_t>(std::count_if(c.text.begin(), c.text.end(), cjk_lead));
      if ((tok >= 3 && words * 10 >= tok * 6) || ideographs >= 8) {
        prose_tokens += tok;
        ++prose_lines;
        // A sentence: six or more tokens with a function word of English.
        std::size_t fw = 0;
        if (tok >= 6)
          for (const auto& x : tokens(c.text)) fw += in(kFunctionWords, x.low) ? 1 : 0;
        if (fw >= 1 || ideographs >= 8) ++sentence_lines;  // or a sentence of CJK text
      } else if (c.kind == LineKind::heading) {
        prose_tokens += tok;
      }
    }
    if (nonblank == 0 || prose_lines == 0) return false;
    // Mostly pasted output: prose only when it still holds two sentences of its own (a post that quotes a log).
    const bool two_sentences = sentence_lines >= 2 && sentence_lines * 5 >= nonblank;
    if (prose_tokens * 2 < all_tokens && !two_sentences) return false;
    if (foreign * 2 > nonblank && !two_sentences) return false;
    core::count_parse("report_text", text);
    Reading r = read_layout(l, all_lines && whole ? source : std::string());
    // Mentions of a link or a precision alone (a topology matrix's legend: "PIX = Connection traversing … PCIe") do
    // not make a text prose about a job.
    std::size_t telling = 0;
    for (const auto& f : r.facts.all()) {
      const auto* c = std::get_if<Claim>(&f.value);
      telling += !(c && (c->kind == "link" || c->kind == "precision")) && !std::holds_alternative<diagnose::NicSeen>(f.value);
    }
    if (telling == 0) return false;
    // Sentences; or, failing those, a list in words ("Hardware: 4 GeForce RTX 2080 GPUs / docker … image") that names
    // a GPU product or makes a claim.
    const bool prose =
        sentence_lines > 0 || (prose_lines >= 2 && (r.facts.count<diagnose::Claim>() > 0 || r.facts.count<diagnose::GpuSeen>() > 0));
    if (prose && all_lines && whole) *whole = std::move(r);
    return prose;
  } catch (...) {
    return false;
  }
}

}  // namespace

bool looks_like_report_text(std::string_view text) { return judge_prose(text, "", nullptr); }

std::optional<Reading> read_report_text_if_prose(std::string_view text, const std::string& source) {
  std::optional<Reading> whole;
  if (!judge_prose(text, source, &whole)) return std::nullopt;
  if (whole) return whole;
  return read_report_text(text, source);
}

Reading read_report_text(std::string_view text, const std::string& source) {
  Reading notes;
  if (text.size() > kMaxProseBytes) {  // at a line's end: line numbers stay those of the file
    const auto cut = text.rfind('\n', kMaxProseBytes);
    text = text.substr(0, cut == std::string_view::npos ? kMaxProseBytes : cut + 1);
    notes.notes.push_back(fmt::format("only the first {} KB were read as prose", text.size() / 1024));
  }
  try {
    const std::string split = split_fused_counts(text);
    const Layout l = layout(split, kMaxLines, &notes);
    core::count_parse("report_text", split);
    Reading r = read_layout(l, source);
    for (auto& n : notes.notes) r.notes.insert(r.notes.begin(), std::move(n));
    return r;
  } catch (const std::exception& e) {
    notes.notes.push_back(std::string("the report reader stopped: ") + e.what());
  } catch (...) {
    notes.notes.push_back("the report reader stopped");
  }
  return notes;
}

}  // namespace scalescope::analyze
