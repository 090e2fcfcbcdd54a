// tilejit-emit: prints the CUDA C++ generated for one registered test kernel (or lists them).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "emit_kernels.h"

int main(int argc, char** argv) {
  using tilejit::testing::emit_cases;
  const bool ir = argc >= 3 && std::strcmp(argv[1], "--ir") == 0;
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || (ir && argc < 3)) {
    std::fprintf(stderr,
                 "usage: tilejit-emit [--ir] <kernel> [NAME=value ...]\n"
                 "         prints the generated CUDA (--ir: the IR and the plans after every lowering step); NAME=value overrides a\n"
                 "         configuration value of the kernel's registered Config (num_warps, num_stages, programs_per_sm, warp_specialize and overlap_products too)\n"
                 "       tilejit-emit --list   the registered kernels\n");
    return 2;
  }
  if (std::strcmp(argv[1], "--list") == 0) {
    for (const auto& c : emit_cases()) std::printf("%-28s %s\n", c.name.c_str(), c.what.c_str());
    return 0;
  }
  const int first = ir ? 2 : 1;
  const char* name = argv[first];
  const auto* c = tilejit::testing::find_emit_case(name);
  if (!c) {
    std::fprintf(stderr, "tilejit-emit: no test kernel named '%s' (see --list)\n", name);
    return 2;
  }
  try {
    tilejit::Config config = c->config;
    for (int i = first + 1; i < argc; ++i) {
      const std::string arg = argv[i];
      const auto eq = arg.find('=');
      if (eq == std::string::npos || eq == 0) {
        std::fprintf(stderr, "tilejit-emit: expected NAME=value, got '%s'\n", arg.c_str());
        return 2;
      }
      const std::string key = arg.substr(0, eq);
      const int64_t value = std::stoll(arg.substr(eq + 1));
      config.set_field(key, value);
    }
    const auto g = c->trace_with(config);
    tilejit::codegen::Options options = c->options;
    if (ir) {
      options.dump_ir = [](std::string_view pass, const tilejit::ir::Graph& graph) {
        std::printf("// ---- after %.*s\n%s", static_cast<int>(pass.size()), pass.data(), tilejit::ir::print(graph).c_str());
      };
      options.dump_plan = [](std::string_view step, const std::string& plan) {
        std::printf("// ---- plan after %.*s\n%s", static_cast<int>(step.size()), step.data(), plan.c_str());
      };
    }
    const auto k = tilejit::codegen::generate(*g, options);
    if (!ir) std::fwrite(k.source.data(), 1, k.source.size(), stdout);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tilejit-emit: %s: %s\n", name, e.what());
    return 1;
  }
}
