// Table reader, part 3: row labels and titles — the conditions a label names ("2:DDP w/o NVlink" → gpus 2, mode
// DDP, nvlink off), configuration cells, pairs, derived rows, and the facts a title names.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>
#include <set>

#include "text/log_text.h"
#include "readers/tables/tables_internal.h"

namespace scalescope::analyze::tables_detail {
namespace {

bool is_int(std::string_view s) {
  return !s.empty() && s.size() <= 7 && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}
bool has_digit(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}
bool has_alpha(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
}
std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}
// "0008" → "8"; keeps "0".
std::string int_text(std::string_view s) {
  std::size_t i = 0;
  while (i + 1 < s.size() && s[i] == '0') ++i;
  return std::string(s.substr(i));
}

// Feature toggles by the words that name them.
std::string feature_of(std::string_view w) {
  static const std::pair<std::string_view, std::string_view> k[] = {
      {"nvlink", "nvlink"}, {"nvlinks", "nvlink"}, {"nv", "nvlink"}, {"nvl", "nvlink"}, {"p2p", "p2p"},
      {"shm", "shm"}, {"ib", "ib"}, {"infiniband", "ib"}, {"roce", "roce"}, {"rocev2", "roce"}, {"rdma", "rdma"},
      {"gdr", "gdr"}, {"gdrdma", "gdr"}, {"gpudirect", "gdr"}, {"gpu-direct", "gdr"}, {"sharp", "sharp"},
      {"nvls", "nvls"}, {"collnet", "collnet"}, {"pxn", "pxn"}, {"cumem", "cumem"}, {"ht", "hyperthreading"},
      {"hyperthreading", "hyperthreading"}, {"hyper-threading", "hyperthreading"}, {"smt", "hyperthreading"}};
  for (auto [word, f] : k)
    if (w == word) return std::string(f);
  return "";
}
bool negation(std::string_view w) {
  return w == "no" || w == "non" || w == "not" || w == "without" || w == "w/o" || w == "wo" || w == "disable" ||
         w == "disabled" || w == "off";
}
// "on" / "off" a word after a feature says, or "".
std::string polarity_after(std::string_view w) {
  if (w == "off" || w == "disabled" || w == "disable" || w == "false") return "off";
  if (w == "on" || w == "enabled" || w == "enable" || w == "true") return "on";
  return "";
}
// A feature and its state written as one word: "HTOff", "nvlinkoff", "noNV", "non-p2p", "p2p-disabled".
std::optional<std::pair<std::string, std::string>> compound_toggle(std::string_view w) {
  for (std::string_view neg : {"no-", "non-", "without-", "no", "non", "wo"})
    if (starts_with(w, neg) && w.size() > neg.size())
      if (auto f = feature_of(w.substr(neg.size())); !f.empty()) return std::make_pair(f, std::string("off"));
  for (std::string_view suffix : {"-off", "-on", "-disabled", "-enabled", "off", "on", "disabled", "enabled"})
    if (ends_with(w, suffix) && w.size() > suffix.size()) {
      const auto f = feature_of(w.substr(0, w.size() - suffix.size()));
      const auto p = polarity_after(suffix[0] == '-' ? suffix.substr(1) : suffix);
      if (!f.empty() && !p.empty()) return std::make_pair(f, p);
    }
  return std::nullopt;
}
// A setting that switches a feature: NCCL_P2P_DISABLE=1 → p2p off, NCCL_NVLS_ENABLE=0 → nvls off.
std::optional<std::pair<std::string, std::string>> setting_toggle(const std::string& name, const std::string& value) {
  const std::string n = lower(name), v = lower(value);
  const bool one = v == "1" || v == "true" || v == "yes" || v == "on";
  const bool zero = v == "0" || v == "false" || v == "no" || v == "off";
  if (!one && !zero) return std::nullopt;
  for (std::string_view kind : {"_disable", "_enable"}) {
    if (!ends_with(n, kind)) continue;
    std::string mid = n.substr(0, n.size() - kind.size());
    if (starts_with(mid, "nccl_")) mid = mid.substr(5);
    if (starts_with(mid, "net_")) mid = mid.substr(4);
    const auto f = feature_of(mid);
    if (f.empty()) return std::nullopt;
    const bool on = kind == "_enable" ? one : zero;
    return std::make_pair(f, std::string(on ? "on" : "off"));
  }
  return std::nullopt;
}

std::string mode_of(std::string_view w) {
  if (w == "ddp" || w == "distributeddataparallel" || w == "nn.parallel.distributeddataparallel" || w == "distributeddp" ||
      w == "torch.nn.parallel.distributeddataparallel" || w == "distributed-data-parallel")
    return "DDP";
  if (w == "dp" || w == "dataparallel" || w == "data-parallel" || w == "nn.dataparallel" || w == "torch.nn.dataparallel")
    return "DP";
  if (w == "fsdp" || w == "fsdp2") return "FSDP";
  if (w == "deepspeed") return "DeepSpeed";
  if (w == "horovod" || w == "hvd") return "Horovod";
  return "";
}
std::string precision_of(std::string_view w) {
  if (w == "fp16" || w == "bf16" || w == "fp32" || w == "tf32" || w == "fp8") return std::string(w);
  if (w == "amp" || w == "mixed" || w == "mixed-precision") return "mixed";
  if (w == "float16" || w == "half") return "fp16";
  if (w == "bfloat16") return "bf16";
  if (w == "float32") return "fp32";
  return "";
}
std::string network_of(std::string_view w) {
  if (w == "socket" || w == "sockets" || w == "tcp") return "Socket";
  if (w == "efa") return "EFA";
  if (w == "ethernet" || w == "eth") return "Ethernet";
  return "";
}
bool form_factor(std::string_view w) {
  return w == "sxm" || w == "sxm2" || w == "sxm4" || w == "sxm5" || w == "pcie" || w == "nvl" || w == "hbm3" ||
         w == "hbm2e" || w == "hbm3e";
}
bool ip_like(std::string_view w) {
  static const std::regex re(R"(\d{1,3}([.-])\d{1,3}\1\d{1,3}\1\d{1,3})");
  return w.size() <= 15 && std::regex_match(w.begin(), w.end(), re);
}
// "2.19.3", "v2.19.3", "12.1" (the latter only when `software` precedes).
std::optional<std::string> version_of(std::string_view w, bool software) {
  if (!w.empty() && (w[0] == 'v' || w[0] == 'V')) w = w.substr(1);
  static const std::regex re(R"((\d+)(\.\d+)+([+-][0-9A-Za-z.+-]*)?)");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_match(w.begin(), w.end(), m, re)) return std::nullopt;
  const auto dots = std::count(w.begin(), w.end(), '.');
  if (dots < 2 && !software) return std::nullopt;
  std::string v(w);
  if (const auto plus = v.find_first_of("+"); plus != std::string::npos) v = v.substr(0, plus);
  return v;
}
std::string software_key(std::string_view w) {
  if (w == "nccl") return "nccl_version";
  if (w == "cuda" || w == "cu") return "cuda_version";
  if (w == "torch" || w == "pytorch" || w == "pt") return "torch_version";
  if (w == "driver") return "driver_version";
  if (w == "version" || w == "ver") return "version";
  return "";
}

}  // namespace

