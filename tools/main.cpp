// tuner: the command-line program. A map of the program:
//   main.cpp            dispatches `devices | tune | query | plan` (and the hidden `__worker`)
//   devices_command.cpp lists real and simulated GPUs
//   tune_command.cpp    parses a tuning request and runs tuner::run_tuning
//   query_command.cpp   reads the tuning database: best configs, histories, sessions, plans
//   plan_command.cpp    plans tensor/pipeline/data parallelism for a model on a cluster
//   db_command.cpp      database housekeeping: merging another database's records
//   export_command.cpp  writes records out: jsonl (for import), csv, best configs (tuner-best/1)
//   import_command.cpp  brings exported records in, without duplicates
//   report_command.cpp  one self-contained HTML report (inline SVG charts, drawn by svg.h) of workloads and a plan
//   main.cpp            also `tuner --version`: program, template versions, NVRTC and driver versions
// Bad input anywhere becomes one line on stderr and exit code 2.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "db/sqlite_handle.h"
#include "db/tuning_db.h"
#include "costmodel/gpu_spec.h"
#include "templates/registry.h"
#include "tools/cli_common.h"
#include "tools/options.h"
#include "tools/version.h"
#include "tuner/cuda_runner.h"
#include "tuner/nvrtc_builder.h"
#include "tuner/tuning_session.h"
#include "tuner/stop_signals.h"
#include "tuner/worker.h"

namespace {

constexpr const char* kUsage =
    "usage: tuner <command> [options]\n"
    "  devices [--json]                       list GPUs (real and sim)\n"
    "  tune --op gemm|batched_gemm|conv2d|softmax|layernorm --shape M=..,N=..,K=.. [--dtype f32|f16|bf16]\n"
    "       [--template auto|NAME] [--fix KNOB=V,..]\n"
    "       [--device cuda:0|sim:h100-sxm|replay:FILE] [--trials 200|all] [--strategy xgb|bo|ga|random|grid]\n"
    "       [--seed 1] [--db tuning.db] [--json] [--transfer auto|none] [--remeasure 5] [--replay-out FILE]\n"
    "       [--early-stop N] [--batch 64] [--timeout 10] [--min-time-ms 1] [--db-timeout 60] [--quiet]\n"
    "       [--prior auto|compiled|analytic|none] [--min-improvement PCT] [--workers N] [--compile-threads N]\n"
    "       [--kernel FILE.cu --spec FILE.json] (more: tune --help)\n"
    "  query [--db tuning.db] [--op gemm] [--shape ..] [--dtype ..] [--device ..]\n"
    "        [--template NAME] [--best|--history|--sessions|--plans] [--session ID] [--all-versions] [--limit N] [--json]\n"
    "        (--device: cuda:N, sim:<gpu>, replay:FILE or a recorded name, e.g. \"NVIDIA H100 80GB HBM3\")\n"
    "  plan --model gpt3-175b|gpt:layers=..,hidden=..,heads=..|model.json --cluster dgx-h100:128|cluster.json\n"
    "       [--global-batch 1024] [--fix tp=8,pp=8,..] [--attention auto|flash|unfused] [--db tuning.db] [--json]\n"
    "       [--export megatron|deepspeed|torchtitan [--out FILE]]\n"
    "  db merge OTHER.db [--db tuning.db] [--json]   bring in another database's records, without duplicates\n"
    "  export --format jsonl|csv|best [--out FILE] [--db tuning.db] [--op ..] [--shape ..] [--dtype ..]\n"
    "         [--device ..] [--template NAME] [--all-versions]      write records out\n"
    "  import FILE|- [--db tuning.db] [--format jsonl] [--json]  bring exported records in, without duplicates\n"
    "  report --out report.html [--db tuning.db] [--op ..] [--shape ..] [--dtype ..] [--device ..]\n"
    "         [--template NAME] [--all-versions] [--plan ID|latest] [--svg-dir DIR]   HTML charts of tuning runs and a plan\n"
    "  version [--json] (or --version)        program, template, NVRTC and CUDA driver versions\n"
    "run `tuner <command> --help` for a command's options\n";

}  // namespace

