// `tuner tune --kernel FILE.cu --spec FILE.json`: the example of examples/user_kernel/ tunes end to end
// on sim:h100-sxm through the same loop as the built-in templates (NVRTC, worker, database), `query`
// shows its records under the spec's name, a changed kernel is a new template version, and each kind
// of bad spec is one line on stderr, exit code 2, with the database untouched.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include <regex>

#include "cli_fixture.h"

namespace {

using tuner_cli_test::Cli;
using tuner_cli_test::slurp;

const std::string kExample = std::string(TUNER_SOURCE_DIR) + "/examples/user_kernel/";

class UserKernelCli : public Cli {
 protected:
  /// The example's spec with `from` replaced by `to`, written to the scratch directory; its path.
  std::string spec_with(const std::string& from, const std::string& to) const {
    std::string s = slurp(kExample + "saxpy.json");
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) s.replace(at, from.size(), to);
    const std::string path = (dir_ / "bad.json").string();
    std::ofstream(path) << s;
    return path;
  }
  std::string tune(const std::string& kernel, const std::string& spec, const std::string& extra = "",
                   int trials = 8) const {
    return "tune --kernel " + kernel + " --spec " + spec + " --device sim:h100-sxm --seed 1 --db " + db() +
           " --trials " + std::to_string(trials) + " --batch 4 --remeasure 1 --quiet --compile-threads 2 " + extra;
  }
  /// Exit code 2, exactly one line on stderr holding `want`, and nothing in the database.
  void expect_bad(const std::string& spec, const std::string& want) const {
    const auto r = run(tune(kExample + "saxpy.cu", spec));
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(std::filesystem::exists(db())) << "a bad spec must not create or touch the database";
  }
};

TEST_F(UserKernelCli, ExampleTunesOnSimAndQueryShowsIt) {
  const auto r = run(tune(kExample + "saxpy.cu", kExample + "saxpy.json", "--json"));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["template"], "saxpy_user");
  ASSERT_TRUE(j.contains("best")) << r.out;
  EXPECT_EQ(j["best"]["status"], "ok") << r.out;
  EXPECT_GT(j["best"]["time_ms"].get<double>(), 0);
  EXPECT_TRUE(j["best"]["config"].contains("BLOCK") && j["best"]["config"].contains("ITEMS")) << r.out;

  const auto h = run("query --db " + db() + " --history --all-versions --json");
  ASSERT_EQ(h.code, 0) << h.err;
  const auto rows = nlohmann::json::parse(h.out);
  ASSERT_GE(rows.size(), 8u);
  for (const auto& row : rows) {
    EXPECT_EQ(row["op"], "saxpy_user");
    EXPECT_EQ(row["shape"], "N=1048576");
    EXPECT_EQ(row["status"], "ok") << row.dump();
    EXPECT_GT(row["registers"].get<int>(), 0) << "compiled with NVRTC: resources from the cubin";
  }
  // The same command again continues to the same budget: nothing new is measured.
  const auto again = run(tune(kExample + "saxpy.cu", kExample + "saxpy.json", "--json"));
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(nlohmann::json::parse(run("query --db " + db() + " --history --all-versions --json").out).size(),
            rows.size());
}