std::optional<std::string> gpu_product(std::string_view word) {
  std::string u = upper(word);
  if (starts_with(u, "NVIDIA-")) u = u.substr(7);
  static const std::regex re(
      R"((A\d{1,4}G?|H\d{2,3}|B\d{3}|G[BH]\d{3}|V100|P100|P40|P4|T4|K\d{2}|M40|M60|L4|L40S?|MI\d{2,3}X?|(RTX|GTX)\d{3,4}(TI|SUPER)?|\d{4}TI))");
  if (u.size() > 12 || !std::regex_match(u, re)) return std::nullopt;
  if (u == "A1" || starts_with(u, "K0")) return std::nullopt;
  if (starts_with(u, "RTX") || starts_with(u, "GTX")) u = u.substr(0, 3) + " " + u.substr(3);
  if (ends_with(u, "TI")) u = u.substr(0, u.size() - 2) + " Ti";
  if (ends_with(u, "SUPER")) u = u.substr(0, u.size() - 5) + " Super";
  return u;
}

std::optional<std::pair<std::string, std::string>> split_pair(std::string_view label) {
  const std::string t = clean_cell(label);
  if (t.empty() || t.size() > 120) return std::nullopt;
  auto ok = [](std::string_view a) {
    if (a.empty() || a.size() > 60) return false;
    if (std::any_of(a.begin(), a.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); })) return false;
    return has_alpha(a) || (is_int(a) && a.size() <= 3);
  };
  for (std::string_view sep : {"<->", "<=>", "↔", " -- ", " - ", " and ", " & ", " to ", ","}) {
    const auto pos = t.find(sep);
    if (pos == std::string::npos) continue;
    if (t.find(sep, pos + sep.size()) != std::string::npos) return std::nullopt;
    const std::string a(trim_blanks(std::string_view(t).substr(0, pos)));
    const std::string b(trim_blanks(std::string_view(t).substr(pos + sep.size())));
    if (ok(a) && ok(b) && a != b) return std::make_pair(a, b);
    return std::nullopt;
  }
  return std::nullopt;
}

