// Helpers shared by the on-disk stores (compile cache, autotuning decisions): hashing, whole-file reads,
// atomic writes.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace tilejit::detail {

/// Little-endian reads of unaligned bytes.
std::uint64_t read_u64(const unsigned char* p);
std::uint32_t read_u32(const unsigned char* p);

/// A 64-bit hash in the manner of XXH64 (stable across processes and machines).
std::uint64_t hash64(std::string_view data, std::uint64_t seed);
/// 64-bit FNV-1a.
std::uint64_t fnv1a64(std::string_view data);
/// 16 lowercase hex digits.
std::string hex64(std::uint64_t v);

/// Closes a file descriptor on every path.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
};

/// Reads `fd` to its end into `out`, refusing more than `max_bytes`; on failure `error` says why.
bool read_all(int fd, std::string& out, std::string& error, std::uint64_t max_bytes);
/// Writes all of `data` (retrying short writes and EINTR).
bool write_all(int fd, std::string_view data);

/// What the names of temporary files carry, so that readers and cleaners can skip them.
inline constexpr std::string_view kTempMarker = ".tmp.";
/// A name for a temporary file beside `final_name`, unique across processes and threads.
std::string temp_name(const std::string& final_name);

/// Writes `data` to `path` through a unique temporary file in the same folder renamed onto it, so
/// that readers in any process see the whole file or none. Returns an empty string on success, else
/// what failed (the temporary file is removed). The folder must exist.
std::string write_atomically(const std::filesystem::path& path, std::string_view data);

/// Opens `path` for reading only when it is a regular file (after symbolic links) of at most
/// `max_bytes`: FIFOs, devices, sockets and folders are refused before they are opened, and the
/// open is non-blocking, so nothing a hostile folder holds can block, and nothing larger than the
/// bound is ever read. An Fd of -1 with an empty `error` when nothing is there, with `error` set
/// when it cannot be opened or is refused (`error` then names the rule and the value; `*refused`,
/// when given, tells the refusals apart from I/O errors).
Fd open_regular(const std::filesystem::path& path, std::uint64_t max_bytes, std::string& error,
                bool* refused = nullptr);
/// Empty when `st` describes a regular file of at most `max_bytes`, else why such a file is refused.
std::string refusal(const struct stat& st, std::uint64_t max_bytes);

/// Reads the file at `path` through open_regular and read_all with the same bound. False with an
/// empty `error` when it does not exist, false with `error` set when it cannot be read or is refused.
bool read_file(const std::filesystem::path& path, std::string& out, std::string& error, std::uint64_t max_bytes);

}  // namespace tilejit::detail
