// The on-disk compile cache: key hashing, the entry file format, atomic stores, validation and LRU eviction.
#include "tilejit/runtime/disk_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string_view>
#include <system_error>
#include <utility>

#include "log_internal.h"
#include "storage.h"

namespace fs = std::filesystem;

namespace tilejit {
namespace {

using detail::Fd;
using detail::hash64;
using detail::hex64;
using detail::kTempMarker;
using detail::read_all;
using detail::read_u32;
using detail::read_u64;

constexpr char kMagic[8] = {'T', 'J', 'C', 'A', 'C', 'H', 'E', '\0'};
constexpr std::string_view kKeyTag = "TJKEY1";
constexpr std::string_view kEntrySuffix = ".tjc";
constexpr auto kStaleTempAge = std::chrono::hours(1);
constexpr char kStatsMagic[8] = {'T', 'J', 'S', 'T', 'A', 'T', 'S', '1'};
constexpr std::string_view kStatsName = "stats";
constexpr std::size_t kStatsSize = 64;
constexpr std::uint64_t kMaxStatsBytes = 4096;  // what is read of a stats file (64 bytes when valid)

// ---- serialisation -------------------------------------------------------------------------

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_field(std::string& out, std::string_view field) {
  put_u64(out, field.size());
  out.append(field);
}

// Reads little-endian integers from a byte range; every read checks the bounds.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool u32(std::uint32_t& v) {
    if (data_.size() - pos_ < 4) return false;
    v = read_u32(bytes() + pos_);
    pos_ += 4;
    return true;
  }
  bool u64(std::uint64_t& v) {
    if (data_.size() - pos_ < 8) return false;
    v = read_u64(bytes() + pos_);
    pos_ += 8;
    return true;
  }
  bool take(std::uint64_t n, std::string_view& out) {
    if (data_.size() - pos_ < n) return false;
    out = data_.substr(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return true;
  }
  std::size_t pos() const { return pos_; }
  bool at_end() const { return pos_ == data_.size(); }

 private:
  const unsigned char* bytes() const { return reinterpret_cast<const unsigned char*>(data_.data()); }
  std::string_view data_;
  std::size_t pos_ = 0;
};

std::optional<CacheKey> deserialize_key(std::string_view echo) {
  if (echo.substr(0, kKeyTag.size()) != kKeyTag) return std::nullopt;
  Reader r(echo.substr(kKeyTag.size()));
  CacheKey key;
  for (std::string* field : {&key.source, &key.nvrtc_version, &key.options, &key.arch, &key.tilejit_version,
                             &key.knob_fingerprint}) {
    std::uint64_t n = 0;
    std::string_view s;
    if (!r.u64(n) || !r.take(n, s)) return std::nullopt;
    field->assign(s);
  }
  if (!r.at_end()) return std::nullopt;
  return key;
}

// The whole entry file for (echo, entry, compile_ms).
std::string encode_entry(const std::string& echo, const CacheEntry& entry, double compile_ms) {
  const std::size_t header_size = 8 + 4 + 4 + 4 + echo.size() + 8 * 5;
  std::string out;
  out.reserve(header_size + entry.cubin.size() + entry.ptx.size() + entry.metadata.size());
  out.append(kMagic, sizeof kMagic);
  put_u32(out, DiskCache::kFormatVersion);
  put_u32(out, static_cast<std::uint32_t>(header_size));
  put_u32(out, static_cast<std::uint32_t>(echo.size()));
  out.append(echo);
  put_u64(out, entry.cubin.size());
  put_u64(out, entry.ptx.size());
  put_u64(out, entry.metadata.size());
  std::uint64_t ms_bits = 0;
  static_assert(sizeof ms_bits == sizeof compile_ms);
  std::memcpy(&ms_bits, &compile_ms, sizeof ms_bits);
  put_u64(out, ms_bits);
  const std::size_t checksum_at = out.size();
  put_u64(out, 0);
  out.append(entry.cubin.data(), entry.cubin.size());
  out.append(entry.ptx);
  out.append(entry.metadata);
  const std::string_view all(out);
  const std::uint64_t head = hash64(all.substr(8, checksum_at - 8), 0x746a63616368ull);
  const std::uint64_t checksum = hash64(all.substr(header_size), head);
  for (int i = 0; i < 8; ++i) out[checksum_at + static_cast<std::size_t>(i)] = static_cast<char>((checksum >> (8 * i)) & 0xff);
  return out;
}

struct ParsedEntry {
  std::string_view echo;
  std::string_view cubin, ptx, metadata;
  double compile_ms = 0;
};

// Validates a whole entry file; on failure `reason` says what is wrong.
bool parse_entry(std::string_view file, ParsedEntry& out, std::string& reason) {
  if (file.size() < sizeof kMagic || std::memcmp(file.data(), kMagic, sizeof kMagic) != 0) {
    reason = file.size() < sizeof kMagic ? "truncated (no magic)" : "wrong magic";
    return false;
  }
  Reader r(file.substr(sizeof kMagic));
  std::uint32_t version = 0, header_size = 0, echo_size = 0;
  if (!r.u32(version)) {
    reason = "truncated header";
    return false;
  }
  if (version != DiskCache::kFormatVersion) {
    reason = "format version " + std::to_string(version) + ", expected " + std::to_string(DiskCache::kFormatVersion);
    return false;
  }
  std::uint64_t sizes[3] = {0, 0, 0};
  std::uint64_t ms_bits = 0, checksum = 0;
  if (!r.u32(header_size) || !r.u32(echo_size) || !r.take(echo_size, out.echo) || !r.u64(sizes[0]) ||
      !r.u64(sizes[1]) || !r.u64(sizes[2]) || !r.u64(ms_bits)) {
    reason = "truncated header";
    return false;
  }
  const std::size_t checksum_at = sizeof kMagic + r.pos();
  if (!r.u64(checksum)) {
    reason = "truncated header";
    return false;
  }
  if (header_size != sizeof kMagic + r.pos()) {
    reason = "header size " + std::to_string(header_size) + " does not match its fields";
    return false;
  }
  const std::uint64_t payload = file.size() - header_size;
  if (sizes[0] > payload || sizes[1] > payload - sizes[0] || sizes[2] != payload - sizes[0] - sizes[1]) {
    reason = "size " + std::to_string(file.size()) + " does not match the recorded sections (truncated?)";
    return false;
  }
  const std::uint64_t head = hash64(file.substr(8, checksum_at - 8), 0x746a63616368ull);
  if (hash64(file.substr(header_size), head) != checksum) {
    reason = "checksum mismatch";
    return false;
  }
  out.cubin = file.substr(header_size, sizes[0]);
  out.ptx = file.substr(header_size + sizes[0], sizes[1]);
  out.metadata = file.substr(header_size + sizes[0] + sizes[1]);
  std::memcpy(&out.compile_ms, &ms_bits, sizeof ms_bits);
  return true;
}

// The kernel name in metadata: a line "kernel=<name>" or a JSON member "kernel": "<name>".
std::string kernel_name_of(std::string_view metadata) {
  std::size_t line_start = 0;
  while (line_start < metadata.size()) {
    std::size_t line_end = metadata.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = metadata.size();
    const std::string_view line = metadata.substr(line_start, line_end - line_start);
    if (line.substr(0, 7) == "kernel=") return std::string(line.substr(7));
    line_start = line_end + 1;
  }
  const std::size_t at = metadata.find("\"kernel\"");
  if (at == std::string_view::npos) return {};
  std::size_t p = at + 8;
  while (p < metadata.size() && (metadata[p] == ' ' || metadata[p] == ':' || metadata[p] == '\t')) ++p;
  if (p >= metadata.size() || metadata[p] != '"') return {};
  const std::size_t close = metadata.find('"', p + 1);
  if (close == std::string_view::npos) return {};
  return std::string(metadata.substr(p + 1, close - p - 1));
}

// The stats file: magic | hits | misses | stores | corrupt | evicted | f64 compile ms saved | checksum.
std::string encode_stats(const CacheStats& s) {
  std::string out(kStatsMagic, sizeof kStatsMagic);
  for (std::uint64_t v : {s.hits, s.misses, s.stores, s.corrupt, s.evicted}) put_u64(out, v);
  std::uint64_t ms_bits = 0;
  std::memcpy(&ms_bits, &s.compile_ms_saved, sizeof ms_bits);
  put_u64(out, ms_bits);
  put_u64(out, hash64(out, 0x7374617473ull));
  return out;
}

std::optional<CacheStats> decode_stats(std::string_view data) {
  if (data.size() != kStatsSize || std::memcmp(data.data(), kStatsMagic, sizeof kStatsMagic) != 0) return std::nullopt;
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  if (hash64(data.substr(0, kStatsSize - 8), 0x7374617473ull) != read_u64(p + kStatsSize - 8)) return std::nullopt;
  CacheStats s;
  std::uint64_t* fields[] = {&s.hits, &s.misses, &s.stores, &s.corrupt, &s.evicted};
  for (std::size_t i = 0; i < 5; ++i) *fields[i] = read_u64(p + 8 + 8 * i);
  const std::uint64_t ms_bits = read_u64(p + 48);
  std::memcpy(&s.compile_ms_saved, &ms_bits, sizeof ms_bits);
  return s;
}

bool is_entry_name(const std::string& name) {
  return name.size() > kEntrySuffix.size() && name.ends_with(kEntrySuffix) &&
         name.find(kTempMarker) == std::string::npos;
}

bool is_temp_name(const std::string& name) { return name.find(kTempMarker) != std::string::npos; }

}  // namespace

