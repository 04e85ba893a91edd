// Tests of the training-code reader (readers/code/python_code.h) on scripts of this project's own: wrappers and DDP's
// arguments, the DataLoader's workers, syncs inside the loop against outside it, comments and strings not read as code,
// settings the script puts in the environment, detection against prose and logs.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "readers/code/python_code.h"
#include "readers/input_kind.h"

namespace {

using namespace scalescope::diagnose;
using scalescope::analyze::looks_like_python_code;
using scalescope::analyze::read_python_code;

const char* kScript = R"(import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

os.environ["NCCL_P2P_DISABLE"] = "1"
acc = torch.tensor([1.0]).item()   # outside the loop: once

def main():
    model = DDP(model, device_ids=[rank],
                find_unused_parameters=True)
    loader = torch.utils.data.DataLoader(ds, batch_size=32,
                                         shuffle=True)
    for epoch in range(10):
        for x, y in loader:
            x = x.to(device)
            loss = model(x).sum()
            loss.backward()
            # print(loss.item())  a comment, not code
            s = "call .cpu() in a string"
            keep = out[out > 0]
            print(loss.item())
    torch.cuda.synchronize()
)";

TEST(PythonCode, ReadsConstructsAndTheLoop) {
  const auto r = read_python_code(kScript, "train.py");
  std::map<std::string, std::vector<const CodeUse*>> by;
  for (const auto& f : r.facts.all())
    if (const auto* c = std::get_if<CodeUse>(&f.value)) by[c->construct].push_back(c);
  ASSERT_EQ(by["DistributedDataParallel"].size(), 1u);
  ASSERT_EQ(by["find_unused_parameters"].size(), 1u);
  EXPECT_EQ(by["find_unused_parameters"][0]->detail, "True");
  ASSERT_EQ(by["dataloader"].size(), 1u);
  EXPECT_EQ(by["dataloader"][0]->value, 0.0);  // DataLoader's default: no workers
  // Syncs in the loop: .item() and the boolean mask; not the commented one, not the string, not the one before main.
  std::set<std::string> syncs;
  for (const auto* c : by["host-sync"]) {
    EXPECT_TRUE(c->in_loop) << c->detail;
    syncs.insert(c->detail);
  }
  EXPECT_EQ(syncs, (std::set<std::string>{".item()", "boolean-mask index"}));
  ASSERT_EQ(by["blocking-copy"].size(), 1u);
  EXPECT_TRUE(by["DataParallel"].empty());
  const auto settings = r.facts.of<Setting>();
  ASSERT_EQ(settings.size(), 1u);
  EXPECT_EQ(settings[0].fact.name, "NCCL_P2P_DISABLE");
  EXPECT_EQ(settings[0].fact.value, "1");
  EXPECT_EQ(settings[0].where.line, 6u);
}

TEST(PythonCode, DataParallelAndCompile) {
  const auto r = read_python_code("import torch\nmodel = torch.nn.DataParallel(model)\nmodel = torch.compile(model)\n", "x.py");
  std::set<std::string> seen;
  for (const auto& c : r.facts.of<CodeUse>()) seen.insert(c.fact.construct);
  EXPECT_EQ(seen, (std::set<std::string>{"DataParallel", "torch.compile"}));
}

TEST(PythonCode, ATrainersStepMethodRunsEveryStep) {
  const auto r = read_python_code("import torch\nclass Trainer:\n    def training_step(self, model, inputs):\n"
                                  "        loss = model(**inputs).loss\n        torch.cuda.empty_cache()\n        return loss\n"
                                  "    def save(self):\n        torch.cuda.empty_cache()\n",
                                  "trainer.py");
  std::vector<bool> in_loop;
  for (const auto& c : r.facts.of<CodeUse>())
    if (c.fact.construct == "empty_cache") in_loop.push_back(c.fact.in_loop);
  EXPECT_EQ(in_loop, (std::vector<bool>{true}));  // the one in save() is not per step and not in a loop: not reported
}

TEST(PythonCode, DetectionTellsCodeFromProseAndLogs) {
  EXPECT_TRUE(looks_like_python_code(kScript));
  EXPECT_FALSE(looks_like_python_code("I train with torch on two GPUs. It is slow. Why is that so, do you know?\n"));
  EXPECT_FALSE(looks_like_python_code("host-a:1:1 [0] NCCL INFO Bootstrap : Using eth0\nhost-a:1:1 [0] NCCL INFO cudaDriverVersion 12000\n"));
  const auto d = scalescope::analyze::detect_input(kScript, "train.py", true);
  EXPECT_TRUE(d.has(scalescope::analyze::InputKind::python_code)) << d.reason;
}

TEST(PythonCode, DamagedTextNeverThrows) {
  for (const std::string s : {std::string(""), std::string("for x in y:\n\tz.item()\n'''unterminated\n"),
                              std::string(10000, '('), std::string("\xff\xfe\x00", 3)})
    EXPECT_NO_THROW(read_python_code(s, "x.py"));
}

}  // namespace

// A host sync on the gradient-reduction path (issue #36): a function that reduces gradients and calls synchronize().
TEST(PythonCode, ASyncInAGradientReductionFunction) {
  const auto r = read_python_code("import torch\nclass Stage2:\n    def reduce_bucket(self, tensor):\n"
                                  "        torch.cuda.synchronize()\n        with torch.cuda.stream(self.reduction_stream):\n"
                                  "            dist.all_reduce(tensor)\n", "stage2.py");
  bool found = false;
  for (const auto& c : r.facts.of<scalescope::diagnose::CodeUse>())
    found = found || (c.fact.construct == "sync-in-reduction" && c.fact.detail == "synchronize() in reduce_bucket()");
  EXPECT_TRUE(found);
  // A sync in a function that reduces nothing (a timing helper) is not one.
  const auto t = read_python_code("import torch\ndef timed(fn):\n    torch.cuda.synchronize()\n    return fn()\n", "t.py");
  for (const auto& c : t.facts.of<scalescope::diagnose::CodeUse>()) EXPECT_NE(c.fact.construct, "sync-in-reduction");
}
