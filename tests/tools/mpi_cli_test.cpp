// `mpirun -np N tuner tune ... --mpi`: rank 0 tunes and keeps the database, the other ranks measure
// what it sends. Oversubscribed on this machine's cores, on a sim device with a fixed measurement
// time so that every rank takes part; one test kills a rank mid-run. Skipped (with the reason) where
// Open MPI's mpirun is not installed or tuner was built without MPI.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "db/tuning_db.h"
#include "tests/tools/cli_fixture.h"
#include "tuner/mpi_lanes.h"

namespace {

using tuner_cli_test::Cli;
using tuner_cli_test::slurp;

bool have_mpirun() { return std::system("command -v mpirun >/dev/null 2>&1") == 0; }

class Mpi : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    if (!tuner::mpi::available()) GTEST_SKIP() << "tuner was built without MPI (libopenmpi-dev absent at configure time)";
    if (!have_mpirun()) GTEST_SKIP() << "mpirun is not installed (openmpi-bin)";
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);  // CI runs as root
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  }
  /// The mpirun command line of an N-rank tune of a small sim GEMM (each measurement 100 ms).
  std::string mpirun(int ranks, int trials) const {
    return "mpirun --oversubscribe --enable-recovery -np " + std::to_string(ranks) + " " + TUNER_BIN +
           " tune --op gemm --shape M=64,N=64,K=64 --device sim:h100-sxm --trials " + std::to_string(trials) +
           " --batch 8 --strategy random --remeasure 0 --sim-delay-ms 100 --timeout 2 --mpi --json --quiet --db " +
           db();
  }
  /// The JSON summary rank 0 printed among mpirun's other output.
  static nlohmann::json summary(const std::string& out) {
    const size_t open = out.find("{\n"), close = out.rfind("\n}");
    if (open == std::string::npos || close == std::string::npos) return nullptr;
    return nlohmann::json::parse(out.substr(open, close + 2 - open));
  }
  struct Stored {
    size_t rows = 0, distinct = 0;
  };
  Stored stored() const {
    auto store = tuner::db::TuningDb::open_existing(db());
    std::set<std::string> configs;
    Stored s;
    for (const auto& r : store.history({})) {
      ++s.rows;
      configs.insert(r.trial.config_json);
    }
    s.distinct = configs.size();
    return s;
  }
};

TEST_F(Mpi, ThreeRanksFillTheBudgetOnceAndEveryRankMeasures) {
  const std::string out = (dir_ / "mpi.out").string();
  const int status = std::system((mpirun(3, 24) + " >" + out + " 2>&1").c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(out);
  const auto j = summary(slurp(out));
  ASSERT_FALSE(j.is_null()) << slurp(out);
  EXPECT_EQ(j["measured"], 24);
  ASSERT_EQ(j["lanes"].size(), 3u);
  std::set<std::string> where;
  for (const auto& lane : j["lanes"]) {
    EXPECT_GT(lane["measured"].get<int>(), 0) << lane.dump();
    EXPECT_FALSE(lane["lost"].get<bool>());
    where.insert(lane["where"].get<std::string>());
  }
  EXPECT_EQ(where, (std::set<std::string>{"local", "rank 1", "rank 2"}));
  const Stored s = stored();
  EXPECT_EQ(s.rows, 24u);
  EXPECT_EQ(s.distinct, 24u);
}

/// The pid of the process of MPI rank `rank` running TUNER_BIN on database `db`, from /proc (0: not found).
/// The database tells it from the ranks of another test running at the same time.
pid_t pid_of_rank(int rank, const std::string& db) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string environ = slurp(entry.path().string() + "/environ");
    const std::string cmdline = slurp(entry.path().string() + "/cmdline");
    if (cmdline.rfind(TUNER_BIN, 0) != 0 || cmdline.find("--mpi") == std::string::npos ||
        cmdline.find(db + '\0') == std::string::npos)
      continue;
    if (environ.find(std::string("OMPI_COMM_WORLD_RANK=") + std::to_string(rank) + '\0') != std::string::npos)
      return static_cast<pid_t>(std::stol(name));
  }
  return 0;
}

TEST_F(Mpi, AKilledRankCostsItsConfigInFlightNotTheSession) {
  const std::string out = (dir_ / "mpi.out").string();
  pid_t mpirun_pid = fork();
  if (mpirun_pid == 0) {
    const std::string cmd = "exec " + mpirun(3, 48) + " >" + out + " 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Once some trials are stored, rank 2 dies without a word.
  pid_t victim = 0;
  for (int i = 0; i < 600 && victim == 0; ++i) {
    usleep(20 * 1000);
    if (!std::filesystem::exists(db())) continue;
    try {
      if (stored().rows >= 8) victim = pid_of_rank(2, db());
    } catch (const std::exception&) {
      // the database is being created
    }
  }
  ASSERT_GT(victim, 0) << "rank 2 not found\n" << slurp(out);
  kill(victim, SIGKILL);
  int status = 0;
  waitpid(mpirun_pid, &status, 0);  // mpirun's own exit code reports the killed rank; rank 0's summary counts
  const auto j = summary(slurp(out));
  ASSERT_FALSE(j.is_null()) << slurp(out);
  EXPECT_EQ(j["measured"], 48);
  EXPECT_TRUE(j["lanes"][2]["lost"].get<bool>()) << j["lanes"].dump();
  const Stored s = stored();
  EXPECT_EQ(s.rows, 48u) << "the killed rank's config in flight was not re-measured elsewhere";
  EXPECT_EQ(s.distinct, 48u);
  auto store = tuner::db::TuningDb::open_existing(db());
  EXPECT_EQ(store.sessions({})[0].status, "finished");
}

}  // namespace
