#include "readers/prose/sentence_numbers.h"

#include <algorithm>
#include <cctype>
#include <regex>

namespace scalescope::analyze::sentence {

std::string lower(std::string_view s) {
  std::string o(s);
  for (auto& c : o) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return o;
}

bool has(const std::string& s, std::string_view w) { return s.find(w) != std::string::npos; }

/// A word of `s` (lower-case) as a whole word: not inside a longer run of letters.
bool word(const std::string& s, std::string_view w) {
  for (std::size_t p = s.find(w); p != std::string::npos; p = s.find(w, p + 1)) {
    const bool left = p == 0 || !std::isalpha(static_cast<unsigned char>(s[p - 1]));
    const std::size_t e = p + w.size();
    const bool right = e >= s.size() || !std::isalpha(static_cast<unsigned char>(s[e]));
    if (left && right) return true;
  }
  return false;
}

std::optional<int> count_word(const std::string& w) {
  static const std::pair<const char*, int> words[] = {{"one", 1},   {"single", 1}, {"a", 1},     {"two", 2},
                                                      {"three", 3}, {"four", 4},   {"six", 6},   {"eight", 8},
                                                      {"sixteen", 16}, {"dual", 2}, {"quad", 4}};
  for (const auto& [k, v] : words)
    if (w == k) return v;
  if (!w.empty() && std::all_of(w.begin(), w.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }) &&
      w.size() <= 4)
    return std::stoi(w);
  return std::nullopt;
}



