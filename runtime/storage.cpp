// Hashing, whole-file reads and atomic writes for the on-disk stores.
#include "storage.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <system_error>
#include <thread>

namespace tilejit::detail {
namespace {

constexpr std::uint64_t kP1 = 0x9E3779B185EBCA87ull;
constexpr std::uint64_t kP2 = 0xC2B2AE3D27D4EB4Full;
constexpr std::uint64_t kP3 = 0x165667B19E3779F9ull;
constexpr std::uint64_t kP4 = 0x85EBCA77C2B2AE63ull;
constexpr std::uint64_t kP5 = 0x27D4EB2F165667C5ull;

std::uint64_t rotl(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

std::uint64_t mix_round(std::uint64_t acc, std::uint64_t input) {
  acc += input * kP2;
  acc = rotl(acc, 31);
  return acc * kP1;
}

std::uint64_t merge_round(std::uint64_t acc, std::uint64_t v) {
  acc ^= mix_round(0, v);
  return acc * kP1 + kP4;
}

}  // namespace

std::uint64_t read_u64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::uint32_t read_u32(const unsigned char* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// A 64-bit hash in the manner of XXH64: four lanes over 32-byte stripes, then the tail.
std::uint64_t hash64(std::string_view data, std::uint64_t seed) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const std::size_t len = data.size();
  const unsigned char* const end = p + len;
  std::uint64_t h;
  if (len >= 32) {
    std::uint64_t v1 = seed + kP1 + kP2, v2 = seed + kP2, v3 = seed, v4 = seed - kP1;
    const unsigned char* const limit = end - 32;
    do {
      v1 = mix_round(v1, read_u64(p));
      v2 = mix_round(v2, read_u64(p + 8));
      v3 = mix_round(v3, read_u64(p + 16));
      v4 = mix_round(v4, read_u64(p + 24));
      p += 32;
    } while (p <= limit);
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    h = merge_round(h, v1);
    h = merge_round(h, v2);
    h = merge_round(h, v3);
    h = merge_round(h, v4);
  } else {
    h = seed + kP5;
  }
  h += len;
  for (; p + 8 <= end; p += 8) {
    h ^= mix_round(0, read_u64(p));
    h = rotl(h, 27) * kP1 + kP4;
  }
  if (p + 4 <= end) {
    h ^= std::uint64_t{read_u32(p)} * kP1;
    h = rotl(h, 23) * kP2 + kP3;
    p += 4;
  }
  for (; p < end; ++p) {
    h ^= *p * kP5;
    h = rotl(h, 11) * kP1;
  }
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

std::uint64_t fnv1a64(std::string_view data) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hex64(std::uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = kDigits[v & 0xf];
  return s;
}

Fd::~Fd() {
  if (fd >= 0) ::close(fd);
}

bool read_all(int fd, std::string& out, std::string& error, std::uint64_t max_bytes) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    error = std::strerror(errno);
    return false;
  }
  out.clear();
  if (st.st_size > 0) out.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(static_cast<std::uint64_t>(st.st_size), max_bytes)));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      error = std::strerror(errno);
      return false;
    }
    if (n == 0) return true;
    if (static_cast<std::uint64_t>(n) > max_bytes - out.size()) {  // grew past the bound while read
      error = "it grew past the limit of " + std::to_string(max_bytes) + " bytes while being read";
      return false;
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::string temp_name(const std::string& final_name) {
  static std::atomic<std::uint64_t> counter{0};
  const std::size_t tid = std::hash<std::thread::id>{}(std::this_thread::get_id());
  return final_name + std::string(kTempMarker) + std::to_string(::getpid()) + "." + hex64(tid) + "." +
         std::to_string(counter.fetch_add(1, std::memory_order_relaxed));
}

std::string write_atomically(const std::filesystem::path& path, std::string_view data) {
  const std::filesystem::path temp = path.parent_path() / temp_name(path.filename().string());
  {
    Fd out(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (out.fd < 0) return "cannot create " + temp.string() + ": " + std::strerror(errno);
    const bool written = write_all(out.fd, data);
    const int saved_errno = errno;
    const bool closed = ::close(out.fd) == 0;
    out.fd = -1;
    if (!written || !closed) {
      const int e = written ? errno : saved_errno;
      ::unlink(temp.c_str());
      return "cannot write " + temp.string() + ": " + std::strerror(e);
    }
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    ::unlink(temp.c_str());
    return "cannot rename onto " + path.string() + ": " + ec.message();
  }
  return {};
}

namespace {

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

std::string refusal(const struct stat& st, std::uint64_t max_bytes) {
  if (!S_ISREG(st.st_mode))
    return std::string("it is ") + file_kind(st.st_mode) + ", and only regular files are read";
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
    return "it holds " + std::to_string(st.st_size) + " bytes, more than the limit of " + std::to_string(max_bytes);
  return {};
}

Fd open_regular(const std::filesystem::path& path, std::uint64_t max_bytes, std::string& error, bool* refused) {
  error.clear();
  if (refused) *refused = false;
  // Checked before opening (opening some devices has effects), and again on the descriptor, which
  // is what is read (the name may have been replaced in between).
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT && errno != ENOTDIR) error = std::strerror(errno);
    return Fd(-1);
  }
  if (error = refusal(st, max_bytes); !error.empty()) {
    if (refused) *refused = true;
    return Fd(-1);
  }
  Fd file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (file.fd < 0) {
    if (errno != ENOENT && errno != ENOTDIR) error = std::strerror(errno);
    return file;
  }
  if (::fstat(file.fd, &st) != 0) {
    error = std::strerror(errno);
    return Fd(-1);
  }
  if (error = refusal(st, max_bytes); !error.empty()) {
    if (refused) *refused = true;
    return Fd(-1);
  }
  return file;
}

bool read_file(const std::filesystem::path& path, std::string& out, std::string& error, std::uint64_t max_bytes) {
  Fd file = open_regular(path, max_bytes, error);
  if (file.fd < 0) return false;
  return read_all(file.fd, out, error, max_bytes);
}

}  // namespace tilejit::detail
