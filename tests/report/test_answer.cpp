// The answer every rendering leads with (report/answer.h, issue #39): built from the JSON document a command
// writes, so terminal, JSON and HTML say the same sentence. Inputs are small documents of our own.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "report/answer.h"
#include "report/html_report.h"

namespace scalescope::report {
namespace {

using json = nlohmann::json;

json cause(const char* id, const char* summary, const char* cost) {
  return {{"cause", id}, {"summary", summary}, {"fix", "do the fix"}, {"cost", {{"text", cost}}}};
}

TEST(Answer, AFailureComesBeforeAnyCause) {
  const json doc = {{"diagnosis",
                     {{"failure", {{"ended", "exited with status 1"}, {"exception", "RuntimeError: boom"}, {"rank", 1}}},
                      {"primary", cause("straggler", "one rank is late", "2 ms per step")}}}};
  const auto a = answer_of_analysis(doc, "profile");
  EXPECT_EQ(a.kind, "failure");
  EXPECT_EQ(a.headline, "the job FAILED (exited with status 1): rank 1: RuntimeError: boom.");
  EXPECT_EQ(a.command, "profile");
}

TEST(Answer, APrimaryCauseIsTheHeadlineWithItsCostAndFix) {
  json doc = {{"diagnosis", {{"primary", cause("host-sync", "the host waits for the GPU", "754 µs per step (6.3 %)")}}}};
  doc["combined"]["trace"]["ranks"] = json::array(
      {{{"rank", 0}, {"cpu_ranks", false}, {"mean", {{"step_ms", 12.0}, {"exposed_comm_ms", 0.0}, {"gpu_idle_ms", 1.8}}}},
       {{"rank", 1}, {"cpu_ranks", false}, {"mean", {{"step_ms", 12.5}, {"exposed_comm_ms", 1.25}, {"gpu_idle_ms", 2.5}}}}});
  const auto a = answer_of_analysis(doc, "analyze");
  EXPECT_EQ(a.kind, "cause");
  EXPECT_EQ(a.headline, "the primary cause is host-sync: the host waits for the GPU.");
  EXPECT_EQ(a.cost, "754 µs per step (6.3 %)");
  EXPECT_EQ(a.fix, "do the fix");
  ASSERT_EQ(a.figures.size(), 2u);
  EXPECT_EQ(a.figures[1].label, "step, rank 1");
  EXPECT_EQ(a.figures[1].value, "12.50 ms, exposed communication 1.25 ms (10.0 %), GPU idle 2.50 ms (20.0 %)");
}

TEST(Answer, CpuRanksAreNotDescribedInGpuWords) {
  json doc = {{"diagnosis", {{"primary", cause("compute-contention", "ranks share cores", "3 ms")}}}};
  doc["combined"]["trace"]["ranks"] = json::array(
      {{{"rank", 0}, {"cpu_ranks", true}, {"mean", {{"step_ms", 20.0}, {"exposed_comm_ms", 2.0}, {"gpu_idle_ms", 19.0}}}}});
  const auto a = answer_of_analysis(doc, "profile");
  ASSERT_EQ(a.figures.size(), 1u);
  EXPECT_EQ(a.figures[0].value.find("GPU"), std::string::npos) << a.figures[0].value;
}

TEST(Answer, NothingSingledOutSaysSoAndWhatWouldDecide) {
  const json doc = {{"diagnosis", {{"missing_evidence", json::array({{{"what", "the GPU topology"}, {"command", "nvidia-smi topo -m"}}})}}}};
  const auto a = answer_of_analysis(doc, "analyze");
  EXPECT_EQ(a.kind, "undecided");
  EXPECT_EQ(a.fix, "the GPU topology: nvidia-smi topo -m");
}

TEST(Answer, DoctorLeadsWithTheVerdictThenTheCause) {
  const json doc = {
      {"verdict", {{"verdict", "investigate"}, {"reasons", json::array({"N=2: speedup 1.04 < 1.2"})}}},
      {"diagnosis", {{"primary", cause("compute-contention", "the ranks slow each other's compute", "3.5 ms per step")}}},
      {"points", json::array({{{"world_size", 1}, {"result", {{"step_s", {{"trimmed_mean", 0.0135}}}}}},
                              {{"world_size", 2},
                               {"result", {{"step_s", {{"trimmed_mean", 0.0178}}}}},
                               {"metrics", {{"speedup", 1.52}, {"efficiency", 0.76}, {"comm_ratio", 0.388}}}}})}};
  const auto a = answer_of_doctor(doc);
  EXPECT_EQ(a.kind, "verdict");
  EXPECT_EQ(a.headline, "verdict: investigate (N=2: speedup 1.04 < 1.2); the primary cause is compute-contention: the "
                        "ranks slow each other's compute.");
  ASSERT_EQ(a.figures.size(), 2u);
  EXPECT_EQ(a.figures[1].value, "step 17.80 ms, speedup 1.52, efficiency 76.0 %, comm ratio 38.8 %");
}

TEST(Answer, APredictionNamesTheLargestRankCountWithItsBand) {
  const json doc = {{"link", "NV18 between H200 SXM: 18 links × 25 GB/s"},
                    {"predictions", json::array({{{"ranks", 2}, {"label", "2 ranks"}, {"step_ms", 10.0}, {"efficiency", 0.95},
                                                  {"comm_ratio", 0.05}, {"verdict", "healthy"}, {"exposed_comm_ms", 0.5}},
                                                 {{"ranks", 8}, {"label", "8 ranks"}, {"step_ms", 11.0}, {"efficiency", 0.9},
                                                  {"efficiency_band", json::array({0.85, 0.93})}, {"comm_ratio", 0.12},
                                                  {"verdict", "healthy"}, {"exposed_comm_ms", 1.0}}})}};
  const auto a = answer_of_prediction(doc);
  EXPECT_EQ(a.kind, "prediction");
  EXPECT_EQ(a.headline, "on 8 ranks over NV18 between H200 SXM this job should run at 90.0 % scaling efficiency (band "
                        "85–93 %), a step of 11.00 ms, comm ratio 12.0 %: healthy.");
  EXPECT_EQ(a.figures.size(), 2u);
}

TEST(Answer, TheThreeRenderingsSayTheSameHeadline) {
  const json doc = {{"diagnosis", {{"primary", cause("no-overlap", "the all-reduce runs after backward", "4 ms per step")}}}};
  const auto a = answer_of_analysis(doc, "analyze");
  const std::string text = render_answer(a);
  EXPECT_EQ(text.rfind("answer: " + a.headline + "\n", 0), 0u) << text;
  EXPECT_EQ(answer_json(a)["headline"], a.headline);
  HtmlPage page;
  page.title = "scalescope analyze — test";
  page.answer = a;
  page.diagnosis = doc["diagnosis"];
  const std::string html = render_html(page);
  const auto answer_at = html.find("<section id=\"answer\""), diagnosis_at = html.find("<section id=\"diagnosis\"");
  ASSERT_NE(answer_at, std::string::npos);
  EXPECT_LT(answer_at, diagnosis_at);
  EXPECT_NE(html.find(html_escape(a.headline)), std::string::npos);
  // A section with nothing to show is left out.
  EXPECT_EQ(html.find("<section id=\"busbw\""), std::string::npos);
  EXPECT_EQ(html.find("<section id=\"swimlanes\""), std::string::npos);
}

}  // namespace
}  // namespace scalescope::report
