// The knowledge data files compiled into the binary (data/*.json): they load, every row is valid and cited, names
// are found as users write them, and the expectation engine's figures follow the physics they state.

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "knowledge/embedded_data.h"
#include "knowledge/expect.h"
#include "knowledge/launcher_failures.h"
#include "knowledge/models.h"
#include "report/knowledge_tables.h"
#include "core/error.h"

namespace scalescope::knowledge {
namespace {

TEST(KnowledgeModels, TheTableLoadsWithEveryRowCited) {
  const auto rows = model_table();
  ASSERT_GE(rows.size(), 40u) << "issue #36 asks for at least 40 named models";
  std::set<std::string> names;
  for (const auto& m : rows) {
    EXPECT_TRUE(names.insert(m.name).second) << m.name << " twice";
    EXPECT_GT(m.params, 0) << m.name;
    EXPECT_GE(m.source.size(), 8u) << m.name << " has no source";
    EXPECT_TRUE(m.unit == "sample" || m.unit == "token") << m.name;
    // FLOPs per token within physics: a dense transformer's forward pass does one multiply-add per non-embedding
    // parameter per token (2 × those parameters FLOPs, Kaplan et al. 2020); embeddings are at most about half of a
    // small encoder's parameters, and the attention term adds at most a few times more.
    if (m.unit == "token" && m.forward_gflops_per_unit > 0 && !m.active_params) {
      EXPECT_GT(m.forward_gflops_per_unit * 1e9, 0.5 * m.params) << m.name;
      EXPECT_LT(m.forward_gflops_per_unit * 1e9, 10 * m.params) << m.name;
    }
  }
}

TEST(KnowledgeModels, NamesAreFoundAsUsersWriteThem) {
  for (const auto* n : {"BERT-base", "bert-base-uncased", "BERT base", "bert_base"}) {
    const auto* m = find_model(n);
    ASSERT_NE(m, nullptr) << n;
    EXPECT_EQ(m->name, "BERT-base") << n;
  }
  ASSERT_NE(find_model("ResNet 50"), nullptr);
  EXPECT_EQ(find_model("resnet-50")->name, "ResNet-50");
  ASSERT_NE(find_model("meta-llama/Llama-2-7b-hf"), nullptr);
  EXPECT_EQ(find_model("meta-llama/Llama-2-7b-hf")->name, "Llama-2-7B");
  EXPECT_EQ(find_model("resnet-5000"), nullptr);
  EXPECT_EQ(find_model(""), nullptr);
}

TEST(KnowledgeModels, ModelsAreFoundInSentencesLongestFirst) {
  const std::string text = "We fine-tune BERT large and then resnet50 (and meta-llama/Llama-2-7b-hf) on 2 GPUs.";
  const auto found = models_in_text(text);
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].model->name, "BERT-large");
  EXPECT_EQ(text.substr(found[0].begin, found[0].end - found[0].begin), "BERT large");
  EXPECT_EQ(found[1].model->name, "ResNet-50");
  EXPECT_EQ(found[2].model->name, "Llama-2-7B");
  EXPECT_TRUE(models_in_text("nothing here: 8 GPUs, 21 seconds per epoch").empty());
}

TEST(KnowledgeLauncherFailures, EveryRowCitesWhereItWasSeenAndMatchesItsOwnText) {
  const auto rows = scalescope::knowledge::launcher_failures();
  ASSERT_FALSE(rows.empty());
  for (const auto& r : rows) {
    EXPECT_GE(r.source.size(), 40u) << r.exception;
    EXPECT_EQ(scalescope::knowledge::known_launcher_failure("x " + r.exception + " y", "File \"/a/" + r.frame + "\""), &r);
  }
  EXPECT_EQ(scalescope::knowledge::known_launcher_failure("RuntimeError: CUDA out of memory", "train.py"), nullptr);
}

TEST(KnowledgeData, EveryFileIsCompiledIn) {
  for (const auto* name : {"gpus", "models", "links", "nccl", "busbw_observations", "launcher_failures"}) EXPECT_FALSE(embedded_data(name).empty()) << name;
  EXPECT_TRUE(embedded_data("no-such-file").empty());
}