bool derived_label(std::string_view label) {
  const std::string l = " " + lower(clean_cell(label)) + " ";
  for (std::string_view w : {"reduction", "improvement", "speedup", "speed-up", "speed up", " ratio", "difference",
                             " diff ", " diff.", " delta", " gain", "slowdown", "relative", " faster", " slower",
                             " average", " avg", " mean ", " median ", " std ", "stddev",
                             " vs ", " vs. ", " versus ", " change ", " change(", "% change", " saving"})
    if (contains(l, w)) return true;
  // A total or a sum of rows: said by the label itself, not inside a parenthesis that qualifies what the row ran
  // ("2 GPUs (8192 total envs)" is a run of its own).
  std::string outside;
  int depth = 0;
  for (const char c : l) {
    if (c == '(') ++depth;
    else if (c == ')' && depth > 0) --depth;
    else if (depth == 0) outside += c;
  }
  for (std::string_view w : {" total ", " sum "})
    if (contains(outside, w)) return true;
  return false;
}

namespace {

struct Tok {
  std::string o, l;  // as printed, lower case
  bool used = false;
};

// Replaces every case-insensitive occurrence of `from` (lower case) in `s` by `to`.
void replace_ci(std::string& s, std::string_view from, std::string_view to) {
  std::string l = lower(s);
  std::size_t pos = 0;
  while ((pos = l.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    l.replace(pos, from.size(), to);
    pos += to.size();
  }
}

// "two" → "2": counts written as words ("DataParallel (two GPUs)").
std::optional<std::string> number_word(std::string_view w) {
  static const std::pair<std::string_view, std::string_view> k[] = {
      {"one", "1"}, {"two", "2"}, {"three", "3"}, {"four", "4"}, {"five", "5"}, {"six", "6"}, {"seven", "7"},
      {"eight", "8"}, {"nine", "9"}, {"ten", "10"}, {"twelve", "12"}, {"sixteen", "16"}, {"dual", "2"}};
  for (auto [a, b] : k)
    if (w == a) return std::string(b);
  return std::nullopt;
}

bool is_one_of(std::string_view w, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), w) != set.end();
}
bool gpu_word(std::string_view w) {
  return is_one_of(w, {"gpu", "gpus", "card", "cards", "device", "devices", "ranks", "procs", "processes", "workers"});
}
bool node_word(std::string_view w) {
  return is_one_of(w, {"node", "nodes", "host", "hosts", "machine", "machines", "server", "servers", "instances"});
}

// NAME=value words of `s`: applied to `r`, removed from `s`.
void read_settings(std::string& s, LabelReading& r) {
  std::string kept;
  std::size_t i = 0;
  while (i < s.size()) {
    auto sep = [&](char c) { return std::isspace(static_cast<unsigned char>(c)) || std::string_view("(),;[]").find(c) != std::string_view::npos; };
    std::size_t j = i;
    while (j < s.size() && !sep(s[j])) ++j;
    std::string tok = s.substr(i, j - i);
    while (!tok.empty() && (tok.back() == ',' || tok.back() == ';')) tok.pop_back();
    const auto eq = tok.find('=');
    bool taken = false;
    if (eq != std::string::npos && eq > 0 && eq + 1 < tok.size() &&
        (std::isalpha(static_cast<unsigned char>(tok[0])) || tok[0] == '_') &&
        std::all_of(tok.begin(), tok.begin() + static_cast<std::ptrdiff_t>(eq),
                    [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; })) {
      const std::string name = tok.substr(0, eq), value = tok.substr(eq + 1);
      auto set = [&](const std::string& k, const std::string& v) {
        if (!r.dims.count(k)) r.dims[k] = v;
        r.understood = true;
      };
      if (auto t = setting_toggle(name, value)) {
        set(t->first, t->second);
      } else if (lower(name) == "nccl_topo_file") {
        const auto slash = value.find_last_of('/');
        set("topology", slash == std::string::npos ? value : value.substr(slash + 1));
      } else {
        set("setting:" + name, value);
      }
      taken = true;
    }
    if (!taken) kept += s.substr(i, j - i);
    while (j < s.size() && sep(s[j])) kept += s[j++];
    i = j;
  }
  s = kept;
}

}  // namespace

