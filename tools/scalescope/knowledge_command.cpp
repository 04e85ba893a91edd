// `scalescope knowledge [TABLE] [--markdown]`: what scalescope knows before any run — the GPU, model, NCCL-transport
// and public-result tables its expectations come from (data/*.json, compiled in).
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "report/knowledge_tables.h"

namespace scalescope::cli {

Action add_knowledge_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("knowledge", "list what scalescope knows before any run: GPUs, models, NCCL transports, "
                                              "public busbw results (each row's source: --markdown)");
  auto table = std::make_shared<std::string>("gpus");
  auto markdown = std::make_shared<bool>(false);
  cmd->add_option("table", *table, "gpus | models | transports | observations")->check(
      CLI::IsMember({"gpus", "models", "transports", "observations"}));
  cmd->add_flag("--markdown", *markdown, "print every table with its sources as Markdown (docs/knowledge.md is this output)");
  return [cmd, table, markdown]() -> int {
    if (!cmd->parsed()) return -1;
    const std::string text = *markdown ? report::knowledge_markdown() : report::knowledge_text(*table);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  };
}

}  // namespace scalescope::cli