std::vector<Count> counts(const std::string& s, MeasureState* state) {
  std::vector<Count> out;
  // "2 GPUs", "1 gpu", "8 x A100", "2x RTX 2080 Ti", "single GPU", "2-GPU", "single-GPU", "two V100 GPUs", "4 cards",
  // "8 processes",
  // "nproc_per_node=8", "--nproc_per_node 2", "world size 4", "--gpus 4".
  static const std::regex gpu_re(
      R"(\b(\d{1,4}|one|two|three|four|six|eight|sixteen|single|dual|quad)(?:\s*|-)(?:x\s*|×\s*)?(?:[a-z]*\s?(?:geforce|nvidia|tesla|rtx|gtx|quadro)?\s?[a-z]?\d{2,4}[a-z]*(?:\s?(?:ti|super|sxm\d?|pcie|\d+gb))*\s)?(gpus?|cards?|devices?)\b)");
  static const std::regex x_re(R"(\b(\d{1,3})\s*(?:x|×)\s*(?:nvidia\s+|geforce\s+|tesla\s+)?(?:rtx|gtx|titan|quadro|[ahlbtvpk]\d{1,4}|\d{4})\b)");
  // "8 x batch 16", "4×bs32": GPUs times the per-GPU batch.
  static const std::regex x_batch_re(R"(\b(\d{1,3})\s*(?:x|×)\s*(?:batch|bs)\b)");
  static const std::regex proc_re(R"(\b(\d{1,4}|one|two|four|eight)\s+(?:processes|procs|ranks|workers? processes)\b)");
  static const std::regex flag_re(R"((?:nproc[_-]per[_-]node|--gpus|num_processes|world[_ ]size|--np|-np|ngpus?|num[_-]?gpus|n_gpus?)\s*[= ]\s*(\d{1,4}))");
  std::smatch m;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), gpu_re); it != std::sregex_iterator(); ++it)
    if (auto n = count_word((*it)[1].str())) out.push_back({*n, static_cast<std::size_t>(it->position(0)), false});
  for (auto it = std::sregex_iterator(s.begin(), s.end(), x_re); it != std::sregex_iterator(); ++it)
    if (auto n = count_word((*it)[1].str())) out.push_back({*n, static_cast<std::size_t>(it->position(0)), false});
  if (has(s, "batch") || has(s, "bs"))  // what x_batch_re needs
    for (auto it = std::sregex_iterator(s.begin(), s.end(), x_batch_re); it != std::sregex_iterator(); ++it)
      if (auto n = count_word((*it)[1].str())) out.push_back({*n, static_cast<std::size_t>(it->position(0)), false});
  // A count whose noun the sentence leaves out after naming it ("100 ms per step on one GPU and 160 ms on two."): in a
  // sentence that already counts GPUs, "on / with / across N" ending its clause counts GPUs too.
  if (!out.empty()) {
    static const std::regex elided_re(
        R"(\b(?:on|with|using|across)\s+(\d{1,4}|two|three|four|six|eight|sixteen)(?=\s*(?:[.,;:)]|$|\s+(?:and|but|while|whereas|vs)\b)))");
    for (auto it = std::sregex_iterator(s.begin(), s.end(), elided_re); it != std::sregex_iterator(); ++it)
      if (auto n = count_word((*it)[1].str())) out.push_back({*n, static_cast<std::size_t>(it->position(0)), false});
  }
  for (auto it = std::sregex_iterator(s.begin(), s.end(), proc_re); it != std::sregex_iterator(); ++it)
    if (auto n = count_word((*it)[1].str())) out.push_back({*n, static_cast<std::size_t>(it->position(0)), true});
  for (auto it = std::sregex_iterator(s.begin(), s.end(), flag_re); it != std::sregex_iterator(); ++it)
    if (auto n = count_word((*it)[1].str())) out.push_back({*n, static_cast<std::size_t>(it->position(0)), true});
  // Machines when the sentence counts no GPU: "a single machine" against "2 identical machines" scale as the GPUs do
  // (the same GPUs per machine).
  // (The words between count and noun are adjectives — "2 identical GPU machines" —, never another count or a unit:
  // "0.5 s on one node" is one node, not five.)
  static const std::regex machine_re(R"(\b(\d{1,4}|one|two|three|four|eight|sixteen|single|a single)\s+(?:(?!(?:one|two|three|four|eight|sixteen|single|a|an|on|in|at|per|of|s|ms|sec|secs|min|h|x)\s)[a-z0-9.-]+\s+){0,3}(machines?|nodes?|hosts?|servers?|instances?)\b)");
  auto machines = [&](int per) {
    std::vector<Count> ms;
    for (auto it = std::sregex_iterator(s.begin(), s.end(), machine_re); it != std::sregex_iterator(); ++it) {
      std::string w = (*it)[1].str();
      if (w == "a single") w = "single";
      if (auto n = count_word(w)) ms.push_back({*n * per, static_cast<std::size_t>(it->position(0)), false});
    }
    return ms;
  };
  // A count of GPUs per machine ("2 servers, each with 4 GPUs", "4 GPUs per node"): the machines the sentence counts
  // then say how many GPUs each figure ran on (a figure on "a single server" ran on 4, one on "2 servers" on 8), and
  // the per-machine count is no job's size of its own.
  static const std::regex per_node_re(
      R"(\beach\s+(?:(?:node|server|machine|host|instance|one)\s+)?(?:has|have|having|with|holds?|contains?|(?:is\s+)?equipped\s+with)\s+(\d{1,3}|two|four|eight|sixteen)\s*(?:x\s*)?(?:(?:[a-z]*\d[a-z0-9-]*|nvidia|geforce|tesla|rtx|gtx|quadro|titan)\s+){0,3}(?:gpus?|cards?)\b|\b(\d{1,3}|two|four|eight|sixteen)\s*(?:x\s*)?(?:(?:[a-z]*\d[a-z0-9-]*|nvidia|geforce|tesla|rtx|gtx|quadro|titan)\s+){0,3}(?:gpus?|cards?)\s+(?:each|per\s+(?:node|server|machine|host|instance))\b)");
  if (std::smatch pm; (has(s, "each") || has(s, "per")) && std::regex_search(s, pm, per_node_re)) {
    const auto per = count_word(pm[1].matched ? pm[1].str() : pm[2].str());
    if (per && *per >= 1 && state) state->gpus_per_machine = *per;
    if (per && *per >= 1) {
      auto ms = machines(*per);
      if (!ms.empty()) {
        const auto a = static_cast<std::size_t>(pm.position(0)), b = a + static_cast<std::size_t>(pm.length(0));
        out.erase(std::remove_if(out.begin(), out.end(), [&](const Count& c) { return !c.processes && c.pos >= a && c.pos < b; }),
                  out.end());
        out.insert(out.end(), ms.begin(), ms.end());
      }
    }
  }
  // Machines counted after the text gave its GPUs per machine ("… each with 8 GPUs. On 3 servers it takes …").
  if (out.empty()) out = machines(state && state->gpus_per_machine ? *state->gpus_per_machine : 1);
  std::sort(out.begin(), out.end(), [](const Count& a, const Count& b) { return a.pos < b.pos; });
  // "a GPU" is a count only in "a single GPU"; "a" alone often is an article before "GPU server".
  return out;
}

