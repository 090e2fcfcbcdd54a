// Unit tests of the on-disk compile cache: round trips, corrupt and hostile entries, key completeness, eviction and
// concurrency.
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "child_processes.h"
#include "tilejit/runtime/disk_cache.h"
#include "tilejit/runtime/log.h"

namespace fs = std::filesystem;
using tilejit::CacheEntry;
using tilejit::CacheKey;
using tilejit::DiskCache;
using tilejit::LogLevel;

namespace {

// A fresh folder under the system temp dir, removed afterwards.
struct TempDir {
  fs::path path;
  TempDir() {
    static std::atomic<int> counter{0};
    path = fs::temp_directory_path() /
           ("tilejit_disk_cache_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::permissions(path / "v1", fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path, ec);
  }
};

// Captures the warnings logged while alive.
struct LogCapture {
  static inline std::mutex mutex;
  static inline std::vector<std::string> warnings;
  LogCapture() {
    std::lock_guard<std::mutex> lock(mutex);
    warnings.clear();
    tilejit::set_log_level(LogLevel::warn);
    tilejit::set_log_callback([](LogLevel level, std::string_view message) {
      if (level < LogLevel::warn) return;
      std::lock_guard<std::mutex> l(mutex);
      warnings.emplace_back(message);
    });
  }
  ~LogCapture() { tilejit::set_log_callback(nullptr); }
  std::size_t count() const {
    std::lock_guard<std::mutex> lock(mutex);
    return warnings.size();
  }
  bool has(const std::string& part) const {
    std::lock_guard<std::mutex> lock(mutex);
    for (const std::string& w : warnings) {
      if (w.find(part) != std::string::npos) return true;
    }
    return false;
  }
};

CacheKey make_key(int i) {
  CacheKey k;
  k.source = "extern \"C\" __global__ void k" + std::to_string(i) + "() {}\n";
  k.nvrtc_version = "13.0";
  k.options = "--gpu-architecture=sm_90a -std=c++17";
  k.arch = "sm_90a";
  k.tilejit_version = "0.1.0";
  k.knob_fingerprint = "TILEJIT_LINEINFO=off";
  return k;
}

CacheEntry make_entry(int i, int variant = 0, std::size_t cubin_bytes = 300) {
  CacheEntry e;
  e.cubin.resize(cubin_bytes);
  for (std::size_t j = 0; j < cubin_bytes; ++j) e.cubin[j] = static_cast<char>((j * 31 + static_cast<std::size_t>(i) * 7 + static_cast<std::size_t>(variant)) & 0xff);
  e.ptx = ".version 8.8\n.target sm_90a\n// k" + std::to_string(i) + " v" + std::to_string(variant) + "\n";
  e.metadata = "kernel=k" + std::to_string(i) + "\nregisters=" + std::to_string(32 + variant) + "\n";
  return e;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_file(const fs::path& p, const std::string& data) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

std::size_t header_size_of(const CacheKey& key) { return 8 + 4 + 4 + 4 + DiskCache::serialize_key(key).size() + 40; }

std::size_t count_temp_files(const fs::path& dir) {
  std::size_t n = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().find(".tmp.") != std::string::npos) ++n;
  }
  return n;
}

void set_age(const fs::path& p, std::chrono::seconds age) {
  fs::last_write_time(p, fs::file_time_type::clock::now() - age);
}

}  // namespace

