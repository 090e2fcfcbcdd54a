// tilejit-cache: lists, summarises and clears the on-disk compile cache and the autotuning decisions.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <system_error>

#include "tilejit/error.h"
#include "tilejit/runtime/decisions.h"
#include "tilejit/runtime/disk_cache.h"
#include "tilejit/runtime/knobs.h"

namespace {
int usage() {
  std::fprintf(stderr,
               "usage: tilejit-cache [list|stats|clear] [--dir DIR]\n"
               "       tilejit-cache decisions [list|export FILE|import FILE|clear] [--dir DIR]\n"
               "  list   one line per entry: kernel, arch, size, age (most recently used first)\n"
               "  stats  entries, total size, and the hits, misses and compile time saved of every\n"
               "         process that used the folder since it was created or cleared\n"
               "  clear  remove every entry and reset the counters\n"
               "  decisions list          one line per autotuning decision: kernel, key, device, winner, time\n"
               "  decisions export FILE   write every decision to FILE (JSON), for an application to ship and\n"
               "                          load with tilejit::autotune::load_decisions, or to import elsewhere\n"
               "  decisions import FILE   add the decisions of FILE to the folder\n"
               "  decisions clear         remove every decision\n"
               "The folder is TILEJIT_CACHE_DIR (default $XDG_CACHE_HOME/tilejit or ~/.cache/tilejit).\n"
               "A folder named with --dir must exist (else status 1: most likely a mistyped path). The\n"
               "default folder or TILEJIT_CACHE_DIR may not exist yet (tilejit creates it when it first\n"
               "stores something): it is an empty cache, which the command says on stderr, with status 0.\n");
  return 2;
}

std::string age(std::filesystem::file_time_type t) {
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(std::filesystem::file_time_type::clock::now() - t).count();
  if (s < 120) return std::to_string(s) + " s";
  if (s < 7200) return std::to_string(s / 60) + " min";
  if (s < 172800) return std::to_string(s / 3600) + " h";
  return std::to_string(s / 86400) + " d";
}


int fail(const std::string& message) {
  std::fprintf(stderr, "tilejit-cache: %s\n", message.c_str());
  return 1;
}

// Empty when `dir` can be the cache folder: an existing folder, or (when it was not named with
// --dir) one that does not exist yet, which is an empty cache; else what is wrong with it. A
// missing --dir is most likely a mistyped path, so it is an error rather than an empty cache.
std::string folder_problem(const std::filesystem::path& dir, bool named) {
  std::error_code ec;
  const auto st = std::filesystem::status(dir, ec);
  if (st.type() == std::filesystem::file_type::not_found) return named ? dir.string() + ": no such folder" : "";
  if (ec) return dir.string() + ": " + ec.message();
  if (st.type() != std::filesystem::file_type::directory) return dir.string() + ": not a folder";
  return {};
}

// The `decisions` subcommands.
int decisions(const std::string& cmd, const std::string& file, const std::filesystem::path& dir) {
  const tilejit::DecisionStore store(dir);
  if (cmd == "clear") {
    std::string error;
    const size_t removed = store.clear(&error);
    std::printf("removed %zu decisions from %s\n", removed, store.directory().c_str());
    return error.empty() ? 0 : fail(error);
  }
  if (cmd == "import") {
    const std::vector<tilejit::Decision> in = tilejit::read_decisions_file(file);
    size_t written = 0;
    for (const tilejit::Decision& d : in) written += store.store(d) ? 1 : 0;
    std::printf("imported %zu of %zu decisions into %s\n", written, in.size(), store.directory().c_str());
    return written == in.size() ? 0 : 1;
  }
  const std::vector<tilejit::DecisionFile> files = store.list();
  if (cmd == "export") {
    std::vector<tilejit::Decision> out;
    for (const auto& f : files)
      if (f.decision) out.push_back(*f.decision);
    tilejit::write_decisions_file(file, out);
    std::printf("exported %zu decisions to %s\n", out.size(), file.c_str());
    return 0;
  }
  std::printf("%-24s %-36s %-24s %10s  %s\n", "kernel", "key", "device", "ms", "configuration");
  for (const auto& f : files) {
    if (!f.decision) {
      std::printf("%s  (unreadable: %s)\n", f.file.c_str(), f.error.c_str());
      continue;
    }
    const tilejit::Decision& d = *f.decision;
    const std::string ms = d.time_ms >= 0 ? std::to_string(d.time_ms).substr(0, 8) : "-";
    std::printf("%-24s %-36s %-24s %10s  %s\n", d.id.kernel.c_str(), d.id.key.c_str(), d.id.device.c_str(), ms.c_str(),
                d.config.str().c_str());
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) try {
  std::string cmd = "list", file;
  bool decision_cmd = false, named_dir = false;
  std::filesystem::path dir = tilejit::knobs().cache_dir;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--dir" && i + 1 < argc) {
      dir = argv[++i];
      named_dir = true;
    } else if (a == "decisions" && !decision_cmd) {
      decision_cmd = true;
    } else if (a == "list" || a == "stats" || a == "clear" || (decision_cmd && (a == "export" || a == "import"))) {
      cmd = a;
      if ((a == "export" || a == "import") && i + 1 < argc) file = argv[++i];
      else if (a == "export" || a == "import") return usage();
    } else {
      return usage();
    }
  }
  if (decision_cmd && cmd == "stats") return usage();
  if (std::string problem = folder_problem(dir, named_dir); !problem.empty()) return fail(problem);
  // The cache folder of a user who has not compiled anything yet: an empty cache, said aloud so
  // that a TILEJIT_CACHE_DIR other than the one the application used is not taken for one.
  std::error_code ec;
  if (!named_dir && cmd != "import" && !std::filesystem::exists(dir, ec))
    std::fprintf(stderr, "tilejit-cache: %s does not exist yet: an empty cache (tilejit creates it when it first stores something)\n",
                 dir.string().c_str());
  if (decision_cmd) return decisions(cmd, file, dir);
  tilejit::DiskCache cache(dir);
  if (cmd == "clear") {
    std::string error;
    const size_t removed = cache.clear(&error);
    std::printf("removed %zu files from %s\n", removed, cache.directory().c_str());
    return error.empty() ? 0 : fail(error);
  }
  const auto entries = cache.list();
  if (cmd == "stats") {
    std::uint64_t bytes = 0;
    double ms = 0;
    size_t bad = 0;
    for (const auto& e : entries) {
      bytes += e.size;
      ms += e.compile_ms;
      bad += !e.valid;
    }
    const tilejit::CacheStats s = cache.folder_stats();
    const std::uint64_t lookups = s.hits + s.misses;
    std::printf("%s\n", cache.directory().c_str());
    std::printf("  entries    %zu (%zu unreadable), %.1f MiB of %.0f MiB, %.0f ms of compilation stored\n", entries.size(), bad,
                static_cast<double>(bytes) / (1 << 20), static_cast<double>(cache.max_bytes()) / (1 << 20), ms);
    std::printf("  lookups    %llu: %llu hits, %llu misses (%.1f%% hits), %llu of the misses corrupt entries\n",
                static_cast<unsigned long long>(lookups), static_cast<unsigned long long>(s.hits),
                static_cast<unsigned long long>(s.misses), lookups ? 100.0 * static_cast<double>(s.hits) / static_cast<double>(lookups) : 0.0,
                static_cast<unsigned long long>(s.corrupt));
    std::printf("  stores     %llu, %llu evicted\n", static_cast<unsigned long long>(s.stores),
                static_cast<unsigned long long>(s.evicted));
    std::printf("  saved      %.1f s of compilation\n", s.compile_ms_saved / 1000.0);
    return 0;
  }
  std::printf("%-32s %-10s %10s %8s  %s\n", "kernel", "arch", "bytes", "age", "file");
  for (const auto& e : entries)
    std::printf("%-32s %-10s %10llu %8s  %s%s\n", e.kernel.empty() ? "?" : e.kernel.c_str(), e.arch.c_str(),
                static_cast<unsigned long long>(e.size), age(e.mtime).c_str(), e.file.c_str(), e.valid ? "" : "  (unreadable)");
  return 0;
} catch (const tilejit::Error& e) {
  return fail(e.what());
} catch (const std::exception& e) {  // out of memory, a filesystem error: reported, never an abort
  return fail(std::string("unexpected error: ") + e.what());
}
