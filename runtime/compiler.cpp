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

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
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

// What NVRTC compiles: the kernel's source with the prelude moved into a header, so that NVRTC can
// precompile it; the whole source when the kernel does not say where its prelude is.
struct NvrtcInput {
  std::string main;
  std::string header;
  bool has_header = false;
};

NvrtcInput split_prelude(const codegen::GeneratedKernel& k) {
  NvrtcInput in;
  if (k.prelude_end <= k.prelude_begin || k.prelude_end > k.source.size()) {
    in.main = k.source;
    return in;
  }
  in.main = k.source.substr(0, k.prelude_begin) + "#include \"" + kPreludeHeader + "\"\n" + k.source.substr(k.prelude_end);
  in.header = k.source.substr(k.prelude_begin, k.prelude_end - k.prelude_begin);
  in.has_header = true;
  return in;
}

// Writes what NVRTC compiled (and its prelude header beside it), so that the log's line numbers
// point into the file and `nvcc -arch=sm_90a -c <file>` reproduces the error.
std::string write_failed_source(const codegen::GeneratedKernel& k, const NvrtcInput& in, const std::string& dir_option) {
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
  out << in.main;
  if (in.has_header) {
    // Through a unique temporary name: threads failing at once must not interleave their writes.
    const fs::path temp = dir / (std::string(kPreludeHeader) + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++));
    std::ofstream(temp) << in.header;
    fs::rename(temp, dir / kPreludeHeader, ec);
    if (ec) fs::remove(temp, ec);
  }
  return out ? file.string() : std::string("(could not write ") + file.string() + ")";
}

// Where NVRTC keeps the precompiled prelude (-pch). Left to itself, NVRTC writes it (about 5 MB) to
// $TMPDIR/__nvrtc_auto_pch_<pid>_<n>/ and removes it only at a normal exit, so every killed process
// leaked one. Instead each process gets a folder of its own, $TMPDIR/tilejit-pch-<pid>-XXXXXX,
// holding an exclusive flock on its file "owner.lock" for as long as the process lives. The first
// compile of a process sweeps the folders whose lock it can take: their owner is gone, however it
// ended (the kernel drops the lock of a killed process; pid reuse and pid namespaces cannot fool a
// lock). A normal exit removes the process's own folder. The precompiled header cannot outlive its
// process anyway (NVRTC ties it to the process's heap addresses, docs/compile_time.md), so nothing
// of value is lost, and every compile after the first still uses it. --pch-dir is not part of the
// compile cache's key: it changes where the header lives, not the binary.
class PchFolder {
 public:
  static PchFolder& get() {
    static PchFolder folder;
    return folder;
  }
  PchFolder(const PchFolder&) = delete;
  PchFolder& operator=(const PchFolder&) = delete;
  ~PchFolder() {
    if (path_.empty() || ::getpid() != owner_) return;  // a forked child leaves its parent's folder alone
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }

  /// The folder for --pch-dir; empty when it could not be made or has disappeared since (NVRTC
  /// refuses a --pch-dir that does not exist), in which case NVRTC's own default applies.
  std::string path() const {
    struct stat st {};
    return !path_.empty() && ::stat(path_.c_str(), &st) == 0 && S_ISDIR(st.st_mode) ? path_ : std::string();
  }

 private:
  static constexpr std::string_view kPrefix = "tilejit-pch-";
  static constexpr const char* kLockName = "owner.lock";
  // A folder that never got its lock file (its maker died at once) is removed after this long.
  static constexpr auto kUnlockedAge = std::chrono::minutes(10);

  PchFolder() : owner_(::getpid()) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path base = fs::temp_directory_path(ec);
    if (ec) return;
    sweep(base);
    std::string name = (base / (std::string(kPrefix) + std::to_string(owner_) + "-XXXXXX")).string();
    if (::mkdtemp(name.data()) == nullptr) return;  // mode 0700, a name no one else holds
    const int lock = ::open((fs::path(name) / kLockName).c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (lock < 0 || ::flock(lock, LOCK_EX | LOCK_NB) != 0) {
      if (lock >= 0) ::close(lock);
      fs::remove_all(name, ec);
      return;
    }
    path_ = name;  // `lock` stays open, and locked, until the process ends
  }