TEST_CASE("round trip, stats and listing") {
  TempDir tmp;
  LogCapture log;
  DiskCache cache(tmp.path);
  CHECK(cache.directory() == tmp.path / "v1");
  const CacheKey key = make_key(1);
  const CacheEntry entry = make_entry(1);
  REQUIRE(cache.store(key, entry, 12.5));
  CHECK(fs::exists(cache.path_of(key)));
  CHECK(cache.path_of(key).filename().string() == DiskCache::id_of(key) + ".tjc");
  CHECK(DiskCache::id_of(key).size() == 32);

  const auto loaded = cache.load(key);
  REQUIRE(loaded.has_value());
  CHECK(*loaded == entry);
  // A second object (another process, later) reads the same entry.
  DiskCache other(tmp.path);
  const auto again = other.load(key);
  REQUIRE(again.has_value());
  CHECK(*again == entry);
  CHECK(other.stats().compile_ms_saved == doctest::Approx(12.5));

  // Empty payloads survive too.
  const CacheKey empty_key = make_key(2);
  REQUIRE(cache.store(empty_key, CacheEntry{}));
  const auto empty = cache.load(empty_key);
  REQUIRE(empty.has_value());
  CHECK(*empty == CacheEntry{});

  // Storing again replaces the entry.
  const CacheEntry replacement = make_entry(1, 5, 1000);
  REQUIRE(cache.store(key, replacement));
  CHECK(cache.load(key) == replacement);

  const tilejit::CacheStats s = cache.stats();
  CHECK(s.stores == 3);
  CHECK(s.hits == 3);
  CHECK(s.misses == 0);
  CHECK(s.corrupt == 0);
  CHECK(s.evicted == 0);
  CHECK(s.compile_ms_saved == doctest::Approx(12.5));

  const auto infos = cache.list();
  REQUIRE(infos.size() == 2);
  bool found = false;
  for (const auto& info : infos) {
    CHECK(info.valid);
    CHECK(info.arch == "sm_90a");
    CHECK(info.size == fs::file_size(tmp.path / "v1" / info.file));
    if (info.file == cache.path_of(key).filename().string()) {
      found = true;
      CHECK(info.kernel == "k1");
    }
  }
  CHECK(found);
  CHECK(count_temp_files(cache.directory()) == 0);
  CHECK(log.count() == 0);

  CHECK(cache.clear() == 2);
  CHECK(cache.list().empty());
  CHECK_FALSE(cache.load(key).has_value());
}

TEST_CASE("JSON metadata names the kernel in list()") {
  TempDir tmp;
  DiskCache cache(tmp.path);
  CacheEntry e = make_entry(3);
  e.metadata = "{\"registers\": 40, \"kernel\": \"gemm_tma\"}";
  REQUIRE(cache.store(make_key(3), e));
  const auto infos = cache.list();
  REQUIRE(infos.size() == 1);
  CHECK(infos[0].kernel == "gemm_tma");
}

TEST_CASE("the folder's counters add up over objects and are reset by clear") {
  TempDir tmp;
  LogCapture log;
  DiskCache first(tmp.path);
  CHECK_FALSE(first.load(make_key(1)).has_value());  // a miss before the folder exists leaves no file
  CHECK_FALSE(fs::exists(first.directory()));
  REQUIRE(first.store(make_key(1), make_entry(1), 40.0));
  CHECK_FALSE(first.load(make_key(2)).has_value());
  {
    DiskCache second(tmp.path);  // another process, later
    REQUIRE(second.load(make_key(1)).has_value());
    REQUIRE(second.load(make_key(1)).has_value());
    CHECK(second.stats().hits == 2);
    CHECK(second.stats().misses == 0);
  }
  const tilejit::CacheStats s = first.folder_stats();
  CHECK(s.hits == 2);
  CHECK(s.misses == 1);  // the miss before the folder existed was not recorded there
  CHECK(s.stores == 1);
  CHECK(s.corrupt == 0);
  CHECK(s.compile_ms_saved == doctest::Approx(80.0));
  CHECK(first.stats().misses == 2);  // the object's own counters saw both
  CHECK(fs::file_size(first.directory() / "stats") == 64);
  CHECK(first.list().size() == 1);  // the stats file is not an entry
  CHECK(log.count() == 0);

  CHECK(first.clear() == 1);
  CHECK_FALSE(fs::exists(first.directory() / "stats"));
  const tilejit::CacheStats cleared = first.folder_stats();
  CHECK(cleared.hits + cleared.misses + cleared.stores == 0);
}