TEST(Expectation, BusbwBandFollowsTheLink) {
  const auto* h100 = topo::find_gpu("NVIDIA H100 80GB HBM3");
  ASSERT_NE(h100, nullptr);
  const auto* sw = find_transport("nvlink-switch");
  const auto* nvls = find_transport("nvls");
  ASSERT_TRUE(sw && nvls && sw->share_low && nvls->share_high);
  LinkAssumption nv;
  nv.kind = LinkAssumption::Kind::nvlink;
  nv.path = {topo::LinkClass::nvlink, 18};
  nv.nvswitch = true;
  const auto b = expected_busbw(h100, nv);
  ASSERT_TRUE(b.known());
  EXPECT_NEAR(b.low, 18 * 25 * *sw->share_low, 1e-6);      // links × 25 GB/s × the ring's low share
  EXPECT_NEAR(b.high, 18 * 25 * *nvls->share_high, 1e-6);   // Hopper through NVSwitch: NVLS
  LinkAssumption pcie;
  pcie.kind = LinkAssumption::Kind::pcie;
  pcie.path = {topo::LinkClass::phb, 0};
  EXPECT_LT(expected_busbw(h100, pcie).high, b.low / 5);
  pcie.path = {topo::LinkClass::sys, 0};
  LinkAssumption pix;
  pix.kind = LinkAssumption::Kind::pcie;
  pix.path = {topo::LinkClass::pix, 0};
  EXPECT_LT(expected_busbw(h100, pcie).high, expected_busbw(h100, pix).low);
  LinkAssumption eth;
  eth.kind = LinkAssumption::Kind::network;
  eth.network_gbit = 10;
  eth.socket = true;
  EXPECT_LE(expected_busbw(h100, eth).high, 10 / 8.0);
  EXPECT_FALSE(expected_busbw(h100, LinkAssumption{}).known());
}

// Every public nccl-tests result of data/busbw_observations.json lies inside the band the engine expects for its GPU
// and path (issue #36: at least 10 GPU/link combinations, each row citing its source).
class PublishedBusbw : public ::testing::TestWithParam<nlohmann::json> {};

TEST_P(PublishedBusbw, LiesInsideTheExpectedBand) {
  const auto& r = GetParam();
  SCOPED_TRACE(r.value("source", std::string("(no source)")));
  ASSERT_GE(r.value("source", std::string()).size(), 20u) << "every observation cites its source";
  const auto* gpu = [&]() -> const topo::GpuSpec* {
    for (const auto& g : topo::gpu_table())
      if (g.model == r.at("gpu").get<std::string>()) return &g;
    return nullptr;
  }();
  ASSERT_NE(gpu, nullptr) << r.at("gpu");
  const std::string path = r.at("path"), via = r.at("via");
  LinkAssumption l;
  if (path == "NET") {
    l.kind = LinkAssumption::Kind::network;
    l.nics = r.at("nics_per_node");
    l.network_gbit = r.at("nic_gbit");
    l.socket = via == "socket";
    l.nodes = r.at("nodes");
  } else if (path.rfind("NV", 0) == 0) {
    l.kind = LinkAssumption::Kind::nvlink;
    l.path = {topo::LinkClass::nvlink, std::stoi(path.substr(2))};
    l.nvswitch = via == "nvswitch";
  } else {
    l.kind = LinkAssumption::Kind::pcie;
    l.p2p = via == "p2p";
    l.path = {path == "PIX" ? topo::LinkClass::pix : path == "PXB" ? topo::LinkClass::pxb : path == "PHB" ? topo::LinkClass::phb
                                                                                                          : topo::LinkClass::sys,
              0};
  }
  const auto band = expected_busbw(gpu, l);
  ASSERT_TRUE(band.known()) << band.basis;
  const double measured = r.at("busbw_gbps");
  EXPECT_GE(measured, band.low * 0.999) << band.basis;
  EXPECT_LE(measured, band.high * 1.001) << band.basis;
}

std::vector<nlohmann::json> all_reduce_observations() {
  std::vector<nlohmann::json> out;
  const auto doc = nlohmann::json::parse(embedded_data("busbw_observations"));
  for (const auto& r : doc.at("rows"))
    if (r.value("collective", std::string()) == "all_reduce") out.push_back(r);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Data, PublishedBusbw, ::testing::ValuesIn(all_reduce_observations()),
                         [](const ::testing::TestParamInfo<nlohmann::json>& i) { return "row" + std::to_string(i.index); });

