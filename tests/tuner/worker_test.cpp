// The measurement worker's isolation: a crash or a hang in the worker becomes
// an error result, and the next request gets a fresh worker.
#include "tuner/worker.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include <unistd.h>

namespace tuner {
namespace {

MeasureRequest sim_request(InjectedFault fault = InjectedFault::kNone) {
  MeasureRequest r;
  r.device = "sim:h100-sxm";
  r.cubin = std::string("\x7f" "ELF\0\1\2", 7);  // bytes survive the base64 trip
  r.kernel_name = "k";
  r.profile.flops = 2e9;
  r.profile.dram_bytes = 12e6;
  r.profile.global_bytes = 100e6;
  r.profile.shared_bytes = 200e6;
  r.profile.blocks = 1024;
  r.profile.threads_per_block = 256;
  r.profile.dynamic_shared_bytes = 16384;
  r.profile.ilp = 16;
  r.profile.vector_width = 4;
  r.profile.stages = 2;
  r.profile.main_loop_iterations = 64;
  r.resources = {64, 0, 0};
  r.fault = fault;
  return r;
}

TEST(MeasureProtocol, RequestRoundTripsThroughJson) {
  auto r = sim_request(InjectedFault::kHang);
  r.buffers = {{"A", 12, templates::DType::kF32, false, false},
                {"C", 4, templates::DType::kF32, true, false}};
  r.scalar_args = {3, 4, 5};
  r.launch.grid = {7, 1, 1};
  r.tensor_maps = {{1, {136, 304, 3}, {272, 82688}, {64, 64, 1}, 128, {}},
                   {0, {64, 56, 56, 2}, {128, 7168, 401408}, {64, 16, 16, 1}, 128, {1, 2, 2, 1}}};
  auto back = measure_request_from_json(nlohmann::json::parse(to_json(r).dump()));
  ASSERT_EQ(back.tensor_maps.size(), 2u);
  EXPECT_TRUE(back.tensor_maps[0].element_strides.empty()) << "unit strides stay implicit";
  EXPECT_EQ(back.tensor_maps[1].element_strides, (std::vector<uint32_t>{1, 2, 2, 1}));
  EXPECT_EQ(back.tensor_maps[0].buffer, 1);
  EXPECT_EQ(back.tensor_maps[0].dims, r.tensor_maps[0].dims);
  EXPECT_EQ(back.tensor_maps[0].strides_bytes, r.tensor_maps[0].strides_bytes);
  EXPECT_EQ(back.tensor_maps[0].box, r.tensor_maps[0].box);
  EXPECT_EQ(back.tensor_maps[0].swizzle_bytes, 128);
  EXPECT_EQ(back.cubin, r.cubin);
  EXPECT_EQ(back.fault, InjectedFault::kHang);
  EXPECT_EQ(back.scalar_args, r.scalar_args);
  EXPECT_EQ(back.launch.grid, r.launch.grid);
  EXPECT_EQ(back.buffers.size(), 2u);
  EXPECT_TRUE(back.buffers[1].output);
  EXPECT_EQ(back.profile.main_loop_iterations, 64);
  EXPECT_EQ(back.resources.registers, 64);
  for (const std::string& s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)})
    EXPECT_EQ(base64_decode(base64_encode(s)), s);
}

TEST(MeasureProtocol, Base64MatchesRfc4648AndRefusesBadText) {
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_decode("Zm9vYg=="), "foob");
  EXPECT_EQ(base64_decode("Zm9vYmE="), "fooba");
  EXPECT_THROW(base64_decode("Zm9"), std::invalid_argument);
  EXPECT_THROW(base64_decode("Zm9v!!=="), std::invalid_argument);
  const std::string big(100000, '\x7f');  // a cubin-sized payload round-trips
  EXPECT_EQ(base64_decode(base64_encode(big)), big);
}

TEST(SimMeasure, GivesALabelledEstimate) {
  auto r = sim_measure(sim_request());
  EXPECT_EQ(r.status, "ok");
  EXPECT_TRUE(r.estimate);
  EXPECT_GT(r.time_ms, 0);
  auto bad = sim_request();
  bad.profile.dynamic_shared_bytes = 1 << 20;
  auto e = sim_measure(bad);
  EXPECT_EQ(e.status, "launch_error");
  EXPECT_NE(e.message.find("shared memory"), std::string::npos);
}

TEST(WorkerClient, MeasuresInAChildProcess) {
  WorkerClient w(TUNER_BIN);
  auto r = w.measure(sim_request(), 10);
  EXPECT_EQ(r.status, "ok") << r.message;
  EXPECT_DOUBLE_EQ(r.time_ms, sim_measure(sim_request()).time_ms);
  EXPECT_EQ(w.starts(), 1);
  w.measure(sim_request(), 10);
  EXPECT_EQ(w.starts(), 1);  // the same worker serves the next request
}

TEST(WorkerClient, ACrashIsARuntimeFaultAndTheNextRequestGetsAFreshWorker) {
  WorkerClient w(TUNER_BIN);
  auto crashed = w.measure(sim_request(InjectedFault::kCrash), 10);
  EXPECT_EQ(crashed.status, "runtime_fault");
  EXPECT_NE(crashed.message.find("signal"), std::string::npos) << crashed.message;
  auto next = w.measure(sim_request(), 10);
  EXPECT_EQ(next.status, "ok") << next.message;
  EXPECT_EQ(w.starts(), 2);
}