TEST_CASE("an unreadable stats file restarts the counters, quietly") {
  TempDir tmp;
  LogCapture log;
  DiskCache cache(tmp.path);
  REQUIRE(cache.store(make_key(1), make_entry(1), 5.0));
  const fs::path stats = cache.directory() / "stats";
  std::string good = read_file(stats);
  REQUIRE(good.size() == 64);
  SUBCASE("bit flip in a counter") { good[9] = static_cast<char>(good[9] ^ 0x10); }
  SUBCASE("wrong magic") { good[0] = 'X'; }
  SUBCASE("truncated") { good.resize(30); }
  SUBCASE("too long") { good.append(100, 'z'); }
  write_file(stats, good);
  CHECK(cache.folder_stats().stores == 0);  // unreadable reads as zero
  REQUIRE(cache.load(make_key(1)).has_value());
  const tilejit::CacheStats s = cache.folder_stats();
  CHECK(s.hits == 1);
  CHECK(s.stores == 0);
  CHECK(s.compile_ms_saved == doctest::Approx(5.0));
  CHECK(fs::file_size(stats) == 64);
  CHECK(log.count() == 0);
}

TEST_CASE("miss on an empty or missing folder") {
  TempDir tmp;
  LogCapture log;
  DiskCache missing(tmp.path / "does" / "not" / "exist");
  CHECK_FALSE(missing.load(make_key(1)).has_value());
  CHECK(missing.list().empty());
  CHECK(missing.clear() == 0);
  DiskCache empty(tmp.path);
  CHECK_FALSE(empty.load(make_key(1)).has_value());
  CHECK(empty.stats().misses == 1);
  CHECK(empty.stats().hits == 0);
  CHECK(log.count() == 0);
  CHECK_FALSE(fs::exists(tmp.path / "does"));  // loading creates nothing
}

TEST_CASE("corrupt entries are a warning, a miss and a removed file") {
  TempDir tmp;
  DiskCache cache(tmp.path);
  const CacheKey key = make_key(7);
  const CacheEntry entry = make_entry(7);
  REQUIRE(cache.store(key, entry));
  const fs::path path = cache.path_of(key);
  const std::string good = read_file(path);
  const std::size_t header = header_size_of(key);
  REQUIRE(good.size() == header + entry.cubin.size() + entry.ptx.size() + entry.metadata.size());
  const std::size_t echo_at = 20;
  const std::size_t echo_size = DiskCache::serialize_key(key).size();

  std::string bad = good;
  std::string reason = "ignoring and removing";
  const auto flip = [&](std::size_t offset, int bit) { bad[offset] = static_cast<char>(bad[offset] ^ (1 << bit)); };

  SUBCASE("truncated in the magic") { bad.resize(5); }
  SUBCASE("truncated to nothing") { bad.clear(); }
  SUBCASE("truncated after the magic") { bad.resize(8); reason = "truncated"; }
  SUBCASE("truncated in the key echo") { bad.resize(echo_at + echo_size / 2); reason = "truncated"; }
  SUBCASE("truncated in the section sizes") { bad.resize(echo_at + echo_size + 12); reason = "truncated"; }
  SUBCASE("truncated at the payload") { bad.resize(header); reason = "does not match"; }
  SUBCASE("truncated in the payload") { bad.resize(header + 100); reason = "does not match"; }
  SUBCASE("one byte short") { bad.resize(good.size() - 1); reason = "does not match"; }
  SUBCASE("one byte too many") { bad.push_back('x'); reason = "does not match"; }
  SUBCASE("bit flip in the header size") { flip(12, 0); reason = "header size"; }
  SUBCASE("bit flip in the cubin size") { flip(echo_at + echo_size, 3); reason = "does not match"; }
  SUBCASE("bit flip in the compile time") { flip(echo_at + echo_size + 24, 6); reason = "checksum"; }
  SUBCASE("bit flip in the checksum") { flip(header - 3, 1); reason = "checksum"; }
  SUBCASE("bit flip in the key echo") { flip(echo_at + echo_size / 2, 2); reason = "checksum"; }
  SUBCASE("bit flip in the cubin") { flip(header + 17, 7); reason = "checksum"; }
  SUBCASE("bit flip in the ptx") { flip(header + entry.cubin.size() + 3, 0); reason = "checksum"; }
  SUBCASE("bit flip in the metadata") { flip(good.size() - 2, 4); reason = "checksum"; }
  SUBCASE("wrong magic") { bad[1] = 'X'; reason = "wrong magic"; }
  SUBCASE("wrong format version") { bad[8] = 2; reason = "format version 2"; }
  SUBCASE("foreign entry under the key's file name") {
    // What a 128-bit id collision would look like: a valid entry of another key.
    const CacheKey other = make_key(8);
    REQUIRE(cache.store(other, make_entry(8)));
    bad = read_file(cache.path_of(other));
    reason = "another key";
  }
  REQUIRE(bad != good);
  write_file(path, bad);

  LogCapture log;
  std::optional<CacheEntry> loaded;
  CHECK_NOTHROW(loaded = cache.load(key));
  CHECK_FALSE(loaded.has_value());
  CHECK_FALSE(fs::exists(path));
  CHECK(log.has(reason));
  CHECK(log.has(path.filename().string()));
  CHECK(cache.stats().corrupt == 1);
  CHECK(cache.stats().misses == 1);
  CHECK(cache.stats().hits == 0);

  // The next compile stores it again.
  REQUIRE(cache.store(key, entry));
  CHECK(cache.load(key) == entry);
}

