// `scalescope predict RUN.json --link FILE|NAME --gpus 2,4,8`: the step at N ranks from one rank's run and a link
// measurement (src/predict), with what-if tables. Flag parsing and printing only.

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/output_guard.h"
#include "predict/expected_scaling.h"
#include "predict/inputs.h"
#include "predict/step_model.h"
#include "report/answer.h"
#include "report/html_builders.h"
#include "workload_options.h"

namespace scalescope::cli {

namespace {

struct PredictFlags {
  std::string run, link, out, network, html;
  int gpus_per_node = 0;
  std::vector<int> gpus{2, 4, 8};
  bool strong = false, what_if = false;
  std::optional<std::string> embedding_exchange;
  double contention = predict::ModelConstants{}.contention;
  double comm_beside = predict::ModelConstants{}.comm_beside;
  std::string model, precision = "mixed";  ///< --model: the expectation with no run
  std::optional<double> batch;
};

// `predict --model NAME --link GPU:PATH`: what the hardware and the model should give, with no run (issue #36).
int run_expected(const PredictFlags& f) {
  if (!f.run.empty())
    throw core::UsageError("--model and a run: give one", "with a run, predict replays its buckets; without one, --model names the model");
  core::check_run_outputs({{"--out", f.out}}, {});
  const auto e = predict::expect_scaling(f.model, f.link, f.gpus, f.batch,
                                         f.precision == "fp32" ? knowledge::Precision::fp32 : knowledge::Precision::mixed16);
  const std::string text = predict::render_expected(e);
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (!f.out.empty()) {
    core::write_file_atomically(f.out, predict::expected_json(e).dump(2) + "\n");
    say_written(f.out);
  }
  return 0;
}

std::string row(const predict::Prediction& p, const std::string& measured) {
  const std::string step_band = p.step_hi_s > 0 ? fmt::format("{:.2f}–{:.2f}", p.step_lo_s * 1e3, p.step_hi_s * 1e3) : "";
  const std::string eff_band =
      p.efficiency_hi > 0 ? fmt::format("{:.0f}–{:.0f} %", 100 * p.efficiency_lo, 100 * p.efficiency_hi) : "";
  return fmt::format("  {:<22} {:>9.2f} {:>15} {:>8.2f} {:>7.1f} % {:>11} {:>7.1f} % {:>9.2f} {:>9.2f}  {:<11}{}\n", p.label,
                     p.step_s * 1e3, step_band, p.speedup, 100 * p.efficiency, eff_band, 100 * p.comm_ratio,
                     p.all_reduce_s * 1e3, p.exposed_s * 1e3, p.verdict, measured);
}

std::string header() {
  return fmt::format("  {:<22} {:>9} {:>15} {:>8} {:>9} {:>11} {:>9} {:>9} {:>9}  {}\n", "configuration", "step ms", "band ms",
                     "speedup", "effic.", "band", "comm %", "allred ms", "exposed", "verdict");
}

int run_predict(const PredictFlags& f) {
  // The run (a file, or a profile job directory: outputs inside it are refused too) and a --link that is a file.
  std::vector<core::RunInput> inputs{{f.run, "the run to predict from"}, {f.link, "the --link measurement"}};
  for (const auto& file : predict::run_input_files(f.run)) inputs.push_back({file, "a file of the run to predict from"});
  core::check_run_outputs({{"--out", f.out}, {"--html", f.html}}, inputs);
  auto run = predict::run_from_path(f.run);
  if (run.profile.embedding_table_bytes > 0 && run.profile.embedding_gather_bytes > 0)
    run.profile.assumptions.push_back(fmt::format(
        "tied embedding: {:.1f} MB of table gradient (all-reduced in the last bucket) or {:.1f} MB per rank all-gathered "
        "after backward, its head part then all-reduced at {:.0f} % of backward; exchange {} (auto: all-gather when the "
        "gathered bytes are under 2 × table / ranks)", run.profile.embedding_table_bytes / 1e6,
        run.profile.embedding_gather_bytes / 1e6, 100 * predict::kHeadReadyShare,
        f.embedding_exchange.value_or(run.profile.embedding_exchange)));
  auto link = predict::link_from(f.link);
  if (!f.network.empty() || f.gpus_per_node > 0) {
    // net:GBIT or net:GBITxPORTS, between nodes of --gpus-per-node GPUs
    double gbit = 0;
    int ports = 1;
    if (f.network.rfind("net:", 0) == 0) {
      const std::string v = f.network.substr(4);
      const auto x = v.find('x');
      gbit = predict::parse_port_gbit(v.substr(0, x)).value_or(0);
      if (x != std::string::npos) {
        const std::string p = v.substr(x + 1);
        ports = !p.empty() && p.size() <= 4 && p.find_first_not_of("0123456789") == std::string::npos ? std::stoi(p) : 0;
      }
    }
    if (!(gbit > 0) || ports < 1 || f.gpus_per_node < 1)
      throw core::UsageError(fmt::format("--network '{}' with --gpus-per-node {}: both are needed, the network as net:GBIT or "
                                         "net:GBITxPORTS (GBIT a line rate from {:g} to {:g} Gb/s)", f.network, f.gpus_per_node,
                                         predict::kMinPortGbit, predict::kMaxPortGbit),
                             "e.g. --gpus-per-node 8 --network net:400x8 (eight 400 Gb/s ports per node)");
    link = link.with_network(f.gpus_per_node, gbit, ports);
  }
  predict::ModelConstants k;
  k.contention = f.contention;
  k.comm_beside = f.comm_beside;
  std::string text = "input: " + run.profile.basis + "\nlink:  " + link.description() + "\n";
  for (const auto& a : run.profile.assumptions) text += "assumed: " + a + "\n";
  for (const auto& a : link.assumptions()) text += "assumed: " + a + "\n";
  for (const auto& w : link.warnings()) text += "warning: " + w + "\n";
  text += fmt::format("model: DDP's bucket schedule; backward slowed by {:.2f} per second of all-reduce beside it, the "
                      "all-reduce by {:.2f}x there\n", k.contention, 1 + k.comm_beside);
  text += fmt::format("band: the link's all-reduce times ±{:.0f} %, the contention {:.2f}–{:.2f}, the measured step's "
                      "spread ±{:.1f} %\n\n", 100 * link.spread(), predict::kBandContentionLo, predict::kBandContentionHi,
                      100 * run.profile.step_spread);
  text += header();
  nlohmann::json preds = nlohmann::json::array();
  for (int n : f.gpus) {
    predict::Scenario s;
    s.ranks = n;
    s.strong = f.strong;
    s.embedding_exchange = f.embedding_exchange;
    const auto p = predict::predict_band(run.profile, link, s, k);
    std::string measured;
    nlohmann::json pj = p;
    for (const auto& m : run.measured)
      if (m.ranks == n && !f.strong) {
        measured = fmt::format("  measured {:.2f} ms ({:+.1f} %)", m.step_s * 1e3, 100 * (p.step_s / m.step_s - 1));
        pj["measured_step_ms"] = m.step_s * 1e3;
      }
    text += row(p, measured);
    preds.push_back(pj);
  }
  nlohmann::json what_ifs = nlohmann::json::array();
  if (f.what_if) {
    const int n = f.gpus.front();
    text += fmt::format("\nwhat if, at {} ranks:\n", n) + header();
    std::vector<predict::Scenario> ss;
    const auto add = [&](std::string label, auto&& change) {
      predict::Scenario s;
      s.ranks = n;
      s.strong = f.strong;
      s.embedding_exchange = f.embedding_exchange;
      s.label = std::move(label);
      change(s);
      ss.push_back(s);
    };
    add("as measured", [](auto&) {});
    for (double mib : {1.0, 25.0, 100.0}) add(fmt::format("bucket {:g} MiB", mib), [mib](auto& s) { s.bucket_cap_bytes = mib * 1024 * 1024; });
    if (run.profile.grad_element_bytes != 2) add("bf16 gradients", [](auto& s) { s.grad_element_bytes = 2; });
    if (run.profile.grad_element_bytes != 4) add("fp32 gradients", [](auto& s) { s.grad_element_bytes = 4; });
    add("overlap off", [](auto& s) { s.overlap = false; });
    add("batch x2", [](auto& s) { s.batch_factor = 2; });
    if (run.profile.embedding_table_bytes > 0 && run.profile.embedding_gather_bytes > 0)  // a tied embedding
      for (const char* e : {"all-reduce", "all-gather"})
        add(fmt::format("embedding {}", e), [e](auto& s) { s.embedding_exchange = e; });
    for (const auto& s : ss) {
      const auto p = predict::predict_band(run.profile, link, s, k);
      text += row(p, "");
      what_ifs.push_back(p);
    }
  }
  std::vector<std::string> assumptions = run.profile.assumptions;
  for (const auto& a : link.assumptions()) assumptions.push_back(a);
  {
    nlohmann::json j = {{"schema", "scalescope.predict/1"},
                        {"input", run.profile.basis},
                        {"link", link.description()},
                        {"assumptions", assumptions},
                        {"warnings", link.warnings()},
                        {"constants", {{"contention", k.contention}, {"comm_beside", k.comm_beside}, {"sync_s", k.sync_s}}},
                        {"band", {{"link_spread", link.spread()},
                                  {"contention", {predict::kBandContentionLo, predict::kBandContentionHi}},
                                  {"step_spread", run.profile.step_spread}}},
                        {"predictions", preds},
                        {"what_if", what_ifs}};
    // The answer first (report/answer.h): the largest rank count's efficiency with its band, then the table.
    const auto answer = report::answer_of_prediction(j);
    j["answer"] = report::answer_json(answer);
    std::fputs((report::render_answer(answer) + text).c_str(), stdout);
    if (!f.out.empty()) {
      core::write_file_atomically(f.out, j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
      say_written(f.out);
    }
    if (!f.html.empty()) {
      report::HtmlPage page;
      page.title = "scalescope predict — " + f.run;
      page.answer = answer;
      page.provenance = report::default_provenance(command_line());
      report::add_predictions(page, j);
      core::write_file_atomically(f.html, report::render_html(page));
      say_written(f.html);
    }
  }
  return 0;
}

}  // namespace

Action add_predict_command(CLI::App& app) {
  auto flags = std::make_shared<PredictFlags>();
  auto* cmd = app.add_subcommand("predict", "Predict the step at N GPUs from a one-rank run and a link measurement "
                                            "(DDP's bucket schedule), with what-if tables");
  cmd->add_option("run", flags->run, "scalescope train or doctor JSON with a world-size-1 run, or a one-rank profile job directory")
      ->check(CLI::ExistingPath);
  cmd->add_option("--model", flags->model, "no run: what this model (`scalescope knowledge models`) should give on --link's "
                                           "GPUs (GPU:PATH or GPU:net:GBIT), as bands with their assumptions");
  cmd->add_option("--batch", flags->batch, "with --model: samples (sequences) per GPU per step (default: a typical band)");
  cmd->add_option("--precision", flags->precision, "with --model: mixed (16-bit tensor cores, default) or fp32")
      ->check(CLI::IsMember({"mixed", "fp32"}));
  cmd->add_option("--link", flags->link,
                  "the link: scalescope comm JSON, an all_reduce_perf output or an NCCL profiler plugin record of the "
                  "machine, or GPU:PATH (\"H200:NV18\", \"RTX 4090:PHB\") or net:GBIT (\"net:25\")")
      ->required();
  cmd->add_option("--gpus-per-node", flags->gpus_per_node, "GPUs per node: beyond it, --network joins the nodes")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--network", flags->network, "the ports between nodes: net:GBIT or net:GBITxPORTS per node (net:400x8)");
  cmd->add_option("--gpus", flags->gpus, "rank counts to predict")->delimiter(',')->check(CLI::Range(1, 1 << 20))->capture_default_str();
  cmd->add_flag("--strong", flags->strong, "strong scaling: the one-rank batch split over the ranks (default: weak)");
  cmd->add_flag("--what-if", flags->what_if, "also bucket 1/25/100 MiB, other gradient dtype, overlap off, batch x2 (and, "
                "for a tied embedding, its all-reduce and all-gather exchange) at the first --gpus");
  cmd->add_option("--embedding-exchange", flags->embedding_exchange,
                  "scalescope's GPT runs: the tied embedding's exchange at the predicted ranks (default: the run's own setting)")
      ->check(CLI::IsMember({"auto", "all-reduce", "all-gather"}));
  cmd->add_option("--contention", flags->contention, "backward slowdown per second of all-reduce beside it")
      ->check(CLI::Range(0.0, 10.0))->capture_default_str();
  cmd->add_option("--comm-beside", flags->comm_beside, "all-reduce slowdown while it runs beside backward")
      ->check(CLI::Range(0.0, 100.0))->capture_default_str();
  cmd->add_option("--html", flags->html, "write one self-contained HTML page of the predictions")->check(output_file_check());
  cmd->add_option("-o,--out", flags->out, "write the predictions as JSON (scalescope.predict/1)")->check(output_file_check());
  return [cmd, flags] {
    if (!cmd->parsed()) return -1;
    if (!flags->model.empty()) return run_expected(*flags);
    if (flags->run.empty()) throw core::UsageError("predict needs a run, or --model for what a model should give", "scalescope predict RUN --link … | scalescope predict --model NAME --link GPU:PATH --gpus 2,4,8");
    return run_predict(*flags);
  };
}

}  // namespace scalescope::cli
