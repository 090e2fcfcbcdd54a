// Autotuning decisions: which configuration won for a kernel, tuning key and device, kept as small JSON
// files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "tilejit/config.h"

namespace tilejit {

/// What a decision depends on. Two tunings with equal ids would choose among the same
/// configurations of the same code for the same kind of arguments on the same kind of GPU.
struct DecisionId {
  std::string kernel;  ///< the kernel's name
  std::string
      source_hash;  ///< 16 hex digits: a hash of the structural hashes of every candidate's IR
  std::string space_hash;       ///< 16 hex digits: the configurations searched, in order
  std::string key;              ///< the tuning key as text, e.g. "bf16[4096, 4096], bf16[4096, 4096]"
  std::string device;           ///< the GPU's name, e.g. "NVIDIA H100 80GB HBM3"
  int sm_count = 0;             ///< its streaming multiprocessors
  std::string tilejit_version;  ///< TILEJIT_VERSION_STRING of the tuning process

  /// 32 hex digits naming the decision's file: two independent 64-bit hashes of every field.
  std::string file_id() const;
  friend bool operator==(const DecisionId&, const DecisionId&) = default;
};

/// The outcome of one tuning.
struct Decision {
  DecisionId id;
  Config config;         ///< the winner
  double time_ms = -1;   ///< its median time per launch; negative when it was not measured
  int candidates = 0;    ///< configurations considered (after pruning)
  int64_t tuned_at = 0;  ///< when, in seconds since the Unix epoch

  friend bool operator==(const Decision&, const Decision&) = default;
};

/// One file of a decision folder, as DecisionStore::list sees it.
struct DecisionFile {
  std::string file;                  ///< name inside the folder, "<file_id>.json"
  std::optional<Decision> decision;  ///< empty when the file is unreadable
  std::string error;                 ///< why it is unreadable
};

/// The decision file format: a JSON object with "format": "tilejit-autotune-decision", "version": 2,
/// the fields of DecisionId ("kernel", "source_hash", "space_hash", "key", "device", "sm_count",
/// "tilejit_version"), "config" (an object of the configuration's named values plus "num_warps",
/// "num_stages" and "programs_per_sm"), "time_ms" (null when not measured), "candidates" and
/// "tuned_at", and last "checksum": 16 hex digits hashing the object's compact JSON text without that
/// member. A file whose checksum does not match (edited by hand, damaged), of version 1 (which had no
/// checksum), or with an integer outside its range (num_warps 1..32, num_stages 1..8,
/// programs_per_sm 0..32, sm_count and candidates 0..2^31-1, no value beyond 64 bits) is not a
/// decision. An export file is {"format": "tilejit-autotune-decisions", "version": 2,
/// "decisions": [<decision objects>]}. Whether a decision's configuration may be used is decided
/// where it is used: only if it is one of the tuner's current candidates.
std::string decision_to_json(const Decision& d);
/// Parses one decision object; nullopt with `error` set when the text is not a valid decision.
std::optional<Decision> decision_from_json(const std::string& text, std::string& error);

/// Reads an export file (or a single decision file). Throws UserError at `where` naming the file and
/// the problem when it cannot be read (only regular files of at most 64 MiB are read), is not JSON,
/// or holds any invalid decision.
std::vector<Decision> read_decisions_file(const std::filesystem::path& path,
                                          std::source_location where = std::source_location::current());
/// Writes `decisions` as an export file, atomically. Throws UserError at `where` when it cannot be written.
void write_decisions_file(const std::filesystem::path& path, const std::vector<Decision>& decisions,
                          std::source_location where = std::source_location::current());

/// The decisions of a cache folder: `<root>/decisions/<file_id>.json`, one file per decision, each
/// written to a temporary file and renamed, so that processes sharing the folder see whole files.
/// A file that is not a regular file of at most 1 MiB, cannot be parsed, fails its checksum, or
/// whose fields do not match the id it is looked up for, is a warning naming the file and a miss
/// (tuning again replaces it). Nothing throws on I/O errors; all members are thread-safe.
class DecisionStore {
 public:
  /// `root` is typically knobs().cache_dir; nothing is created before the first store.
  explicit DecisionStore(std::filesystem::path root);

  std::optional<Decision> load(const DecisionId& id) const;
  /// Where the decision for `id` lives (whether or not it exists).
  std::filesystem::path path_of(const DecisionId& id) const;
  /// Returns whether the file was written (a failure is a warning).
  bool store(const Decision& d) const;
  /// Every decision file, sorted by kernel, then key.
  std::vector<DecisionFile> list() const;
  /// Removes every decision file (and stale temporary files); returns how many. When something
  /// could not be removed (or the folder could not be read) and `error` is given, `*error` says
  /// what (else it is left empty).
  std::size_t clear(std::string* error = nullptr) const;

  /// The folder: `<root>/decisions`.
  const std::filesystem::path& directory() const noexcept { return dir_; }

 private:
  std::filesystem::path dir_;
};

}  // namespace tilejit
