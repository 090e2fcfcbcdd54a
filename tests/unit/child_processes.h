// Tests in child processes: several racing on one folder, or one bounded in time and memory; each child's status is checked.
#pragma once

#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <vector>

namespace tilejit::testing {

/// Forks `n` children; child p runs `body(p)`, which returns its exit status (0: success), and exits
/// without running the parent's destructors. Waits for all of them and checks that each exited with 0.
template <class F>
void run_in_children(int n, F body) {
  std::vector<pid_t> children;
  for (int p = 0; p < n; ++p) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) _exit(body(p));
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
}

/// Runs `body` (returning its exit status) in a child process that an alarm ends after 20 s and whose
/// address space may grow by at most 2 GiB, so that a read that blocks or a whole-file read of a huge
/// file fails the test instead of hanging it or exhausting the machine.
template <class F>
void run_in_bounded_child(F body) {
  run_in_children(1, [&](int) {
    long pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const rlim_t limit = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + (rlim_t{2} << 30);
    const struct rlimit rl {limit, limit};
    ::setrlimit(RLIMIT_AS, &rl);
    ::alarm(20);
    return body();
  });
}

}  // namespace tilejit::testing