// A kernel not declared extern "C" compiles, but its name is mangled: every config failed with exit 0. The file is
// compiled whole before the session (for the reference kernel), so that is bad input now, with nothing stored.
// Configs that fail on their own (too much shared memory at one BLOCK) still leave a session that says why, with
// ptxas's error line (it read "nvrtcCompileProgram failed: NVRTC_ERROR_COMPILATION", the error behind a NUL).
TEST_F(UserKernelCli, ASessionWithoutASuccessfulTrialSaysWhy) {
  std::string text = slurp(kExample + "saxpy.cu");
  const size_t at = text.find("extern \"C\" __global__ void __launch_bounds__");
  ASSERT_NE(at, std::string::npos);
  std::string mangled = text;
  mangled.erase(at, std::string("extern \"C\" ").size());
  const std::string kernel = (dir_ / "mangled.cu").string();
  std::ofstream(kernel) << mangled;
  const auto bad = run(tune(kernel, kExample + "saxpy.json", "", 4));
  EXPECT_EQ(bad.code, 2) << bad.err;
  EXPECT_NE(bad.err.find("kernel 'saxpy' not found in cubin (the spec's \"kernel\"; is it declared extern \"C\"?)"),
            std::string::npos)
      << bad.err;
  EXPECT_FALSE(std::filesystem::exists(db())) << "nothing stored";

  // 64 KiB of static shared memory at BLOCK 1024, over the 48 KiB a static array may take.
  std::string heavy = text;
  const size_t body = heavy.find('{', at);
  ASSERT_NE(body, std::string::npos);
  heavy.insert(body + 1, "\n  __shared__ float pad[BLOCK * 16];\n  pad[threadIdx.x] = x[0];\n  __syncthreads();\n"
                         "  if (pad[(threadIdx.x + 1) % BLOCK] == 12345.f) out[0] = 0.f;\n");
  const std::string heavy_path = (dir_ / "heavy.cu").string();
  std::ofstream(heavy_path) << heavy;
  const std::string cmd = tune(heavy_path, kExample + "saxpy.json", "--fix BLOCK=1024", 4);
  const auto r = run(cmd.substr(0, cmd.find(" --quiet")) + cmd.substr(cmd.find(" --quiet") + 8));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("best: no successful trial yet (3 compile_error)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("last error: nvrtcCompileProgram failed: NVRTC_ERROR_COMPILATION: ptxas error"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("uses too much shared data"), std::string::npos) << r.out;
  const auto rows = nlohmann::json::parse(run("query --db " + db() + " --history --all-versions --json").out);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0]["error"].get<std::string>().find('\0'), std::string::npos) << "no NUL in a stored error";
}

// A kernel's own headers are part of it: an edited header is a new version, compiled anew (its old cubins were
// measured, from the cache), and `#include "inc/x.cuh"` is found beside the kernel from any working directory. The
// preprocessor keeps its meaning: an include in a comment or a dead #if branch, a shared #pragma once header, two
// headers that include each other behind guards, and Windows line ends (the first version pasted headers in by hand,
// and the review broke each of these).
TEST_F(UserKernelCli, AHeaderBesideTheKernelIsPartOfIt) {
  const auto k = dir_ / "k";
  std::filesystem::create_directories(k / "inc");
  auto write = [&](const std::string& rel, const std::string& text) { std::ofstream(k / rel, std::ios::binary) << text; };
  write("inc/common.cuh", "#pragma once\n__device__ inline float scale() { return 2.5f; }\n");
  write("inc/v1.cuh", "#pragma once\n#include \"common.cuh\"\n__device__ inline float axpy(float x, float y) { return scale() * x + y + 1.0f; }\n");
  write("inc/v2.cuh", "#pragma once\n#include \"common.cuh\"\n__device__ inline float axpy(float x, float y) { return scale() * x + y; }\n");
  write("inc/a.cuh", "#ifndef A_CUH\n#define A_CUH\n#include \"b.cuh\"\n__device__ inline float one() { return 1.0f; }\n#endif\n");
  write("inc/b.cuh", "#ifndef B_CUH\n#define B_CUH\n#include \"a.cuh\"\n#endif\n");
  write("inc/crlf.cuh", "#pragma once\r\n__device__ inline float zero() { return 0.0f; }\r\n");
  write("inc/old.cuh", "/* an old helper */ this is not C++;\n");
  std::string text = slurp(kExample + "saxpy.cu");
  const std::string from = "out[j] = 2.5f * x[j] + y[j];";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), "out[j] = axpy(x[j], y[j]) * one() + zero();");
  const std::string kernel = (k / "saxpy.cu").string();
  write("saxpy.cu", "/* previously:\n#include \"inc/old.cuh\"\n*/\n#if ITEMS > 100\n#include \"inc/v1.cuh\"\n#else\n"
                    "#include \"inc/v2.cuh\"\n#endif\n#include \"inc/a.cuh\"\r\n#include \"inc/crlf.cuh\" // zero\r\n"
                    "#include <cuda_fp16.h>\n" + text);
  const auto first = run(tune(kernel, kExample + "saxpy.json", "--json", 2));  // (run from the build folder)
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_EQ(nlohmann::json::parse(first.out)["best"]["status"], "ok") << first.out;
  // The same file by another spelling of its path: the same version, nothing new to measure.
  const std::string spelt = (k / "." / "saxpy.cu").string();
  ASSERT_EQ(run(tune(spelt, kExample + "saxpy.json", "", 2)).code, 0);
  auto versions = [&] {
    std::set<std::string> v;
    for (const auto& row : nlohmann::json::parse(run("query --db " + db() + " --history --all-versions --json").out))
      v.insert(row["template_version"].get<std::string>());
    return v;
  };
  EXPECT_EQ(versions().size(), 1u) << "a path spelt otherwise is the same kernel";
  write("inc/common.cuh", "#pragma once\n__device__ inline float scale() { return 5.0f / 2.0f; }\n");
  ASSERT_EQ(run(tune(kernel, kExample + "saxpy.json", "", 2)).code, 0);
  EXPECT_EQ(versions().size(), 2u) << "an edited header, even one included by another header, is a new version";
  // A header that does not compile is named with its own line.
  write("inc/v2.cuh", "#pragma once\nthis is not C++;\n");
  const auto r = run(tune(kernel, kExample + "saxpy.json", "", 2));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("v2.cuh(2): error"), std::string::npos) << r.err;
}