  // Removes the folders of processes that are gone.
  static void sweep(const std::filesystem::path& base) {
    namespace fs = std::filesystem;
    std::error_code ec;
    for (fs::directory_iterator it(base, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      const std::string name = it->path().filename().string();
      struct stat st {};
      if (!name.starts_with(kPrefix) || ::lstat(it->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
          st.st_uid != ::geteuid())
        continue;
      const int lock = ::open((it->path() / kLockName).c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
      bool gone = false;
      if (lock >= 0) {
        gone = ::flock(lock, LOCK_EX | LOCK_NB) == 0;
        ::close(lock);
      } else {
        std::error_code tec;
        gone = fs::file_time_type::clock::now() - fs::last_write_time(it->path(), tec) > kUnlockedAge && !tec;
      }
      std::error_code rec;
      if (gone) fs::remove_all(it->path(), rec);
    }
  }

  pid_t owner_;
  std::string path_;
};

}  // namespace

std::string precompiled_header_folder() { return PchFolder::get().path(); }

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
  out.wgmma_serialized = log.find("wgmma.mma_async instructions are serialized") != std::string::npos;
}

std::string NvrtcInvocation::joined() const {
  std::string out;
  for (const auto& o : options) out.append(out.empty() ? "" : " ").append(o);
  return out;
}

NvrtcInvocation nvrtc_invocation(const CompileOptions& options) {
  NvrtcInvocation inv;
  // A cubin for sm_NN[a] when NVRTC knows the SM, else PTX for compute_NN.
  inv.arch = options.arch;
  const int number = arch_number(options.arch);
  inv.cubin = options.arch.rfind("sm_", 0) == 0;
  if (inv.cubin && number > 0) {
    const auto archs = nvrtc_supported_archs();
    if (std::find(archs.begin(), archs.end(), number) == archs.end()) {
      inv.cubin = false;
      inv.arch = "compute_" + options.arch.substr(3);
    }
  }
  // --minimal leaves out the texture, surface and device-runtime declarations that generated code
  // never uses, which takes about 14% off a small kernel's compile (docs/compile_time.md).
  inv.options = {"--gpu-architecture=" + inv.arch, "-std=c++17", "--minimal", "--ptxas-options=--verbose"};
  // NVRTC 12.9 and later keep a cache of their own (shared between processes), and a hit there returns the
  // binary without ptxas's report: no registers, no spills, so no spill warning and no retry with a leaner
  // producer (an H100 host, 2026-12-07: a causal dK/dV kernel "compiled" in 37 ms with -1 registers after
  // another process had compiled it). tilejit's disk cache keeps the report with the binary; NVRTC's is left out.
  if (const auto [major, minor] = nvrtc_version(); major > 12 || (major == 12 && minor >= 9)) inv.options.push_back("--no-cache");
  if (options.line_info) inv.options.push_back("-lineinfo");
  if (options.precompiled_prelude) inv.options.push_back("-pch");
  inv.options.insert(inv.options.end(), options.extra.begin(), options.extra.end());
  return inv;
}

CompiledBinary compile_cuda(const codegen::GeneratedKernel& kernel, const std::string& kernel_name,
                            const CompileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  CompiledBinary bin;
  const NvrtcInvocation inv = nvrtc_invocation(options);
  bin.arch = inv.arch;
  const bool cubin = inv.cubin;
  std::vector<const char*> argv;
  for (const auto& o : inv.options) argv.push_back(o.c_str());
  const std::string pch_dir = options.precompiled_prelude ? "--pch-dir=" + PchFolder::get().path() : std::string();
  if (pch_dir.size() > std::string_view("--pch-dir=").size()) argv.push_back(pch_dir.c_str());

  const NvrtcInput input = split_prelude(kernel);
  const char* header_text = input.header.c_str();
  const char* header_name = kPreludeHeader;
  Program prog;
  check(nvrtcCreateProgram(&prog.p, input.main.c_str(), (kernel.entry + ".cu").c_str(), input.has_header ? 1 : 0,
                           input.has_header ? &header_text : nullptr, input.has_header ? &header_name : nullptr),
        "nvrtcCreateProgram");
  const nvrtcResult r = nvrtcCompileProgram(prog.p, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  check(nvrtcGetProgramLogSize(prog.p, &log_size), "nvrtcGetProgramLogSize");
  bin.log.resize(log_size);
  if (log_size) check(nvrtcGetProgramLog(prog.p, bin.log.data()), "nvrtcGetProgramLog");
  while (!bin.log.empty() && bin.log.back() == '\0') bin.log.pop_back();
  if (r == NVRTC_ERROR_COMPILATION)
    throw CompileError(kernel_name, bin.log, write_failed_source(kernel, input, options.dump_dir));
  check(r, "nvrtcCompileProgram");
  if (bin.log.find("using precompiled header") != std::string::npos) bin.pch = CompiledBinary::Pch::used;
  else if (nvrtcGetPCHCreateStatus(prog.p) == NVRTC_SUCCESS) bin.pch = CompiledBinary::Pch::created;
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
