// Tests that race several processes on one folder: fork, run a body per child, check every child succeeded.
#pragma once

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

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

}  // namespace tilejit::testing
