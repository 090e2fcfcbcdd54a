// NVRTC compilation of generated kernels, with ptxas's resource report parsed from the log.
#include "tilejit/runtime/compiler.h"

#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <system_error>
#include <unistd.h>

#include "tilejit/error.h"
#include "tilejit/runtime/nvrtc.h"

namespace tilejit {

namespace {

void check(nvrtcResult r, const char* call) {
  if (r != NVRTC_SUCCESS) throw CudaError(call, static_cast<int>(r), nvrtcGetErrorString(r));
}

/// Frees an nvrtcProgram on every path.
struct Program {
  nvrtcProgram p = nullptr;
  ~Program() {
    if (p) nvrtcDestroyProgram(&p);
  }
};

/// "sm_90a" -> 90; -1 when `arch` is not of the form sm_NN / compute_NN with an optional letter.
int arch_number(const std::string& arch) {
  static const std::regex re("(sm|compute)_([0-9]+)[a-z]?");
  std::smatch m;
  if (!std::regex_match(arch, m, re)) return -1;
  return std::stoi(m[2].str());
}

std::string write_failed_source(const codegen::GeneratedKernel& k, const std::string& dir_option) {
  namespace fs = std::filesystem;
  static std::atomic<int> counter{0};
  std::error_code ec;
  fs::path dir = dir_option;
  if (dir.empty()) {
    dir = fs::temp_directory_path(ec) / ("tilejit-" + std::to_string(::getpid()));
    if (ec) dir = fs::path("/tmp") / ("tilejit-" + std::to_string(::getpid()));
  }
  fs::create_directories(dir, ec);
  const fs::path file = dir / (k.entry + "-" + std::to_string(counter++) + ".cu");
  std::ofstream out(file);
  out << k.source;
  return out ? file.string() : std::string("(could not write ") + file.string() + ")";
}

}  // namespace

void parse_ptxas_report(const std::string& log, CompiledBinary& out) {
  static const std::regex regs(R"(Used ([0-9]+) registers)");
  static const std::regex spills(R"(([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads)");
  static const std::regex smem(R"(([0-9]+) bytes smem)");
  std::smatch m;
  if (std::regex_search(log, m, regs)) out.registers = std::stoi(m[1].str());
  if (std::regex_search(log, m, spills)) {
    out.spill_stores = std::stoi(m[1].str());
    out.spill_loads = std::stoi(m[2].str());
  }
  if (std::regex_search(log, m, smem)) out.shared_static = std::stoi(m[1].str());
  else if (out.registers >= 0) out.shared_static = 0;  // ptxas leaves out "0 bytes smem"
}

CompiledBinary compile_cuda(const codegen::GeneratedKernel& kernel, const std::string& kernel_name,
                            const CompileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  CompiledBinary bin;
  // A cubin for sm_NN[a] when NVRTC knows the SM, else PTX for compute_NN.
  bin.arch = options.arch;
  const int number = arch_number(options.arch);
  bool cubin = options.arch.rfind("sm_", 0) == 0;
  if (cubin && number > 0) {
    const auto archs = nvrtc_supported_archs();
    if (std::find(archs.begin(), archs.end(), number) == archs.end()) {
      cubin = false;
      bin.arch = "compute_" + options.arch.substr(3);
    }
  }
  std::vector<std::string> opts = {"--gpu-architecture=" + bin.arch, "-std=c++17", "--ptxas-options=--verbose"};
  if (options.line_info) opts.push_back("-lineinfo");
  opts.insert(opts.end(), options.extra.begin(), options.extra.end());
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());

  Program prog;
  check(nvrtcCreateProgram(&prog.p, kernel.source.c_str(), (kernel.entry + ".cu").c_str(), 0, nullptr, nullptr),
        "nvrtcCreateProgram");
  const nvrtcResult r = nvrtcCompileProgram(prog.p, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  check(nvrtcGetProgramLogSize(prog.p, &log_size), "nvrtcGetProgramLogSize");
  bin.log.resize(log_size);
  if (log_size) check(nvrtcGetProgramLog(prog.p, bin.log.data()), "nvrtcGetProgramLog");
  while (!bin.log.empty() && bin.log.back() == '\0') bin.log.pop_back();
  if (r == NVRTC_ERROR_COMPILATION) throw CompileError(kernel_name, bin.log, write_failed_source(kernel, options.dump_dir));
  check(r, "nvrtcCompileProgram");
  size_t ptx_size = 0;
  check(nvrtcGetPTXSize(prog.p, &ptx_size), "nvrtcGetPTXSize");
  bin.ptx.resize(ptx_size);
  if (ptx_size) check(nvrtcGetPTX(prog.p, bin.ptx.data()), "nvrtcGetPTX");
  while (!bin.ptx.empty() && bin.ptx.back() == '\0') bin.ptx.pop_back();
  if (cubin) {
    size_t size = 0;
    check(nvrtcGetCUBINSize(prog.p, &size), "nvrtcGetCUBINSize");
    bin.cubin.resize(size);
    check(nvrtcGetCUBIN(prog.p, bin.cubin.data()), "nvrtcGetCUBIN");
  } else {
    bin.ptx_or_empty = bin.ptx;
  }
  parse_ptxas_report(bin.log, bin);
  bin.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return bin;
}

}  // namespace tilejit