namespace tuner::cli {

int version_command(const std::vector<std::string>& args) {
  namespace po = boost::program_options;
  po::options_description desc("tuner version: what this build is");
  desc.add_options()("help,h", "show this help")("json", "one JSON document on stdout");
  po::variables_map vm;
  if (!parse_options("version", args, desc, vm)) {
    std::cout << desc;
    return 0;
  }
  std::string nvrtc;
  try {
    nvrtc = NvrtcBuilder::nvrtc_version();
  } catch (const std::exception& e) {
    nvrtc = std::string("unavailable (") + e.what() + ")";
  }
  std::string why_no_driver;
  const auto gpus = cuda_devices(&why_no_driver);
  const std::string driver = gpus.empty() ? "no driver" : gpus.front().driver_version;
  if (vm.count("json")) {
    nlohmann::ordered_json j;
    j["version"] = kProgramVersion;
    j["nvrtc_version"] = nvrtc;
    j["driver_version"] = driver;
    if (gpus.empty()) j["driver_note"] = why_no_driver;
    j["records_format"] = kRecordsFormat;
    j["best_format"] = kBestFormat;
    j["db_schema_version"] = db::TuningDb::kSchemaVersion;
    j["templates"] = nlohmann::ordered_json::array();
    for (const auto* t : templates::all_templates())
      j["templates"].push_back({{"name", t->name()}, {"op", t->op()}, {"version", template_hash(*t)}});
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "tuner " << kProgramVersion << "\n"
            << "nvrtc: " << nvrtc << "\n"
            << "cuda driver: " << driver << (gpus.empty() && !why_no_driver.empty() ? " (" + why_no_driver + ")" : "")
            << "\n"
            << "database schema " << db::TuningDb::kSchemaVersion << "; export formats " << kRecordsFormat << ", "
            << kBestFormat << "\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto* t : templates::all_templates()) rows.push_back({t->name(), t->op(), template_hash(*t)});
  print_table({"template", "op", "version"}, rows);
  return 0;
}

}  // namespace tuner::cli

namespace {

int dispatch(const std::vector<std::string>& argv) {
  if (argv.size() < 2 || argv[1] == "--help" || argv[1] == "-h") {
    std::cout << kUsage << "tunable ops and dtypes: " << tuner::templates::tunable_ops()
              << "\ndevices: cuda:N, cuda:all, cuda:N,M,.. (tune), replay:FILE, sim:<gpu> with <gpu> one of "
              << tuner::costmodel::gpu_spec_keys() << "\nbash completion: source "
              << "scripts/tuner-completion.bash (installed under share/bash-completion/completions)\n";
    return argv.size() < 2 ? 2 : 0;
  }
  const std::string& cmd = argv[1];
  std::vector<std::string> rest(argv.begin() + 2, argv.end());
  if (cmd == "__worker") {
    // The replies get a descriptor of their own and fd 1 becomes stderr: a kernel's printf (the driver flushes it
    // to stdout) and a library's logging went into the reply stream, and the config was recorded as "unreadable
    // reply from the worker".
    const int replies = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (replies < 0) return 1;
    // (A tuner run with stderr closed: printf goes nowhere rather than failing the worker.)
    if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
      const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
      if (null < 0 || dup2(null, STDOUT_FILENO) < 0) return 1;
      close(null);
    }
    // The worker's own process group is not the terminal's foreground: with `stty tostop` its printf would stop it
    // (SIGTTOU) and the config would wait out its timeout.
    std::signal(SIGTTOU, SIG_IGN);
    return tuner::worker_main(STDIN_FILENO, replies);
  }
  if (cmd == "devices") return tuner::cli::devices_command(rest);
  if (cmd == "tune") return tuner::cli::tune_command(rest);
  if (cmd == "query") return tuner::cli::query_command(rest);
  if (cmd == "plan") return tuner::cli::plan_command(rest);
  if (cmd == "db") return tuner::cli::db_command(rest);
  if (cmd == "export") return tuner::cli::export_command(rest);
  if (cmd == "import") return tuner::cli::import_command(rest);
  if (cmd == "report") return tuner::cli::report_command(rest);
  if (cmd == "version" || cmd == "--version") return tuner::cli::version_command(rest);
  throw tuner::cli::UsageError("unknown command '" + cmd +
                               "'; allowed: devices, tune, query, plan, db, export, import, report, version");
}

}  // namespace

namespace {

/// Results that did not reach standard output (a full disk, a closed pipe) are a failed run, not exit 0.
int checked_output(int rc) {
  std::cout.flush();
  if (std::fflush(stdout) != 0 || !std::cout) {
    std::cerr << "tuner: error: writing to standard output failed: " << std::strerror(errno) << "\n";
    return rc == 0 ? 1 : rc;
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  // Past a file-size limit (ulimit -f) a write fails like a full disk, which a session survives; SIGXFSZ's
  // default action ended the process with the session left running.
  std::signal(SIGXFSZ, SIG_IGN);
  // A Ctrl-C ends a wait for another process's database lock at once.
  tuner::db::sql::set_wait_interrupt(&tuner::stop_requested);
  try {
    return checked_output(dispatch(std::vector<std::string>(argv, argv + argc)));
  } catch (const tuner::cli::UsageError& e) {
    std::cerr << "tuner: " << e.what() << "\n";
    return 2;
  } catch (const tuner::db::DbError& e) {
    // A damaged, read-only or newer database found mid-run is a bad file given (2); a lock or a full disk
    // is a fault of the run (1). Either way the transaction in flight was rolled back.
    std::cerr << "tuner: " << (e.bad_input() ? "" : "error: ") << e.what() << "\n";
    if (tuner::stop_requested()) return 128 + tuner::stop_signal();  // a Ctrl-C ended a lock wait
    return e.bad_input() ? 2 : 1;
  } catch (const std::exception& e) {
    std::cerr << "tuner: error: " << e.what() << "\n";
    return 1;
  }
}
