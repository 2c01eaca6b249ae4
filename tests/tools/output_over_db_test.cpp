// Every flag that writes a file (`export --out`, `report --out`, `plan --out`, `tune --replay-out`) refuses the
// tuning database itself, under any name: `export --out tuning.db` used to replace the database with CSV and exit 0.
// A write that fails (a full disk) leaves the file it would have replaced as it was.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/tools/cli_fixture.h"

namespace {

using tuner_cli_test::Cli;
using tuner_cli_test::slurp;

class OutputOverDb : public Cli {};

TEST_F(OutputOverDb, EveryOutputFlagRefusesTheDatabaseUnderAnyName) {
  const auto t = run("tune --op softmax --shape rows=64,cols=256 --dtype f16 --device sim:h100-sxm --trials 4 --quiet "
                     "--db " + db());
  ASSERT_EQ(t.code, 0) << t.err;
  std::filesystem::create_directories(dir_ / "sub");
  std::filesystem::create_symlink(db(), dir_ / "link.db");
  const std::string before = slurp(db());
  const std::string other_name = (dir_ / "sub" / ".." / "t.db").string(), link = (dir_ / "link.db").string();
  for (const std::string& out : {db(), other_name, link, db() + "-wal"}) {
    for (const std::string& cmd :
         {"export --format csv --db " + db() + " --out " + out, "report --db " + db() + " --out " + out,
          "plan --model gpt3-1.3b --cluster dgx-h100:1 --export megatron --db " + db() + " --out " + out,
          "tune --op softmax --shape rows=64,cols=256 --dtype f16 --device sim:h100-sxm --trials all --quiet --db " +
              db() + " --replay-out " + out}) {
      const auto r = run(cmd);
      EXPECT_EQ(r.code, 2) << cmd << "\n" << r.err;
      EXPECT_NE(r.err.find("the tuning database (--db " + db() + ")"), std::string::npos) << cmd << "\n" << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    }
  }
  EXPECT_EQ(slurp(db()), before);
  EXPECT_EQ(run("query --db " + db() + " --json").code, 0);
  // Another file beside it is still written.
  EXPECT_EQ(run("export --format csv --db " + db() + " --out " + (dir_ / "t.csv").string()).code, 0);
}

// `--replay-out` over the recording `--device replay:` reads replaced a 3,607-config recording by 16 configs.
TEST_F(OutputOverDb, AReplayOutIsNotTheRecordingItReplays) {
  const std::string rec = (dir_ / "rec.json").string();
  std::filesystem::copy_file(std::string(TUNER_SOURCE_DIR) + "/data/replay/softmax_f16_rows4096_cols32768_h100_2026-11-26.json",
                             rec);
  const std::string before = slurp(rec);
  for (const std::string& out : {rec, (dir_ / "." / "rec.json").string()}) {
    const auto r = run("tune --op softmax --shape rows=4096,cols=32768 --dtype f16 --device replay:" + rec +
                       " --trials 4 --quiet --db " + db() + " --replay-out " + out);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find("is the recording --device replay:" + rec + " replays"), std::string::npos) << r.err;
  }
  EXPECT_EQ(slurp(rec), before);
  EXPECT_EQ(run("tune --op softmax --shape rows=4096,cols=32768 --dtype f16 --device replay:" + rec +
                " --trials 4 --quiet --db " + db() + " --replay-out " + (dir_ / "other.json").string()).code, 0);
}