// The second review: a kernel defined in its header was refused ("does not appear in saxpy.cu"); a symlinked
// header's own include was digested beside the link while NVRTC read it beside the target; a header found only in
// the working directory compiled outside the version; a header named like one of tuner's kernel files got tuner's.
TEST_F(UserKernelCli, HeadersAreFollowedWhereTheCompilerFindsThem) {
  const auto k = dir_ / "h";
  std::filesystem::create_directories(k / "lib");
  auto write = [&](const std::filesystem::path& f, const std::string& text) { std::ofstream(f, std::ios::binary) << text; };
  write(k / "lib" / "inner.cuh", "#pragma once\n#define SCALE 2.5f\n");
  write(k / "lib" / "impl.cuh", "#pragma once\n#include \"inner.cuh\" /* the scale */ // and more\n" +
                                     std::regex_replace(slurp(kExample + "saxpy.cu"), std::regex("2\\.5f"), "SCALE"));
  std::filesystem::create_symlink(k / "lib" / "impl.cuh", k / "impl.cuh");
  write(k / "saxpy.cu", "#include \"impl.cuh\"\n");
  const std::string kernel = (k / "saxpy.cu").string();
  const auto first = run(tune(kernel, kExample + "saxpy.json", "--json", 2));
  ASSERT_EQ(first.code, 0) << first.err;
  write(k / "lib" / "inner.cuh", "#pragma once\n#define SCALE (5.0f / 2)\n");
  const auto second = run(tune(kernel, kExample + "saxpy.json", "--json", 2));
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_NE(nlohmann::json::parse(first.out)["template_version"], nlohmann::json::parse(second.out)["template_version"])
      << "the edit of a header the symlinked one includes beside its target";
  // From the kernel's own folder: the same version, every compile from the cache (the banner named the path as
  // typed, so another working directory compiled everything anew).
  const std::string json_out = (dir_ / "here.json").string();
  const int here = std::system(("cd " + k.string() + " && " + std::string(TUNER_BIN) + " " +
                                tune("saxpy.cu", kExample + "saxpy.json", "--json", 2) + " >" + json_out).c_str());
  ASSERT_EQ(WEXITSTATUS(here), 0);
  const auto from_here = nlohmann::json::parse(slurp(json_out));
  EXPECT_EQ(from_here["template_version"], nlohmann::json::parse(second.out)["template_version"]);
  // A header only the working directory has.
  const auto cwd = dir_ / "cwd";
  std::filesystem::create_directories(cwd / "inc");
  write(cwd / "inc" / "scale.cuh", "#define SCALE 2.5f\n");
  write(k / "far.cu", "#include \"inc/scale.cuh\"\n" +
                          std::regex_replace(slurp(kExample + "saxpy.cu"), std::regex("2\\.5f"), "SCALE"));
  const std::string err = (dir_ / "far.err").string();
  const int status = std::system(("cd " + cwd.string() + " && " + std::string(TUNER_BIN) + " " +
                                  tune((k / "far.cu").string(), kExample + "saxpy.json", "", 2) + " 2>" + err).c_str());
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(slurp(err).find("includes \"inc/scale.cuh\", which is not beside it"), std::string::npos) << slurp(err);
  // A header named like one of tuner's own kernel files is the user's (NVRTC took tuner's: "SCALE is undefined").
  write(k / "lib" / "impl.cuh", "#include \"element.cuh\"\n" +
                                     std::regex_replace(slurp(kExample + "saxpy.cu"), std::regex("2\\.5f"), "SCALE"));
  write(k / "lib" / "element.cuh", "#define SCALE 2.5f\n");
  const auto own = run(tune(kernel, kExample + "saxpy.json", "--json", 4));
  ASSERT_EQ(own.code, 0) << own.err;
  EXPECT_EQ(nlohmann::json::parse(own.out)["best"]["status"], "ok") << own.out;
}