LabelReading read_label(std::string_view label) {
  LabelReading r;
  std::string s = clean_cell(label);
  if (s.size() > 300) s.resize(300);
  auto set = [&](const std::string& k, const std::string& v) {
    if (!r.dims.count(k)) r.dims[k] = v;
    r.understood = true;
  };
  read_settings(s, r);
  // "2:DDP", "1:": a GPU count before a colon.
  {
    std::size_t i = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i > 0 && i <= 4 && i < s.size() && s[i] == ':' && (i + 1 == s.size() || !std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      set("gpus", int_text(s.substr(0, i)));
      s = s.substr(i + 1);
    }
  }
  replace_ci(s, "w/o", " without ");
  replace_ci(s, "w/", " with ");
  {
    static const std::regex mg(R"((\d+)\s*[mn]\s*/\s*(\d+)\s*g(pus?)?\b)", std::regex::icase);
    static const std::regex per(R"((\d+)\s*(x\s*)?(gpus?|procs?|processes|ranks?|devices?)\s*(/|per)\s*(node|host|server|machine)s?\b)",
                                std::regex::icase);
    std::smatch m;
    if (std::regex_search(s, m, mg)) {
      set("nodes", int_text(m[1].str()));
      set("gpus_per_node", int_text(m[2].str()));
      s = m.prefix().str() + " " + m.suffix().str();
    }
    if (std::regex_search(s, m, per)) {
      set("gpus_per_node", int_text(m[1].str()));
      s = m.prefix().str() + " " + m.suffix().str();
    }
  }
  std::vector<Tok> t;
  for (auto& w : words_of(s)) t.push_back({w, lower(w)});
  std::optional<std::size_t> bare_x;
  std::vector<std::size_t> unexplained;
  auto nl = [&](std::size_t i, std::size_t k = 1) -> std::string { return i + k < t.size() ? t[i + k].l : ""; };
  // "8-gpu", "4gpus", "4xgpu", "4xgpu's" (a count fused to its noun)
  static const std::regex count_gpu(R"((\d{1,6})(?:-|x|×)?(gpus?|gpu's|gpu’s|cards?))");
  static const std::regex count_node(R"((\d{1,5})-?(nodes?|n|hosts?|machines?|servers?))");
  static const std::regex nxm(R"((\d{1,5})x(\d{1,3})(.*))");
  static const std::regex nx(R"((\d{1,6})x(.*))");
  static const std::regex xn(R"(x(\d{1,6}))");
  static const std::regex zero(R"(zero-?(\d))");
  static const std::regex soft_ver(R"((nccl|cuda|cu|torch|pytorch|pt|driver)[-_]?(v?\d+(\.\d+)+))");
  static const std::regex nvk(R"(nv\d{1,2})");
  static const std::regex rank_n(R"(rank-?(\d{1,6}))");
  static const std::regex gpu_n(R"((gpu|cuda|dev)-?(\d{1,3}))");
  static const std::regex memory(R"(\d+gb)");
  static const std::regex repeat_n(R"((#|run|repeat|rep|trial|try)-?(\d{1,4}))");
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].used) continue;
    // A count written as a word before what it counts ("two GPUs", "four nodes") reads as its digits.
    if (auto nw = number_word(t[i].l); nw && i + 1 < t.size() && (gpu_word(t[i + 1].l) || node_word(t[i + 1].l)))
      t[i].l = t[i].o = *nw;
    const std::string w = t[i].l, o = t[i].o;
    auto use = [&](std::size_t k) {
      for (std::size_t j = i; j < i + k && j < t.size(); ++j) t[j].used = true;
    };
    auto absorb_form_factor = [&](std::size_t from) {
      for (std::size_t j = from; j < t.size() && j < from + 3; ++j) {
        if (form_factor(t[j].l)) t[j].used = true;
        else if (!std::regex_match(t[j].l, memory)) break;
      }
    };
    std::smatch m;
    if (is_int(w)) {
      const std::string n1 = nl(i);
      if (gpu_word(n1) && n1 != "workers") { set("gpus", int_text(w)); use(2); continue; }
      if (node_word(n1)) {
        set("nodes", int_text(w));
        use(2);
        if (nl(i, 2) == "x" && is_int(nl(i, 3))) {  // "2 nodes x 8 A100"
          set("gpus_per_node", int_text(nl(i, 3)));
          t[i + 2].used = t[i + 3].used = true;
        }
        continue;
      }
      if (n1 == "x" && gpu_product(nl(i, 2))) {
        set("gpus", int_text(w));
        set("gpu", *gpu_product(nl(i, 2)));
        use(3);
        absorb_form_factor(i + 3);
        continue;
      }
      if (auto p = gpu_product(n1)) { set("gpus", int_text(w)); set("gpu", *p); use(2); absorb_form_factor(i + 2); continue; }
    }
    if (ip_like(w)) { set("host", o); use(1); continue; }
    if (std::regex_match(w, m, count_gpu)) { set("gpus", int_text(m[1].str())); use(1); continue; }
    if (std::regex_match(w, m, count_node)) { set("nodes", int_text(m[1].str())); use(1); continue; }
    if (std::regex_match(w, m, nxm)) {
      const std::string rest = m[3].str();
      if (rest.empty() || gpu_product(rest)) {
        set("nodes", int_text(m[1].str()));
        set("gpus_per_node", int_text(m[2].str()));
        if (!rest.empty()) set("gpu", *gpu_product(rest)), absorb_form_factor(i + 1);
        use(1);
        continue;
      }
    }
    if (std::regex_match(w, m, nx)) {
      const std::string rest = m[2].str();
      if (rest.empty()) {
        if (auto p = gpu_product(nl(i))) {
          set("gpus", int_text(m[1].str()));
          set("gpu", *p);
          use(2);
          absorb_form_factor(i + 2);
        } else {
          bare_x = i;
          use(1);
        }
        continue;
      }
      if (auto p = gpu_product(rest)) {
        set("gpus", int_text(m[1].str()));
        set("gpu", *p);
        use(1);
        absorb_form_factor(i + 1);
        continue;
      }
    }
    if (std::regex_match(w, m, xn)) { set("gpus", int_text(m[1].str())); use(1); continue; }
    if (w == "single" || w == "single-gpu" || w == "singlegpu" || w == "single-node" || w == "1gpu") {
      if (w == "single-node" || node_word(nl(i))) {
        set("nodes", "1");
        use(w == "single-node" ? 1 : 2);
      } else {
        if (w != "single" || gpu_word(nl(i))) set("gpus", "1");
        set("mode", "single");
        use(w == "single" && gpu_word(nl(i)) ? 2 : 1);
      }
      continue;
    }
    if (is_one_of(w, {"multi-node", "multinode", "multi-gpu", "multigpu", "intra-node", "inter-node", "internode",
                      "intranode", "baseline", "default", "reference", "ref", "base", "vanilla", "original", "stock",
                      "actual", "measured", "observed", "obtained", "achieved"})) {
      r.understood = true;
      use(1);
      continue;
    }
    if (auto md = mode_of(w); !md.empty()) { set("mode", md); use(1); continue; }
    if (w == "data" && (nl(i) == "parallel" || nl(i) == "parallelism")) { set("mode", "DP"); use(2); continue; }
    if (std::regex_match(w, m, zero)) { set("zero_stage", m[1].str()); use(1); continue; }
    if (w == "zero" && is_int(nl(i))) { set("zero_stage", nl(i)); use(2); continue; }
    if (w == "zero" && nl(i) == "stage" && is_int(nl(i, 2))) { set("zero_stage", nl(i, 2)); use(3); continue; }
    if (auto p = precision_of(w); !p.empty()) {
      set("precision", p);
      use(w == "mixed" && nl(i) == "precision" ? 2 : 1);
      continue;
    }
    if (auto c = compound_toggle(w)) { set(c->first, c->second); use(1); continue; }
    if (auto f = feature_of(w); !f.empty()) {
      std::string pol = "on";
      bool bare = true;  // named without a polarity: a network named bare is also the network
      if (i > 0 && !t[i - 1].used && negation(t[i - 1].l)) {
        pol = "off";
        t[i - 1].used = true;
        bare = false;
      } else if (i > 0 && !t[i - 1].used && (t[i - 1].l == "with" || t[i - 1].l == "enabled")) {
        t[i - 1].used = true;
        bare = false;
      } else if (auto p = polarity_after(nl(i)); !p.empty()) {
        pol = p;
        t[i + 1].used = true;
        bare = false;
      }
      set(f, pol);
      if (bare && (f == "ib" || f == "roce")) set("network", f == "ib" ? "IB" : "RoCE");
      use(1);
      continue;
    }
    if (auto key = software_key(w); !key.empty() && i + 1 < t.size()) {
      if (auto v = version_of(t[i + 1].o, true)) { set(key, *v); use(2); continue; }
      if (nl(i) == "version" && i + 2 < t.size())
        if (auto v2 = version_of(t[i + 2].o, true)) { set(key, *v2); use(3); continue; }
    }
    if (std::regex_match(w, m, soft_ver)) {
      if (auto v = version_of(m[2].str(), true)) { set(software_key(m[1].str()), *v); use(1); continue; }
    }
    if (auto v = version_of(o, false)) { set("version", *v); use(1); continue; }
    if ((w == "topology" || w == "topo") && i + 1 < t.size() && (has_digit(t[i + 1].l) || ends_with(t[i + 1].l, ".xml"))) {
      set("topology", t[i + 1].o);
      use(2);
      continue;
    }
    if ((starts_with(w, "topo") && w.size() <= 16 && w != "topology") || ends_with(w, ".xml")) {
      set("topology", o);
      use(1);
      continue;
    }
    if (std::regex_match(w, nvk) || is_one_of(o, {"PIX", "PXB", "PHB", "NODE", "SYS"})) { set("link", upper(o)); use(1); continue; }
    if (w == "pcie") { set("link", "PCIe"); use(1); continue; }
    if (w == "nvswitch") { set("link", "NVSwitch"); use(1); continue; }
    if (auto n = network_of(w); !n.empty()) { set("network", n); use(1); continue; }
    if (auto p = gpu_product(o)) { set("gpu", *p); use(1); absorb_form_factor(i + 1); continue; }
    if ((w == "rtx" || w == "gtx") && is_int(nl(i)) && nl(i).size() >= 3) {
      std::string g = upper(w) + " " + nl(i);
      std::size_t k = 2;
      if (nl(i, 2) == "ti") g += " Ti", k = 3;
      set("gpu", g);
      use(k);
      continue;
    }
    if (w == "titan") {
      const bool more = has_alpha(nl(i)) && nl(i).size() <= 4;
      set("gpu", more ? "TITAN " + upper(nl(i)) : "TITAN");
      use(more ? 2 : 1);
      continue;
    }
    if (is_one_of(w, {"tesla", "nvidia", "geforce", "quadro"}) &&
        (gpu_product(nl(i)) || is_one_of(nl(i), {"rtx", "gtx", "titan"}))) {
      use(1);
      continue;
    }
    if (w == "rank" && is_int(nl(i))) { set("rank", int_text(nl(i))); use(2); continue; }
    if (std::regex_match(w, m, rank_n)) { set("rank", int_text(m[1].str())); use(1); continue; }
    if (std::regex_match(w, m, gpu_n)) { set("gpu_index", int_text(m[2].str())); use(1); continue; }
    if (is_one_of(w, {"gpu", "cuda", "device", "dev"}) && is_int(nl(i)) && !gpu_word(nl(i, 2))) {
      set("gpu_index", int_text(nl(i)));
      use(2);
      continue;
    }
    if (is_one_of(w, {"run", "repeat", "rep", "trial", "try", "attempt", "take"}) && is_int(nl(i))) {
      set("repeat", int_text(nl(i)));
      use(2);
      continue;
    }
    if (std::regex_match(w, m, repeat_n)) { set("repeat", int_text(m[2].str())); use(1); continue; }
    if (negation(w) || w == "with" || w == "on" || w == "enabled" || w == "enable") continue;  // for the feature that follows
    if (is_one_of(w, {"and", "using", "the", "a", "of", "in", "at", "via", "-", "vs", "vs.", "gpu", "gpus", "w", "+",
                      "x", "net"}) ||
        !std::any_of(w.begin(), w.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); })) {
      use(1);
      continue;
    }
    unexplained.push_back(i);
  }
  if (bare_x) {
    std::smatch m;
    if (!r.dims.count("gpus") && std::regex_match(t[*bare_x].l, m, nx)) set("gpus", int_text(m[1].str()));
    else unexplained.push_back(*bare_x);
  }
  std::sort(unexplained.begin(), unexplained.end());
  for (auto i : unexplained) r.unexplained.push_back(t[i].o);
  if (r.dims.count("nodes") && r.dims.count("gpus_per_node") && !r.dims.count("gpus")) {
    const long long n = std::atoll(r.dims["nodes"].c_str()), g = std::atoll(r.dims["gpus_per_node"].c_str());
    if (n > 0 && g > 0 && n * g < 10000000) r.dims["gpus"] = std::to_string(n * g);
  }
  return r;
}

