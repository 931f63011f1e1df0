// What the tests on emulated hosts share (multihost_test.cpp: mh.sh's hosts; slurm_test.cpp: Slurm on them): the
// skip-or-fail check of a set-up, the dataset shape they train on, and trimming a command's output.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace feedrate::it {

// `env` (a set-up with `skip`: its script's reason when it skipped, exit 77; `up_error`: why it failed) skips the
// test or fails it unless it came up.
#define EMULATED_HOSTS_UP(env)                             \
  do {                                                     \
    if (!(env).skip.empty()) GTEST_SKIP() << (env).skip;   \
    ASSERT_TRUE((env).up_error.empty()) << (env).up_error; \
  } while (0)

// 200 small files, 2 epochs of short compute: long enough for the per-host figures, short on 2 CPUs.
inline const std::string kHostsShape =
    " --param dataset.num_files_train=200 --param dataset.record_length_bytes=65536"
    " --param dataset.record_length_bytes_stdev=16384 --param train.computation_time=0.01"
    " --param train.epochs=2";

inline std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace feedrate::it
