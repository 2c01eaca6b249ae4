// Parsing a subcommand's options with Boost.Program_options, turning every
// parse failure into a UsageError (exit code 2) that names the bad option.
#pragma once

#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "tools/cli_common.h"

namespace tuner::cli {

/// Parses args against desc (and positional arguments, when given); returns false for --help (the caller
/// prints usage), whatever else is missing.
inline bool parse_options(const std::string& command, const std::vector<std::string>& args,
                          const boost::program_options::options_description& desc,
                          boost::program_options::variables_map& vm,
                          const boost::program_options::positional_options_description& positional = {}) {
  namespace po = boost::program_options;
  try {
    po::store(po::command_line_parser(args).options(desc).positional(positional).run(), vm);
    if (vm.count("help")) return false;  // before notify(): --help needs none of the required options
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(command + ": " + e.what() + " (see `tuner " + command + " --help`)");
  }
  return vm.count("help") == 0;
}

}  // namespace tuner::cli