// ---- DiskCache -----------------------------------------------------------------------------

DiskCache::DiskCache(fs::path root, std::uint64_t max_bytes)
    : dir_(std::move(root) / ("v" + std::to_string(kFormatVersion))), max_bytes_(max_bytes) {}

std::string DiskCache::serialize_key(const CacheKey& key) {
  std::string out(kKeyTag);
  for (const std::string* field : {&key.source, &key.nvrtc_version, &key.options, &key.arch, &key.tilejit_version,
                                   &key.knob_fingerprint}) {
    put_field(out, *field);
  }
  return out;
}

std::string DiskCache::id_of(const CacheKey& key) {
  const std::string s = serialize_key(key);
  return hex64(detail::fnv1a64(s)) + hex64(hash64(s, 0x9b1c2d3e4f5a6b7cull));
}

fs::path DiskCache::path_of(const CacheKey& key) const { return dir_ / (id_of(key) + std::string(kEntrySuffix)); }

CacheStats DiskCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

CacheStats DiskCache::folder_stats() const {
  std::string data, error;
  Fd file = detail::open_regular(dir_ / kStatsName, kMaxStatsBytes, error);
  if (file.fd < 0) return {};
  while (::flock(file.fd, LOCK_SH) != 0 && errno == EINTR) {
  }
  if (!read_all(file.fd, data, error, kMaxStatsBytes)) return {};
  return decode_stats(data).value_or(CacheStats{});
}

