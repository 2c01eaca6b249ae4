// A standalone driver for the fuzz targets of tests/fuzz/ when libFuzzer is not there (gcc builds).
//
// It takes libFuzzer's flag syntax, so scripts run either engine the same way:
//
//   <target>_fuzz [-runs=N] [-seed=S] [-dict=FILE] [-timeout=SEC] [-rss_limit_mb=MB] [-max_len=BYTES]
//                 [-artifact_prefix=DIR/] CORPUS_DIR_OR_FILE...
//
// With a corpus directory it first runs every file in it, then N mutants (default 1000), each made
// from a corpus input by 1..8 stacked mutations: bit flips, byte sets and inserts, deletes, chunk
// copies, splices with another corpus input, dictionary tokens (libFuzzer/AFL .dict syntax,
// `name="value"` or `"value"`) and interesting numbers put in place of digits. The same seed gives
// the same mutants. With only files as arguments it runs each once (to reproduce a failure).
//
// There is no coverage feedback: this is a deterministic random tester over a seeded corpus, good
// for finding what a parser fails on near inputs people write; libFuzzer (TUNER_FUZZ_ENGINE=libfuzzer,
// clang) explores deeper. A failure (a crash, an abort from the target, a sanitizer report, an input
// running longer than -timeout or memory over -rss_limit_mb) writes the input to
// <artifact_prefix>{crash,timeout,oom}-<target>-<hash> and exits non-zero.
#include <signal.h>
#include <unistd.h>
#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));
// Sanitizer runtimes call this before they exit on a report; absent without sanitizers.
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

// A UBSan report aborts (SIGABRT reaches on_signal, which saves the input); the environment's
// UBSAN_OPTIONS / ASAN_OPTIONS still override these per key.
extern "C" const char* __ubsan_default_options() { return "halt_on_error=1:abort_on_error=1:print_stacktrace=1"; }
extern "C" const char* __asan_default_options() { return "halt_on_error=1"; }

namespace {

using Bytes = std::vector<uint8_t>;

struct Options {
  long long runs = 1000;
  uint64_t seed = 1;
  std::string dict;
  double timeout_s = 10;
  long long rss_limit_mb = 2048;
  size_t max_len = 4096;
  std::string artifact_prefix = "./";
  std::vector<std::string> inputs;
};

// The input now running, for the failure handlers (read from signal handlers: plain globals).
const uint8_t* g_data = nullptr;
size_t g_size = 0;
char g_target[128] = "fuzz";
char g_prefix[1024] = "./";
std::atomic<int64_t> g_started_ns{0};  // 0: no input running.
std::atomic<bool> g_dumped{false};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void append(char* buf, size_t cap, const char* s) {
  size_t n = std::strlen(buf);
  while (*s && n + 1 < cap) buf[n++] = *s++;
  buf[n] = 0;
}

// Writes the running input to <prefix><kind>-<target>-<fnv hash>; async-signal-safe.
void dump_input(const char* kind) {
  if (g_dumped.exchange(true)) return;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < g_size; ++i) h = (h ^ g_data[i]) * 1099511628211ull;
  char hex[17];
  for (int i = 15; i >= 0; --i, h >>= 4) hex[i] = "0123456789abcdef"[h & 15];
  hex[16] = 0;
  char path[1400] = "";
  append(path, sizeof path, g_prefix);
  append(path, sizeof path, kind);
  append(path, sizeof path, "-");
  append(path, sizeof path, g_target);
  append(path, sizeof path, "-");
  append(path, sizeof path, hex);
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    size_t off = 0;
    while (off < g_size) {
      const ssize_t w = ::write(fd, g_data + off, g_size - off);
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
    ::close(fd);
  }
  char msg[1600] = "\n==fuzz== ";
  append(msg, sizeof msg, kind);
  append(msg, sizeof msg, ": the failing input is in ");
  append(msg, sizeof msg, path);
  append(msg, sizeof msg, " (run the target with that file to reproduce)\n");
  (void)!::write(2, msg, std::strlen(msg));
}

