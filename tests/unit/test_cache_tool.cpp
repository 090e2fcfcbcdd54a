// The tilejit-cache tool on bad folders and hostile files: a message and a non-zero status, never an abort or a hang.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;

namespace {

struct Result {
  int status = -1;     // the exit status, or 128 + the signal that ended the tool
  std::string output;  // stdout and stderr together
};

// Runs the tool with `args` (a shell-quoted string) and the environment assignments `env`
// (VAR=value ...), limited to 30 seconds.
Result run_tool(const std::string& args, const std::string& env = {}) {
  const std::string command = "timeout -s KILL 30 env " + env + " " + std::string(TILEJIT_CACHE_TOOL) + " " + args + " 2>&1";
  Result r;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buf{};
  for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0;) r.output.append(buf.data(), n);
  const int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("tilejit_cache_tool_test_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

TEST_CASE("--dir naming a missing folder or a regular file is an error, for every command") {
  TempDir tmp;
  std::ofstream(tmp.path / "a_file") << "x";
  for (const std::string cmd : {"list", "stats", "clear", "decisions list", "decisions clear"}) {
    INFO(cmd);
    const Result missing = run_tool(cmd + " --dir " + (tmp.path / "missing").string());
    CHECK(missing.status == 1);
    CHECK(missing.output.find("missing: no such folder") != std::string::npos);
    const Result file = run_tool(cmd + " --dir " + (tmp.path / "a_file").string());
    CHECK(file.status == 1);
    CHECK(file.output.find("a_file: not a folder") != std::string::npos);
  }
  const Result empty = run_tool("stats --dir " + tmp.path.string());  // an existing, empty folder
  CHECK(empty.status == 0);
  CHECK(empty.output.find("entries    0 (0 unreadable)") != std::string::npos);
}

TEST_CASE("the cache folder that does not exist yet (no --dir) is an empty cache, said on stderr") {
  TempDir tmp;
  const fs::path missing = tmp.path / "never_used";
  for (const std::string cmd : {"list", "stats", "clear", "decisions list", "decisions clear"}) {
    INFO(cmd);
    const Result r = run_tool(cmd, "TILEJIT_CACHE_DIR=" + missing.string());
    CHECK(r.status == 0);
    CHECK(r.output.find("never_used does not exist yet: an empty cache") != std::string::npos);
    CHECK(!fs::exists(missing));  // looking creates nothing
  }
  const Result stats = run_tool("stats", "TILEJIT_CACHE_DIR=" + missing.string());
  CHECK(stats.output.find("entries    0 (0 unreadable)") != std::string::npos);
}

TEST_CASE("clear reports what it could not remove with a non-zero status") {
  TempDir tmp;
  fs::create_directories(tmp.path / "v1" / "stuck.tjc" / "inside");  // a folder named like an entry
  fs::create_directories(tmp.path / "decisions" / "stuck.json" / "inside");
  const Result cache = run_tool("clear --dir " + tmp.path.string());
  CHECK(cache.status == 1);
  CHECK(cache.output.find("cannot remove") != std::string::npos);
  const Result decisions = run_tool("decisions clear --dir " + tmp.path.string());
  CHECK(decisions.status == 1);
  CHECK(decisions.output.find("stuck.json") != std::string::npos);
}

TEST_CASE("hostile entries and decision files: listed as unreadable or refused, never a hang or an abort") {
  TempDir tmp;
  fs::create_directories(tmp.path / "v1");
  fs::create_directories(tmp.path / "decisions");
  REQUIRE(::mkfifo((tmp.path / "v1" / "fifo.tjc").c_str(), 0644) == 0);
  fs::create_symlink("/dev/zero", tmp.path / "v1" / "zero.tjc");
  REQUIRE(::mkfifo((tmp.path / "v1" / "stats").c_str(), 0644) == 0);
  {
    std::ofstream(tmp.path / "v1" / "huge.tjc").flush();
    fs::resize_file(tmp.path / "v1" / "huge.tjc", std::uintmax_t{20} << 30);  // sparse
  }
  REQUIRE(::mkfifo((tmp.path / "decisions" / "fifo.json").c_str(), 0644) == 0);
  fs::create_symlink("/dev/zero", tmp.path / "decisions" / "zero.json");
  std::ofstream(tmp.path / "decisions" / "overflow.json") << "{\"format\": \"tilejit-autotune-decision\", \"time_ms\": 1e999}";
  std::ofstream(tmp.path / "overflow_export.json")
      << "{\"format\": \"tilejit-autotune-decisions\", \"version\": 2, \"decisions\": [{\"sm_count\": 1e999}]}";

  const Result list = run_tool("list --dir " + tmp.path.string());
  CHECK(list.status == 0);
  CHECK(list.output.find("fifo.tjc  (unreadable)") != std::string::npos);
  CHECK(list.output.find("zero.tjc  (unreadable)") != std::string::npos);
  CHECK(list.output.find("huge.tjc  (unreadable)") != std::string::npos);
  const Result stats = run_tool("stats --dir " + tmp.path.string());
  CHECK(stats.status == 0);
  CHECK(stats.output.find("(3 unreadable)") != std::string::npos);

  const Result decisions = run_tool("decisions list --dir " + tmp.path.string());
  CHECK(decisions.status == 0);
  CHECK(decisions.output.find("fifo.json  (unreadable: it is a FIFO") != std::string::npos);
  CHECK(decisions.output.find("zero.json  (unreadable: it is a character device") != std::string::npos);
  CHECK(decisions.output.find("overflow.json  (unreadable: not usable JSON") != std::string::npos);

  for (const std::string& file :
       {std::string("/dev/zero"), (tmp.path / "decisions" / "fifo.json").string(),
        (tmp.path / "overflow_export.json").string(), (tmp.path / "missing.json").string()}) {
    INFO(file);
    const Result import = run_tool("decisions import " + file + " --dir " + tmp.path.string());
    CHECK(import.status == 1);
    CHECK(import.output.find("tilejit-cache: ") != std::string::npos);
    CHECK(import.output.find(file) != std::string::npos);
  }
  const Result exported = run_tool("decisions export " + (tmp.path / "no" / "such" / "folder.json").string() +
                                   " --dir " + tmp.path.string());
  CHECK(exported.status == 1);
  CHECK(exported.output.find("cannot write the decisions file") != std::string::npos);
}