TEST_CASE("every key field changes the id") {
  TempDir tmp;
  DiskCache cache(tmp.path);
  const CacheKey base = make_key(1);
  REQUIRE(cache.store(base, make_entry(1)));
  REQUIRE(cache.load(base).has_value());

  std::vector<std::pair<const char*, CacheKey>> variants;
  const auto variant = [&](const char* name, auto mutate) {
    CacheKey k = base;
    mutate(k);
    variants.emplace_back(name, k);
  };
  variant("source", [](CacheKey& k) { k.source += " "; });
  variant("nvrtc_version", [](CacheKey& k) { k.nvrtc_version = "13.1"; });
  variant("options", [](CacheKey& k) { k.options += " -lineinfo"; });
  variant("arch", [](CacheKey& k) { k.arch = "sm_100a"; });
  variant("tilejit_version", [](CacheKey& k) { k.tilejit_version = "0.1.1"; });
  variant("knob_fingerprint", [](CacheKey& k) { k.knob_fingerprint = "TILEJIT_LINEINFO=on"; });
  // Field boundaries matter: moving a character between neighbours is another key.
  variant("boundary", [](CacheKey& k) {
    k.nvrtc_version = k.source.back() + k.nvrtc_version;
    k.source.pop_back();
  });
  variant("empty field", [](CacheKey& k) { k.knob_fingerprint.clear(); });

  std::vector<std::string> ids{DiskCache::id_of(base)};
  for (const auto& [name, k] : variants) {
    INFO("field: " << name);
    CHECK_FALSE(k == base);
    const std::string id = DiskCache::id_of(k);
    CHECK(id != DiskCache::id_of(base));
    CHECK(id.substr(0, 16) != DiskCache::id_of(base).substr(0, 16));   // both halves change
    CHECK(id.substr(16) != DiskCache::id_of(base).substr(16));
    CHECK(DiskCache::serialize_key(k) != DiskCache::serialize_key(base));
    CHECK_FALSE(cache.load(k).has_value());
    ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());
  CHECK(DiskCache::id_of(base) == DiskCache::id_of(make_key(1)));  // deterministic
  CHECK(cache.stats().corrupt == 0);
}

