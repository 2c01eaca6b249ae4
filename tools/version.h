// The tuner program's version. The project's CMake version is not the program's: this string is what
// `tuner --version` prints and what `tuner export --format best` writes as its producer.
#pragma once

namespace tuner::cli {

/// Bumped by hand with each release of the command-line program.
inline constexpr const char* kProgramVersion = "0.5.0";

}  // namespace tuner::cli

namespace tuner::cli {

/// The format of each line `tuner export --format jsonl` writes and `tuner import` reads.
inline constexpr const char* kRecordsFormat = "tuner-records/1";
/// The format of the best-configs document `tuner export --format best` writes.
inline constexpr const char* kBestFormat = "tuner-best/1";

}  // namespace tuner::cli
