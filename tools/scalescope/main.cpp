// scalescope: why is training on N GPUs not N times faster?

#include <cstdio>
#include <new>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "core/error.h"
#include "train/flash_attention_shape.h"  // cudnn_attention_built

int main(int argc, char** argv) {
  CLI::App app{"scalescope: measures and explains the scaling of data-parallel training"};
  const char* backends = !SCALESCOPE_BUILT_WITH_CUDA ? " (CPU/MPI backend only; built without CUDA)"
                         : scalescope::train::gpt_kernels::cudnn_attention_built()
                             ? " (CUDA/NCCL and CPU/MPI backends; cuDNN's fused attention)"
                             : " (CUDA/NCCL and CPU/MPI backends; the project's fused attention, built without cuDNN)";
  app.set_version_flag("--version", std::string("scalescope ") + SCALESCOPE_VERSION + backends);
  app.require_subcommand(1);
  std::vector<scalescope::cli::Action> actions = {scalescope::cli::add_train_command(app),
                                                  scalescope::cli::add_doctor_command(app),
                                                  scalescope::cli::add_comm_command(app),
                                                  scalescope::cli::add_topo_command(app),
                                                  scalescope::cli::add_analyze_command(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "scalescope: error: %s\n  run 'scalescope --help' or 'scalescope COMMAND --help'\n", e.what());
    return 2;
  }
  try {
    for (const auto& action : actions) {
      int status = action();
      if (status >= 0) return status;
    }
    return 2;
  } catch (const scalescope::core::UsageError& e) {
    std::fprintf(stderr, "scalescope: error: %s\n", e.what());
    if (!e.remedy().empty()) std::fprintf(stderr, "  what to do: %s\n", e.remedy().c_str());
    return 2;
  } catch (const scalescope::core::Error& e) {
    std::fprintf(stderr, "scalescope: error: %s\n", e.what());
    if (!e.remedy().empty()) std::fprintf(stderr, "  what to do: %s\n", e.remedy().c_str());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "scalescope: error: out of memory\n  what to do: use a smaller --batch or model, or fewer ranks\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scalescope: internal error: %s\n", e.what());
    return 1;
  }
}