TEST_CASE("an unwritable folder is a warning, never an exception") {
  TempDir tmp;
  const CacheKey key = make_key(1);
  const CacheEntry entry = make_entry(1);
  const auto check_unwritable = [&](const fs::path& root) {
    LogCapture log;
    DiskCache cache(root);
    bool stored = true;
    CHECK_NOTHROW(stored = cache.store(key, entry));
    CHECK_FALSE(stored);
    CHECK(log.has("compile cache"));
    std::optional<CacheEntry> loaded;
    CHECK_NOTHROW(loaded = cache.load(key));
    CHECK_FALSE(loaded.has_value());
    CHECK(cache.stats().stores == 0);
    CHECK_NOTHROW(cache.list());
    CHECK_NOTHROW(cache.clear());
    // A second failure is not repeated at warn level.
    const std::size_t warnings = log.count();
    CHECK_NOTHROW(cache.store(key, entry));
    CHECK(log.count() == warnings);
  };

  SUBCASE("a path below a regular file") {
    write_file(tmp.path / "a_file", "not a folder");
    check_unwritable(tmp.path / "a_file" / "cache");
  }
  SUBCASE("a read-only folder") {
    if (::geteuid() == 0) {
      // Permissions do not stop root: use a path whose folder cannot be created instead.
      write_file(tmp.path / "blocker", "x");
      check_unwritable(tmp.path / "blocker" / "sub");
    } else {
      fs::create_directories(tmp.path / "ro" / "v1");
      fs::permissions(tmp.path / "ro" / "v1", fs::perms(0555));
      check_unwritable(tmp.path / "ro");
      fs::permissions(tmp.path / "ro" / "v1", fs::perms(0755));
    }
  }
  SUBCASE("a read-only root without the version folder") {
    if (::geteuid() != 0) {
      fs::create_directories(tmp.path / "ro2");
      fs::permissions(tmp.path / "ro2", fs::perms(0555));
      check_unwritable(tmp.path / "ro2");
      fs::permissions(tmp.path / "ro2", fs::perms(0755));
    }
  }
}

TEST_CASE("the size bound evicts the least recently used entries") {
  TempDir tmp;
  std::uintmax_t entry_bytes = 0;
  {
    TempDir probe;
    DiskCache cache(probe.path);
    REQUIRE(cache.store(make_key(0), make_entry(0)));
    entry_bytes = fs::file_size(cache.path_of(make_key(0)));
  }
  // Room for three entries of the same size (keys 0..9 serialise to the same length).
  DiskCache cache(tmp.path, 3 * entry_bytes + entry_bytes / 2);
  for (int i = 0; i < 3; ++i) REQUIRE(cache.store(make_key(i), make_entry(i)));
  set_age(cache.path_of(make_key(0)), std::chrono::seconds(30));
  set_age(cache.path_of(make_key(1)), std::chrono::seconds(20));
  set_age(cache.path_of(make_key(2)), std::chrono::seconds(10));
  CHECK(cache.stats().evicted == 0);

  // A hit makes key 0 the most recently used; key 1 is now the oldest.
  REQUIRE(cache.load(make_key(0)).has_value());
  REQUIRE(cache.store(make_key(3), make_entry(3)));
  CHECK(cache.stats().evicted == 1);
  CHECK(fs::exists(cache.path_of(make_key(0))));
  CHECK_FALSE(fs::exists(cache.path_of(make_key(1))));
  CHECK(fs::exists(cache.path_of(make_key(2))));
  CHECK(fs::exists(cache.path_of(make_key(3))));
  CHECK(cache.list().size() == 3);

  // An entry twice the usual size pushes out the two oldest.
  set_age(cache.path_of(make_key(0)), std::chrono::seconds(5));
  set_age(cache.path_of(make_key(2)), std::chrono::seconds(8));
  set_age(cache.path_of(make_key(3)), std::chrono::seconds(2));
  REQUIRE(cache.store(make_key(4), make_entry(4, 0, entry_bytes + 300)));
  CHECK(fs::exists(cache.path_of(make_key(4))));
  CHECK_FALSE(fs::exists(cache.path_of(make_key(2))));
  CHECK_FALSE(fs::exists(cache.path_of(make_key(0))));
  CHECK(fs::exists(cache.path_of(make_key(3))));
  CHECK(cache.stats().evicted == 3);
  std::uintmax_t total = 0;
  for (const auto& info : cache.list()) total += info.size;
  CHECK(total <= cache.max_bytes());
}

TEST_CASE("stray temporary files older than an hour are removed") {
  TempDir tmp;
  DiskCache cache(tmp.path);
  REQUIRE(cache.store(make_key(0), make_entry(0)));
  const fs::path stale = cache.directory() / "0123.tjc.tmp.1.2.3";
  const fs::path fresh = cache.directory() / "4567.tjc.tmp.1.2.4";
  write_file(stale, "partial");
  write_file(fresh, "being written");
  set_age(stale, std::chrono::seconds(2 * 3600));
  REQUIRE(cache.store(make_key(1), make_entry(1)));
  CHECK_FALSE(fs::exists(stale));
  CHECK(fs::exists(fresh));
  CHECK(cache.list().size() == 2);  // temporary files are not entries
  CHECK(cache.clear() == 3);
  CHECK_FALSE(fs::exists(fresh));
}

