// What the subcommands of the `tuner` program share: the usage error that
// becomes exit code 2, option helpers, JSON for records, and plain tables.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/tuning_db.h"

namespace tuner::cli {

/// Bad input at the command line: printed as one line on stderr, exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// $TUNER_DB or ./tuning.db.
std::string default_db_path();

/// A tuned record as JSON: op, shape, dtype, device, config, status, time_ms, gflops and the rest.
nlohmann::ordered_json record_json(const db::ResultRow& row);

/// Prints rows as a left-aligned text table with a header.
void print_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

/// "%.*f" without the iostream dance.
std::string fixed(double v, int digits);

int devices_command(const std::vector<std::string>& args);
int tune_command(const std::vector<std::string>& args);
int query_command(const std::vector<std::string>& args);
int plan_command(const std::vector<std::string>& args);
int db_command(const std::vector<std::string>& args);

}  // namespace tuner::cli
