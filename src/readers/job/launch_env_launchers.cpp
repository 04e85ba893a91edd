// Each launcher (torchrun, torch.distributed.launch, deepspeed, accelerate, mpirun, srun, python …) and one command
// of a segment read into facts: the world, the program, its model, batch and GPUs per process.
#include "readers/job/launch_env_words.h"

namespace scalescope::analyze::launch_env_detail {

// Reads the launcher at seg[i] of `kind` (its options, program and arguments) into facts.
bool read_launch(const std::vector<Word>& seg, std::size_t i, Kind kind, Reading& r, const std::string& source,
                 std::size_t line, std::string_view text, int depth) {
  diagnose::Launch L;
  diagnose::WorldShape W;
  bool world = false;
  std::string basis;
  std::size_t prog = seg.size();
  std::optional<std::size_t> nested;   // a launcher this one runs (srun torchrun …): its first word
  std::string nested_name;

  // Python running a launcher module is that launcher: the module word stands for the launcher word.
  if (kind == Kind::python) {
    auto t = python_target(seg, i + 1);
    if (!t.module && !t.command && t.at >= seg.size()) return false;  // "python" alone, "python --version"
    if (t.module) {
      if (const Kind k = module_kind(*t.module); k != Kind::none) {
        if (*t.module == "torch.distributed.launch") L.launcher = "torch.distributed.launch";
        kind = k;
        i = t.at;
      }
    }
  }

  // The program word at p (a python interpreter runs the script after its options; a launcher is nested).
  auto as_program = [&](std::size_t p) {
    prog = p;
    if (p >= seg.size()) return;
    if (is_python(basename_of(seg[p].text))) {
      auto t = python_target(seg, p + 1);
      if (t.module && module_kind(*t.module) != Kind::none) {
        nested = p;
        nested_name = *t.module;
      } else {
        prog = t.at;
        if (t.module) L.program = *t.module;
      }
      return;
    }
    const Kind k = kind_of_word(seg, p);
    if (k != Kind::none && k != Kind::nccl_tests) {
      nested = p;
      nested_name = basename_of(seg[p].text);
    }
  };

  switch (kind) {
    case Kind::shell: {
      // bash -c '…': the inner command line.
      const auto inner = shell_words(seg[i + 2].text);
      std::vector<Word> part;
      bool any = false;
      for (const auto& w : inner.words) {
        if (w.op) {
          any |= read_segment(part, r, source, line, text, depth + 1);
          part.clear();
        } else {
          part.push_back(w);
        }
      }
      any |= read_segment(part, r, source, line, text, depth + 1);
      return any;
    }
    case Kind::python: {
      auto t = python_target(seg, i + 1);
      L.launcher = "python";
      if (t.module) L.program = *t.module;
      else if (t.command) L.program = "-c";
      prog = t.at;
      break;
    }
    case Kind::torchrun: {
      // torch/distributed/run.py (torchrun, python -m torch.distributed.run) and torch/distributed/launch.py.
      if (L.launcher.empty()) L.launcher = "torchrun";
      std::optional<int> nproc, nnodes;
      bool standalone = false;
      std::size_t p = skip_options(
          seg, i + 1,
          {"nnodes", "nproc_per_node", "node_rank", "master_addr", "master_port", "rdzv_backend", "rdzv_endpoint",
           "rdzv_id", "rdzv_conf", "max_restarts", "monitor_interval", "start_method", "role", "log_dir", "redirects",
           "r", "tee", "t", "local_addr", "logs_specs", "local_ranks_filter", "rdzv_timeout", "omp_num_threads",
           "event_log_handler", "signals_to_handle", "numa_binding", "virtual_local_rank"},
          {"standalone", "use_env", "no_python", "run_path", "module", "m", "no_local_rank"},
          [&](const Opt& o, const std::optional<std::string>& v) {
            if (o.name == "nproc_per_node" && v) {
              nproc = to_int(*v);
              if (!nproc)
                r.notes.push_back(fmt::format("line {}: --nproc_per_node {} is not a number; the processes per node are unknown", line, *v));
            } else if (o.name == "nnodes" && v) {
              nnodes = to_int(*v);
              if (!nnodes)
                r.notes.push_back(fmt::format("line {}: --nnodes {} is a range or not a number; the node count is unknown", line, *v));
            } else if (o.name == "standalone") {
              standalone = true;
            }
          });
      if (standalone && !nnodes) nnodes = 1;
      L.nproc_per_node = nproc;
      L.nnodes = nnodes;
      as_program(p);
      if (nproc) {
        W.ranks = *nproc * nnodes.value_or(1);
        W.processes = W.ranks;
        W.ranks_per_node = *nproc;
        W.nodes = nnodes.value_or(1);
        world = true;
        basis = fmt::format("{} --nproc_per_node {}{}", L.launcher, *nproc,
                            nnodes ? fmt::format(" --nnodes {}", *nnodes) : std::string(" (one node)"));
      }
      break;
    }
    case Kind::deepspeed: {
      // deepspeed/launcher/runner.py options.
      L.launcher = "deepspeed";
      std::optional<int> gpus, nodes;
      std::string include;
      std::size_t p = skip_options(
          seg, i + 1,
          {"num_gpus", "num_accelerators", "num_nodes", "hostfile", "H", "include", "i", "exclude", "e", "master_port",
           "master_addr", "launcher", "launcher_args", "node_rank", "autotuning", "bind_core_list", "ssh_port",
           "enable_each_rank_log", "comment", "min_elastic_nodes", "max_elastic_nodes", "venv_script", "ssh"},
          {"module", "no_python", "no_local_rank", "force_multi", "elastic_training", "bind_cores_to_rank",
           "no_ssh_check", "save_pid", "use_hostfile"},
          [&](const Opt& o, const std::optional<std::string>& v) {
            if ((o.name == "num_gpus" || o.name == "num_accelerators") && v) gpus = to_int(*v);
            else if (o.name == "num_nodes" && v) nodes = to_int(*v);
            else if ((o.name == "hostfile" || o.name == "H") && v) L.hostfile = true;
            else if ((o.name == "include" || o.name == "i") && v) include = *v;
          });
      if (!include.empty() && !gpus && include.find('@') == std::string::npos) {
        // "--include localhost:0,1,2": one host and its GPUs.
        const auto colon = include.find(':');
        if (colon != std::string::npos) {
          gpus = static_cast<int>(std::count(include.begin() + static_cast<std::ptrdiff_t>(colon), include.end(), ',') + 1);
          if (!nodes) nodes = 1;
        }
      }
      L.nproc_per_node = gpus;
      L.nnodes = nodes;
      as_program(p);
      if (gpus && (nodes || !L.hostfile)) {
        W.ranks = *gpus * nodes.value_or(1);
        W.processes = W.ranks;
        W.ranks_per_node = *gpus;
        W.nodes = nodes.value_or(1);
        world = true;
        basis = fmt::format("deepspeed --num_gpus {}{}", *gpus,
                            nodes ? fmt::format(" --num_nodes {}", *nodes) : std::string(" (one node)"));
      }
      break;
    }
    case Kind::accelerate: {
      // accelerate/commands/launch.py options.
      L.launcher = "accelerate";
      std::optional<int> procs, machines;
      std::optional<double> accum;
      const std::size_t first = basename_of(seg[i].text) == "accelerate" ? i + 2 : i + 1;
      std::size_t p = skip_options(
          seg, first,
          {"config_file", "num_processes", "num_machines", "machine_rank", "main_process_ip", "main_process_port",
           "mixed_precision", "gpu_ids", "dynamo_backend", "num_cpu_threads_per_process", "deepspeed_config_file",
           "zero_stage", "gradient_accumulation_steps", "rdzv_backend", "deepspeed_hostfile",
           "deepspeed_multinode_launcher", "fsdp_sharding_strategy", "fsdp_auto_wrap_policy",
           "fsdp_transformer_layer_cls_to_wrap", "fsdp_state_dict_type", "fsdp_backward_prefetch",
           "offload_optimizer_device", "offload_param_device", "max_restarts", "monitor_interval"},
          {"multi_gpu", "cpu", "use_deepspeed", "use_fsdp", "tpu", "debug", "quiet", "q", "no_python", "module", "m",
           "same_network", "use_megatron_lm", "use_xpu", "enable_cpu_affinity"},
          [&](const Opt& o, const std::optional<std::string>& v) {
            if (o.name == "num_processes" && v) procs = to_int(*v);
            else if (o.name == "num_machines" && v) machines = to_int(*v);
            else if (o.name == "gradient_accumulation_steps" && v) accum = to_number(*v);
            else if (o.name == "deepspeed_hostfile" && v) L.hostfile = true;
          });
      L.np = procs;
      L.nnodes = machines;
      if (procs && machines && *machines > 0 && *procs % *machines == 0) L.nproc_per_node = *procs / *machines;
      as_program(p);
      if (procs) {
        W.ranks = *procs;
        W.processes = *procs;
        if (machines) W.nodes = *machines;
        if (L.nproc_per_node) W.ranks_per_node = L.nproc_per_node;
        world = true;
        basis = fmt::format("accelerate launch --num_processes {}", *procs);
      }
      if (accum && *accum > 0) {
        diagnose::BatchSize b;
        b.gradient_accumulation = *accum;
        r.facts.add(b, at(source, line, text));
      }
      break;
    }
    case Kind::mpirun:
    case Kind::horovodrun: {
      // Open MPI mpirun/mpiexec, MPICH/Intel MPI mpiexec (-ppn, -genv), horovodrun (-np, -H).
      L.launcher = kind == Kind::mpirun ? "mpirun" : "horovodrun";
      std::optional<int> np, per_node;
      std::vector<std::string> hosts;
      std::size_t p = i + 1;
      while (p < seg.size() && starts_with(seg[p].text, "-") && seg[p].text != "--") {
        Opt o = parse_opt(seg[p].text);
        const std::string& n = o.name;
        auto take = [&]() -> std::optional<std::string> {
          if (o.value) return o.value;
          if (p + 1 < seg.size()) return seg[++p].text;
          return std::nullopt;
        };
        if (in(n, {"np", "n", "c"})) {
          if (auto v = take()) np = to_int(*v);
        } else if (in(n, {"hostfile", "machinefile", "f", "default_hostfile"})) {
          take();
          L.hostfile = true;
        } else if (in(n, {"H", "host", "hosts"})) {
          if (auto v = take()) {
            L.hostfile = true;
            std::size_t a = 0;
            while (a <= v->size()) {
              std::size_t b = v->find(',', a);
              if (b == std::string::npos) b = v->size();
              std::string h = v->substr(a, b - a);
              if (auto c = h.find(':'); c != std::string::npos) h = h.substr(0, c);
              if (!h.empty() && std::find(hosts.begin(), hosts.end(), h) == hosts.end()) hosts.push_back(h);
              a = b + 1;
            }
          }
        } else if (in(n, {"npernode", "N", "ppn", "perhost"})) {
          if (auto v = take()) per_node = to_int(*v);
        } else if (n == "map_by") {
          if (auto v = take()) {
            const std::string l = lower(*v);  // ppr:8:node
            if (starts_with(l, "ppr:") && l.find(":node") != std::string::npos) per_node = to_int(l.substr(4, l.find(':', 4) - 4));
          }
        } else if (n == "x") {
          if (auto v = take()) {
            if (auto eq = assignment_eq(*v); eq != std::string::npos)
              add_setting(r, v->substr(0, eq), v->substr(eq + 1), "command line", source, line, text);
          }
        } else if (in(n, {"mca", "gmca"})) {
          // "-mca pml ucx" is OMPI_MCA_pml=ucx.
          if (p + 2 < seg.size()) {
            add_setting(r, "OMPI_MCA_" + seg[p + 1].text, seg[p + 2].text, "command line", source, line, text);
            p += 2;
          }
        } else if (in(n, {"genv", "env"})) {
          // MPICH / Intel MPI: -genv NAME value
          if (p + 2 < seg.size()) {
            add_setting(r, seg[p + 1].text, seg[p + 2].text, "command line", source, line, text);
            p += 2;
          }
        } else if (!o.value && std::find(std::begin(kMpiFlags), std::end(kMpiFlags), n) == std::end(kMpiFlags) &&
                   next_is_value(seg, p)) {
          ++p;  // an option with a value (--bind-to core, --rankfile f …)
        }
        ++p;
      }
      if (p < seg.size() && seg[p].text == "--") ++p;
      L.np = np;
      L.nproc_per_node = per_node;
      if (!hosts.empty()) {
        L.nnodes = static_cast<int>(hosts.size());
        W.hosts = hosts;
      }
      as_program(p);
      if (np) {
        W.processes = np;
        W.ranks = np;
        if (per_node) W.ranks_per_node = per_node;
        if (!hosts.empty()) W.nodes = static_cast<int>(hosts.size());
        else if (per_node && *per_node > 0 && *np % *per_node == 0) W.nodes = *np / *per_node;
        world = true;
        basis = fmt::format("{} -np {}{}", L.launcher, *np, L.hostfile ? (hosts.empty() ? " --hostfile" : " -H") : "");
      }
      break;
    }
    case Kind::srun: {
      // Slurm's srun options.
      L.launcher = "srun";
      std::optional<int> nodes, ntasks, per_node;
      std::size_t p = skip_options(
          seg, i + 1,
          {"N", "nodes", "n", "ntasks", "ntasks_per_node", "c", "cpus_per_task", "p", "partition", "A", "account", "t",
           "time", "J", "job_name", "o", "output", "e", "error", "G", "gpus", "gpus_per_node", "gpus_per_task", "gres",
           "mem", "mem_per_cpu", "mem_per_gpu", "w", "nodelist", "x", "exclude", "mpi", "export", "container_image",
           "container_mounts", "container_workdir", "container_name", "cpu_bind", "distribution", "m", "qos",
           "reservation", "jobid", "C", "constraint", "gpu_bind", "D", "chdir", "i", "input", "K", "kill_on_bad_exit",
           "W", "wait", "r", "relative", "ntasks_per_gpu", "cpus_per_gpu", "network", "het_group", "hint"},
          {"l", "label", "u", "unbuffered", "pty", "exclusive", "overlap", "overcommit", "O", "v", "verbose", "Q",
           "quiet", "X", "disable_status", "no_kill", "k", "exact", "whole"},
          [&](const Opt& o, const std::optional<std::string>& v) {
            if (!v) return;
            if ((o.name == "N" && o.single_dash) || o.name == "nodes") nodes = to_int(v->substr(0, v->find('-')));
            else if ((o.name == "n" && o.single_dash) || o.name == "ntasks") ntasks = to_int(*v);
            else if (o.name == "ntasks_per_node") per_node = to_int(*v);
            else if (o.name == "gpus_per_task") {
              // Each task confined to its N GPUs (a device cgroup per task): the others' GPUs are not its to reach.
              const auto colon = v->rfind(':');  // "--gpus-per-task=a100:1"
              if (auto n = to_int(colon == std::string::npos ? *v : v->substr(colon + 1)); n && *n > 0)
                r.facts.add(diagnose::GpuCount{*n, "task", std::nullopt}, at(source, line, text));
            } else if (o.name == "export") {
              // --export=ALL,NCCL_DEBUG=INFO
              std::size_t a = 0;
              while (a <= v->size()) {
                std::size_t b = v->find(',', a);
                if (b == std::string::npos) b = v->size();
                const std::string item = v->substr(a, b - a);
                if (auto eq = assignment_eq(item); eq != std::string::npos)
                  add_setting(r, item.substr(0, eq), item.substr(eq + 1), "command line", source, line, text);
                a = b + 1;
              }
            }
          });
      L.nnodes = nodes;
      L.np = ntasks;
      L.nproc_per_node = per_node;
      as_program(p);
      if (!ntasks && nodes && per_node) ntasks = *nodes * *per_node;
      if (ntasks || nodes) {
        W.ranks = ntasks;
        W.processes = ntasks;
        W.nodes = nodes;
        W.ranks_per_node = per_node;
        world = true;
        basis = fmt::format("srun{}{}{}", nodes ? fmt::format(" -N {}", *nodes) : "", L.np ? fmt::format(" -n {}", *L.np) : "",
                            per_node ? fmt::format(" --ntasks-per-node {}", *per_node) : "");
      }
      break;
    }
    case Kind::nccl_tests:
      L.launcher = "nccl-tests";
      prog = i;
      break;
    case Kind::none:
      L.launcher = "other";
      prog = i;
      break;
  }

  // The program and its arguments. A repeated program word ("./build/all_reduce_perf ./build/all_reduce_perf -b 8")
  // is one program.
  std::vector<std::string> args;
  bool nccl_test = false;
  if (nested) {
    L.program = nested_name;
    for (std::size_t k = *nested + 1; k < seg.size(); ++k) args.push_back(seg[k].text);
  } else if (prog < seg.size()) {
    if (L.program.empty()) L.program = basename_of(seg[prog].text);
    nccl_test = is_nccl_test(L.program);
    std::size_t k = prog + 1;
    while (k < seg.size() && basename_of(seg[k].text) == L.program && !starts_with(seg[k].text, "-")) {
      r.notes.push_back(fmt::format("line {}: the program '{}' is written twice; read as one", line, L.program));
      ++k;
    }
    for (; k < seg.size(); ++k) args.push_back(seg[k].text);
  } else if (L.program.empty()) {
    r.notes.push_back(fmt::format("line {}: {} without a program (the line may be cut)", line, L.launcher));
  }
  L.args = args;
  const auto where = at(source, line, text);

  // nccl-tests: each process drives threads × GPUs ranks.
  if (nccl_test) {
    auto pf = program_facts(args, true);
    const int g = pf.nccl_gpus.value_or(1), t = pf.nccl_threads.value_or(1);
    const std::string how = fmt::format("{} -g {}{}", L.program, g, t > 1 ? fmt::format(" -t {}", t) : "");
    if (kind == Kind::nccl_tests) {
      W = {};
      W.processes = 1;
      W.gpus_per_process = g * t;
      W.ranks = g * t;
      world = true;
      basis = how;
    } else if (world) {
      W.gpus_per_process = g * t;
      if (W.processes) W.ranks = *W.processes * g * t;
      basis += "; " + how;
    }
  }
  const bool has_program = !L.program.empty() && !nested;
  r.facts.add(std::move(L), where);
  if (world) {
    W.basis = basis;
    r.facts.add(std::move(W), where);
  }
  if (nested) {
    std::vector<Word> inner(seg.begin() + static_cast<std::ptrdiff_t>(*nested), seg.end());
    read_segment(inner, r, source, line, text, depth + 1);
  } else if (has_program && !nccl_test) {
    auto pf = program_facts(args, false);
    if (pf.model)
      r.facts.add(diagnose::ModelSeen{.name = *pf.model, .parameters = known_model_parameters(*pf.model), .dtype = pf.dtype}, where);
    if (pf.batch_set) r.facts.add(pf.batch, where);
  }
  return true;
}
// Reads one command of a segment (words between operators): its VAR=value prefixes and its launcher. Whether it
// was a command.
bool read_segment(const std::vector<Word>& seg, Reading& r, const std::string& source, std::size_t line,
                  std::string_view text, int depth) {
  if (seg.empty() || depth > 3) return false;
  const auto cs = find_start(seg);
  if (!cs) return false;
  const std::size_t i = cs->launcher;
  const Kind kind = i < seg.size() ? kind_of_word(seg, i) : Kind::none;
  if (i < seg.size() && !cs->is_export && prose_words(seg, i + 1)) return false;  // a sentence that starts with a name
  // An unknown program is a command only when VAR=value prefixes say so ("NCCL_DEBUG=INFO ./train.sh");
  // "export A=1 B=2" holds settings and no command.
  const bool command = i < seg.size() && !cs->is_export &&
                       (kind != Kind::none || (!cs->env.empty() && !starts_with(seg[i].text, "-")));
  if (!command) {
    if (cs->is_export)
      for (const auto& [n, v] : cs->env) add_setting(r, n, v, "environment", source, line, text);
    return false;
  }
  Reading tmp;
  for (const auto& [n, v] : cs->env) add_setting(tmp, n, v, "command line", source, line, text);
  if (!read_launch(seg, i, kind, tmp, source, line, text, depth)) return false;
  r.facts.append(std::move(tmp.facts));
  for (auto& n : tmp.notes) r.notes.push_back(std::move(n));
  return true;
}

}  // namespace scalescope::analyze::launch_env_detail