std::string config_value(const std::string& key, std::string_view cell) {
  const std::string c = clean_cell(cell);
  static const std::set<std::string> counts = {"gpus", "nodes", "gpus_per_node", "epochs", "steps", "workers",
                                               "seq_len", "grad_accum", "batch", "batch_per_gpu", "global_batch",
                                               "repeat", "rank", "gpu_index"};
  if (counts.count(key)) {
    std::size_t i = 0;
    while (i < c.size() && std::isdigit(static_cast<unsigned char>(c[i]))) ++i;
    const std::string rest(trim_blanks(std::string_view(c).substr(i)));
    if (i > 0 && i <= 9 && (!has_digit(rest) || (!rest.empty() && (rest[0] == 'x' || rest[0] == 'X')))) {
      if (rest.empty() || has_alpha(rest)) return int_text(c.substr(0, i));
    }
    return c;
  }
  if (ends_with(key, "version") || key == "version") {
    static const std::regex re(R"(\d+(\.\d+)+)");
    std::smatch m;
    if (c.size() <= 200 && std::regex_search(c, m, re)) return m.str();
    return c;
  }
  if (key == "precision") {
    const std::string l = lower(c);
    if (contains(l, "mixed") || l == "amp") return "mixed";
    if (auto p = precision_of(l); !p.empty()) return p;
    return c;
  }
  if (key == "mode") {
    if (auto md = mode_of(lower(c)); !md.empty()) return md;
    return c;
  }
  if (key == "network") {
    // "IB", "InfiniBand", "RoCE", "RoCEv2", "NET/Socket", "TCP", "EFA", "Ethernet" as one spelling each.
    std::string l = lower(c);
    if (starts_with(l, "net/")) l = l.substr(4);
    if (l == "ib" || l == "infiniband" || l == "ibext") return "IB";
    if (l == "roce" || l == "rocev2") return "RoCE";
    if (auto n = network_of(l); !n.empty()) return n;
    return c;
  }
  if (key == "gpu") {
    if (auto p = gpu_product(c)) return *p;
    auto r = read_label(c);
    if (r.dims.count("gpu")) return r.dims["gpu"];
    return c;
  }
  return c;
}