void DiskCache::count(const CacheStats& delta) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_ += delta;
  }
  // The folder's counters: read, add and rewrite under an exclusive lock. No O_CREAT of the folder
  // itself, so a miss on a folder that does not exist yet leaves nothing behind.
  const fs::path path = dir_ / kStatsName;
  // Anything but a small regular file under the name (a FIFO, a link to a device) keeps no counters:
  // checked before the open, which could otherwise have effects, and on what was opened.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !detail::refusal(st, kMaxStatsBytes).empty()) return;
  Fd file(::open(path.c_str(), O_RDWR | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0644));
  if (file.fd < 0) {
    if (errno != ENOENT) detail::logger().debug("compile cache: cannot update {}: {}", path.string(), std::strerror(errno));
    return;
  }
  if (::fstat(file.fd, &st) != 0 || !detail::refusal(st, kMaxStatsBytes).empty()) return;
  while (::flock(file.fd, LOCK_EX) != 0) {
    if (errno != EINTR) return;
  }
  std::string data, error;
  if (!read_all(file.fd, data, error, kMaxStatsBytes)) return;
  CacheStats total;
  if (auto old = decode_stats(data)) {
    total = *old;
  } else if (!data.empty()) {
    detail::logger().debug("compile cache: {} is unreadable; its counters restart from zero", path.string());
  }
  total += delta;
  const std::string out = encode_stats(total);
  if (::pwrite(file.fd, out.data(), out.size(), 0) != static_cast<ssize_t>(out.size()) ||
      (data.size() > out.size() && ::ftruncate(file.fd, static_cast<off_t>(out.size())) != 0))
    detail::logger().debug("compile cache: cannot update {}: {}", path.string(), std::strerror(errno));
}