/// The count nearest to `pos`: the last one before it in the same clause (no ';' or '.' between), else the nearest.
std::optional<Count> nearest(const std::vector<Count>& cs, const std::string& s, std::size_t pos) {
  std::optional<Count> best;
  std::size_t best_d = std::string::npos;
  for (const auto& c : cs) {
    const std::size_t d = c.pos < pos ? pos - c.pos : c.pos - pos;
    // Counts across a clause break (";", " but ", " while ", " whereas ") weigh as farther.
    const std::size_t a = std::min(c.pos, pos), b = std::max(c.pos, pos);
    const std::string between = s.substr(a, b - a);
    std::size_t penalty = (has(between, ";") || has(between, " but ") || has(between, " while ") ||
                           has(between, " whereas ") || has(between, " vs") || has(between, " and ") ||
                           has(between, " against ") || has(between, " compared to ") || has(between, " compared with "))
                              ? 60
                              : 0;
    // A comma between parts the clauses; a count after the figure is the next clause's more often than this one's.
    if (has(between, ",")) penalty += 30;
    if (c.pos > pos) penalty += 15;
    if (d + penalty < best_d) {
      best_d = d + penalty;
      best = c;
    }
  }
  return best;
}



double parse_num(const std::string& a, const std::string& b) {
  auto num = [](std::string t) {
    t.erase(std::remove(t.begin(), t.end(), ','), t.end());
    return std::stod(t);
  };
  const double x = num(a);
  return b.empty() ? x : (x + num(b)) / 2;  // a range: its middle
}

