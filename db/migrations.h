// The tuning database's schema as an ordered list of migrations, and the code
// that reads a file's schema version and moves it forward one step at a time.
//
// Version 1 is the first released schema; 2 adds per-trial timing spread, repeat
// count and the estimate flag; 3 trial purposes, cost models and plans; 4
// session processes and outcomes, and claims; 5 the plans' cp and ep degrees; 6
// (TuningDb::kSchemaVersion) each trial's compulsory bytes. Each step
// runs in its own transaction, so an interrupted migration leaves the file at
// the previous version. This file is not responsible for opening files or for
// the queries of TuningDb. The free functions at the bottom exist for tests and
// repair tools: they let a test build an old-version file and poke raw SQL.
#pragma once

#include <string>

namespace tuner::db {

namespace sql {
class Connection;
}

/// Schema version of an open database: 0 for an empty file. Throws DbError when
/// the file is not an SQLite database or is one without a schema_version table.
int read_schema_version(sql::Connection& conn);

/// Applies the migrations after the current version up to target (each in one transaction).
/// Throws DbError when the file is newer than target.
void migrate(sql::Connection& conn, int target);

/// Throws DbError (damaged) unless a database at this build's version holds every table of its schema: one dropped
/// by hand (or by another tool) would surface as "no such table" from whichever statement reaches it first, or as
/// an answer without the rows it lost. migrate() checks it for a file already at the target.
void require_tables(sql::Connection& conn);

/// Creates the database at path (or migrates an older one) at exactly this schema version,
/// without TuningDb's pragmas. For tests that need an old-version file.
void create_schema_at_version(const std::string& path, int version);

/// Runs raw SQL (one or more statements, no result rows) on the database at path.
/// For tests and repair tools; product code goes through TuningDb.
void exec_sql(const std::string& path, const std::string& sql);

}  // namespace tuner::db