// On a full disk `export --out FILE` replaced a good FILE with the first 40 KB of the new one. A file-size limit
// (ulimit -f, SIGXFSZ ignored) makes the write fail the same way: exit 1, FILE as it was, no temporary left.
TEST_F(OutputOverDb, AWriteThatFailsLeavesTheFileAsItWas) {
  ASSERT_EQ(run("tune --op softmax --shape rows=64,cols=256 --dtype f16 --device sim:h100-sxm --trials 96 --quiet --db " +
                db()).code, 0);
  const std::string keep = (dir_ / "keep.jsonl").string();
  std::ofstream(keep) << "good\n";
  // 100 blocks of 512 bytes: room for SQLite's 32 KB -shm, not for the 90 KB export.
  const std::string cmd = "sh -c 'ulimit -f 100; trap \"\" XFSZ; exec " + std::string(TUNER_BIN) +
                          " export --format jsonl --db " + db() + " --out " + keep + "' 2>" + (dir_ / "err").string();
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1) << slurp((dir_ / "err").string());
  EXPECT_NE(slurp((dir_ / "err").string()).find("the file is as it was"), std::string::npos);
  EXPECT_EQ(slurp(keep), "good\n");
  for (const auto& e : std::filesystem::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find("keep.jsonl.tmp"), std::string::npos) << "left behind: " << e.path();
  // Without the limit it is written whole.
  ASSERT_EQ(run("export --format jsonl --db " + db() + " --out " + keep).code, 0);
  EXPECT_GT(slurp(keep).size(), 51200u);
  // What is not a regular file is written in place: /dev/null stays the device (a rename over it, as root, replaced
  // it with a regular file), and a link's target is written, the link kept.
  ASSERT_EQ(run("export --format csv --db " + db() + " --out /dev/null").code, 0);
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  std::filesystem::create_symlink(keep, dir_ / "link.jsonl");
  ASSERT_EQ(run("export --format csv --db " + db() + " --out " + (dir_ / "link.jsonl").string()).code, 0);
  EXPECT_TRUE(std::filesystem::is_symlink(dir_ / "link.jsonl"));
  EXPECT_EQ(slurp(keep).rfind("op,", 0), 0u) << "the link's target holds the CSV";
}

// Another tuning database (a link to one, or one named by mistake) is not an output either: `--replay-out` replaced
// one with replay JSON (a user test, stop 44).
TEST_F(OutputOverDb, AnotherDatabaseIsRefusedToo) {
  const std::string tune = "tune --op softmax --shape rows=64,cols=256 --dtype f16 --device sim:h100-sxm --quiet ";
  const std::string other = (dir_ / "other.db").string();
  ASSERT_EQ(run(tune + "--trials 4 --db " + other).code, 0);
  ASSERT_EQ(run(tune + "--trials 4 --db " + db()).code, 0);
  std::filesystem::create_symlink(other, dir_ / "blink.db");
  const std::string before = slurp(other);
  for (const std::string& cmd : {tune + "--trials all --db " + db() + " --replay-out " + (dir_ / "blink.db").string(),
                                 "export --format csv --db " + db() + " --out " + other,
                                 "report --db " + db() + " --out " + other}) {
    const auto r = run(cmd);
    EXPECT_EQ(r.code, 2) << cmd << "\n" << r.err;
    EXPECT_NE(r.err.find("is an SQLite database (another tuning database?)"), std::string::npos) << r.err;
  }
  EXPECT_EQ(slurp(other), before);
  // Nor a file SQLite keeps beside one: its -wal may hold commits not yet in it.
  const auto wal = run("export --format csv --db " + db() + " --out " + other + "-wal");
  EXPECT_EQ(wal.code, 2);
  EXPECT_NE(wal.err.find("is a file SQLite keeps beside the database '" + other + "'"), std::string::npos) << wal.err;
  EXPECT_FALSE(std::filesystem::exists(other + "-wal"));
  // Nor through a link to one (a link is written through).
  std::ofstream(other + "-wal") << "commits";
  std::filesystem::create_symlink(other + "-wal", dir_ / "latest.jsonl");
  const auto linked = run("export --format jsonl --db " + db() + " --out " + (dir_ / "latest.jsonl").string());
  EXPECT_EQ(linked.code, 2);
  EXPECT_NE(linked.err.find("is a link to a file SQLite keeps beside the database"), std::string::npos) << linked.err;
  EXPECT_EQ(slurp(other + "-wal"), "commits");
  std::filesystem::remove(other + "-wal");
}

