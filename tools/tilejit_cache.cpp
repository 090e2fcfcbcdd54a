// tilejit-cache: lists, summarises and clears the on-disk compile cache.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "tilejit/runtime/disk_cache.h"
#include "tilejit/runtime/knobs.h"

namespace {
int usage() {
  std::fprintf(stderr,
               "usage: tilejit-cache [list|stats|clear] [--dir DIR]\n"
               "  list   one line per entry: kernel, arch, size, age (most recently used first)\n"
               "  stats  entries, total size, and the hits, misses and compile time saved of every\n"
               "         process that used the folder since it was created or cleared\n"
               "  clear  remove every entry and reset the counters\n"
               "The folder is TILEJIT_CACHE_DIR (default $XDG_CACHE_HOME/tilejit or ~/.cache/tilejit).\n");
  return 2;
}

std::string age(std::filesystem::file_time_type t) {
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(std::filesystem::file_time_type::clock::now() - t).count();
  if (s < 120) return std::to_string(s) + " s";
  if (s < 7200) return std::to_string(s / 60) + " min";
  if (s < 172800) return std::to_string(s / 3600) + " h";
  return std::to_string(s / 86400) + " d";
}
}  // namespace

int main(int argc, char** argv) {
  std::string cmd = "list";
  std::filesystem::path dir = tilejit::knobs().cache_dir;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--dir") == 0 && i + 1 < argc) {
      dir = argv[++i];
    } else if (!std::strcmp(argv[i], "list") || !std::strcmp(argv[i], "stats") || !std::strcmp(argv[i], "clear")) {
      cmd = argv[i];
    } else {
      return usage();
    }
  }
  tilejit::DiskCache cache(dir);
  if (cmd == "clear") {
    std::printf("removed %zu files from %s\n", cache.clear(), cache.directory().c_str());
    return 0;
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
}
