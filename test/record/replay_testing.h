// Helpers of the replay suites (replay_state_test.cc, replay_hami_test.cc):
// a recording directory, configurations loaded as `schedext replay --config`
// loads them, and the report of replaying a directory.
#ifndef SCHEDEXT_TEST_RECORD_REPLAY_TESTING_H_
#define SCHEDEXT_TEST_RECORD_REPLAY_TESTING_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedext/cli/commands.h"
#include "schedext/policy/policy_host.h"
#include "schedext/record/record_file.h"
#include "schedext/record/replay.h"

namespace schedext::record::replay_testing {

// A fresh directory under /tmp.
inline std::string MakeTempDir() {
  char pattern[] = "/tmp/schedext-replay-XXXXXX";
  EXPECT_NE(mkdtemp(pattern), nullptr);
  return pattern;
}

// SCHEDEXT_KEEP_REPLAY_DIR=1 keeps the directory (the recording, the
// configurations) for running `schedext replay` on it by hand.
inline void RemoveDir(const std::string& dir) {
  if (const char* keep = std::getenv("SCHEDEXT_KEEP_REPLAY_DIR"); keep != nullptr && *keep == '1') {
    std::printf("kept %s\n", dir.c_str());
    return;
  }
  const std::string command = "rm -rf '" + dir + "'";
  EXPECT_EQ(std::system(command.c_str()), 0);
}

// The configuration in `yaml`, loaded as `schedext replay --config` loads it.
inline cli::LoadedConfig Load(const std::string& dir, std::string_view yaml) {
  const std::string path = dir + "/config.yaml";
  std::ofstream(path, std::ios::binary) << yaml;
  auto loaded = cli::LoadProfiles(path);
  EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
  return loaded.ok() ? std::move(loaded).value() : cli::LoadedConfig{};
}

inline ReplayReport Replay(const std::string& dir, const cli::LoadedConfig& config) {
  auto report = ReplayDirectory(dir, config.profiles, config.host->accountings());
  EXPECT_TRUE(report.ok()) << report.status().ToString();
  return report.ok() ? std::move(report).value() : ReplayReport{};
}

// Every line of the recording in `dir`.
inline std::vector<std::string> RecordLines(const std::string& dir) {
  std::vector<std::string> lines;
  auto files = ListRecordFiles(dir);
  EXPECT_TRUE(files.ok());
  for (const std::string& file : files.ok() ? *files : std::vector<std::string>{}) {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
      lines.push_back(line);
    }
  }
  return lines;
}

}  // namespace schedext::record::replay_testing

#endif  // SCHEDEXT_TEST_RECORD_REPLAY_TESTING_H_