void DiskCache::warn_io(const std::string& message) {
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    first = !io_warned_;
    io_warned_ = true;
  }
  // Warn once per object; a cache folder that cannot be written stays that way.
  if (first) {
    detail::logger().warn("compile cache: {} (compiled kernels will not be cached)", message);
  } else {
    detail::logger().debug("compile cache: {}", message);
  }
}

std::optional<CacheEntry> DiskCache::load(const CacheKey& key) {
  const fs::path path = path_of(key);
  const auto miss = [this] { count({.misses = 1}); };
  std::string data, error;
  bool refused = false;
  Fd file = detail::open_regular(path, kMaxEntryBytes, error, &refused);
  if (refused) {
    // A FIFO, a link to a device or a huge file under an entry's name: never read, and removed
    // (the name only: a link's target is left alone) so that the next store replaces it.
    detail::logger().warn("compile cache: ignoring and removing {}: {}", path.string(), error);
    ::unlink(path.c_str());
    count({.misses = 1, .corrupt = 1});
    return std::nullopt;
  }
  if (file.fd < 0) {
    if (!error.empty()) detail::logger().debug("compile cache: cannot open {}: {}", path.string(), error);
    miss();
    return std::nullopt;
  }
  if (!read_all(file.fd, data, error, kMaxEntryBytes)) {
    detail::logger().warn("compile cache: cannot read {}: {}", path.string(), error);
    miss();
    return std::nullopt;
  }
  ParsedEntry parsed;
  std::string reason;
  bool ok = parse_entry(data, parsed, reason);
  if (ok && parsed.echo != serialize_key(key)) {
    ok = false;
    reason = "it belongs to another key (hash collision or foreign file)";
  }
  if (!ok) {
    detail::logger().warn("compile cache: ignoring and removing {}: {}", path.string(), reason);
    // Remove the file read, not one another writer may have renamed onto the name since.
    struct stat opened {}, current {};
    if (::fstat(file.fd, &opened) == 0 && ::stat(path.c_str(), &current) == 0 && opened.st_ino == current.st_ino &&
        opened.st_dev == current.st_dev) {
      std::error_code ec;
      fs::remove(path, ec);
    }
    count({.misses = 1, .corrupt = 1});
    return std::nullopt;
  }
  ::futimens(file.fd, nullptr);  // the LRU clock; failure (a read-only cache) is harmless
  CacheEntry entry;
  entry.cubin.assign(parsed.cubin.begin(), parsed.cubin.end());
  entry.ptx.assign(parsed.ptx);
  entry.metadata.assign(parsed.metadata);
  count({.hits = 1, .compile_ms_saved = parsed.compile_ms});
  return entry;
}

bool DiskCache::store(const CacheKey& key, const CacheEntry& entry, double compile_ms) {
  const std::string echo = serialize_key(key);
  if (echo.size() > 0xffff0000u) {
    warn_io("key too large to cache");
    return false;
  }
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) {
    warn_io("cannot create " + dir_.string() + ": " + ec.message());
    return false;
  }
  const std::string final_name = id_of(key) + std::string(kEntrySuffix);
  const fs::path final_path = dir_ / final_name;
  const std::string data = encode_entry(echo, entry, compile_ms);
  if (data.size() > kMaxEntryBytes) {
    warn_io("an entry of " + std::to_string(data.size()) + " bytes is more than the limit of " +
            std::to_string(kMaxEntryBytes) + " bytes per entry");
    return false;
  }
  if (std::string error = detail::write_atomically(final_path, data); !error.empty()) {
    warn_io(error);
    return false;
  }
  count({.stores = 1});
  evict(final_path);
  return true;
}

