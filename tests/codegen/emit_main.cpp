// tilejit-emit: prints the CUDA C++ generated for one registered test kernel (or lists them).
#include <cstdio>
#include <cstring>
#include <exception>

#include "emit_kernels.h"

int main(int argc, char** argv) {
  using tilejit::testing::emit_cases;
  const bool ir = argc == 3 && std::strcmp(argv[1], "--ir") == 0;
  if ((argc != 2 && !ir) || std::strcmp(argv[1], "--help") == 0) {
    std::fprintf(stderr,
                 "usage: tilejit-emit <kernel>       generated CUDA\n"
                 "       tilejit-emit --ir <kernel>  the IR after every pass\n"
                 "       tilejit-emit --list         the registered kernels\n");
    return 2;
  }
  if (std::strcmp(argv[1], "--list") == 0) {
    for (const auto& c : emit_cases()) std::printf("%-28s %s\n", c.name.c_str(), c.what.c_str());
    return 0;
  }
  const char* name = argv[argc - 1];
  const auto* c = tilejit::testing::find_emit_case(name);
  if (!c) {
    std::fprintf(stderr, "tilejit-emit: no test kernel named '%s' (see --list)\n", name);
    return 2;
  }
  try {
    const auto g = c->trace();
    tilejit::codegen::Options options = c->options;
    if (ir)
      options.dump_ir = [](std::string_view pass, const tilejit::ir::Graph& graph) {
        std::printf("// ---- after %.*s\n%s", static_cast<int>(pass.size()), pass.data(), tilejit::ir::print(graph).c_str());
      };
    const auto k = tilejit::codegen::generate(*g, options);
    if (!ir) std::fwrite(k.source.data(), 1, k.source.size(), stdout);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tilejit-emit: %s: %s\n", name, e.what());
    return 1;
  }
}