TEST(PublishedBusbwRows, CoverAtLeastTenCombinations) {
  std::set<std::string> combos;
  for (const auto& r : all_reduce_observations())
    combos.insert(r.at("gpu").get<std::string>() + "|" + r.at("path").get<std::string>() + "|" + r.at("via").get<std::string>());
  EXPECT_GE(combos.size(), 10u);
}

TEST(Expectation, TheStepFollowsBytesAndFlops) {
  const auto* m = find_model("resnet50");
  const auto* gpu = topo::find_gpu("Tesla V100-SXM2-16GB");
  ASSERT_NE(m, nullptr);
  ASSERT_NE(gpu, nullptr);
  StepInputs in;
  in.model = m;
  in.gpu = gpu;
  in.gpus = 2;
  in.units_per_gpu = 64;
  in.busbw = {10, 10, "10 GB/s"};
  const auto slow = expect_step(in);
  ASSERT_TRUE(slow.comm_ratio.known());
  // 2 GPUs: each rank sends and receives the gradient once (2(N−1)/N = 1): bytes / busbw.
  EXPECT_NEAR(slow.allreduce_s.high, m->params * 4 / 10e9, 1e-9);
  // Compute: 3 × forward FLOPs × 64 images over the 16-bit peak at the MFU band.
  EXPECT_NEAR(slow.compute_s.low, 3 * m->forward_gflops_per_unit * 1e9 * 64 / (gpu->dense_bf16_tflops * 1e12 * kMfuHigh), 1e-9);
  in.busbw = {100, 100, "100 GB/s"};
  const auto fast = expect_step(in);
  EXPECT_NEAR(fast.comm_ratio.high * 10, slow.comm_ratio.high, 1e-9);  // ten times the link, a tenth of the ratio
  EXPECT_GT(fast.efficiency.low, slow.efficiency.low);
  // A measured one-GPU step replaces the FLOP estimate.
  in.measured_compute_s = 0.5;
  EXPECT_DOUBLE_EQ(expect_step(in).compute_s.low, 0.5);
  // Nothing to expect without a model or a link.
  EXPECT_FALSE(expect_step(StepInputs{}).comm_ratio.known());
}

}  // namespace
}  // namespace scalescope::knowledge

namespace scalescope::knowledge {
namespace {

TEST(KnowledgeDocs, DocsKnowledgeMdIsGeneratedFromTheData) {
  const std::string path = std::string(SCALESCOPE_SOURCE_DIR) + "/docs/knowledge.md";
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << path << " is missing: build/tools/scalescope knowledge --markdown > docs/knowledge.md";
  std::ostringstream text;
  text << in.rdbuf();
  EXPECT_TRUE(text.str() == report::knowledge_markdown())
      << "docs/knowledge.md differs from the data: regenerate it with scripts/gen-docs.sh (build/tools/scalescope knowledge --markdown > docs/knowledge.md)";
}

TEST(KnowledgeDocs, EveryTableListsOnTheTerminal) {
  for (const auto* t : {"gpus", "models", "transports", "observations"}) EXPECT_GT(report::knowledge_text(t).size(), 200u) << t;
  EXPECT_THROW(report::knowledge_text("gpu"), core::UsageError);
}

}  // namespace
}  // namespace scalescope::knowledge

// GeForce boards by their number alone, as owners write them (issue #36).
TEST(KnowledgeData, GeforceBoardsByTheirNumberAlone) {
  namespace topo = scalescope::topo;
  ASSERT_NE(topo::find_gpu("NVIDIA 5090"), nullptr);
  EXPECT_EQ(std::string(topo::find_gpu("NVIDIA 5090")->model), "GeForce RTX 5090");
  EXPECT_EQ(std::string(topo::find_gpu("4090")->model), "GeForce RTX 4090");
  EXPECT_EQ(std::string(topo::find_gpu("2080 Ti")->model), "GeForce RTX 2080 Ti");
  EXPECT_EQ(std::string(topo::find_gpu("1080")->model), "GeForce GTX 1080");
  EXPECT_EQ(topo::find_gpu("6000"), nullptr);   // not a GeForce number
  EXPECT_EQ(topo::find_gpu("1024"), nullptr);
}