namespace {

struct KnownModel {
  const char* name;
  double parameters;
};
constexpr KnownModel kModels[] = {
    {"gpt2", 124e6}, {"gpt-2", 124e6}, {"gpt2-medium", 355e6}, {"gpt2-large", 774e6}, {"gpt2-xl", 1.5e9},
    {"distilgpt2", 82e6}, {"bert-base", 110e6}, {"bert-base-uncased", 110e6}, {"bert-base-cased", 110e6},
    {"bert-large", 340e6}, {"bert-large-uncased", 340e6}, {"bert-large-cased", 340e6}, {"distilbert", 66e6},
    {"roberta-base", 125e6}, {"roberta-large", 355e6}, {"t5-small", 60e6}, {"t5-base", 220e6}, {"t5-large", 770e6},
    {"resnet18", 11.7e6}, {"resnet-18", 11.7e6}, {"resnet34", 21.8e6}, {"resnet50", 25.6e6}, {"resnet-50", 25.6e6},
    {"resnet101", 44.5e6}, {"resnet-101", 44.5e6}, {"resnet152", 60.2e6}, {"vgg16", 138e6}, {"vgg-16", 138e6},
    {"vgg19", 144e6}, {"alexnet", 61e6}, {"inception-v3", 23.8e6}, {"inceptionv3", 23.8e6}, {"googlenet", 6.8e6},
    {"vit-base", 86e6}, {"vit-large", 307e6}, {"mobilenet-v2", 3.5e6}};

// "3B", "124M", "1.3b", "70b": parameters.
std::optional<double> size_word(std::string_view w) {
  static const std::regex re(R"((\d+(\.\d+)?)([bBmMkK]))");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_match(w.begin(), w.end(), m, re)) return std::nullopt;
  const double v = std::atof(m[1].str().c_str());
  const char u = static_cast<char>(std::tolower(static_cast<unsigned char>(m[3].str()[0])));
  return v * (u == 'b' ? 1e9 : u == 'm' ? 1e6 : 1e3);
}

