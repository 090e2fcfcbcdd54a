// fuzz_gpu: random programs run on the GPU and in the interpreter from the same inputs, every tensor
// compared (bit-exact, or within the bound the generator derived for the program). Without a GPU the
// programs are interpreted and compiled only.
//
//   fuzz_gpu [--products] [--warp-specialize] [--seed-begin N] [--count N] [--seconds S] [--batch N] [--print]
//
// --products runs the family of programs with products (tensor-core dots, loop nests, two products per loop;
// make_product_program), whose seeds are its own. --print writes every program's C++ before running it (to read
// a seed's program when it passes). --warp-specialize sets Config::warp_specialize on every program (a producer
// warpgroup wherever the roles apply; the others run without them).
// A failing program is printed with its seed and its C++. A fault leaves the CUDA context unusable: the
// driver then prints the seed, its C++ and the seed to resume from, and exits with status 3.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "compare.h"
#include "program.h"
#include "thread_pool.h"
#include "tilejit/interp/interp.h"
#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/launch.h"
#include "tilejit/tilejit.h"

using tilejit::fuzz::Program;

namespace {

struct Options {
  uint64_t seed_begin = 0;
  uint64_t count = 10000;
  double seconds = 240;
  size_t batch = 64;
  bool print = false;
  bool products = false;
  bool warp_specialize = false;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--print") {
      o.print = true;
      continue;
    }
    if (a == "--products") {
      o.products = true;
      continue;
    }
    if (a == "--warp-specialize") {
      o.warp_specialize = true;
      continue;
    }
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!v) {
      std::fprintf(stderr, "fuzz_gpu: %s needs a value\n", a.c_str());
      std::exit(2);
    }
    if (a == "--seed-begin") o.seed_begin = std::strtoull(v, nullptr, 10);
    else if (a == "--count") o.count = std::strtoull(v, nullptr, 10);
    else if (a == "--seconds") o.seconds = std::strtod(v, nullptr);
    else if (a == "--batch") o.batch = std::max<size_t>(1, std::strtoull(v, nullptr, 10));
    else {
      std::fprintf(stderr,
                   "usage: fuzz_gpu [--products] [--warp-specialize] [--seed-begin N] [--count N] [--seconds S] [--batch N] "
                   "[--print]\n");
      std::exit(2);
    }
    ++i;
  }
  return o;
}

/// One program of a batch: its host (interpreter) and device copies and what became of it.
struct Case {
  Program p;
  std::unique_ptr<tilejit::fuzz::HostTensors> host;
  std::vector<std::unique_ptr<tilejit::DeviceBuffer>> dev;
  std::vector<void*> dev_data;
  enum Status { ok, refused, failed } status = ok;
  std::string why;
};

// Where the run is, for a crash that no exception reports (a signal): the seeds of the batch and the phase.
std::atomic<uint64_t> g_first{0}, g_last{0};
std::atomic<const char*> g_phase{"starting"};

void write_str(const char* s) {
  ssize_t r = ::write(STDOUT_FILENO, s, std::strlen(s));
  (void)r;
}

void write_u64(uint64_t v) {
  char buf[24];
  int i = sizeof buf;
  buf[--i] = 0;
  do buf[--i] = static_cast<char>('0' + v % 10);
  while ((v /= 10) != 0 && i > 0);
  write_str(buf + i);
}

