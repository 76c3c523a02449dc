// Starting a helper process (etcd, kube-apiserver, prometheus, schedext) for
// a test or a benchmark driver, written once: the fork + execve every fixture
// and bench/prod_bench start their children with.
#ifndef SCHEDEXT_TEST_TESTING_CHILD_PROCESS_H_
#define SCHEDEXT_TEST_TESTING_CHILD_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "schedext/status.h"

namespace schedext::testing {

// fork + execve of `args` (args[0] a path) with stdin from `stdin_fd` (-1:
// /dev/null) and stdout + stderr into `out_fd`. The child gets its own
// process group, default signal dispositions and an empty mask (the test
// runner may block some), SIGKILL when the forking thread dies, and no other
// descriptor. `env` ("NAME=value") is its environment; null: this process's.
// The caller keeps its own `stdin_fd` and `out_fd`, and reaps the child.
StatusOr<pid_t> SpawnProcess(const std::vector<std::string>& args, int stdin_fd, int out_fd,
                             const std::vector<std::string>* env = nullptr);

}  // namespace schedext::testing

#endif  // SCHEDEXT_TEST_TESTING_CHILD_PROCESS_H_
