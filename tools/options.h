// Parsing a subcommand's options with Boost.Program_options, turning every
// parse failure into a UsageError (exit code 2) that names the bad option.
#pragma once

#include <optional>
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
  // Boost takes the next word as a missing value even when it is another option ("--db --json" would make
  // a database named "--json"): an option that takes a value must not be followed by an option instead.
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 3 || a.compare(0, 2, "--") != 0 || a.find('=') != std::string::npos) continue;
    const po::option_description* d = desc.find_nothrow(a.substr(2), /*approx=*/false);
    const std::string& next = args[i + 1];
    // Any word of the form --name, also an option of another command (`--db --verbose` made a database named
    // "--verbose"); a value that really starts with -- is given as --db=--name.
    if (d && d->semantic()->max_tokens() > 0 && d->semantic()->min_tokens() > 0 && next.size() > 2 &&
        next.compare(0, 2, "--") == 0)
      throw UsageError(command + ": option '" + a + "' needs a value, got " +
                       (desc.find_nothrow(next.substr(2, next.find('=') - 2), false) ? "the option '" : "'") + next +
                       "' (a value that starts with -- is given as " + a + "=" + next + "; see `tuner " + command +
                       " --help`)");
  }
  try {
    po::store(po::command_line_parser(args).options(desc).positional(positional).run(), vm);
    if (vm.count("help")) return false;  // before notify(): --help needs none of the required options
    po::notify(vm);
  } catch (const po::too_many_positional_options_error& e) {
    // Boost does not say which word was one too many: parse again with a catch-all to name the first.
    std::optional<std::string> extra;
    try {
      po::options_description all;
      all.add(desc).add_options()("tuner-unexpected", po::value<std::vector<std::string>>());
      po::positional_options_description catch_all = positional;
      catch_all.add("tuner-unexpected", -1);
      const auto parsed = po::command_line_parser(args).options(all).positional(catch_all).run();
      for (const auto& o : parsed.options)
        if (o.string_key == "tuner-unexpected" && !o.value.empty()) {
          extra = o.value.front();
          break;
        }
    } catch (const po::error&) {
    }
    if (!extra) throw UsageError(command + ": " + e.what() + " (see `tuner " + command + " --help`)");
    const unsigned takes = positional.max_total_count();
    throw UsageError(command + ": unexpected argument '" + *extra + "' (" +
                     (takes == 0 ? std::string("it takes no arguments without an option name")
                                 : "it takes " + std::to_string(takes) + " without an option name") +
                     "; see `tuner " + command + " --help`)");
  } catch (const po::error_with_option_name& e) {
    // Boost names the option but not what it takes: add the option's own help line, which says it.
    std::string what = e.what();
    const std::string name = e.get_option_name();
    // A positional argument is that option without its name: `import a.jsonl --file b.jsonl` gives --file twice.
    if (dynamic_cast<const po::multiple_occurrences*>(&e) && name.size() > 2) {
      const std::string key = name.substr(name.find_first_not_of('-'));
      for (unsigned i = 0; i < positional.max_total_count() && i < 8; ++i)
        if (positional.name_for_position(i) == key)
          throw UsageError(command + ": " + name + " is given twice (a bare argument is " + name +
                           " without its name); give it once (see `tuner " + command + " --help`)");
    }
    const po::option_description* d =
        name.size() > 2 ? desc.find_nothrow(name.substr(name.find_first_not_of('-')), /*approx=*/false) : nullptr;
    if (d && !d->description().empty()) what += "; " + name + ": " + d->description();
    throw UsageError(command + ": " + what + " (see `tuner " + command + " --help`)");
  } catch (const po::error& e) {
    throw UsageError(command + ": " + e.what() + " (see `tuner " + command + " --help`)");
  }
  return vm.count("help") == 0;
}

/// Filters and paths given with an empty value (`--device "$DEV"` with DEV unset) are bad input: left out they mean
/// "every device" or stdout, and an empty one silently meant the same. Each of `names` given as '' is refused.
inline void refuse_empty_values(const std::string& command, const boost::program_options::variables_map& vm,
                                std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (!vm.count(name) || vm[name].defaulted()) continue;
    const auto* v = boost::any_cast<std::string>(&vm[name].value());
    if (v && v->empty())
      throw UsageError(command + ": --" + name + " '' is empty; allowed: a value, or leave --" + name +
                       " out (see `tuner " + command + " --help`)");
  }
}

}  // namespace tuner::cli