// --shape N=1,N=2 took the last value; built-in ops refuse it. Buffers larger than the device were estimated.
TEST_F(UserKernelCli, ASizeGivenTwiceAndBuffersLargerThanTheDevice) {
  auto r = run(tune(kExample + "saxpy.cu", kExample + "saxpy.json", "--shape N=1024,N=2048"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("size 'N' given twice; allowed: each size once"), std::string::npos) << r.err;
  const std::string wide = spec_with("\"elements\": \"N\", \"role\": \"output\"",
                                     "\"elements\": \"N * 64\", \"role\": \"output\"");
  r = run(tune(kExample + "saxpy.cu", wide, "--shape N=400000000"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("needs 208.1 GB on the GPU (its buffers 105.6 GB, a reference copy of the result"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(db()));
}

TEST_F(UserKernelCli, ChangedKernelTextIsANewTemplateVersion) {
  ASSERT_EQ(run(tune(kExample + "saxpy.cu", kExample + "saxpy.json", "", 2)).code, 0);
  const std::string edited = (dir_ / "saxpy.cu").string();
  std::ofstream(edited) << slurp(kExample + "saxpy.cu") << "\n// an edit\n";
  const auto r = run(tune(edited, kExample + "saxpy.json", "--json", 2));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rows = nlohmann::json::parse(run("query --db " + db() + " --history --all-versions --json").out);
  std::set<std::string> versions;
  for (const auto& row : rows) versions.insert(row["template_version"].get<std::string>());
  EXPECT_EQ(versions.size(), 2u) << "two kernel texts, two versions";
  // A plain query (no --all-versions) shows the newest version's records, by the user kernel's op and shape.
  const auto plain = run("query --db " + db() + " --op saxpy_user --shape N=1048576 --history --json");
  ASSERT_EQ(plain.code, 0) << plain.err;
  const auto newest = nlohmann::json::parse(plain.out);
  ASSERT_FALSE(newest.empty());
  for (const auto& row : newest) EXPECT_EQ(row["template_version"], rows.back()["template_version"]) << row.dump();
  EXPECT_LT(newest.size(), rows.size());
  const auto best = run("query --db " + db() + " --op saxpy_user --best --template saxpy_user --json");
  ASSERT_EQ(best.code, 0) << best.err;
  EXPECT_EQ(nlohmann::json::parse(best.out).size(), 1u) << best.out;
  // query has not the spec, so it does not say what a user kernel's config writes (rather than guess the dtype).
  EXPECT_FALSE(nlohmann::json::parse(best.out).at(0).contains("output_dtype")) << best.out;
  // An op neither built in nor recorded is still refused.
  EXPECT_EQ(run("query --db " + db() + " --op saxpy_nobody").code, 2);
}

// The current version of a user kernel is the text tuned last: tuning the first text again (at another size) after
// an edited one made the new records "older" (the edited text's row was recorded later) and hid them.
TEST_F(UserKernelCli, TheTextTunedLastIsTheCurrentVersion) {
  ASSERT_EQ(run(tune(kExample + "saxpy.cu", kExample + "saxpy.json", "", 2)).code, 0);
  const std::string edited = (dir_ / "saxpy.cu").string();
  std::ofstream(edited) << slurp(kExample + "saxpy.cu") << "\n// an edit\n";
  ASSERT_EQ(run(tune(edited, kExample + "saxpy.json", "", 2)).code, 0);
  const auto again = run(tune(kExample + "saxpy.cu", kExample + "saxpy.json", "--shape N=4096 --json", 2));
  ASSERT_EQ(again.code, 0) << again.err;
  const std::string version = nlohmann::json::parse(again.out).at("template_version");
  const auto q = run("query --db " + db() + " --op saxpy_user --history --json");
  ASSERT_EQ(q.code, 0) << q.err;
  std::set<std::string> shapes;
  for (const auto& row : nlohmann::json::parse(q.out)) {
    EXPECT_EQ(row["template_version"], version) << row.dump();
    shapes.insert(row["shape"].get<std::string>());
  }
  EXPECT_EQ(shapes, (std::set<std::string>{"N=4096", "N=1048576"})) << "both sizes of the text tuned last";
  const auto sessions = run("query --db " + db() + " --sessions");
  EXPECT_NE(sessions.out.find("(older version)"), std::string::npos) << "the edited text's session: " << sessions.out;
}

// A replay of a recording of the first text stores its records under that text's version; it tunes no text, so the
// edited text stays current (a replay made the old text current and hid what today's file measured).
TEST_F(UserKernelCli, AReplayOfAnOldTextLeavesTheCurrentVersion) {
  const std::string recording = (dir_ / "first.replay").string();
  const auto a = run("tune --kernel " + kExample + "saxpy.cu --spec " + kExample + "saxpy.json --device sim:h100-sxm "
                     "--trials all --quiet --replay-out " + recording + " --db " + db());
  ASSERT_EQ(a.code, 0) << a.err;
  const std::string edited = (dir_ / "saxpy.cu").string();
  std::ofstream(edited) << slurp(kExample + "saxpy.cu") << "\n// an edit\n";
  const auto b = run(tune(edited, kExample + "saxpy.json", "--json", 2));
  ASSERT_EQ(b.code, 0) << b.err;
  const std::string version = nlohmann::json::parse(b.out).at("template_version");
  const std::string replay = "tune --kernel " + edited + " --spec " + kExample + "saxpy.json --device replay:" +
                             recording + " --trials 4 --quiet --db " + db();
  const auto r = run(replay);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto q = run("query --db " + db() + " --op saxpy_user --best --json");
  ASSERT_EQ(q.code, 0) << q.err;
  for (const auto& row : nlohmann::json::parse(q.out)) EXPECT_EQ(row["template_version"], version) << row.dump();
}

TEST_F(UserKernelCli, QueryChecksAUserOpsShapeAgainstItsRecordedSizes) {
  ASSERT_EQ(run(tune(kExample + "saxpy.cu", kExample + "saxpy.json", "", 2)).code, 0);
  const std::string before = slurp(db());
  // A size the spec does not name, or a misspelt one, matched nothing and exited 0.
  for (const std::string shape : {"n=1048576", "N=1048576,X=3"}) {
    const auto r = run("query --db " + db() + " --op saxpy_user --shape " + shape);
    EXPECT_EQ(r.code, 2) << shape << ": " << r.out;
    EXPECT_NE(r.err.find("for saxpy_user; expected N"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_EQ(run("query --db " + db() + " --op saxpy_user --shape N=abc").code, 2);
  // A misspelt user op: the allowed list names the user ops recorded here (it listed only the built-in ones).
  const auto typo = run("query --db " + db() + " --op saxpy_usr");
  EXPECT_EQ(typo.code, 2);
  EXPECT_NE(typo.err.find("user kernel's op recorded here: saxpy_user"), std::string::npos) << typo.err;
  // A well-formed shape that was never tuned is an empty answer, as for a built-in op.
  const auto other = run("query --db " + db() + " --op saxpy_user --shape N=5 --json");
  EXPECT_EQ(other.code, 0) << other.err;
  EXPECT_TRUE(nlohmann::json::parse(other.out).empty()) << other.out;
  const auto same = run("query --db " + db() + " --op saxpy_user --shape N=1048576 --history --json");
  ASSERT_EQ(same.code, 0) << same.err;
  EXPECT_GE(nlohmann::json::parse(same.out).size(), 2u) << same.out;
  EXPECT_EQ(slurp(db()), before) << "a query changes nothing";
  // The spec's size renamed (N to LEN): the new records were refused by query ("unknown dimension 'LEN'; expected
  // N"), which knew the op's first naming only. Either naming now finds its own records.
  const std::string spec = std::regex_replace(slurp(kExample + "saxpy.json"), std::regex("\\bN\\b"), "LEN");
  const std::string renamed = (dir_ / "len.json").string();
  std::ofstream(renamed) << spec;
  ASSERT_EQ(run(tune(kExample + "saxpy.cu", renamed, "", 2)).code, 0) << spec;
  for (const std::string shape : {"LEN=1048576", "N=1048576"}) {
    const auto r = run("query --db " + db() + " --op saxpy_user --shape " + shape + " --history --all-versions --json");
    ASSERT_EQ(r.code, 0) << shape << ": " << r.err;
    const auto rows = nlohmann::json::parse(r.out);
    ASSERT_FALSE(rows.empty()) << shape;
    for (const auto& row : rows) EXPECT_EQ(row["shape"], shape);
  }
}

TEST_F(UserKernelCli, TheSpecsBytesGiveGbpsAndARoofline) {
  // The spec's "bytes" (12 * N) is stored with each trial: a user kernel had no GB/s and an empty roofline.
  ASSERT_EQ(run(tune(kExample + "saxpy.cu", kExample + "saxpy.json", "", 4)).code, 0);
  const auto rows = nlohmann::json::parse(run("query --db " + db() + " --history --json").out);
  ASSERT_FALSE(rows.empty());
  for (const auto& row : rows) {
    EXPECT_DOUBLE_EQ(row["bytes"].get<double>(), 12.0 * 1048576) << row.dump();
    EXPECT_NEAR(row["gbps"].get<double>(), 12.0 * 1048576 / (row["time_ms"].get<double>() * 1e-3) / 1e9, 1e-6)
        << row.dump();
  }
  EXPECT_NE(run("query --db " + db() + " --op saxpy_user").out.find("GB/s"), std::string::npos);
  const std::string html = (dir_ / "r.html").string();
  ASSERT_EQ(run("report --db " + db() + " --out " + html).code, 0);
  const std::string page = slurp(html);
  EXPECT_EQ(page.find("No FLOP or byte count"), std::string::npos);
  EXPECT_NE(page.find("class=\"tuned\""), std::string::npos) << "the best kernel on the roofline";
}

TEST_F(UserKernelCli, OtherShapesTransferAndARecordingReplays) {
  // Another shape in a database that holds the first: xgb's transfer reads those records (they parsed as
  // no workload before: "unknown op 'saxpy_user'", exit 1).
  ASSERT_EQ(run(tune(kExample + "saxpy.cu", kExample + "saxpy.json")).code, 0);
  const auto other = run(tune(kExample + "saxpy.cu", kExample + "saxpy.json", "--shape N=1000 --json"));
  ASSERT_EQ(other.code, 0) << other.err;
  EXPECT_GT(nlohmann::json::parse(other.out)["transferred"].get<int>(), 0) << other.out;
  // The whole space recorded, then searched offline from the recording.
  const std::string recording = (dir_ / "saxpy.replay.json").string();
  const auto rec = run("tune --kernel " + kExample + "saxpy.cu --spec " + kExample + "saxpy.json --device sim:h100-sxm "
                       "--trials all --quiet --replay-out " + recording + " --db " + (dir_ / "rec.db").string());
  ASSERT_EQ(rec.code, 0) << rec.err;
  const auto replayed = run("tune --kernel " + kExample + "saxpy.cu --spec " + kExample + "saxpy.json --device replay:" +
                            recording + " --trials 6 --json --db " + (dir_ / "replayed.db").string());
  ASSERT_EQ(replayed.code, 0) << replayed.err;
  EXPECT_EQ(nlohmann::json::parse(replayed.out)["measured"], 6);
}

TEST_F(UserKernelCli, ASpecThatLeavesNoConfigIsBadInput) {
  // A grid that divides by zero for every config is named (it got the generic "no config meets" line).
  expect_bad(spec_with("\"grid\": [\"ceil_div(N, BLOCK * ITEMS)\"]", "\"grid\": [\"N / (BLOCK - BLOCK)\"]"),
             "division by zero");
  // Each reason is named: it said "no config meets the constraints and the limits (threads per block, shared
  // memory)" for all of them.
  expect_bad(spec_with("\"BLOCK * ITEMS <= 4096\"", "\"BLOCK > 5000\""),
             "no config of saxpy_user meets the spec's constraints and sim:h100-sxm's limits (constraints[0] "
             "'BLOCK > 5000' holds for no config)");
  expect_bad(spec_with("\"BLOCK * ITEMS <= 4096\"", "\"BLOCK / (ITEMS - ITEMS) > 0\""),
             "(constraints[0] 'BLOCK / (ITEMS - ITEMS) > 0' cannot be computed: ");
  expect_bad(spec_with("\"block\": [\"BLOCK\"]", "\"block\": [\"BLOCK * 32\"]"),
             "(the configs that meet the constraints break a launch limit: block[0] 2048 is outside 1 .. 1024)");
}

TEST_F(UserKernelCli, AKernelFileThatDoesNotCompileIsBadInput) {
  // It failed the session mid-run (exit 1, a failed session stored) with "reference kernel failed to compile".
  const std::string broken = (dir_ / "broken.cu").string();
  std::ofstream(broken) << slurp(kExample + "saxpy.cu") << "\nthis is not C++;\n";
  const auto r = run(tune(broken, kExample + "saxpy.json"));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--kernel " + broken + " does not compile (reference kernel saxpy_reference, the whole file): " +
                       broken + "("),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("error"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(std::filesystem::exists(db())) << "nothing stored";
}

TEST_F(UserKernelCli, UnknownKnobInAConstraint) {
  expect_bad(spec_with("\"BLOCK * ITEMS <= 4096\"", "\"BLOCK * ITEM <= 4096\""),
             "constraints[0]: unknown name 'ITEM' in 'BLOCK * ITEM <= 4096'; allowed: BLOCK, ITEMS, N");
}

// The kernel at reference.config is the reference: one its own constraints refuse judged every trial against
// whatever it computed.
TEST_F(UserKernelCli, AReferenceConfigTheConstraintsRefuseIsBadInput) {
  expect_bad(spec_with(R"x("reference": {"kernel": "saxpy_reference", "grid": ["ceil_div(N, 256)"], "block": [256]})x",
                       R"x("reference": {"config": {"BLOCK": 1024, "ITEMS": 8}})x"),
             R"x(--spec: reference.config {"BLOCK":1024,"ITEMS":8} breaks 'BLOCK * ITEMS <= 4096' at N=1048576; )x"
             R"x(allowed: a config the spec's constraints and sim:h100-sxm's limits take, e.g. {")x");
}

TEST_F(UserKernelCli, BadDtype) {
  expect_bad(spec_with("{\"name\": \"x\", \"dtype\": \"f32\"", "{\"name\": \"x\", \"dtype\": \"f64\""),
             "buffers[0].dtype: 'f64' is not a dtype; allowed: f32, f16, bf16");
}

TEST_F(UserKernelCli, ItsExportedRecordsAreLeftOutByImportAndCounted) {
  ASSERT_EQ(run(tune(kExample + "saxpy.cu", kExample + "saxpy.json", "--json")).code, 0);
  const auto e = run("export --format jsonl --db " + db());
  ASSERT_EQ(e.code, 0) << e.err;
  const auto file = dir_ / "uk.jsonl";
  std::ofstream(file) << e.out;
  const auto i = run("import " + file.string() + " --db " + (dir_ / "i.db").string());
  EXPECT_EQ(i.code, 2);
  EXPECT_NE(i.err.find("a user kernel's (`tune --kernel`)"), std::string::npos) << i.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "i.db"));
  // Beside a built-in op's records (the README's export | import of a whole database), they are left out and
  // counted, and the rest comes in (the whole file was refused, so a database with one user kernel could not move).
  ASSERT_EQ(run("tune --op softmax --shape rows=64,cols=64 --device sim:h100-sxm --trials 2 --remeasure 0 --db " + db()).code, 0);
  const auto both = run("export --format jsonl --db " + db());
  ASSERT_EQ(both.code, 0) << both.err;
  std::ofstream(file) << both.out;
  const auto m = run("import " + file.string() + " --json --db " + (dir_ / "i.db").string());
  ASSERT_EQ(m.code, 0) << m.err;
  const auto j = nlohmann::json::parse(m.out);
  EXPECT_EQ(j.at("added").get<int>(), 2);
  EXPECT_GT(j.at("user_kernel_records_left_out").get<int>(), 0);
  EXPECT_NE(m.err.find("import: left out " + std::to_string(j.at("user_kernel_records_left_out").get<int>()) +
                       " records of kernels of your own (saxpy_user): their source is not in the file"),
            std::string::npos)
      << m.err;
}

TEST_F(UserKernelCli, ABuiltInOpsNameIsTaken) {
  // The name is the op of the kernel's records: "gemm" would list a saxpy among the GEMMs and in their
  // deployment file.
  expect_bad(spec_with("\"name\": \"saxpy_user\"", "\"name\": \"gemm\""),
             "name: 'gemm' is a built-in op; allowed: a name other than gemm, batched_gemm, conv2d, softmax, layernorm");
}

TEST_F(UserKernelCli, MissingField) {
  expect_bad(spec_with("\"block\": [\"BLOCK\"],", ""), "block: missing (required)");
}

TEST_F(UserKernelCli, ExpressionSyntaxError) {
  expect_bad(spec_with("\"ceil_div(N, BLOCK * ITEMS)\"", "\"ceil_div(N, BLOCK * * ITEMS)\""),
             "grid[0]: expression 'ceil_div(N, BLOCK * * ITEMS)': unexpected '*' at column 21");
}

TEST_F(UserKernelCli, UnknownKeyAndUnreadableFiles) {
  expect_bad(spec_with("\"flops\"", "\"flopz\""), "flopz: unknown key; allowed:");
  const auto r = run(tune((dir_ / "missing.cu").string(), kExample + "saxpy.json"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--kernel"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cannot read the file"), std::string::npos) << r.err;
}

}  // namespace