TEST(WorkerClient, AHangIsKilledAtTheTimeoutAndRecordedAsRunTimeout) {
  WorkerClient w(TUNER_BIN);
  auto t0 = std::chrono::steady_clock::now();
  auto hung = w.measure(sim_request(InjectedFault::kHang), 0.5);
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(hung.status, "run_timeout");
  EXPECT_GE(waited, 0.5);
  EXPECT_LT(waited, 5.0);
  auto next = w.measure(sim_request(), 10);
  EXPECT_EQ(next.status, "ok") << next.message;
  EXPECT_EQ(w.starts(), 2);
}

// The H100 run: with a 30 s startup allowance on every fresh worker, each hanging gemm_tc_wgmma config
// cost 30 s + its timeout, because a hang kills the worker and the next config starts a fresh one. The
// allowance covers only what comes before the worker reports that the config starts.
TEST(WorkerClient, AHangCostsItsTimeoutNotTheStartupAllowance) {
  WorkerClient w(TUNER_BIN, /*startup_allowance_s=*/30);
  for (int i = 0; i < 2; ++i) {  // a fresh worker each time: the hang kills the last one
    auto t0 = std::chrono::steady_clock::now();
    auto hung = w.measure(sim_request(InjectedFault::kHang), 0.5);
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(hung.status, "run_timeout");
    EXPECT_GE(waited, 0.5);
    EXPECT_LT(waited, 5.0) << "the startup allowance was spent on a config that had started";
  }
  EXPECT_EQ(w.starts(), 2);
}

// A TUNER_WORKER_EXE that forks (a shell script without exec, compute-sanitizer): stop() killed the wrapper alone,
// and the hung worker under it ran on, holding the GPU.
TEST(WorkerClient, AHangUnderAWrapperThatForksKillsTheWholeGroup) {
  const auto dir = std::filesystem::temp_directory_path() / ("tuner_wrapper_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string script = (dir / "wrapper.sh").string(), pid_file = (dir / "worker.pid").string();
  std::ofstream(script) << "#!/bin/sh\nexec 3<&0\n" << TUNER_BIN << " __worker <&3 &\necho $! > " << pid_file
                        << "\nwait\n";
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  WorkerClient w(script);
  auto hung = w.measure(sim_request(InjectedFault::kHang), 0.5);
  EXPECT_EQ(hung.status, "run_timeout") << hung.message;
  std::ifstream in(pid_file);
  pid_t worker = 0;
  ASSERT_TRUE(in >> worker) << "the wrapper ran the worker";
  // Gone, or a zombie waiting for a parent that is gone too.
  auto alive = [&] {
    std::ifstream stat("/proc/" + std::to_string(worker) + "/stat");
    std::string pid, comm, state;
    return stat >> pid >> comm >> state && state != "Z";
  };
  for (int i = 0; i < 200 && alive(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(alive()) << "the worker under the wrapper still runs";
  if (alive()) kill(worker, SIGKILL);
  std::filesystem::remove_all(dir);
}

TEST(MeasureProtocol, ResultPhasesAndTheStoppingSettingsRoundTrip) {
  MeasureResult r;
  r.phases = {0.5, 1.25, 2.0, 0.125, 3.5};
  const auto back = measure_result_from_json(nlohmann::json::parse(to_json(r).dump()));
  EXPECT_DOUBLE_EQ(back.phases.inputs_s, 1.25);
  EXPECT_DOUBLE_EQ(back.phases.timed_s, 3.5);
  EXPECT_DOUBLE_EQ(back.phases.total(), 7.375);
  auto req = sim_request();
  req.settings.max_noise = 0.02;
  req.settings.max_time_ms = 42;
  const auto rb = measure_request_from_json(nlohmann::json::parse(to_json(req).dump()));
  EXPECT_DOUBLE_EQ(rb.settings.max_noise, 0.02);
  EXPECT_DOUBLE_EQ(rb.settings.max_time_ms, 42);
}

TEST(MeasureProtocol, AVendorDetailCrossesThePipeAndAKernelResultCarriesNone) {
  MeasureResult r;
  r.detail = "cudnn graph eng62_k2=5_k3=1 (0.0295 ms, fastest of 17 timed)";
  EXPECT_EQ(measure_result_from_json(nlohmann::json::parse(to_json(r).dump())).detail, r.detail);
  // A kernel's result has no detail: nothing is written, and an older worker's reply still parses.
  const auto plain = to_json(MeasureResult{});
  EXPECT_FALSE(plain.contains("detail"));
  EXPECT_EQ(measure_result_from_json(plain).detail, "");
}

TEST(WorkerClient, AMissingExecutableIsAnErrorNotACrash) {
  WorkerClient w("/nonexistent/tuner");
  auto r = w.measure(sim_request(), 5);
  EXPECT_NE(r.status, "ok");
  EXPECT_TRUE(r.infrastructure_failure) << "a missing worker is not a fault of the config: " << r.message;
}

}  // namespace
}  // namespace tuner