TEST_CASE("16 threads store and load one key") {
  TempDir tmp;
  LogCapture log;
  DiskCache shared(tmp.path);
  const CacheKey key = make_key(42);
  constexpr int kVariants = 4;
  std::vector<CacheEntry> variants;
  for (int v = 0; v < kVariants; ++v) variants.push_back(make_entry(42, v, 2000 + 500 * static_cast<std::size_t>(v)));

  std::atomic<int> garbage{0}, hits{0}, store_failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      DiskCache own(tmp.path);
      DiskCache& cache = t % 2 == 0 ? shared : own;  // one object shared, and one per thread
      for (int i = 0; i < 40; ++i) {
        if ((i + t) % 4 == 0 && !cache.store(key, variants[static_cast<std::size_t>((i + t) % kVariants)])) ++store_failures;
        const auto loaded = cache.load(key);
        if (!loaded) continue;
        ++hits;
        bool known = false;
        for (const auto& v : variants) known = known || *loaded == v;
        if (!known) ++garbage;
      }
      if (t % 2 == 1 && own.stats().corrupt != 0) ++garbage;
    });
  }
  for (auto& th : threads) th.join();
  CHECK(garbage == 0);
  CHECK(store_failures == 0);
  CHECK(hits > 0);
  CHECK(shared.stats().corrupt == 0);
  CHECK(log.count() == 0);
  CHECK(count_temp_files(shared.directory()) == 0);
  const auto final_entry = shared.load(key);
  REQUIRE(final_entry.has_value());
}

TEST_CASE("8 processes share one folder") {
  TempDir tmp;
  constexpr int kKeys = 6;
  constexpr int kProcesses = 8;
  constexpr int kRounds = 50;
  std::uintmax_t entry_bytes = 0;
  {
    TempDir probe;
    DiskCache cache(probe.path);
    REQUIRE(cache.store(make_key(0), make_entry(0, 0, 1500)));
    entry_bytes = fs::file_size(cache.path_of(make_key(0)));
  }
  // The bound holds about four of the six keys, so eviction runs concurrently with everything else.
  const std::uint64_t bound = 4 * entry_bytes + entry_bytes / 2;
  const auto valid = [](int k, const CacheEntry& e) {
    for (int p = 0; p < kProcesses; ++p) {
      if (e == make_entry(k, p, 1500)) return true;
    }
    return false;
  };

  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int code = 0;
      {
        DiskCache cache(tmp.path, bound);
        for (int r = 0; r < kRounds && code == 0; ++r) {
          const int k = (p + r) % kKeys;
          if (!cache.store(make_key(k), make_entry(k, p, 1500))) code = 3;
          for (int j = 0; j < kKeys; ++j) {
            const auto loaded = cache.load(make_key((k + j) % kKeys));
            if (loaded && !valid((k + j) % kKeys, *loaded)) code = 1;
          }
        }
        if (code == 0 && cache.stats().corrupt != 0) code = 2;
      }
      ::_exit(code);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);  // 1: garbage entry, 2: corrupt entry seen, 3: store failed
  }

  LogCapture log;
  DiskCache cache(tmp.path, bound);
  int present = 0;
  for (int k = 0; k < kKeys; ++k) {
    const auto loaded = cache.load(make_key(k));
    if (!loaded) continue;
    ++present;
    CHECK(valid(k, *loaded));
  }
  CHECK(present > 0);
  CHECK(cache.stats().corrupt == 0);
  CHECK(log.count() == 0);
  CHECK(count_temp_files(cache.directory()) == 0);
  for (const auto& info : cache.list()) CHECK(info.valid);
  // Every lookup and store of every process is counted once in the folder: the lock loses none.
  const tilejit::CacheStats total = cache.folder_stats();
  CHECK(total.hits + total.misses == kProcesses * kRounds * kKeys + kKeys);
  CHECK(total.hits >= static_cast<std::uint64_t>(present));
  CHECK(total.stores == kProcesses * kRounds);
  CHECK(total.corrupt == 0);
  CHECK(total.evicted > 0);
}