std::vector<Figure> figures(const std::string& s, const std::string& raw) {
  std::vector<Figure> out;
  static const std::regex re(
      R"((?:~|≈|about |around |roughly |approx\.? )?(\d+(?:,\d{3})*(?:\.\d+)?)(?:\s*(?:-|–|to)\s*(\d+(?:\.\d+)?))?\s*(k\s?(?=fps|frames|samples|sample|images|imgs|img|tokens|tok))?(gb/s|gb/sec|gbps|gib/s|gbyte/s|mbits?/sec|mbits?/s|mbps|mb/s|gbit/s|gbits?/sec|gb/s|gbits?/s|gbe|g ethernet|it/s|its/s|fps|frames/s|frames/sec|ms/step|ms/it|ms/iter|(?:seconds?|secs?|s)\s?/\s?(?:iteration|iter|it|step)|samples/s|samples/sec|sample/s|images/s|imgs/s|img/s|images/sec|tokens/s|tokens/sec|tok/s|ms|msec|milliseconds?|seconds?|secs?|sec|s|minutes?|mins?|min|hours?|hrs?|h|days?|%)(?![a-z/]))");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), re); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    // A number inside a word is a name ("H100s", "A6000", "x86"): the figure must start at a word boundary.
    const auto at = static_cast<std::size_t>(m.position(0));
    if (at > 0 && (std::isalnum(static_cast<unsigned char>(s[at - 1])) || s[at - 1] == '.' || s[at - 1] == '_')) continue;
    Figure f;
    try {
      f.value = parse_num(m[1].str(), m[2].str());
    } catch (...) {
      continue;
    }
    // "245K FPS": thousands of a rate.
    if (m[3].matched) f.value *= 1000;
    std::string u = m[4].str();
    // "1.27 second / it": a time per iteration written with blanks.
    if (const auto slash = u.find('/'); slash != std::string::npos) {
      std::string a = u.substr(0, slash), b = u.substr(slash + 1);
      a.erase(std::remove(a.begin(), a.end(), ' '), a.end());
      b.erase(std::remove(b.begin(), b.end(), ' '), b.end());
      if ((a == "s" || a == "sec" || a == "secs" || a == "second" || a == "seconds") &&
          (b == "it" || b == "iter" || b == "iteration" || b == "step"))
        u = "s/it";
    }
    // Bytes against bits: a capital B is bytes ("GB/s"), a small one bits ("Gb/s"); "gb/s" all small reads as bytes.
    const std::string as_written = raw.substr(static_cast<std::size_t>(m.position(4)), static_cast<std::size_t>(m.length(4)));
    if (as_written.size() >= 2 && as_written[0] == 'G' && as_written[1] == 'b') u = "gbit/s";
    // Case matters for bytes against bits: look at the original spelling in the sentence (lower-cased here), so
    // "Gbps", "Gbit/s", "Gb/s" written with a small b are bits; we get the case from the raw text by the caller.
    if (u == "gb/s" || u == "gb/sec" || u == "gib/s" || u == "gbyte/s") u = "GB/s";
    else if (u == "gbps" || u == "gbit/s" || u == "gbits/s" || u == "gbit/sec" || u == "gbits/sec" || u == "gbe" || u == "g ethernet") u = "Gb/s";
    else if (u == "mbps" || u.rfind("mbit", 0) == 0) {  // "625 Mbits/sec" (iperf), "100 Mbps": a network rate in Gb/s
      f.value /= 1000;
      u = "Gb/s";
    }
    else if (u == "mb/s") u = "MB/s";
    else if (u == "it/s" || u == "its/s") u = "it/s";
    else if (u == "ms/step" || u == "ms/it" || u == "ms/iter") {  // a step time in milliseconds
      f.value /= 1000;
      u = "s/it";
    }
    else if (u == "fps" || u.rfind("frames", 0) == 0) u = "frames/s";
    else if (u.rfind("sample", 0) == 0) u = "samples/s";
    else if (u.rfind("im", 0) == 0) u = "images/s";
    else if (u.rfind("tok", 0) == 0) u = "tokens/s";
    else if (u == "ms" || u == "msec" || u.rfind("millisecond", 0) == 0) u = "ms";
    else if (u == "s" || u.rfind("sec", 0) == 0) u = "s";
    else if (u.rfind("min", 0) == 0) u = "min";
    else if (u == "h" || u.rfind("hour", 0) == 0 || u.rfind("hr", 0) == 0) u = "h";
    else if (u.rfind("day", 0) == 0) u = "d";
    f.unit = u;
    f.pos = static_cast<std::size_t>(m.position(0));
    f.end = f.pos + static_cast<std::size_t>(m.length(0));
    out.push_back(f);
  }
  // Clock times: "1:45:49" (h:mm:ss), "36:33" (mm:ss, or h:mm where the text says hours), as seconds.
  static const std::regex clock(R"(\b(\d{1,3}):([0-5]\d)(?::([0-5]\d))?\b(?![:.]?\d))");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), clock); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    Figure f;
    const double a = std::stod(m[1].str()), b = std::stod(m[2].str());
    f.value = m[3].matched ? a * 3600 + b * 60 + std::stod(m[3].str()) : a * 60 + b;
    f.unit = "s";
    f.pos = static_cast<std::size_t>(m.position(0));
    f.end = f.pos + static_cast<std::size_t>(m.length(0));
    out.push_back(f);
  }
  // A bus or algorithm bandwidth stated without a unit ("the avg bus bandwidth is 15.5071", "busbw reaches 31.73"):
  // nccl-tests prints both in GB/s, and people quote its column as printed.
  static const std::regex bare_bw(
      R"((?:bus ?bw|bus bandwidth|busbw|algbw|alg bw|algorithm bandwidth)\s*(?:is|was|of|reaches|reached|=|:|~|≈|at)?\s*(?:about |around |only |just |~|≈)?(\d{1,4}(?:\.\d{1,4})?)(?!\d|\.\d)(?=\s*(?:$|[,.;:)!?]|(?:and|but|or|in|on|at|with|for|when|while|which|even|only|vs|versus|compared|against|instead|from|to)\b)))");
  const bool bw_words = has(s, "bw") || has(s, "bandwidth");  // what bare_bw needs
  for (auto it = bw_words ? std::sregex_iterator(s.begin(), s.end(), bare_bw) : std::sregex_iterator(); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    Figure f;
    f.value = std::stod(m[1].str());
    f.unit = "GB/s";
    f.pos = static_cast<std::size_t>(m.position(1));
    f.end = f.pos + static_cast<std::size_t>(m.length(1));
    if (std::none_of(out.begin(), out.end(), [&](const Figure& g) { return g.pos <= f.pos && f.pos < g.end; })) out.push_back(f);
  }
  std::sort(out.begin(), out.end(), [](const Figure& x, const Figure& y) { return x.pos < y.pos; });
  return out;
}

