#include "tuner/mpi_lanes.h"

#include <stdexcept>

#ifdef TUNER_HAVE_MPI

#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "tuner/device_registry.h"

namespace tuner::mpi {

namespace {

constexpr int kRequestTag = 1, kResultTag = 2, kStopTag = 3;

/// Every MPI call goes through this lock: lanes call from their own threads, MPI is initialised serialized.
std::mutex& mpi_mutex() {
  static std::mutex m;
  return m;
}

/// Receives one message of `tag` from `source` if one is waiting; nullopt otherwise.
std::optional<std::string> try_receive(int source, int tag) {
  std::lock_guard<std::mutex> lock(mpi_mutex());
  int flag = 0;
  MPI_Status status;
  MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, &status);
  if (!flag) return std::nullopt;
  int count = 0;
  MPI_Get_count(&status, MPI_CHAR, &count);
  std::string buf(static_cast<size_t>(count), '\0');
  MPI_Recv(buf.data(), count, MPI_CHAR, source, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return buf;
}

class RemoteRank : public Measurer {
 public:
  RemoteRank(int rank, double allowance_s, double margin_s) : rank_(rank), allowance_s_(allowance_s), margin_s_(margin_s) {}

  MeasureResult measure(const MeasureRequest& request, double timeout_s) override {
    if (lost_) return infrastructure_failure(where() + " is lost");
    nlohmann::json j;
    j["request"] = to_json(request);
    j["timeout_s"] = timeout_s;
    j["allowance_s"] = allowance_s_;
    payload_ = j.dump();  // must outlive the send
    {
      std::lock_guard<std::mutex> lock(mpi_mutex());
      MPI_Request send;
      MPI_Isend(payload_.data(), static_cast<int>(payload_.size()), MPI_CHAR, rank_, kRequestTag, MPI_COMM_WORLD, &send);
      MPI_Request_free(&send);
    }
    // The first request also waits for the rank itself to start (MPI_Init, the same checks of the command
    // line as rank 0's): a loaded machine takes seconds there.
    constexpr double kFirstContactS = 60;
    const double allowed_s = timeout_s + allowance_s_ + margin_s_ + (answered_ ? 0.0 : kFirstContactS);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(allowed_s);
    while (std::chrono::steady_clock::now() < deadline) {
      if (auto reply = try_receive(rank_, kResultTag)) {
        try {
          answered_ = true;
          const auto r = nlohmann::json::parse(*reply);
          starts_ = r.value("starts", starts_);
          return measure_result_from_json(r);
        } catch (const std::exception& e) {
          return infrastructure_failure(where() + " sent an unreadable reply: " + e.what());
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    lost_ = true;
    return infrastructure_failure(where() + " did not answer within " + std::to_string(allowed_s) + " s");
  }
  int starts() const override { return starts_; }
  bool lost() const override { return lost_; }
  std::string where() const override { return "rank " + std::to_string(rank_); }
  /// Tells the rank to stop; `others_lost` tells it to skip MPI_Finalize as well.
  void stop(bool others_lost) {
    if (lost_) return;
    const char flag = others_lost ? 1 : 0;
    std::lock_guard<std::mutex> lock(mpi_mutex());
    MPI_Send(&flag, 1, MPI_CHAR, rank_, kStopTag, MPI_COMM_WORLD);
  }

 private:
  int rank_;
  double allowance_s_, margin_s_;
  std::string payload_;
  int starts_ = 0;
  bool lost_ = false;
  bool answered_ = false;
};

/// The GPU of this rank: cuda:<node-local rank modulo the node's GPUs>; other devices as named.
std::string local_device(const std::string& requested, int rank) {
  if (requested.rfind("cuda:", 0) != 0) return requested;
  int local = rank;
  if (const char* l = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")) local = std::atoi(l);
  std::string note;
  int gpus = 0;
  for (const auto& d : list_devices(&note))
    if (!d.simulated) ++gpus;
  if (gpus == 0) return requested;  // the worker reports that no GPU is there
  return "cuda:" + std::to_string(local % gpus);
}

}  // namespace

bool available() { return true; }

Session::Session() {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

Session::~Session() {
  if (!skip_finalize_) MPI_Finalize();
}

std::vector<std::shared_ptr<Measurer>> remote_lanes(const Session& s, double startup_allowance_s, double margin_s) {
  std::vector<std::shared_ptr<Measurer>> out;
  for (int r = 1; r < s.size(); ++r) out.push_back(std::make_shared<RemoteRank>(r, startup_allowance_s, margin_s));
  return out;
}

int serve(Session& s, const std::string& worker_executable) {
  std::unique_ptr<WorkerClient> worker;
  while (true) {
    // Polled with pauses, not MPI_Probe: Open MPI's blocking probe spins a core, which the rank's own
    // worker (and, oversubscribed, the other ranks) need.
    MPI_Status status;
    for (int flag = 0; !flag;) {
      MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status);
      if (!flag) std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    int count = 0;
    MPI_Get_count(&status, MPI_CHAR, &count);
    std::string buf(static_cast<size_t>(count), '\0');
    MPI_Recv(buf.data(), count, MPI_CHAR, 0, status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (status.MPI_TAG == kStopTag) {
      if (!buf.empty() && buf[0] != 0) s.skip_finalize();
      return 0;
    }
    if (status.MPI_TAG != kRequestTag) continue;
    nlohmann::json reply;
    try {
      const auto j = nlohmann::json::parse(buf);
      MeasureRequest req = measure_request_from_json(j.at("request"));
      req.device = local_device(req.device, s.rank());
      if (!worker) worker = std::make_unique<WorkerClient>(worker_executable, j.value("allowance_s", 0.0));
      reply = to_json(worker->measure(req, j.at("timeout_s").get<double>()));
      reply["starts"] = worker->starts();
    } catch (const std::exception& e) {
      reply = to_json(
          infrastructure_failure("rank " + std::to_string(s.rank()) + " could not read a request: " + e.what()));
    }
    const std::string out = reply.dump();
    MPI_Send(out.data(), static_cast<int>(out.size()), MPI_CHAR, 0, kResultTag, MPI_COMM_WORLD);
  }
}

bool stop_all(const std::vector<std::shared_ptr<Measurer>>& lanes) {
  bool lost = false;
  for (const auto& l : lanes) lost = lost || l->lost();
  for (const auto& l : lanes)
    if (auto* r = dynamic_cast<RemoteRank*>(l.get())) r->stop(lost);
  return lost;
}

}  // namespace tuner::mpi

#else  // built without MPI

namespace tuner::mpi {

bool available() { return false; }
Session::Session() {
  throw std::runtime_error("this tuner was built without MPI (install libopenmpi-dev and rebuild)");
}
Session::~Session() = default;
std::vector<std::shared_ptr<Measurer>> remote_lanes(const Session&, double, double) { return {}; }
int serve(Session&, const std::string&) { return 2; }
bool stop_all(const std::vector<std::shared_ptr<Measurer>>&) { return false; }

}  // namespace tuner::mpi

#endif
