// The on-disk compile cache: one checksummed file per compiled kernel, written atomically, LRU-bounded.
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace tilejit {

/// Everything a compiled binary depends on. Every field takes part in the entry's id, and the
/// whole key is stored in the entry, so a hash collision reads as a miss, never as a wrong kernel.
struct CacheKey {
  std::string source;            ///< the generated CUDA C++
  std::string nvrtc_version;     ///< e.g. "13.0"
  std::string options;           ///< the NVRTC options, joined
  std::string arch;              ///< e.g. "sm_90a"
  std::string tilejit_version;   ///< tilejit's own version
  std::string knob_fingerprint;  ///< codegen_fingerprint(knobs())

  friend bool operator==(const CacheKey&, const CacheKey&) = default;
};

/// What is cached for a key.
struct CacheEntry {
  std::vector<char> cubin;  ///< empty when only PTX was produced
  std::string ptx;
  /// Free-form text for the runtime (resources, launch plan, ...). `DiskCache::list` reports the
  /// kernel name found in it as a line `kernel=<name>` or a JSON member `"kernel": "<name>"`.
  std::string metadata;

  friend bool operator==(const CacheEntry&, const CacheEntry&) = default;
};

/// Counters of cache events: those of one DiskCache object (`DiskCache::stats`), or those of every
/// process that used a folder (`DiskCache::folder_stats`).
struct CacheStats {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;   ///< including the corrupt entries
  std::uint64_t stores = 0;   ///< entries written successfully
  std::uint64_t corrupt = 0;  ///< unreadable or foreign entries found (and removed) by `load`
  std::uint64_t evicted = 0;  ///< entries removed to keep the folder under the size bound
  double compile_ms_saved = 0;  ///< sum over the hits of the compile time recorded by `store`

  CacheStats& operator+=(const CacheStats& o) {
    hits += o.hits;
    misses += o.misses;
    stores += o.stores;
    corrupt += o.corrupt;
    evicted += o.evicted;
    compile_ms_saved += o.compile_ms_saved;
    return *this;
  }
};

/// One file of the cache folder, as `DiskCache::list` sees it.
struct CacheEntryInfo {
  std::string file;  ///< file name inside the folder, "<id>.tjc"
  std::uint64_t size = 0;
  std::filesystem::file_time_type mtime;  ///< last store or hit
  std::string kernel;  ///< from the metadata; empty when not found
  std::string arch;    ///< from the key echo
  double compile_ms = 0;
  bool valid = false;  ///< magic, version, sizes and checksum all check out
};
using EntryInfo = CacheEntryInfo;

/// Size of the files a DiskCache keeps by default: 1 GiB.
inline constexpr std::uint64_t kDefaultCacheBytes = std::uint64_t{1} << 30;

/// The compile cache in a folder (ARCHITECTURE.md §3.5). Entries live in `<root>/v1/<id>.tjc`.
///
/// File layout (integers little-endian):
///   "TJCACHE\0" | u32 format version | u32 header size | u32 key length | key echo |
///   u64 cubin size | u64 ptx size | u64 metadata size | f64 compile ms | u64 checksum |
///   cubin | ptx | metadata
/// The checksum (64-bit) covers every byte after the magic except the checksum itself.
///
/// Writers go through a unique temporary file in the same folder renamed onto the final name,
/// so readers in any process see a whole entry or none. The file is not fsync'ed: an entry torn by
/// a power loss fails its checksum and is recompiled, which costs less than a sync per compile.
///
/// Every event is also added to `<root>/v1/stats` (64 bytes: "TJSTATS1", the six counters of
/// CacheStats, a checksum) under an exclusive flock(2), so the counters of all processes add up
/// exactly. A folder that cannot be written keeps no counters; an unreadable stats file restarts
/// from zero. Content problems and I/O errors never
/// throw: a bad entry is a warning, a miss and a removed file; a failed store is a warning.
/// All members are thread-safe.
class DiskCache {
 public:
  static constexpr std::uint32_t kFormatVersion = 1;
  /// The largest entry file stored or read (256 MiB; a large GEMM's entry is a few MiB). A name
  /// in the folder that is not a regular file of at most this size (a FIFO, a link to a device, a
  /// huge file) is never read: `load` warns, removes the name and compiles again.
  static constexpr std::uint64_t kMaxEntryBytes = std::uint64_t{256} << 20;

  /// `root` is typically knobs().cache_dir; nothing is created before the first store.
  explicit DiskCache(std::filesystem::path root, std::uint64_t max_bytes = kDefaultCacheBytes);

  DiskCache(const DiskCache&) = delete;
  DiskCache& operator=(const DiskCache&) = delete;

  /// The entry for `key`, or nullopt. A hit refreshes the file's mtime (the LRU clock).
  std::optional<CacheEntry> load(const CacheKey& key);

  /// Writes the entry for `key` (replacing any previous one) and then evicts the least recently
  /// used entries while the folder holds more than the size bound. `compile_ms` is what a later
  /// hit saves (reported in CacheStats::compile_ms_saved). Returns whether the entry was written.
  bool store(const CacheKey& key, const CacheEntry& entry, double compile_ms = 0);

  /// Every entry file of the folder, most recently used first (unreadable ones with valid = false).
  std::vector<CacheEntryInfo> list() const;

  /// Removes every entry, temporary file and the counters of the folder; returns how many entries
  /// and temporary files were removed. When something could not be removed (or the folder could
  /// not be read) and `error` is given, `*error` says what (else it is left empty).
  std::size_t clear(std::string* error = nullptr);

  /// The counters of this object.
  CacheStats stats() const;

  /// The counters of every object, in every process, that used this folder since it was created
  /// or last cleared; zeros when the folder has no (readable) stats file.
  CacheStats folder_stats() const;

  /// The folder holding the entries: `<root>/v1`.
  const std::filesystem::path& directory() const noexcept { return dir_; }
  std::uint64_t max_bytes() const noexcept { return max_bytes_; }

  /// Where the entry for `key` lives (whether or not it exists).
  std::filesystem::path path_of(const CacheKey& key) const;

  /// The 32 hex digits naming `key`: two independent 64-bit hashes of serialize_key(key).
  static std::string id_of(const CacheKey& key);

  /// The canonical serialisation of `key` (length-prefixed fields), as echoed in the entry.
  static std::string serialize_key(const CacheKey& key);

 private:
  void evict(const std::filesystem::path& keep);
  void count(const CacheStats& delta);
  void warn_io(const std::string& message);

  std::filesystem::path dir_;
  std::uint64_t max_bytes_;
  mutable std::mutex mutex_;
  CacheStats stats_;
  bool io_warned_ = false;
};

}  // namespace tilejit