void on_death() {
  if (g_started_ns.load() != 0) dump_input("crash");
}

void on_signal(int sig) {
  on_death();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

long long rss_mb() {
  std::ifstream f("/proc/self/statm");
  long long pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * (::sysconf(_SC_PAGESIZE) / 1024) / 1024;
}

// Aborts the process when one input runs past the timeout or memory passes the limit. `o` is a
// global: the thread is detached and outlives main's locals.
void watchdog(const Options* o) {
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const int64_t started = g_started_ns.load();
    if (started != 0 && now_ns() - started > static_cast<int64_t>(o->timeout_s * 1e9)) {
      std::fprintf(stderr, "\n==fuzz== timeout: one input ran longer than %g s\n", o->timeout_s);
      dump_input("timeout");
      std::_Exit(70);
    }
    if (o->rss_limit_mb > 0 && rss_mb() > o->rss_limit_mb) {
      std::fprintf(stderr, "\n==fuzz== out of memory: resident set over %lld MB\n", o->rss_limit_mb);
      dump_input("oom");
      std::_Exit(71);
    }
  }
}

bool read_file(const std::filesystem::path& p, Bytes& out) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return false;
  out.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}

// libFuzzer/AFL dictionary: one token per line, `name="value"` or `"value"`, with \\, \" and \xNN escapes.
std::vector<Bytes> read_dict(const std::string& path) {
  std::vector<Bytes> tokens;
  std::ifstream f(path);
  if (!f) {
    std::fprintf(stderr, "fuzz: cannot read dictionary '%s'\n", path.c_str());
    std::exit(2);
  }
  std::string line;
  while (std::getline(f, line)) {
    const size_t open = line.find('"'), close = line.rfind('"');
    if (line.empty() || line[0] == '#' || open == std::string::npos || close <= open) continue;
    Bytes t;
    for (size_t i = open + 1; i < close; ++i) {
      if (line[i] == '\\' && i + 1 < close) {
        if (line[i + 1] == 'x' && i + 3 < close) {
          t.push_back(static_cast<uint8_t>(std::stoi(line.substr(i + 2, 2), nullptr, 16)));
          i += 3;
        } else {
          t.push_back(static_cast<uint8_t>(line[++i]));
        }
      } else {
        t.push_back(static_cast<uint8_t>(line[i]));
      }
    }
    if (!t.empty()) tokens.push_back(std::move(t));
  }
  return tokens;
}

const char* const kNumbers[] = {"0",   "-1",  "1",   "2147483647", "2147483648", "-2147483649", "4294967296",
                                "9223372036854775807", "18446744073709551616", "1180591620717411303424",
                                "1e308", "1e309", "-1e309", "5e-324", "NaN", "0.5", "-0", "1e-7", "65536",
                                "99999999999999999999999999999999"};
const uint8_t kBytes[] = {0, 0xff, 0x7f, 0x80, 0xc3, '"', '\\', ',', '=', ':', '{', '}', '[', ']', '-', '.',
                          '9', 'e', ' ', '\n'};

class Mutator {
 public:
  Mutator(uint64_t seed, const std::vector<Bytes>& corpus, const std::vector<Bytes>& dict, size_t max_len)
      : rng_(seed), corpus_(corpus), dict_(dict), max_len_(max_len) {}

  Bytes next() {
    Bytes b = corpus_.empty() ? Bytes{} : corpus_[pick(corpus_.size())];
    const size_t n = 1 + pick(8);
    for (size_t i = 0; i < n; ++i) mutate(b);
    if (b.size() > max_len_) b.resize(max_len_);
    return b;
  }

