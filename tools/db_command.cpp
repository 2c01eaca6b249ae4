// `tuner db merge OTHER.db`: records of a database tuned elsewhere (another machine, another rank's
// file) brought into this one without duplicates, with a report of what was added.
#include <filesystem>
#include <iostream>
#include <optional>
#include <system_error>

#include "tools/cli_common.h"
#include "tools/options.h"

namespace tuner::cli {

namespace {

int merge_command(const std::vector<std::string>& args) {
  namespace po = boost::program_options;
  std::string db_path, other;
  po::options_description visible("tuner db merge: bring in the records of another tuning database (OTHER.db, only read)");
  visible.add_options()
      ("help,h", "show this help")
      ("db", po::value(&db_path)->default_value(default_db_path()), "the database to merge into ($TUNER_DB or ./tuning.db)")
      ("json", "one JSON document on stdout");
  // OTHER.db is a positional argument: parsed under a name of its own, not offered as an option (--other).
  po::options_description desc;
  desc.add(visible).add_options()("other", po::value(&other));
  po::positional_options_description positional;
  positional.add("other", 1);
  po::variables_map vm;
  if (!parse_options("db merge", args, desc, vm, positional)) {
    std::cout << "usage: tuner db merge OTHER.db [--db tuning.db] [--json]\n" << visible;
    return 0;
  }
  if (!vm.count("other"))
    throw UsageError("db merge: no database to merge from; allowed: tuner db merge OTHER.db [--db tuning.db]");
  // The same file under two names would wait on its own write lock and then blame "another process".
  std::error_code same_error;
  if (std::filesystem::equivalent(other, db_path, same_error))
    throw UsageError("db merge: '" + other + "' is the database merged into (--db " + db_path +
                     "); name another database to merge from");
  db::MergeReport report;
  // A merge that fails leaves no database it created (damage found only while reading OTHER's tables left an
  // empty --db behind): only a file this merge created, and only while it is still empty, as another process may
  // have opened the new file meanwhile (a failed merge is often a lock held by one) and stored what must stay.
  const bool existed = std::filesystem::exists(db_path, same_error);
  const auto forget_created = [&] {
    if (existed) return;
    try {
      const db::TuningDb created = db::TuningDb::open_existing(db_path);
      if (!created.sessions({}).empty() || !created.plans().empty()) return;
    } catch (const std::exception&) {
      return;  // cannot tell: keep it
    }
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(db_path + suffix, ec);
  };
  try {
    // The other database is checked before this one is opened: a merge of a missing, damaged or newer file
    // created an empty database at --db.
    (void)db::TuningDb::open_existing(other);
    std::optional<db::TuningDb> db;
    try {
      db.emplace(db_path);
      report = db->merge_from(other);
    } catch (...) {
      db.reset();  // closed before its files are removed
      forget_created();
      throw;
    }
  } catch (const db::DbError& e) {
    if (e.bad_input()) throw UsageError(e.what());
    throw;
  }
  if (vm.count("json")) {
    nlohmann::ordered_json j;
    j["from"] = other;
    j["into"] = db_path;
    // The same keys as `import --json`: added, and skipped as already here (trials_added and duplicates, the names
    // before, are kept for scripts that read them).
    j["added"] = report.trials_added;
    j["skipped"] = report.duplicates;
    j["already_here"] = report.duplicates;
    j["trials_added"] = report.trials_added;
    j["duplicates"] = report.duplicates;
    j["sessions_added"] = report.sessions_added;
    j["plans_added"] = report.plans_added;
    j["groups"] = nlohmann::ordered_json::array();
    for (const auto& g : report.groups)
      j["groups"].push_back({{"op", g.workload.op}, {"shape", g.workload.shape}, {"dtype", g.workload.dtype},
                             {"device", g.device_name}, {"template", g.template_name},
                             {"template_version", g.template_hash}, {"added", g.added}, {"skipped", g.duplicates},
                             {"duplicates", g.duplicates}});
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "merged " << other << " into " << db_path << ": " << report.trials_added << " trials added, "
            << report.duplicates << " already here, " << report.sessions_added << " sessions, " << report.plans_added
            << " plans\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& g : report.groups)
    rows.push_back({g.workload.op + " " + g.workload.shape + " " + g.workload.dtype, g.device_name,
                    g.template_name + "@" + g.template_hash, std::to_string(g.added), std::to_string(g.duplicates)});
  if (!rows.empty()) print_table({"workload", "device", "template", "added", "already here"}, rows);
  return 0;
}

}  // namespace

int db_command(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << "usage: tuner db merge OTHER.db [--db tuning.db] [--json]\n";
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "merge") return merge_command({args.begin() + 1, args.end()});
  throw UsageError("db: unknown subcommand '" + args[0] + "'; allowed: merge");
}

}  // namespace tuner::cli
