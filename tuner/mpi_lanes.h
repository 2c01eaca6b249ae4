// Measuring on the GPUs of other machines with MPI: `mpirun -np N tuner tune ... --mpi`.
//
// Rank 0 runs the tuning loop as always (strategy, NVRTC, database) and gains one lane per other
// rank: a RemoteRank measurer sends each request (the compiled cubin and how to check and time it)
// to its rank and waits for the result. Every other rank serves: it measures what rank 0 sends in a
// worker process of its own, on its own GPU (cuda:<node-local rank modulo the GPUs of its node>; the
// same sim device on sim), until rank 0 says stop. A rank that stops answering within a request's
// timeout (plus its startup allowance and a margin) is lost: the loop hands its config to another
// lane and uses it no more, so a killed rank costs its config in flight, not the session (run mpirun
// with --enable-recovery so that Open MPI does not end the job when one rank dies).
//
// Without MPI at build time, available() is false and Session throws.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tuner/worker.h"

namespace tuner::mpi {

/// Whether this tuner was built with MPI.
bool available();

/// MPI for the life of the object (MPI_Init_thread, serialized calls; MPI_Finalize).
class Session {
 public:
  Session();
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  /// Leave without MPI_Finalize: after a rank died, Open MPI's finalize waits for it forever. The
  /// process exits on its own; mpirun (with --enable-recovery) reports the dead rank.
  void skip_finalize() { skip_finalize_ = true; }

 private:
  int rank_ = 0, size_ = 1;
  bool skip_finalize_ = false;
};

/// Rank 0: one measurer per other rank. startup_allowance_s as for a local worker; a rank that has not
/// answered a request within its timeout + allowance + margin_s is lost.
std::vector<std::shared_ptr<Measurer>> remote_lanes(const Session& s, double startup_allowance_s, double margin_s = 5);

/// Ranks > 0: serves measurements with a local worker until rank 0 says stop (and whether a rank was lost,
/// in which case this one skips MPI_Finalize too). Returns the exit code.
int serve(Session& s, const std::string& worker_executable);

/// Rank 0, at the end: tells every rank still there to stop. Returns true when a rank was lost (the caller
/// then skips MPI_Finalize).
bool stop_all(const std::vector<std::shared_ptr<Measurer>>& lanes);

}  // namespace tuner::mpi