 private:
  size_t pick(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  void insert(Bytes& b, const Bytes& what) { b.insert(b.begin() + pick(b.size() + 1), what.begin(), what.end()); }

  void mutate(Bytes& b) {
    switch (pick(10)) {
      case 0:  // flip a bit
        if (!b.empty()) b[pick(b.size())] ^= static_cast<uint8_t>(1u << pick(8));
        break;
      case 1:  // set a byte
        if (!b.empty()) b[pick(b.size())] = pick(2) ? kBytes[pick(sizeof kBytes)] : static_cast<uint8_t>(pick(256));
        break;
      case 2:  // insert bytes
        insert(b, Bytes(1 + pick(4), pick(2) ? kBytes[pick(sizeof kBytes)] : static_cast<uint8_t>(pick(256))));
        break;
      case 3: {  // delete a range
        if (b.empty()) break;
        const size_t at = pick(b.size()), len = 1 + pick(std::min<size_t>(16, b.size() - at));
        b.erase(b.begin() + at, b.begin() + at + len);
        break;
      }
      case 4: {  // copy a chunk elsewhere
        if (b.empty()) break;
        const size_t at = pick(b.size()), len = 1 + pick(std::min<size_t>(32, b.size() - at));
        insert(b, Bytes(b.begin() + at, b.begin() + at + len));
        break;
      }
      case 5: {  // splice: our prefix, another input's suffix
        if (corpus_.empty()) break;
        const Bytes& o = corpus_[pick(corpus_.size())];
        Bytes s(b.begin(), b.begin() + pick(b.size() + 1));
        s.insert(s.end(), o.begin() + pick(o.size() + 1), o.end());
        b = std::move(s);
        break;
      }
      case 6:
      case 7: {  // a dictionary token, inserted or written over
        if (dict_.empty()) break;
        const Bytes& t = dict_[pick(dict_.size())];
        if (pick(2) || b.size() < t.size()) {
          insert(b, t);
        } else {
          std::copy(t.begin(), t.end(), b.begin() + pick(b.size() - t.size() + 1));
        }
        break;
      }
      default: {  // an interesting number in place of a run of digits
        std::vector<size_t> starts;
        for (size_t i = 0; i < b.size(); ++i)
          if (b[i] >= '0' && b[i] <= '9' && (i == 0 || b[i - 1] < '0' || b[i - 1] > '9')) starts.push_back(i);
        const char* num = kNumbers[pick(sizeof kNumbers / sizeof *kNumbers)];
        const Bytes nb(num, num + std::strlen(num));
        if (starts.empty()) {
          insert(b, nb);
          break;
        }
        const size_t at = starts[pick(starts.size())];
        size_t end = at;
        while (end < b.size() && ((b[end] >= '0' && b[end] <= '9') || b[end] == '.' || b[end] == 'e')) ++end;
        b.erase(b.begin() + at, b.begin() + end);
        b.insert(b.begin() + at, nb.begin(), nb.end());
        break;
      }
    }
  }

  std::mt19937_64 rng_;
  const std::vector<Bytes>& corpus_;
  const std::vector<Bytes>& dict_;
  size_t max_len_;
};

void run_one(const Bytes& input) {
  // A copy of exactly the input's size, so a read past its end is a sanitizer report.
  std::unique_ptr<uint8_t[]> copy(new uint8_t[input.size() ? input.size() : 1]);
  if (!input.empty()) std::memcpy(copy.get(), input.data(), input.size());
  g_data = copy.get();
  g_size = input.size();
  g_started_ns.store(now_ns());
  LLVMFuzzerTestOneInput(copy.get(), input.size());
  g_started_ns.store(0);
  g_data = nullptr;
  g_size = 0;
}

bool flag(const std::string& a, const char* name, std::string& value) {
  const std::string p = std::string("-") + name + "=";
  if (a.rfind(p, 0) != 0) return false;
  value = a.substr(p.size());
  return true;
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    std::string v;
    try {
      if (flag(a, "runs", v)) o.runs = std::stoll(v);
      else if (flag(a, "seed", v)) o.seed = std::stoull(v);
      else if (flag(a, "dict", v)) o.dict = v;
      else if (flag(a, "timeout", v)) o.timeout_s = std::stod(v);
      else if (flag(a, "rss_limit_mb", v)) o.rss_limit_mb = std::stoll(v);
      else if (flag(a, "max_len", v)) o.max_len = std::stoull(v);
      else if (flag(a, "artifact_prefix", v)) o.artifact_prefix = v;
      else if (a == "-help" || a == "--help" || a == "-h") {
        std::printf("usage: %s [-runs=N] [-seed=S] [-dict=FILE] [-timeout=SEC] [-rss_limit_mb=MB] [-max_len=BYTES]\n"
                    "       [-artifact_prefix=DIR/] CORPUS_DIR_OR_FILE...\n", argv[0]);
        std::exit(0);
      } else if (!a.empty() && a[0] == '-') {
        std::fprintf(stderr, "fuzz: unknown flag '%s' (this driver takes -runs -seed -dict -timeout "
                             "-rss_limit_mb -max_len -artifact_prefix)\n", a.c_str());
        std::exit(2);
      } else {
        o.inputs.push_back(a);
      }
    } catch (const std::exception&) {
      std::fprintf(stderr, "fuzz: bad value in '%s'\n", a.c_str());
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

static Options g_options;

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  g_options = parse_args(argc, argv);
  const Options& o = g_options;
  {
    std::string name = std::filesystem::path(argv[0]).filename().string();
    if (name.size() > 5 && name.substr(name.size() - 5) == "_fuzz") name.resize(name.size() - 5);
    g_target[0] = 0;
    append(g_target, sizeof g_target, name.c_str());
    g_prefix[0] = 0;
    append(g_prefix, sizeof g_prefix, o.artifact_prefix.c_str());
  }
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(on_death);
  for (int sig : {SIGSEGV, SIGABRT, SIGFPE, SIGILL, SIGBUS}) ::signal(sig, on_signal);
  std::thread(watchdog, &o).detach();

  std::vector<Bytes> corpus;
  std::vector<std::string> names;
  bool any_dir = false;
  for (const auto& in : o.inputs) {
    std::error_code ec;
    if (std::filesystem::is_directory(in, ec)) {
      any_dir = true;
      std::vector<std::filesystem::path> files;
      for (const auto& e : std::filesystem::directory_iterator(in))
        if (e.is_regular_file()) files.push_back(e.path());
      std::sort(files.begin(), files.end());  // directory order is not deterministic
      for (const auto& f : files) {
        Bytes b;
        if (read_file(f, b)) {
          corpus.push_back(std::move(b));
          names.push_back(f.string());
        }
      }
    } else {
      Bytes b;
      if (!read_file(in, b)) {
        std::fprintf(stderr, "fuzz: cannot read '%s'\n", in.c_str());
        return 2;
      }
      corpus.push_back(std::move(b));
      names.push_back(in);
    }
  }
  const std::vector<Bytes> dict = o.dict.empty() ? std::vector<Bytes>{} : read_dict(o.dict);

  const int64_t t0 = now_ns();
  for (size_t i = 0; i < corpus.size(); ++i) {
    if (!any_dir) std::fprintf(stderr, "fuzz: running %s (%zu bytes)\n", names[i].c_str(), corpus[i].size());
    run_one(corpus[i]);
  }
  long long mutants = 0;
  if (any_dir || corpus.empty()) {
    Mutator m(o.seed, corpus, dict, o.max_len);
    for (; mutants < o.runs; ++mutants) run_one(m.next());
  }
  std::fprintf(stderr, "fuzz: %s: %zu corpus inputs, %lld mutants (seed %llu, %zu dictionary tokens) in %.2f s: ok\n",
               g_target, corpus.size(), mutants, static_cast<unsigned long long>(o.seed), dict.size(),
               (now_ns() - t0) / 1e9);
  return 0;
}
