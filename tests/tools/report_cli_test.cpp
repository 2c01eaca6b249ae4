// `tuner report`: the HTML report of tuned workloads (convergence, histogram, roofline) and of a plan
// (pipeline timeline), self-contained and escaped; bad input exits 2 with one line. Also the escaper itself.
#include <gtest/gtest.h>

#include <regex>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/tools/cli_fixture.h"
#include "tools/svg.h"

namespace {

using tuner_cli_test::Cli;
using tuner_cli_test::slurp;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

TEST(AxisLabels, ThousandsOfAPrefixMoveToTheNextPrefix) {
  using tuner::cli::svg::label_num;
  // A roofline's GFLOP/s axis read 1000 / 10k / 100k / 1000k / 10M.
  EXPECT_EQ(label_num(1000), "1000");
  EXPECT_EQ(label_num(1e4), "10k");
  EXPECT_EQ(label_num(1e5), "100k");
  EXPECT_EQ(label_num(1e6), "1M");
  EXPECT_EQ(label_num(2.5e7), "25M");
  EXPECT_EQ(label_num(1e9), "1G");
  EXPECT_EQ(label_num(0.5), "0.5");
}

TEST(XmlEscape, EscapesMarkupQuotesAndControlCharacters) {
  using tuner::cli::svg::xml_escape;
  EXPECT_EQ(xml_escape("a<b & c>d"), "a&lt;b &amp; c&gt;d");
  EXPECT_EQ(xml_escape("\"x\" 'y'"), "&quot;x&quot; &#39;y&#39;");
  EXPECT_EQ(xml_escape("&amp;"), "&amp;amp;");  // escaped again: text is never taken for markup
  EXPECT_EQ(xml_escape(std::string("a\x01z", 3)), "a\xEF\xBF\xBDz");
  EXPECT_EQ(xml_escape("tab\tnew\nline"), "tab\tnew\nline");
  EXPECT_EQ(xml_escape(""), "");
}

// A legend of more entries than the plot area holds ran below the chart (30 sessions of one workload: labels to
// y = 557 in a 380 px chart); the rows that fit are drawn and the last counts the rest.
TEST(ChartLegend, StaysInsideThePlotAreaAndCountsWhatDoesNotFit) {
  using namespace tuner::cli::svg;
  for (const size_t n : {3u, 30u}) {
    Chart c(900, 380, "legend", Axis(0, 10, false, "x"), Axis(0, 1, false, "y"));
    std::vector<std::pair<std::string, std::string>> entries;
    for (size_t i = 0; i < n; ++i) entries.push_back({color(i), "session " + std::to_string(i + 1)});
    c.legend(entries);
    const std::string svg = c.doc().str(true);
    const std::regex label(R"re(class="legend-label" x="[0-9.]+" y="([0-9.]+)"[^>]*>([^<]*)<)re");
    size_t rows = 0;
    std::string last;
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), label); it != std::sregex_iterator(); ++it, ++rows) {
      EXPECT_LE(std::stod((*it)[1]), c.bottom()) << (*it)[2];
      last = (*it)[2];
    }
    if (n == 3) {
      EXPECT_EQ(rows, 3u);
      EXPECT_EQ(last, "session 3");
    } else {
      EXPECT_LT(rows, n);
      EXPECT_EQ(last, "... and " + std::to_string(n - rows + 1) + " more");
    }
  }
}

class Report : public Cli {
 protected:
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  /// Two sessions on one small gemm: 8 random trials, then 8 more by ga (the budget is the database's, so
  /// the second session asks for 16).
  void tune_two_sessions() {
    const std::string w = "tune --op gemm --shape M=256,N=256,K=256 --device sim:h100-sxm --quiet --db " + db();
    auto a = run(w + " --trials 8 --strategy random --seed 1");
    ASSERT_EQ(a.code, 0) << a.err;
    auto b = run(w + " --trials 16 --strategy ga --seed 2");
    ASSERT_EQ(b.code, 0) << b.err;
  }
};