// Async-signal-safe: write(2) only, then the default action (the exit status still says which signal).
extern "C" void on_crash(int sig) {
  write_str("fuzz_gpu: crashed (signal ");
  write_u64(static_cast<uint64_t>(sig));
  write_str(") while ");
  write_str(g_phase.load());
  write_str(" seeds ");
  write_u64(g_first.load());
  write_str("..");
  write_u64(g_last.load());
  write_str("\n");
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

struct Counts {
  uint64_t programs = 0, mismatches = 0, faults = 0, compile_failures = 0, refused = 0;
};

// The program's C++ needs its trace, which may be what failed: then the failure stands in for it.
void report(const Case& c, const char* what) {
  std::string cpp;
  try {
    cpp = c.p.cpp();
  } catch (const std::exception& e) {
    cpp = std::string("(no C++: tracing fails: ") + e.what() + ")";
  }
  std::printf("FAIL seed %llu: %s: %s\n%s\n", static_cast<unsigned long long>(c.p.seed), what, c.why.c_str(), cpp.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a crash loses no finished line
  std::signal(SIGSEGV, on_crash);
  std::signal(SIGABRT, on_crash);
  std::signal(SIGBUS, on_crash);
  const bool gpu = tilejit::has_gpu();
  std::printf("fuzz_gpu: %sseeds %llu.. (%llu programs, %.0f s at most) %s\n", opt.products ? "programs with products, " : "",
              static_cast<unsigned long long>(opt.seed_begin),
              static_cast<unsigned long long>(opt.count), opt.seconds,
              gpu ? ("on " + tilejit::devices().front().name).c_str() : "without a GPU: interpreted and compiled only");
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  Counts n;
  uint64_t seed = opt.seed_begin;
  const uint64_t end = opt.seed_begin + opt.count;
  while (seed < end && elapsed() < opt.seconds) {
    std::vector<Case> batch;
    g_phase = "generating";
    g_first = seed;
    g_last = std::min(end, seed + opt.batch) - 1;
    for (; seed < end && batch.size() < opt.batch; ++seed) {
      batch.emplace_back();
      batch.back().p = opt.products ? tilejit::fuzz::make_product_program(seed) : tilejit::fuzz::make_program(seed);
      if (opt.warp_specialize) batch.back().p.config.warp_specialize();
      if (opt.print) std::printf("seed %llu:\n%s\n", static_cast<unsigned long long>(seed), batch.back().p.cpp().c_str());
    }
    // Inputs on this thread (it holds the CUDA context), then trace, compile and interpret in parallel
    // (the interpreter's copies are the reference).
    g_phase = "compiling and interpreting";
    for (Case& c : batch) {
      c.host = std::make_unique<tilejit::fuzz::HostTensors>(c.p);
      if (!gpu) continue;
      for (size_t t = 0; t < c.p.tensors.size(); ++t) {
        c.dev.push_back(std::make_unique<tilejit::DeviceBuffer>(c.p.tensors[t].bytes()));
        c.dev.back()->upload(c.host->data()[t]);
        c.dev_data.push_back(c.dev.back()->data());
      }
    }
    tilejit::detail::ThreadPool::shared().parallel_for(batch.size(), [&](size_t i) {
      Case& c = batch[i];
      try {
        if (gpu) tilejit::runtime::warmup(*c.p.kernel, c.p.config, c.p.args(c.dev_data));
        else (void)tilejit::runtime::compile_only(*c.p.kernel, c.p.config);
        tilejit::interp::run(*c.p.kernel->graph(c.p.config), c.p.grid, c.p.args(c.host->data()));
      } catch (const tilejit::UserError& e) {
        c.status = Case::refused;
        c.why = e.what();
      } catch (const std::exception& e) {
        c.status = Case::failed;
        c.why = e.what();
      } catch (...) {  // the pool's loop body must not throw
        c.status = Case::failed;
        c.why = "an exception not derived from std::exception";
      }
    });
    for (Case& c : batch) {
      ++n.programs;
      if (c.status == Case::refused) {
        ++n.refused;
        continue;
      }
      if (c.status == Case::failed) {
        ++n.compile_failures;
        report(c, "compile or interpreter failure");
        continue;
      }
      if (!gpu) continue;
      g_phase = "launching and comparing";
      g_first = g_last = c.p.seed;
      try {
        tilejit::runtime::launch(*c.p.kernel, nullptr, c.p.grid, c.p.config, c.p.args(c.dev_data));
        tilejit::synchronize(nullptr);
      } catch (const tilejit::UserError&) {
        ++n.refused;
        continue;
      } catch (const std::exception& e) {
        ++n.faults;
        c.why = e.what();
        report(c, "fault");
        std::printf("fuzz: %llu programs, %llu mismatches, %llu faults, %llu compile failures, %llu refused\n",
                    static_cast<unsigned long long>(n.programs), static_cast<unsigned long long>(n.mismatches),
                    static_cast<unsigned long long>(n.faults), static_cast<unsigned long long>(n.compile_failures),
                    static_cast<unsigned long long>(n.refused));
        std::printf("resume: %s%s--seed-begin %llu\n", opt.products ? "--products " : "",
                    opt.warp_specialize ? "--warp-specialize " : "", static_cast<unsigned long long>(c.p.seed + 1));
        return 3;
      }
      const auto& tol = c.p.traced().tolerance;
      std::string bad;
      for (size_t t = 0; t < c.p.tensors.size(); ++t) {
        const auto& spec = c.p.tensors[t];
        std::vector<unsigned char> back(spec.bytes());
        c.dev[t]->download(back.data());
        std::string first;
        const size_t wrong = gpu_test::compare_elements(spec.dtype, back.data(), c.host->data()[t], spec.elems(), tol[t], &first);
        if (wrong) bad += spec.name + ": " + std::to_string(wrong) + " elements differ (tolerance " + std::to_string(tol[t]) + "), " + first + "; ";
      }
      if (!bad.empty()) {
        ++n.mismatches;
        c.why = bad;
        report(c, "mismatch");
      }
    }
  }
  std::printf("fuzz: %llu programs, %llu mismatches, %llu faults, %llu compile failures, %llu refused (%.1f s)\n",
              static_cast<unsigned long long>(n.programs), static_cast<unsigned long long>(n.mismatches),
              static_cast<unsigned long long>(n.faults), static_cast<unsigned long long>(n.compile_failures),
              static_cast<unsigned long long>(n.refused), elapsed());
  return n.mismatches || n.faults || n.compile_failures ? 1 : 0;
}
