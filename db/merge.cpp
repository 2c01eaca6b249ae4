// TuningDb::merge_from: records of another tuner database brought into this one without duplicates.
//
// The other file is ATTACHed and read with SQL: ids differ between files, so devices, workloads and
// template versions are matched on what identifies them, and a trial is new when its config is not
// here yet for the same (device, workload, template version). Sessions that bring new trials are
// copied (a session still running elsewhere arrives as 'killed' with that reason: nothing here will
// end it), and their trials follow under the new session ids.
#include <map>
#include <optional>
#include <tuple>

#include "db/process_identity.h"
#include "db/scratch_db.h"
#include "db/sqlite_handle.h"
#include "db/tuning_db_impl.h"

namespace tuner::db {

MergeReport TuningDb::merge_from(const std::string& other_path) {
  auto& conn = impl_->conn;
  if (other_path.empty()) throw DbError("merge: the other database's path is empty", DbError::Kind::kBadPath);
  // The other database is read through a copy: it is opened read-only (ATTACH would open it for writing, with
  // this connection's flags: it left -wal and -shm beside a damaged file and failed on a read-only one), an older
  // schema is migrated in that copy, and a file another process is writing is merged as one snapshot.
  ScratchDbFile copy_file("tuner-merge");
  {  // Refuses what is not a readable tuner database of this version or an older one before attaching anything.
    TuningDb other = TuningDb::open_existing(other_path);
    // VACUUM INTO writes only the copy, but a query-only connection refuses it: lift that for this statement.
    other.impl_->conn.exec("PRAGMA query_only = 0");
    sql::Statement copy(other.impl_->conn, "VACUUM INTO ?");
    copy.bind(1, copy_file.path()).run();
  }
  sql::Statement attach(conn, "ATTACH DATABASE ? AS src");
  attach.bind(1, copy_file.path()).run();
  struct Detach {
    sql::Connection& c;
    ~Detach() {
      try {
        c.exec("DETACH DATABASE src");
      } catch (const DbError&) {
      }
    }
  } detach{conn};

  return internal::retry_locked(conn, impl_->write_patience_s, [&] {
    MergeReport report;
    sql::Transaction tx(conn);
    conn.exec(R"sql(
      INSERT INTO devices (name, simulated, cc_major, cc_minor, sm_count, memory_bytes, driver_version, nvrtc_version)
        SELECT name, simulated, cc_major, cc_minor, sm_count, memory_bytes, driver_version, nvrtc_version
        FROM src.devices WHERE true ON CONFLICT DO NOTHING;
      INSERT INTO workloads (op, shape, dtype) SELECT op, shape, dtype FROM src.workloads WHERE true
        ON CONFLICT DO NOTHING;
      INSERT INTO templates (name, hash) SELECT name, hash FROM src.templates WHERE true ON CONFLICT DO NOTHING;

      DROP TABLE IF EXISTS temp.merge_ids;
      CREATE TEMP TABLE merge_ids AS
        SELECT 'd' AS kind, s.id AS src_id, d.id AS dst_id FROM src.devices s JOIN main.devices d
          ON d.name = s.name AND d.simulated = s.simulated AND d.cc_major = s.cc_major AND d.cc_minor = s.cc_minor
          AND d.sm_count = s.sm_count AND d.memory_bytes = s.memory_bytes AND d.driver_version = s.driver_version
          AND d.nvrtc_version = s.nvrtc_version
        UNION ALL SELECT 'w', s.id, w.id FROM src.workloads s JOIN main.workloads w
          ON w.op = s.op AND w.shape = s.shape AND w.dtype = s.dtype
        UNION ALL SELECT 't', s.id, t.id FROM src.templates s JOIN main.templates t ON t.name = s.name AND t.hash = s.hash;

      DROP TABLE IF EXISTS temp.merge_trials;
      CREATE TEMP TABLE merge_trials AS
        SELECT s.*, md.dst_id AS d_id, mw.dst_id AS w_id, mt.dst_id AS t_id,
               EXISTS (SELECT 1 FROM main.trials x WHERE x.device_id = md.dst_id AND x.workload_id = mw.dst_id
                       AND x.template_id = mt.dst_id AND x.config_json = s.config_json) AS duplicate
        FROM src.trials s
        JOIN temp.merge_ids md ON md.kind = 'd' AND md.src_id = s.device_id
        JOIN temp.merge_ids mw ON mw.kind = 'w' AND mw.src_id = s.workload_id
        JOIN temp.merge_ids mt ON mt.kind = 't' AND mt.src_id = s.template_id;
    )sql");

    // Copies of the sessions that bring new trials.
    std::map<int64_t, int64_t> session_ids;  // src id -> new id
    {
      sql::Statement sessions(conn,
                              "SELECT s.id, md.dst_id, mw.dst_id, mt.dst_id, s.strategy, s.seed, s.budget, "
                              "s.command_line, s.status, s.started_at, s.finished_at, s.reason, s.pid, s.host, "
                              "s.process_start FROM src.sessions s "
                              "JOIN temp.merge_ids md ON md.kind = 'd' AND md.src_id = s.device_id "
                              "JOIN temp.merge_ids mw ON mw.kind = 'w' AND mw.src_id = s.workload_id "
                              "JOIN temp.merge_ids mt ON mt.kind = 't' AND mt.src_id = s.template_id "
                              "WHERE s.id IN (SELECT session_id FROM temp.merge_trials WHERE duplicate = 0) "
                              "ORDER BY s.id");
      sql::Statement insert(conn,
                            "INSERT INTO sessions (device_id, workload_id, template_id, strategy, seed, budget, "
                            "command_line, status, started_at, finished_at, reason, pid, host, process_start) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
      while (sessions.step()) {
        const int64_t src_id = sessions.column_int64(0);
        std::string status = sessions.column_text(8), reason = sessions.column_text(11);
        if (status == "running") {
          // Nothing here will end it. Say whether its process still runs (this host can tell) or was killed
          // without closing it: the reason said "still running" of a process long dead.
          status = "killed";
          const Liveness live = liveness({sessions.column_int64(12), sessions.column_text(13),
                                          sessions.column_int64(14)});
          reason = live == Liveness::kDead
                       ? "merged from '" + other_path + "', where its process had ended without closing it"
                       : live == Liveness::kAlive
                             ? "merged from '" + other_path + "' while still running there (merge again when it "
                               "ends for the rest of its trials, which come as a session of their own)"
                             : "merged from '" + other_path + "' while marked running there (its process, on " +
                                   "another host, could not be checked)";
        }
        insert.bind(1, sessions.column_int64(1))
            .bind(2, sessions.column_int64(2))
            .bind(3, sessions.column_int64(3))
            .bind(4, sessions.column_text(4))
            .bind(5, sessions.column_int64(5))
            .bind(6, sessions.column_int64(6))
            .bind(7, sessions.column_text(7))
            .bind(8, status)
            .bind(9, sessions.column_text(9))
            .bind(10, sessions.column_text(10))
            .bind(11, reason)
            .bind(12, sessions.column_int64(12))
            .bind(13, sessions.column_text(13))
            .bind(14, sessions.column_int64(14))
            .run();
        insert.reset();
        session_ids[src_id] = conn.last_insert_rowid();
        ++report.sessions_added;
      }
    }
    {
      sql::Statement insert(conn,
                            "INSERT INTO trials (session_id, device_id, workload_id, template_id, config_json, status, "
                            "error_message, compile_ms, registers, shared_bytes, spill_bytes, time_ms, gflops, "
                            "started_at, finished_at, time_spread_ms, repeats, estimate, purpose, bytes) "
                            "SELECT ?, d_id, w_id, t_id, config_json, status, error_message, compile_ms, registers, "
                            "shared_bytes, spill_bytes, time_ms, gflops, started_at, finished_at, time_spread_ms, "
                            "repeats, estimate, purpose, bytes FROM temp.merge_trials WHERE session_id = ? AND duplicate = 0 "
                            "ORDER BY id");
      for (const auto& [src_id, dst_id] : session_ids) {
        insert.bind(1, dst_id).bind(2, src_id).run();
        insert.reset();
      }
    }
    {
      sql::Statement groups(conn,
                            "SELECT w.op, w.shape, w.dtype, d.name, t.name, t.hash, sum(m.duplicate = 0), "
                            "sum(m.duplicate), d.simulated, d.cc_major, d.cc_minor, d.sm_count, d.memory_bytes, "
                            "d.driver_version, d.nvrtc_version FROM temp.merge_trials m JOIN main.workloads w ON w.id = m.w_id "
                            "JOIN main.devices d ON d.id = m.d_id JOIN main.templates t ON t.id = m.t_id "
                            "GROUP BY m.d_id, m.w_id, m.t_id ORDER BY w.op, w.shape, w.dtype, d.name, t.name");
      while (groups.step()) {
        MergeGroup g;
        g.workload = {groups.column_text(0), groups.column_text(1), groups.column_text(2)};
        g.device_name = groups.column_text(3);
        g.template_name = groups.column_text(4);
        g.template_hash = groups.column_text(5);
        g.added = groups.column_int64(6);
        g.duplicates = groups.column_int64(7);
        g.device = {g.device_name,
                    groups.column_int64(8) != 0,
                    static_cast<int>(groups.column_int64(9)),
                    static_cast<int>(groups.column_int64(10)),
                    static_cast<int>(groups.column_int64(11)),
                    groups.column_int64(12),
                    groups.column_text(13),
                    groups.column_text(14)};
        report.trials_added += g.added;
        report.duplicates += g.duplicates;
        report.groups.push_back(std::move(g));
      }
    }
    conn.exec(R"sql(
      INSERT INTO plans (model, cluster, options_json, plan_json, tp, pp, dp, cp, ep, iteration_time_s,
                         tflops_per_gpu, mfu, peak_memory_bytes, planning_s, created_at)
        SELECT model, cluster, options_json, plan_json, tp, pp, dp, cp, ep, iteration_time_s, tflops_per_gpu, mfu,
               peak_memory_bytes, planning_s, created_at FROM src.plans s
        WHERE NOT EXISTS (SELECT 1 FROM main.plans p WHERE p.model = s.model AND p.cluster = s.cluster
                          AND p.options_json = s.options_json AND p.plan_json = s.plan_json);
    )sql");
    report.plans_added = conn.changes();
    conn.exec("DROP TABLE temp.merge_trials; DROP TABLE temp.merge_ids;");
    tx.commit();
    return report;
  });
}

}  // namespace tuner::db