// A model named by `token`: a known name, or a name with a size part ("Llama-3.2-3B-Instruct", "opt-1.3b").
std::optional<diagnose::ModelSeen> model_of(std::string_view token) {
  std::string t(token);
  while (!t.empty() && std::string_view(".,:;'\"").find(t.back()) != std::string_view::npos) t.pop_back();
  if (t.size() < 3 || t.size() > 80) return std::nullopt;
  const std::string l = lower(t);
  for (const auto& k : kModels)
    if (l == k.name) return diagnose::ModelSeen{t, k.parameters, std::nullopt};
  // Parts split at '-' and '_': one is a size, another a name of at least two letters.
  std::vector<std::string> parts;
  std::string cur;
  for (char c : t) {
    if (c == '-' || c == '_') {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  if (parts.size() < 2) return std::nullopt;
  std::optional<double> params;
  bool named = false;
  for (const auto& p : parts) {
    if (auto s = size_word(p); s && !params) params = s;
    else if (p.size() >= 2 && std::all_of(p.begin(), p.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); }) &&
             !gpu_product(p))
      named = true;
  }
  if (!params || !named || *params < 1e6) return std::nullopt;
  return diagnose::ModelSeen{t, params, std::nullopt};
}

}  // namespace

std::vector<diagnose::FactValue> title_facts(std::string_view title, const Dims& dims) {
  std::vector<diagnose::FactValue> out;
  std::string t = clean_cell(title);
  if (t.size() > 400) t.resize(400);
  std::vector<std::string> tokens;
  std::string cur;
  for (char c : t) {
    if (std::isspace(static_cast<unsigned char>(c)) || std::string_view("()[],;|@").find(c) != std::string_view::npos) {
      if (!cur.empty()) tokens.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) tokens.push_back(cur);
  for (const auto& tok : tokens)
    if (auto m = model_of(tok)) {
      if (auto p = dims.find("precision"); p != dims.end()) m->dtype = p->second;
      out.emplace_back(std::move(*m));
      break;
    }
  if (auto g = dims.find("gpu"); g != dims.end()) out.emplace_back(diagnose::GpuSeen{g->second, {}, {}, {}, {}});
  auto num = [&](const char* k) -> std::optional<int> {
    auto it = dims.find(k);
    if (it == dims.end()) return std::nullopt;
    const long v = std::atol(it->second.c_str());
    if (v <= 0 || v > 1000000) return std::nullopt;
    return static_cast<int>(v);
  };
  if (auto n = num("nodes"), g = num("gpus_per_node"); n && g) {
    diagnose::WorldShape w;
    w.nodes = n;
    w.ranks_per_node = g;
    w.ranks = *n * *g;
    w.basis = "table title";
    out.emplace_back(std::move(w));
  }
  return out;
}

}  // namespace scalescope::analyze::tables_detail