/// What a time or rate figure measures, from the words within a few tokens around it.
std::string quantity_of(const std::string& s, const Figure& f) {
  const std::size_t from = f.pos > 60 ? f.pos - 60 : 0;
  const std::string before = s.substr(from, f.pos - from);
  const std::string after = s.substr(f.end, std::min<std::size_t>(40, s.size() - f.end));
  const std::string around = before + " # " + after;
  if (f.unit == "GB/s" || f.unit == "MB/s") {
    if (has(around, "busbw") || has(around, "bus bandwidth") || has(around, "bus bw")) return "busbw";
    if (has(around, "algbw") || has(around, "algorithm bandwidth")) return "algbw";
    return "bandwidth";
  }
  if (f.unit == "%") {
    if (has(around, "mfu") || has(around, "model flops util")) return "MFU";
    if (has(after, "scaling efficiency") || has(after, "efficiency") || has(before, "scaling efficiency")) return "scaling efficiency";
    // (Memory's share is no measure of how busy the GPU is: "GPU memory utilisation is 55 %".)
    if (has(around, "memory util") || has(around, "mem util") || has(around, "memory usage") || has(around, "memory-util") ||
        has(around, "vram") || has(around, "memory is"))
      return "memory utilisation";
    if (has(around, "util") || has(around, "busy") || has(around, "usage")) return "GPU utilisation";
    // The input pipeline's share of the step ("loading data costs about 75 % (1.7 s / 2.2 s) of the total time"): a
    // percentage followed by "of the (total) time / of each iteration", in a sentence that states it (no question, no
    // "used to", no checkpoint) — not "75 % faster", "60 % of the dataset", "50 % of the CPU cores".
    static const std::regex share_of_time(
        R"(^\W{0,12}(?:\([^)]{0,40}\)\s*)?of\s+(?:the\s+)?(?:(?:total|whole|overall|training|wall|wall-clock|step|iteration|epoch)\s+)?(?:time|step|iteration|runtime|run\s*time|epoch|training)\b|^\W{0,12}(?:\([^)]{0,40}\)\s*)?of\s+(?:each|every|an?)\s+(?:step|iteration|batch|epoch)\b)");
    if ((has(around, "data load") || has(around, "loading data") || has(around, "load data") || has(around, "dataloader") ||
         has(around, "data loader") || has(around, "data time") || has(around, "waiting for data") ||
         has(around, "waiting on the input") || has(around, "input pipeline")) &&
        std::regex_search(after, share_of_time) && s.find('?') == std::string::npos && !has(s, "used to") &&
        !has(s, "checkpoint"))
      return "data loading share";
    if (has(around, "nccl") || has(around, "communication") || has(around, "allreduce") || has(around, "all-reduce") ||
        has(around, "all_reduce"))
      return "communication share";
    return "";
  }
  if (f.unit == "it/s" || f.unit == "s/it") return "step rate";
  if (f.unit == "samples/s" || f.unit == "images/s" || f.unit == "tokens/s" || f.unit == "frames/s") return "throughput";
  // Times: the quantity whose word lies nearest the figure (before it within 60 characters, after it within 40).
  static const std::pair<const char*, const char*> words[] = {
      {"epoch", "epoch time"},         {"step", "step time"},          {"iteration", "step time"},
      {"iter", "step time"},           {"per batch", "step time"},     {"each batch", "step time"},
      {"batch time", "step time"},     {"eta", "run time"},            {"total", "run time"},
      {"training took", "run time"},   {"whole", "run time"},          {"run time", "run time"},
      {"runtime", "run time"},         {"training time", "run time"},  {"wall", "run time"},
      {"finish", "run time"},          {"complete", "run time"},       {"to train", "run time"},
      {"estimat", "run time"},         {"conclusion", "run time"},     {"training takes", "run time"},
      {"the run", "run time"},         {"to run", "run time"},         {"training", "run time"}};
  std::size_t best = std::string::npos;
  std::string q;
  for (const auto& [w, quantity] : words) {
    // Whole words only ("iter" not inside "iteration", "eta" not inside "metal"), the last before and the first after.
    auto consider = [&](std::size_t at, std::size_t distance) {
      const bool left = at == 0 || !std::isalpha(static_cast<unsigned char>(around[at - 1]));
      const std::size_t e = at + std::strlen(w);
      const bool right = e >= around.size() || !std::isalpha(static_cast<unsigned char>(around[e])) || around[e] == 's';
      if (left && right && distance < best) {
        best = distance;
        q = quantity;
      }
    };
    for (auto at = before.rfind(w); at != std::string::npos; at = at == 0 ? std::string::npos : before.rfind(w, at - 1)) {
      consider(at, before.size() - at);
      break;
    }
    if (auto at = after.find(w); at != std::string::npos) consider(before.size() + 3 + at, at + 1);
  }
  return q;
}

double seconds(const Figure& f) {
  if (f.unit == "ms") return f.value / 1000;
  if (f.unit == "min") return f.value * 60;
  if (f.unit == "h") return f.value * 3600;
  if (f.unit == "d") return f.value * 86400;
  return f.value;
}

}  // namespace scalescope::analyze::sentence