// A write-protected database is read without leaving files beside it (a read-only connection left a -shm and -wal
// with the file's mode, and once the file was writable again, every writer failed with SQLite's "attempt to write a
// readonly database"); such a -shm, and a folder a writer cannot create them in, are named (a user test, stop 44).
// As an unprivileged user: root writes anything.
TEST_F(OutputOverDb, AWriteProtectedDatabaseIsReadCleanlyAndUnwritableCompanionsAreNamed) {
  namespace fs = std::filesystem;
  if (::getuid() == 0 && std::system("command -v setpriv > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "running as root without setpriv (util-linux): no unprivileged user to run as";
  const std::string as_user = ::getuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
  const std::string tune = "tune --op softmax --shape rows=64,cols=256 --dtype f16 --device sim:h100-sxm --quiet ";
  ASSERT_EQ(run(tune + "--trials 4 --db " + db()).code, 0);
  fs::permissions(dir_, fs::perms::all);
  const auto as = [&](const std::string& args) {
    const std::string err = (dir_ / "err").string();
    const int status = std::system((as_user + TUNER_BIN + " " + args + " > /dev/null 2>" + err).c_str());
    return std::pair{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(err)};
  };
  const auto rw = fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::group_write |
                  fs::perms::others_read | fs::perms::others_write;
  const auto ro = fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read;
  fs::permissions(db(), ro);
  const auto [qc, qerr] = as("query --db " + db());
  EXPECT_EQ(qc, 0) << qerr;
  EXPECT_FALSE(fs::exists(db() + "-shm"));
  EXPECT_FALSE(fs::exists(db() + "-wal"));
  // A stale -shm (no -wal: nobody connected) does not turn the read into one that leaves a -wal.
  std::ofstream(db() + "-shm") << "";
  fs::permissions(db() + "-shm", ro);
  EXPECT_EQ(as("query --db " + db()).first, 0);
  EXPECT_FALSE(fs::exists(db() + "-wal"));
  fs::remove(db() + "-shm");
  fs::permissions(db(), rw);
  const auto [tc, terr] = as(tune + "--trials 6 --db " + db());
  EXPECT_EQ(tc, 0) << "writable again, the database takes a writer: " << terr;
  // A -shm write-protected by another program's read is named, with what to do.
  std::ofstream(db() + "-shm") << "";
  fs::permissions(db() + "-shm", ro);
  const auto [sc, serr] = as(tune + "--trials 8 --db " + db());
  EXPECT_EQ(sc, 2);
  EXPECT_NE(serr.find("its '" + db() + "-shm' file is write-protected"), std::string::npos) << serr;
  fs::remove(db() + "-shm");
  // A writable database in a folder the user cannot write: named, and still readable.
  const fs::path locked = dir_ / "locked";
  fs::create_directories(locked);
  fs::copy_file(db(), locked / "t.db");
  fs::permissions(locked / "t.db", rw);
  const auto read_exec = fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                         fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec;
  fs::permissions(locked, read_exec);  // nobody writes it, its owner neither (the test may run as one)
  const auto [lc, lerr] = as(tune + "--trials 8 --db " + (locked / "t.db").string());
  EXPECT_EQ(lc, 2);
  EXPECT_NE(lerr.find("is not writable, and a writer keeps its -wal and -shm files beside the database"),
            std::string::npos) << lerr;
  EXPECT_EQ(as("query --db " + (locked / "t.db").string()).first, 0);
  // Through a link in that folder to a database in a writable one: SQLite keeps its files beside the target, and
  // the writer runs (the check looked beside the link and refused).
  fs::create_symlink(db(), locked / "link.db");
  fs::permissions(locked, fs::perms::owner_all);  // to make the link, then locked again
  fs::permissions(locked, read_exec);
  const auto [kc, kerr] = as(tune + "--trials 8 --db " + (locked / "link.db").string());
  EXPECT_EQ(kc, 0) << kerr;
  const auto [nc, nerr] = as(tune + "--trials 8 --db " + (locked / "new.db").string());
  EXPECT_EQ(nc, 2);
  EXPECT_NE(nerr.find("cannot be created: its folder"), std::string::npos) << nerr;
  // A link there to a database not yet made in a writable folder: SQLite creates it at the target, and tune runs.
  fs::permissions(locked, fs::perms::owner_all);
  fs::create_symlink(dir_ / "made.db", locked / "dangling.db");
  fs::permissions(locked, read_exec);
  const auto [dc, derr] = as(tune + "--trials 4 --db " + (locked / "dangling.db").string());
  EXPECT_EQ(dc, 0) << derr;
  EXPECT_TRUE(fs::exists(dir_ / "made.db"));
  fs::permissions(locked, fs::perms::owner_all);
  // A -wal another user's writer left, holding commits: not to be deleted, said so.
  fs::permissions(db(), rw);
  std::ofstream(db() + "-wal") << std::string(4096, 'w');
  fs::permissions(db() + "-wal", ro);
  const auto [wc, werr] = as(tune + "--trials 10 --db " + db());
  EXPECT_EQ(wc, 2);
  EXPECT_NE(werr.find("holds commits not yet in the database file"), std::string::npos) << werr;
  EXPECT_EQ(werr.find("delete it"), std::string::npos) << werr;
  fs::remove(db() + "-wal");
}

// `export --out` and `report --out` replaced a file the user may not write (a read-only file, another user's) by
// renaming a temporary over it, wherever the folder was writable. Run as an unprivileged user (root writes anything),
// both now exit 2 naming the file, and it is as it was.
TEST_F(OutputOverDb, AFileTheUserMayNotWriteIsRefusedNotReplaced) {
  ASSERT_EQ(run("tune --op softmax --shape rows=64,cols=256 --dtype f16 --device sim:h100-sxm --trials 4 --quiet --db " +
                db()).code, 0);
  namespace fs = std::filesystem;
  fs::permissions(dir_, fs::perms::all);  // anyone may create files here, and rename over them
  fs::permissions(db(), fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                            fs::perms::group_write | fs::perms::others_read | fs::perms::others_write);
  if (::getuid() == 0 && std::system("command -v setpriv > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "running as root without setpriv (util-linux): no unprivileged user to run as";
  const std::string as_user = ::getuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
  for (const std::string& cmd : {"export --format best --db " + db() + " --out ", "report --db " + db() + " --out "}) {
    const std::string file = (dir_ / "mine.txt").string();
    fs::remove(file);
    std::ofstream(file) << "keep\n";
    fs::permissions(file, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    const std::string err = (dir_ / "err").string();
    const int status = std::system((as_user + TUNER_BIN + " " + cmd + file + " 2>" + err).c_str());
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 2) << cmd << "\n" << slurp(err);
    EXPECT_NE(slurp(err).find("'" + file + "': Permission denied"), std::string::npos) << slurp(err);
    EXPECT_EQ(slurp(file), "keep\n") << cmd;
    EXPECT_EQ(fs::status(file).permissions() & fs::perms::owner_write, fs::perms::none);
  }
  // A chart folder it may not write is refused before the page is written (the page was written, then exit 2).
  const std::string locked = (dir_ / "locked").string(), page = (dir_ / "page.html").string();
  fs::create_directories(locked);
  fs::permissions(locked, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  if (!as_user.empty() || ::getuid() != 0) {
    const int rs = std::system((as_user + TUNER_BIN + " report --db " + db() + " --out " + page + " --svg-dir " + locked +
                                " 2>" + (dir_ / "err").string()).c_str());
    ASSERT_TRUE(WIFEXITED(rs));
    EXPECT_EQ(WEXITSTATUS(rs), 2) << slurp((dir_ / "err").string());
    EXPECT_NE(slurp((dir_ / "err").string()).find("cannot write in --svg-dir"), std::string::npos);
    EXPECT_FALSE(fs::exists(page)) << "the page was written before the chart folder was refused";
  }
  // A file it may write is still replaced.
  const std::string other = (dir_ / "other.txt").string();
  std::ofstream(other) << "old\n";
  fs::permissions(other, fs::perms::all);
  EXPECT_EQ(std::system((as_user + TUNER_BIN + " export --format best --db " + db() + " --out " + other).c_str()), 0);
  EXPECT_NE(slurp(other), "old\n");
}

}  // namespace
