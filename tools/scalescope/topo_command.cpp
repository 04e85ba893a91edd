// `scalescope topo`: the GPU interconnect (live, or from a saved `nvidia-smi topo -m`), expected bandwidth per
// pair and what is wrong with it.

#include <cstdio>
#include <memory>

#include "probe/gpu_health.h"
#include "probe/platform.h"
#include "report/probe_report.h"
#include "runtime/gpu_module.h"
#include "commands.h"
#include "workload_options.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/output_guard.h"
#include "report/topo_report.h"
#include "topo/analysis.h"
#include "topo/live.h"
#include "topo/smi_topo_parser.h"

namespace scalescope::cli {
namespace {

struct TopoFlags {
  std::string from;
  std::string compare;
  std::string out;
  bool probe = false;
};

int run(const TopoFlags& f) {
  if (f.probe && !f.from.empty())
    throw core::UsageError("--probe reads this machine, --from a saved file: not both", "drop --probe, or --from to probe this machine");
  core::check_run_outputs({{"--out", f.out}}, {{f.from, "the --from file"}, {f.compare, "the --compare file"}});
  const core::OutputFile out_file(f.out);
  // Read --compare first: a bad file is an error before any discovery runs.
  std::optional<topo::TopologyReading> other;
  if (!f.compare.empty()) other = topo::parse_smi_topo_file(f.compare);
  const auto report = topo::analyse(f.from.empty() ? topo::discover_live() : topo::parse_smi_topo_file(f.from));
  std::fputs(report::render_topo_report(report).c_str(), stdout);
  int status = 0;
  nlohmann::json j = report;
  if (f.probe) {  // the machine's own platform beside the matrix (live only)
    const auto platform = probe::read_platform();
    std::fputs(("\n" + report::render_platform(platform)).c_str(), stdout);
    j["platform"] = platform;
    int gpus = 0;
    for (const auto& d : report.topology.devices) gpus += d.kind == topo::DeviceKind::gpu ? 1 : 0;
    std::string why;
    if (gpus > 0 && runtime::gpu_module(&why)) {
      const auto g = probe::run_gpu_probes(gpus);
      std::fputs(("\n" + probe::render_gpu_probes(g)).c_str(), stdout);
      j["gpu_probes"] = g;
    } else if (gpus > 0) {
      std::fprintf(stdout, "\nGPU probes not run: %s\n", why.c_str());
      j["gpu_probes_skipped"] = why;
    }
  }
  if (other) {
    int compared = 0;
    const auto mismatches = topo::compare_link_classes(report.topology, other->topology, &compared);
    std::fputs(("\n" + report::render_link_comparison(mismatches, compared, report.topology.source,
                                                      other->topology.source)).c_str(), stdout);
    auto& c = j["comparison"] = {{"with", other->topology.source}, {"pairs_compared", compared}, {"mismatches", nlohmann::json::array()}};
    for (const auto& m : mismatches) c["mismatches"].push_back({{"a", m.a}, {"b", m.b}, {"first", m.first}, {"second", m.second}});
    if (!mismatches.empty()) status = 1;
  }
  if (!f.out.empty()) {
    out_file.write(j.dump(1) + "\n");
    say_written(f.out);
  }
  return status;
}

}  // namespace

Action add_topo_command(CLI::App& app) {
  auto flags = std::make_shared<TopoFlags>();
  auto* cmd = app.add_subcommand(
      "topo", "Show the GPU interconnect (like nvidia-smi topo -m), the expected bandwidth of every GPU pair and what is "
              "wrong with it; live, or from a saved `nvidia-smi topo -m` with --from");
  // No CLI11 ExistingFile check: an unreadable or foreign file is a failed run (exit 1) with the parser's message.
  cmd->add_option("--from", flags->from, "read a saved `nvidia-smi topo -m` output instead of this machine");
  cmd->add_option("--compare", flags->compare,
                  "also compare the link classes with a saved `nvidia-smi topo -m`; exit 1 when they differ");
  cmd->add_flag("--probe", flags->probe, "also read this machine's platform: ACS bits, IOMMU, hypervisor, /dev/shm, RDMA and "
                                         "peer memory, network interfaces (not with --from)");
  cmd->add_option("-o,--out", flags->out, "write the result as JSON (schema scalescope.topo/1) to this file (atomically)")
      ->check(output_file_check());
  return [cmd, flags] { return cmd->parsed() ? run(*flags) : -1; };
}

}  // namespace scalescope::cli
