#include "diagnose/context.h"

#include <algorithm>
#include <cctype>
#include <utility>
#include <set>

#include <fmt/format.h>

namespace scalescope::diagnose {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The most GPUs one node of this model holds: 8 on HGX/DGX boards (16 on DGX-2's V100 SXM3), 16 otherwise (large
// PCIe servers). Used only to tell that a rank count spans nodes.
int max_gpus_per_node(const topo::GpuSpec* gpu) {
  if (!gpu) return 16;
  if (gpu->form == topo::GpuForm::sxm) return gpu->model.find("SXM3") != std::string_view::npos ? 16 : 8;
  if (gpu->form == topo::GpuForm::superchip) return 4;
  return 16;
}

int gpu_number(const std::string& label) {
  if (label.rfind("GPU", 0) != 0) return -1;
  try {
    return std::stoi(label.substr(3));
  } catch (...) {
    return -1;
  }
}

std::vector<int> index_list(const std::string& value) {
  std::vector<int> out;
  std::size_t b = 0;
  while (b <= value.size()) {
    auto e = value.find(',', b);
    if (e == std::string::npos) e = value.size();
    std::string t = value.substr(b, e - b);
    t.erase(0, t.find_first_not_of(" \t\"'"));
    t.erase(t.find_last_not_of(" \t\"'") + 1);
    try {
      std::size_t used = 0;
      const int i = std::stoi(t, &used);
      if (used != t.size() || i < 0) return {};
      out.push_back(i);
    } catch (...) {
      return {};  // UUIDs or MIG ids: not an index list
    }
    b = e + 1;
  }
  return out;
}

}  // namespace

Context::Context(const FactSet& f) : facts(f) {
  // ---- GPU models: one entry per table entry (or per name when unknown) ----
  for (const auto& g : facts.of<GpuSeen>()) {
    if (g.fact.name.empty()) continue;
    const auto* spec = topo::find_gpu(g.fact.name);
    auto it = std::find_if(models.begin(), models.end(), [&](const Model& m) {
      return spec ? m.spec == spec : (!m.spec && lower(m.name) == lower(g.fact.name));
    });
    if (it == models.end()) models.push_back({g.fact.name, spec, g.where, 1});
    else ++it->seen;
  }
  // GPU names other readers print beside their own facts (nvidia-smi nvlink -s).
  for (const auto& n : facts.of<NvlinkState>()) {
    if (!n.fact.gpu_name || n.fact.gpu_name->empty()) continue;
    const auto* spec = topo::find_gpu(*n.fact.gpu_name);
    auto it = std::find_if(models.begin(), models.end(), [&](const Model& m) {
      return spec ? m.spec == spec : (!m.spec && lower(m.name) == lower(*n.fact.gpu_name));
    });
    if (it == models.end()) models.push_back({*n.fact.gpu_name, spec, n.where, 1});
  }
  // A bare or partial name ("H100", "A100 80GB") beside a full one of the same board ("NVIDIA H100 80GB HBM3",
  // "NVIDIA A100-SXM4-80GB") is that board: every word of it is a word of the full name.
  auto words_of = [](const std::string& name) {
    std::set<std::string> w;
    std::string cur;
    for (char c : lower(name) + " ") {
      if (std::isalnum(static_cast<unsigned char>(c))) cur += c;
      else if (!cur.empty()) w.insert(std::exchange(cur, std::string()));
    }
    return w;
  };
  auto part_of = [&](const std::string& bare, const std::string& full) {
    if (lower(full).find(lower(bare)) != std::string::npos) return true;
    const auto b = words_of(bare), f = words_of(full);
    return !b.empty() && std::all_of(b.begin(), b.end(), [&](const std::string& x) { return f.count(x) > 0; });
  };
  if (std::any_of(models.begin(), models.end(), [](const Model& m) { return m.spec != nullptr; }))
    models.erase(std::remove_if(models.begin(), models.end(),
                                [&](const Model& m) {
                                  if (m.spec) return false;
                                  return std::any_of(models.begin(), models.end(), [&](const Model& o) {
                                    return o.spec && (part_of(m.name, std::string(o.spec->model)) || part_of(m.name, o.name));
                                  });
                                }),
                 models.end());
  if (!models.empty()) {
    gpu_name = models.front().name;
    gpu_evidence = line("GPU: " + gpu_name, models.front().where);
    mixed_models = models.size() > 1;
    if (!mixed_models) gpu = models.front().spec;
    // A name that leaves the form open ("H100", "8xA100 80GB"): the link the text names decides it where only one
    // form has that link — NVLink between more than a pair, or NVSwitch/NVLS, is an SXM board's; "no NVLink" or PCIe
    // alone is a PCIe card's. Said in the evidence as an inference.
    if (!mixed_models && !gpu) {
      bool nvlink = false, pcie = false;
      for (const auto& c : facts.of<Claim>())
        if (c.fact.kind == "link") {
          nvlink = nvlink || c.fact.detail == "nvlink" || c.fact.detail == "nvswitch";
          pcie = pcie || c.fact.detail == "no-nvlink" || c.fact.detail == "pcie";
        }
      std::string why = nvlink ? "the text names NVLink, which only that form has between these GPUs"
                               : "the text names PCIe without NVLink";
      // A measured busbw above what the PCIe card's own link carries can only have crossed NVLink.
      if (!nvlink && !pcie) {
        const auto* pcie_form = topo::find_gpu(models.front().name + " PCIe");
        const double pcie_max = pcie_form ? topo::pcie_link_gbps(pcie_form->pcie_gen, pcie_form->pcie_width) : 0;
        for (const auto& p : facts.of<BusbwPlateau>())
          if (pcie_max > 0 && p.fact.gbps > 1.2 * pcie_max) {
            nvlink = true;
            why = fmt::format("a measured busbw of {:.0f} GB/s, above the {:.0f} GB/s the PCIe card's own link carries", p.fact.gbps, pcie_max);
          }
      }
      if (nvlink != pcie) {
        const std::string base = models.front().name;
        const std::vector<const char*> forms = nvlink ? std::vector<const char*>{" SXM", " SXM4", " SXM5", " SXM 80GB", " SXM4 80GB"}
                                                      : std::vector<const char*>{" PCIe", " PCIe 80GB"};
        for (const char* form : forms) {
          if (const auto* spec = topo::find_gpu(base + form)) {
            gpu = spec;
            gpu_evidence = line(fmt::format("GPU: {} — read as the {} ({})", gpu_name, spec->model, why), models.front().where);
            break;
          }
        }
      }
    }
  }

  // ---- settings: the last value read of each name ----
  std::map<std::pair<std::string, std::string>, std::set<std::string>> values;  // (name, file) → the values it gives
  for (const auto& s : facts.of<Setting>()) values[{s.fact.name, s.where.source}].insert(s.fact.value);
  for (const auto& s : facts.of<Setting>()) {
    SettingView v{s.fact.name, s.fact.value, s.fact.origin, s.where, judge_setting(s.fact.name, s.fact.value),
                  values[{s.fact.name, s.where.source}]};
    settings[s.fact.name] = std::move(v);
  }

  // ---- shape of the job ----
  std::set<std::string> host_set;
  // "localhost" (a launcher's -H localhost:2) is whichever host the logs name, not another one.
  auto add_host = [&](const std::string& h) {
    const bool local = h == "localhost" || h == "127.0.0.1" || h == "::1" || h == "localhost.localdomain";
    if (!h.empty() && !local && host_set.insert(h).second) hosts.push_back(h);
  };
  for (const auto& g : facts.of<GpuSeen>())
    if (g.fact.host) add_host(*g.fact.host);
  std::vector<EvidenceLine> multi, single;
  for (const auto& w : facts.of<WorldShape>()) {
    for (const auto& h : w.fact.hosts) add_host(h);
    if (w.fact.ranks) ranks = std::max(ranks.value_or(0), *w.fact.ranks);
    if (w.fact.nodes) nodes = std::max(nodes.value_or(0), *w.fact.nodes);
    if (w.fact.ranks_per_node) ranks_per_node = w.fact.ranks_per_node;
    if (w.fact.nodes && *w.fact.nodes >= 2)
      multi.push_back(line(fmt::format("{} nodes ({})", *w.fact.nodes, w.fact.basis), w.where));
    else if (w.fact.nodes && *w.fact.nodes == 1)
      single.push_back(line(fmt::format("one node ({})", w.fact.basis), w.where));
    if (w.fact.processes && *w.fact.processes == 1 && w.fact.ranks && *w.fact.ranks > 1)
      single.push_back(line(fmt::format("one process drives all {} ranks ({})", *w.fact.ranks, w.fact.basis), w.where));
    if (w.fact.ranks_per_node && w.fact.ranks && *w.fact.ranks > *w.fact.ranks_per_node)
      multi.push_back(line(fmt::format("{} ranks, {} per node ({})", *w.fact.ranks, *w.fact.ranks_per_node, w.fact.basis), w.where));
  }
  for (const auto& l : facts.of<Launch>()) {
    if (l.fact.np) ranks = std::max(ranks.value_or(0), *l.fact.np);
    if (l.fact.nproc_per_node) {
      ranks_per_node = l.fact.nproc_per_node;
      ranks = std::max(ranks.value_or(0), *l.fact.nproc_per_node * l.fact.nnodes.value_or(1));
    }
    if (l.fact.nnodes && *l.fact.nnodes >= 2) {
      nodes = std::max(nodes.value_or(0), *l.fact.nnodes);
      multi.push_back(line(fmt::format("{} with {} nodes", l.fact.launcher, *l.fact.nnodes), l.where));
    } else if (l.fact.hostfile && !(l.fact.nnodes && *l.fact.nnodes == 1)) {  // -H localhost:2 lists one host
      multi.push_back(line(l.fact.launcher + " with a host list (several hosts)", l.where));
    }
  }
  if (hosts.size() >= 2) multi.push_back(line(fmt::format("{} hosts named ({} …)", hosts.size(), hosts.front()), Provenance{}));
  for (const auto& c : facts.of<Claim>())
    if (c.fact.kind == "nodes") {
      int n = 0;
      try {
        n = std::stoi(c.fact.detail);
      } catch (...) {
        n = c.fact.detail.find("multi") != std::string::npos ? 2 : 0;
      }
      if (n >= 2) multi.push_back(line("the poster says the job runs on " + (c.fact.detail.find("multi") != std::string::npos
                                                                                  ? std::string("several nodes")
                                                                                  : c.fact.detail + " nodes"),
                                       c.where));
      else if (n == 1) single.push_back(line("the poster says the job runs on one node", c.where));
    }
  bool sockets_between_local = false;
  if (auto* p = setting("NCCL_P2P_DISABLE"); p && p->judgement.turns_off == "p2p")
    if (auto* s = setting("NCCL_SHM_DISABLE"); s && s->judgement.turns_off == "shm") sockets_between_local = true;
  for (const auto& t : facts.of<TransportUse>())
    if (t.fact.kind == "net" && t.fact.connections > 0 && !sockets_between_local) {
      multi.push_back(line(fmt::format("NCCL connects ranks over the network ({})", t.fact.transport), t.where));
      break;
    }
  if (ranks && *ranks > max_gpus_per_node(gpu) && gpu_evidence)
    multi.push_back(line(fmt::format("{} ranks{}: more GPUs than one node of this kind holds ({})", *ranks,
                                     gpu ? " of " + std::string(gpu->model) : "", max_gpus_per_node(gpu)),
                         gpu_evidence->where));
  if (!multi.empty()) {
    span = Span::multi_node;
    span_evidence = multi;
  } else if (!single.empty()) {
    span = Span::single_node;
    span_evidence = single;
  } else if (hosts.size() == 1 && ranks) {
    // One host named for every rank of a complete list.
    std::size_t named = 0;
    for (const auto& g : facts.of<GpuSeen>()) named += g.fact.host ? 1 : 0;
    if (named >= static_cast<std::size_t>(*ranks)) {
      span = Span::single_node;
      span_evidence.push_back(line("every rank on " + hosts.front(), facts.of<GpuSeen>().front().where));
    }
  }
  if (!nodes && span == Span::single_node) nodes = 1;
  if (!nodes && hosts.size() >= 2) nodes = static_cast<int>(hosts.size());
  if (!nodes && ranks && ranks_per_node && *ranks_per_node > 0 && *ranks % *ranks_per_node == 0)
    nodes = *ranks / *ranks_per_node;

  // ---- topology ----
  links = facts.of<LinkClass>();
  std::set<std::string> gset;
  for (const auto& l : links) {
    if (l.fact.a_is_gpu) gset.insert(l.fact.a);
    if (l.fact.b_is_gpu) gset.insert(l.fact.b);
  }
  matrix_gpus.assign(gset.begin(), gset.end());
  std::sort(matrix_gpus.begin(), matrix_gpus.end(),
            [](const std::string& x, const std::string& y) { return gpu_number(x) < gpu_number(y); });
  job_gpus = matrix_gpus;
  if (const auto* cvd = setting("CUDA_VISIBLE_DEVICES"); cvd && !matrix_gpus.empty()) {
    std::vector<std::string> picked;
    for (int i : index_list(cvd->value)) {
      const std::string label = "GPU" + std::to_string(i);
      if (gset.count(label)) picked.push_back(label);
    }
    if (!picked.empty()) {
      job_gpus = picked;
      job_gpus_from = line(fmt::format("CUDA_VISIBLE_DEVICES={}: the job uses {} of the matrix (CUDA numbers GPUs "
                                       "in PCI order like nvidia-smi when they are of one model)",
                                       cvd->value, fmt::join(picked, ", ")),
                           cvd->where);
    }
  }

  plateaus = facts.of<BusbwPlateau>();
  variants = analyse_variants(facts);
  expected = expect_job(*this);
}

const Context::SettingView* Context::setting(const std::string& name) const {
  auto it = settings.find(name);
  return it == settings.end() ? nullptr : &it->second;
}

std::vector<Seen<LinkClass>> Context::job_pairs() const {
  std::vector<Seen<LinkClass>> out;
  auto in_job = [&](const std::string& l) { return std::find(job_gpus.begin(), job_gpus.end(), l) != job_gpus.end(); };
  for (const auto& l : links)
    if (l.fact.a_is_gpu && l.fact.b_is_gpu && l.fact.a != l.fact.b && in_job(l.fact.a) && in_job(l.fact.b)) out.push_back(l);
  return out;
}

const Seen<LinkClass>* Context::link(const std::string& a, const std::string& b) const {
  for (const auto& l : links)
    if ((l.fact.a == a && l.fact.b == b) || (l.fact.a == b && l.fact.b == a)) return &l;
  return nullptr;
}

}  // namespace scalescope::diagnose