TEST_F(Report, WorkloadReportHasThreeChartsOneLinePerSessionAndThePeakLines) {
  tune_two_sessions();
  const std::filesystem::path svgs = dir_ / "svgs";
  std::filesystem::create_directories(svgs);
  auto r = run("report --db " + db() + " --op gemm --device sim:h100-sxm --out " + path("r.html") + " --svg-dir " +
               svgs.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = slurp(path("r.html"));
  ASSERT_FALSE(html.empty());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<svg"), 3u) << "convergence, histogram, roofline";
  EXPECT_EQ(count(html, "</svg>"), 3u);
  EXPECT_EQ(count(html, "<polyline"), 2u) << "one best-so-far line per session";
  EXPECT_NE(html.find("random, seed 1"), std::string::npos);
  EXPECT_NE(html.find("ga, seed 2"), std::string::npos);
  // The histogram counts search trials: 16, not the 16 plus the re-measured finalists.
  // On a sim device they are estimates, and the chart says so (it said "Measured").
  EXPECT_NE(html.find("Estimated ok times (16 trials)"), std::string::npos);
  EXPECT_EQ(html.find("Measured ok times"), std::string::npos);
  // Each session's marker names the search trial that first reached its best (it named the last trial).
  const auto history = nlohmann::json::parse(run("query --db " + db() + " --history --json").out);
  for (int session : {1, 2}) {
    int n = 0, at = 0;
    double best = 0;
    for (const auto& row : history) {
      if (row["session_id"] != session || row["purpose"] != "search") continue;
      ++n;
      const double ms = row["time_ms"].get<double>();
      if (row["status"] == "ok" && (best == 0 || ms < best)) best = ms, at = n;
    }
    const std::regex marker("session " + std::to_string(session) + ": [^<]*: best [^<]* ms at trial ([0-9]+)");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(html, m, marker)) << session;
    EXPECT_EQ(std::stoi(m[1]), at) << "session " << session << " of " << n << " search trials";
  }
  // The roofline's roofs from the spec table (h100-sxm: 66.9 TFLOP/s FP32, 3350 GB/s) and the estimate note.
  EXPECT_EQ(count(html, "class=\"roof-compute\""), 1u);
  EXPECT_EQ(count(html, "class=\"roof-dram\""), 1u);
  EXPECT_NE(html.find("peak FP32 66.9 TFLOP/s"), std::string::npos);
  EXPECT_NE(html.find("DRAM 3350 GB/s"), std::string::npos);
  EXPECT_NE(html.find("sim estimate"), std::string::npos);
  EXPECT_GE(count(html, "class=\"tuned\""), 1u);
  EXPECT_NE(html.find("failed trials"), std::string::npos);
  // Self-contained: no scripts, no links, no namespace URLs in the inline SVG.
  EXPECT_EQ(html.find("http"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  // The same charts as standalone files (these carry the SVG namespace a .svg file needs).
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(svgs)) {
    ++files;
    const std::string s = slurp(e.path().string());
    EXPECT_EQ(s.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u) << e.path();
  }
  EXPECT_EQ(files, 3);
}

// Softmax and layernorm compute in fp32 on the CUDA cores: an f16 softmax's compute roof is the FP32 peak, not the
// 989 TFLOP/s of the f16 tensor cores (it was); an f16 GEMM keeps the tensor roof.
TEST_F(Report, RowOpsSitUnderTheCudaCoreRoofAndGemmsUnderTheTensorRoof) {
  auto t = run("tune --op softmax --shape rows=512,cols=1024 --dtype f16 --device sim:h100-sxm --trials 4 --quiet "
               "--seed 1 --db " + db());
  ASSERT_EQ(t.code, 0) << t.err;
  auto r = run("report --db " + db() + " --op softmax --out " + path("s.html"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = slurp(path("s.html"));
  EXPECT_NE(html.find("peak FP32 66.9 TFLOP/s"), std::string::npos);
  EXPECT_EQ(html.find("tensor"), std::string::npos);
  // A memory-bound op's sessions show their GB/s, as query does (the table had GFLOP/s alone); a GEMM's do not.
  EXPECT_NE(html.find("<th>best GB/s</th>"), std::string::npos);
  // The histogram's count axis (an integer axis) has whole-number ticks only (a count of 3 drew 0.5, 1, 1.5 ...).
  tuner::cli::svg::Axis counts{0, 3, false, "ok trials"};
  counts.integer = true;
  counts.nice();
  for (double v : counts.ticks()) EXPECT_EQ(v, std::floor(v)) << v;

  t = run("tune --op gemm --shape M=256,N=256,K=256 --dtype f16 --device sim:h100-sxm --trials 4 --quiet --seed 1 "
          "--db " + db());
  ASSERT_EQ(t.code, 0) << t.err;
  r = run("report --db " + db() + " --op gemm --out " + path("g.html"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(slurp(path("g.html")).find("peak f16 tensor 989"), std::string::npos);
  EXPECT_EQ(slurp(path("g.html")).find("<th>best GB/s</th>"), std::string::npos);
  // --out - is stdout (it wrote a file named "-"), the "wrote" line on stderr.
  r = run("report --db " + db() + " --op gemm --out -");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, slurp(path("g.html")));
  EXPECT_NE(r.err.find("wrote stdout"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::current_path() / "-"));
}

// A recording made on an H200 is drawn under the H200's roof (4.8 TB/s), not the H100's: its best layernorm reached
// 3.49 TB/s, above the H100's 3.35 TB/s line it was drawn under.
TEST_F(Report, AnH200RecordingIsDrawnUnderTheH200sRoof) {
  const std::string rec = std::string(TUNER_SOURCE_DIR) + "/data/replay/layernorm_f16_rows4096_cols32768_h200_2026-11-26.json";
  auto t = run("tune --op layernorm --shape rows=4096,cols=32768 --dtype f16 --device replay:" + rec +
               " --trials 8 --quiet --db " + db());
  ASSERT_EQ(t.code, 0) << t.err;
  auto r = run("report --db " + db() + " --op layernorm --all-versions --out " + path("h.html"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = slurp(path("h.html"));
  EXPECT_NE(html.find("Roofline of h200-sxm"), std::string::npos);
  EXPECT_NE(html.find("4800 GB/s"), std::string::npos);
  EXPECT_EQ(html.find("h100-sxm"), std::string::npos);
}

TEST_F(Report, PlanReportDrawsOneBoxPerStageMicroBatchAndPass) {
  auto p = run("plan --model gpt:layers=8,hidden=1024,heads=16 --cluster dgx-h100:1 --db " + db() + " --json");
  ASSERT_EQ(p.code, 0) << p.err;
  const auto plan = nlohmann::json::parse(p.out);
  const int stages = plan["pp"], micro = plan["num_micro_batches"];
  auto r = run("report --db " + db() + " --plan latest --out " + path("p.html"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = slurp(path("p.html"));
  EXPECT_EQ(count(html, "<svg"), 1u);
  EXPECT_EQ(count(html, "class=\"pass-fwd\""), static_cast<size_t>(stages * micro));
  EXPECT_EQ(count(html, "class=\"pass-bwd\""), static_cast<size_t>(stages * micro));
  EXPECT_NE(html.find("Pipeline of one iteration: " + plan["schedule"].get<std::string>()), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);
  // Every degree, so they multiply to the GPU count (cp and ep were left out).
  const std::string degrees = "tp " + std::to_string(plan["tp"].get<int>()) + ", cp " +
                              std::to_string(plan["cp"].get<int>()) + ", pp " + std::to_string(stages) + ", dp " +
                              std::to_string(plan["dp"].get<int>()) + ", ep " + std::to_string(plan["ep"].get<int>());
  EXPECT_NE(html.find("<td>" + degrees + "</td>"), std::string::npos) << degrees;

  // A pinned 4-stage GPipe plan, by id; its cluster file's name carries markup characters, escaped in the report.
  std::ofstream(path("lab<A&B>.json")) << R"({ "nodes": 1, "gpus_per_node": 8, "gpu": "h100-sxm",
      "intra_node": {"bandwidth_gbps": 900, "latency_us": 3}, "inter_node": {"bandwidth_gbps": 50, "latency_us": 5}})";
  auto q = run("plan --model gpt:layers=8,hidden=1024,heads=16 --cluster '" + path("lab<A&B>.json") + "'" +
               " --fix pp=4,schedule=gpipe --global-batch 16 --db " + db() + " --json");
  ASSERT_EQ(q.code, 0) << q.err;
  const auto plan2 = nlohmann::json::parse(q.out);
  ASSERT_EQ(plan2["pp"], 4);
  const int micro2 = plan2["num_micro_batches"];
  auto r2 = run("report --db " + db() + " --plan 2 --out " + path("p2.html"));
  ASSERT_EQ(r2.code, 0) << r2.err;
  const std::string html2 = slurp(path("p2.html"));
  EXPECT_EQ(count(html2, "class=\"pass-fwd\""), static_cast<size_t>(4 * micro2));
  EXPECT_EQ(count(html2, "class=\"pass-bwd\""), static_cast<size_t>(4 * micro2));
  EXPECT_NE(html2.find("gpipe"), std::string::npos);
  EXPECT_NE(html2.find("lab&lt;A&amp;B&gt;.json"), std::string::npos);
  EXPECT_EQ(html2.find("lab<A&B>"), std::string::npos);
}

// An interleaved plan was drawn as 1F1B over whole stages (6.6% longer than the planner's figure for Llama 3 70B on
// dgx-h100:64), with a note that the plan JSON lacked the chunks' placement, which it has: it is drawn in Megatron-LM's
// order, a box per stage, micro-batch, pass and chunk, and its makespan is the planner's pipeline time.
TEST_F(Report, AnInterleavedPlanIsDrawnChunkByChunk) {
  auto p = run("plan --model gpt:layers=8,hidden=1024,heads=16 --cluster dgx-h100:1 --fix pp=4,schedule=interleaved "
               "--global-batch 16 --db " + db() + " --json");
  ASSERT_EQ(p.code, 0) << p.err;
  const auto plan = nlohmann::json::parse(p.out);
  const int stages = plan["pp"], micro = plan["num_micro_batches"], v = plan["virtual_stages"];
  ASSERT_EQ(stages, 4);
  ASSERT_GT(v, 1);
  ASSERT_EQ(micro % stages, 0);
  auto r = run("report --db " + db() + " --plan latest --out " + path("i.html"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = slurp(path("i.html"));
  EXPECT_EQ(count(html, "class=\"pass-fwd\""), static_cast<size_t>(stages * micro * v));
  EXPECT_EQ(count(html, "class=\"pass-bwd\""), static_cast<size_t>(stages * micro * v));
  EXPECT_NE(html.find("chunk " + std::to_string(v - 1) + ":"), std::string::npos);
  EXPECT_EQ(html.find("lacks"), std::string::npos) << "nothing is missing from the plan JSON";
  char predicted[32];
  std::snprintf(predicted, sizeof predicted, "%.2f", plan["time_breakdown"]["pipeline_s"].get<double>() * 1e3);
  EXPECT_NE(html.find(std::string(predicted) + " ms drawn, " + predicted + " ms predicted by the planner"),
            std::string::npos)
      << predicted;
}

// A box per stage, micro-batch and pass drew millions of boxes for a huge global batch (minutes, then no report): the
// timeline draws an iteration of a few micro-batches and says how many the plan has.
TEST_F(Report, APlanOfManyMicroBatchesDrawsAShorterIterationAndSaysSo) {
  auto p = run("plan --model gpt:layers=8,hidden=1024,heads=16 --cluster dgx-h100:1 --fix pp=2,tp=1,dp=4,mbs=1 "
               "--global-batch 4096 --db " + db() + " --json");
  ASSERT_EQ(p.code, 0) << p.err;
  const auto plan = nlohmann::json::parse(p.out);
  ASSERT_EQ(plan["num_micro_batches"], 1024);
  auto r = run("report --db " + db() + " --plan latest --out " + path("m.html"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = slurp(path("m.html"));
  EXPECT_EQ(count(html, "class=\"pass-fwd\""), 2u * 32);
  EXPECT_EQ(count(html, "class=\"pass-bwd\""), 2u * 32);
  EXPECT_NE(html.find("Pipeline of an iteration of 32 micro-batches (the plan has 1024)"), std::string::npos);
  EXPECT_NE(html.find("ms predicted by the planner for 1024 micro-batches; drawn: an iteration of 32 ("),
            std::string::npos);
}

TEST_F(Report, BadInputExitsTwoWithOneLine) {
  tune_two_sessions();
  const std::string out = " --out " + path("x.html");
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"report --db " + path("missing.db") + out, "does not exist"},
      {"report --db " + db() + " --op gemm --shape M=7,N=7,K=7" + out, "no records match"},
      {"report --db " + db() + " --op conv9" + out, "conv9"},
      {"report --db " + db() + " --dtype f64" + out, "f64"},
      {"report --db " + db() + " --plan abc" + out, "--plan 'abc'"},
      {"report --db " + db() + " --plan 0" + out, "--plan '0'"},
      {"report --db " + db() + " --plan latest" + out, "no plans are logged"},
      {"report --db " + db(), "out"},
      {"report --db " + db() + " --out " + dir_.string(), "is a directory"},
      {"report --db " + db() + " --svg-dir " + path("x.html.file") + out, "--svg-dir '" + path("x.html.file") + "' is a file"},
  };
  std::ofstream(path("x.html.file")) << "not a folder";
  for (const auto& c : cases) {
    auto r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(count(r.err, "\n"), 1u) << c.args << "\n" << r.err;
  }
  auto p = run("plan --model gpt:layers=8,hidden=1024,heads=16 --cluster dgx-h100:1 --db " + db());
  ASSERT_EQ(p.code, 0) << p.err;
  auto r = run("report --db " + db() + " --plan 9" + out);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--plan 9 is not logged"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("x.html")));
  // A missing --svg-dir is made (it was refused as "not a folder").
  ASSERT_EQ(run("tune --op gemm --shape M=64,N=64,K=64 --device sim:h100-sxm --trials 2 --quiet --db " + db()).code, 0);
  auto made = run("report --db " + db() + " --op gemm --svg-dir " + path("new/charts") + out);
  EXPECT_EQ(made.code, 0) << made.err;
  EXPECT_TRUE(std::filesystem::is_directory(path("new/charts")));
  EXPECT_FALSE(std::filesystem::is_empty(path("new/charts")));
  // db merge names what it lacks (it said "the option '--other' is required").
  auto merge = run("db merge --db " + db());
  EXPECT_EQ(merge.code, 2);
  EXPECT_NE(merge.err.find("db merge: no database to merge from; allowed: tuner db merge OTHER.db"), std::string::npos)
      << merge.err;
}

}  // namespace