void DiskCache::evict(const fs::path& keep) {
  struct File {
    fs::path path;
    std::uint64_t size;
    fs::file_time_type mtime;
  };
  std::vector<File> files;
  std::uint64_t total = 0;
  const auto now = fs::file_time_type::clock::now();
  std::error_code ec;
  fs::directory_iterator it(dir_, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code fec;
    const auto mtime = fs::last_write_time(it->path(), fec);
    if (fec) continue;  // removed meanwhile
    if (is_temp_name(name)) {
      if (now - mtime > kStaleTempAge) fs::remove(it->path(), fec);
      continue;
    }
    if (!is_entry_name(name)) continue;
    const std::uint64_t size = fs::file_size(it->path(), fec);
    if (fec) continue;
    total += size;
    files.push_back({it->path(), size, mtime});
  }
  if (total <= max_bytes_) return;
  std::sort(files.begin(), files.end(), [](const File& a, const File& b) { return a.mtime < b.mtime; });
  std::uint64_t evicted = 0;
  for (const File& f : files) {
    if (total <= max_bytes_) break;
    if (f.path == keep) continue;
    std::error_code rec;
    if (fs::remove(f.path, rec)) ++evicted;
    total -= f.size;  // gone either way (another process may have removed it)
  }
  if (evicted != 0) {
    detail::logger().debug("compile cache: evicted {} least recently used entries from {}", evicted, dir_.string());
    count({.evicted = evicted});
  }
}

std::vector<CacheEntryInfo> DiskCache::list() const {
  std::vector<CacheEntryInfo> out;
  std::error_code ec;
  fs::directory_iterator it(dir_, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!is_entry_name(name)) continue;
    CacheEntryInfo info;
    info.file = name;
    std::error_code tec;
    info.mtime = fs::last_write_time(it->path(), tec);
    std::string data, error;
    bool refused = false;
    Fd file = detail::open_regular(it->path(), kMaxEntryBytes, error, &refused);
    if (refused) {  // listed as unreadable, with the size it claims
      struct stat st {};
      if (::stat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) info.size = static_cast<std::uint64_t>(st.st_size);
      out.push_back(std::move(info));
      continue;
    }
    if (file.fd < 0 || !read_all(file.fd, data, error, kMaxEntryBytes)) continue;
    info.size = data.size();
    ParsedEntry parsed;
    std::string reason;
    info.valid = parse_entry(data, parsed, reason);
    if (info.valid) {
      if (auto key = deserialize_key(parsed.echo)) info.arch = key->arch;
      info.kernel = kernel_name_of(parsed.metadata);
      info.compile_ms = parsed.compile_ms;
    }
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(), [](const CacheEntryInfo& a, const CacheEntryInfo& b) {
    return a.mtime != b.mtime ? a.mtime > b.mtime : a.file < b.file;
  });
  return out;
}

std::size_t DiskCache::clear(std::string* error) {
  std::size_t removed = 0;
  std::vector<fs::path> victims;
  std::string first_error;
  std::error_code ec;
  fs::directory_iterator it(dir_, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (is_entry_name(name) || is_temp_name(name)) victims.push_back(it->path());
  }
  if (ec && ec != std::errc::no_such_file_or_directory) first_error = "cannot read " + dir_.string() + ": " + ec.message();
  for (const fs::path& p : victims) {
    std::error_code rec;
    if (fs::remove(p, rec)) ++removed;
    else if (rec && first_error.empty()) first_error = "cannot remove " + p.string() + ": " + rec.message();
  }
  std::error_code sec;
  fs::remove(dir_ / kStatsName, sec);
  if (sec && first_error.empty()) first_error = "cannot remove " + (dir_ / kStatsName).string() + ": " + sec.message();
  if (error) *error = first_error;
  return removed;
}

}  // namespace tilejit