namespace {

// Makes `path` hostile: a FIFO, a link to /dev/zero or a sparse 20 GiB file.
void make_hostile(const fs::path& path, const std::string& kind) {
  fs::remove(path);
  if (kind == "fifo") REQUIRE(::mkfifo(path.c_str(), 0644) == 0);
  if (kind == "dev_zero") fs::create_symlink("/dev/zero", path);
  if (kind == "huge") {
    write_file(path, "");
    fs::resize_file(path, std::uintmax_t{20} << 30);  // sparse: takes no space
  }
}

}  // namespace

TEST_CASE("a FIFO, a link to /dev/zero or a 20 GiB file named like an entry is a warning and a recompile") {
  for (const std::string kind : {"fifo", "dev_zero", "huge"}) {
    INFO(kind);
    TempDir tmp;
    const CacheKey key = make_key(1);
    {
      DiskCache cache(tmp.path);
      REQUIRE(cache.store(make_key(2), make_entry(2)));  // creates the folder, and one good entry
      make_hostile(cache.path_of(key), kind);
    }
    tilejit::testing::run_in_bounded_child([&] {
      LogCapture log;
      DiskCache cache(tmp.path);
      int failures = 0;
      if (cache.load(key).has_value()) ++failures;  // blocked, aborted or threw before the fix
      if (!log.has("ignoring and removing")) ++failures;
      if (cache.stats().corrupt != 1) ++failures;
      const auto listed = cache.list();
      if (listed.size() != 1 || !listed[0].valid) ++failures;  // the hostile name is gone, the good entry stays
      if (!cache.store(key, make_entry(1)) || cache.load(key) != make_entry(1)) ++failures;
      return failures;
    });
  }
}

TEST_CASE("list() and folder_stats() never read what is not a small regular file") {
  for (const std::string kind : {"fifo", "dev_zero", "huge"}) {
    INFO(kind);
    TempDir tmp;
    {
      DiskCache cache(tmp.path);
      REQUIRE(cache.store(make_key(2), make_entry(2)));
      make_hostile(cache.path_of(make_key(1)), kind);
      make_hostile(cache.directory() / "stats", kind);
    }
    tilejit::testing::run_in_bounded_child([&] {
      DiskCache cache(tmp.path);
      const auto listed = cache.list();
      int failures = listed.size() == 2 ? 0 : 1;
      for (const auto& e : listed) failures += e.valid == (e.file == DiskCache::id_of(make_key(1)) + ".tjc");
      const tilejit::CacheStats s = cache.folder_stats();
      failures += s.hits + s.misses + s.stores != 0;
      return failures;
    });
  }
}

TEST_CASE("entries larger than the bound are not stored") {
  TempDir tmp;
  LogCapture log;
  DiskCache cache(tmp.path, std::uint64_t{1} << 40);
  CHECK_FALSE(cache.store(make_key(1), make_entry(1, 0, DiskCache::kMaxEntryBytes)));
  CHECK(log.has("more than the limit of 268435456 bytes"));
  CHECK_FALSE(fs::exists(cache.path_of(make_key(1))));
}

TEST_CASE("clear() reports what it could not remove") {
  TempDir tmp;
  DiskCache cache(tmp.path);
  REQUIRE(cache.store(make_key(1), make_entry(1)));
  fs::create_directories(cache.directory() / "stuck.tjc" / "inside");  // a folder named like an entry
  std::string error;
  CHECK(cache.clear(&error) == 1);
  CHECK(error.find("cannot remove") != std::string::npos);
  CHECK(error.find("stuck.tjc") != std::string::npos);
  fs::remove_all(cache.directory() / "stuck.tjc");
  REQUIRE(cache.store(make_key(1), make_entry(1)));
  CHECK(cache.clear(&error) == 1);
  CHECK(error.empty());
}
