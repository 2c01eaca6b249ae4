// The fixture of the `tuner` program's tests: a scratch directory per test, running the program (in the
// foreground, or spawned in the background to be signalled or killed) and reading what it wrote.
#pragma once

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace tuner_cli_test {

struct CmdResult {
  int code = -1;
  std::string out, err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tuner_cli_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  CmdResult run(const std::string& args) const {
    const std::string out = (dir_ / "stdout").string(), err = (dir_ / "stderr").string();
    const std::string cmd = std::string(TUNER_BIN) + " " + args + " >" + out + " 2>" + err;
    int status = std::system(cmd.c_str());
    CmdResult r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }
  std::string db() const { return (dir_ / "t.db").string(); }

  /// Starts `tuner <args>` in the background with stdout and stderr to out_path(.err); returns its pid.
  pid_t spawn(const std::string& args, const std::string& out_path) const {
    const std::string cmd = "exec " + std::string(TUNER_BIN) + " " + args + " >" + out_path + " 2>" + out_path + ".err";
    pid_t pid = fork();
    if (pid == 0) {
      execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    return pid;
  }

  /// Waits (up to 4 s) until the database holds at least n trials.
  void wait_for_trials(size_t n) const {
    for (int i = 0; i < 400; ++i) {
      usleep(10 * 1000);
      auto h = run("query --db " + db() + " --history --json");
      if (h.code == 0 && nlohmann::json::parse(h.out).size() >= n) return;
    }
  }

  std::filesystem::path dir_;
};

}  // namespace tuner_cli_test
