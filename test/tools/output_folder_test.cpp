// The manifest of an output folder (output_folder.h): what tpusim counts as its own, and what as the user's.
#include "tools/src/output_folder.h"

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace tpusim::tools {
namespace {
namespace fs = std::filesystem;

class OutputFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tpusim-output-folder-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  static void put(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
  }
  static std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  fs::path dir_;
};

TEST_F(OutputFolderTest, ACommittedFolderListsEveryFileAtItsSizeAndChecksum) {
  const fs::path out = dir_ / "o";
  {
    OutputFolder folder(out, "run");
    put(folder.file("a.csv"), "12345");
    put(folder.file("sub") / "b.json", "{}\n");
    folder.commit();
  }
  // The 64-bit FNV-1a of "{}\n" and of "12345".
  EXPECT_EQ(slurp(out / kOutputManifest),
            "3 fnv1a64:c735ad1983dc7ddd\tsub/b.json\n5 fnv1a64:e575e8883c0f89f8\ta.csv\n");
  EXPECT_NE(slurp(out / kOutputMarker).find("\nmanifest: 2\n"), std::string::npos);
  EXPECT_FALSE(fs::exists(out / OutputFolder::kStagingNote)) << "the staging note goes at the swap";
  EXPECT_TRUE(foreign_files(out).empty());
  EXPECT_EQ(check_output_folder(out, "run"), fs::weakly_canonical(out));
}

TEST_F(OutputFolderTest, UnlistedChangedAndLinkedFilesAreTheUsers) {
  const fs::path out = dir_ / "o";
  {
    OutputFolder folder(out, "run");
    put(folder.file("a.csv"), "12345");
    put(folder.file("e.csv"), "123");
    put(folder.file("s.csv"), "abc");
    folder.commit();
  }
  put(out / "notes.txt", "mine");  // not listed
  put(out / "a.csv", "123456");    // listed at 5 bytes, now 6: edited
  put(out / "s.csv", "abd");       // the same size, another content: edited
  put(out / "e.csv", "");          // listed, now empty: cut short by a crash, still tpusim's
  fs::create_symlink(out / "a.csv", out / "link");
  put(out / ".x.partial-123", "staging of a killed run");  // tpusim's leftover, not the user's
  EXPECT_EQ(foreign_files(out), (std::vector<std::string>{"a.csv", "link", "notes.txt", "s.csv"}));
  EXPECT_THROW((void)check_output_folder(out, "run"), OutputRefused);
}

TEST_F(OutputFolderTest, AnEditThatKeepsTheSizeIsRefusedNamingTheFile) {
  const fs::path out = dir_ / "o";
  {
    OutputFolder folder(out, "run");
    put(folder.file("summary.json"), "{\"seed\": 1}\n");
    folder.commit();
  }
  put(out / "summary.json", "{\"seed\": 7}\n");
  try {
    (void)check_output_folder(out, "run");
    FAIL() << "a same-size edit was not noticed";
  } catch (const OutputRefused& e) {
    EXPECT_NE(std::string(e.what()).find("holds 1 file tpusim did not write (or changed since):\n  summary.json"),
              std::string::npos)
        << e.what();
  }
  put(out / "summary.json", "{\"seed\": 1}\n");  // as tpusim wrote it again
  EXPECT_NO_THROW((void)check_output_folder(out, "run"));
}

TEST_F(OutputFolderTest, AnOlderTpusimsManifestOfSizesIsJudgedBySizeOnlyInItsOwnFolder) {
  // A marker without "manifest: 2": a tpusim before checksums wrote the folder; its sizes are all it said.
  put(dir_ / "old" / kOutputMarker, "This folder was written by tpusim.\nkind: run\n");
  put(dir_ / "old" / kOutputManifest, "3\tsummary.json\n5\ta.csv\n");
  put(dir_ / "old" / "summary.json", "{}\n");
  put(dir_ / "old" / "a.csv", "123456");
  EXPECT_EQ(foreign_files(dir_ / "old"), std::vector<std::string>{"a.csv"});
  // In a folder this tpusim made, a line without a checksum lists nothing (but an empty file: a crash's).
  const fs::path sw = claim_output_folder(dir_ / "sw", "sweep");
  put(sw / kOutputManifest, "3\tplan.json\n118\tpoints/00001.failed.json\n");
  put(sw / "plan.json", "{}\n");
  put(sw / "points" / "00001.failed.json", "");
  EXPECT_EQ(foreign_files(sw), std::vector<std::string>{"plan.json"});
}

TEST_F(OutputFolderTest, InPlaceWritesAppendToTheManifestAndOnlyTheLastSizeListedCounts) {
  const fs::path out = claim_output_folder(dir_ / "sw", "sweep");
  write_file_atomically(out / "table.csv", [](std::ostream& o) { o << "1,2\n"; });
  write_file_atomically(out / "table.csv", [](std::ostream& o) { o << "1,2,3\n"; });
  record_written(out / "points" / "00000.log", true);  // still being written: any size
  put(out / "points" / "00000.log", "a long log");
  EXPECT_EQ(slurp(out / kOutputManifest),
            "4 fnv1a64:2fc297f10bd801c4\ttable.csv\n6 fnv1a64:519e6ccacb53d107\ttable.csv\n*\tpoints/00000.log\n");
  EXPECT_TRUE(foreign_files(out).empty());
  // Edited back to the size it was first written at (4 bytes): the user's, since tpusim last wrote 6.
  put(out / "table.csv", "9,9\n");
  EXPECT_EQ(foreign_files(out), std::vector<std::string>{"table.csv"});
  put(out / "table.csv", "1,2,3\n");
  // A point's folder, with its own marker, is judged by its own manifest.
  put(out / "points" / "00000" / kOutputMarker, "kind: run\n");
  put(out / "points" / "00000" / "summary.json", "{}");
  EXPECT_EQ(foreign_files(out), std::vector<std::string>{"points/00000/summary.json"});
}

TEST_F(OutputFolderTest, ACompactedManifestListsEachFileOnceAtItsLastSizeInNameOrder) {
  // Points finishing in parallel append in any order; compacted, two such folders hold the same manifest.
  const fs::path a = claim_output_folder(dir_ / "a", "sweep");
  const fs::path b = claim_output_folder(dir_ / "b", "sweep");
  const auto finish = [&](const fs::path& out, const std::vector<std::string>& order) {
    for (const std::string& log : order) {
      record_written(out / log, true);
      put(out / log, "ok\n");
      record_written(out / log);
    }
    write_file_atomically(out / "table.csv", [](std::ostream& o) { o << "1,2\n"; });
  };
  finish(a, {"points/00001.log", "points/00000.log"});
  finish(b, {"points/00000.log", "points/00001.log"});
  EXPECT_NE(slurp(a / kOutputManifest), slurp(b / kOutputManifest));
  compact_manifest(a);
  compact_manifest(b);
  const std::string expected =
      "3 fnv1a64:1a19f91921d9561f\tpoints/00000.log\n3 fnv1a64:1a19f91921d9561f\tpoints/00001.log\n"
      "4 fnv1a64:2fc297f10bd801c4\ttable.csv\n";
  EXPECT_EQ(slurp(a / kOutputManifest), expected);
  EXPECT_EQ(slurp(b / kOutputManifest), expected);
  EXPECT_TRUE(foreign_files(a).empty());
  // Still the last size only: an edit back to an earlier size stays the user's after a compaction.
  put(a / "table.csv", "1,2,3\n");
  record_written(a / "table.csv");
  compact_manifest(a);
  put(a / "table.csv", "9,9\n");
  EXPECT_EQ(foreign_files(a), std::vector<std::string>{"table.csv"});
}

TEST_F(OutputFolderTest, AFolderOfAnotherKindOrWithoutAManifestIsRefused) {
  const fs::path lay = claim_output_folder(dir_ / "lay", "layouts");
  EXPECT_THROW((void)check_output_folder(lay, "sweep"), OutputRefused);
  EXPECT_NO_THROW((void)check_output_folder(lay, "layouts"));
  // An older tpusim's folder: a marker naming no kind, no manifest. Its files are not provably tpusim's.
  put(dir_ / "old" / kOutputMarker, "This folder was written by tpusim.\n");
  EXPECT_NO_THROW((void)check_output_folder(dir_ / "old", "run"));  // empty: nothing to lose
  put(dir_ / "old" / "summary.json", "{}");
  EXPECT_EQ(foreign_files(dir_ / "old"), std::vector<std::string>{"summary.json"});
  EXPECT_THROW((void)check_output_folder(dir_ / "old", "run"), OutputRefused);
}

// A run's folder is replaced whole: a comparison written inside it (`compare r1 r2 -o r1/cmp`) was deleted by
// the next `run -o r1`, its own manifest making it look like part of the run. Now it cannot be written there,
// and one already there (an older tpusim's) makes the run refuse instead of deleting it.
TEST_F(OutputFolderTest, AnOutputInsideARunsFolderIsRefusedAndNeverDeletedWithIt) {
  const fs::path run = dir_ / "r1";
  {
    OutputFolder folder(run, "run");
    put(folder.file("summary.json"), "{}\n");
    folder.commit();
  }
  EXPECT_THROW((void)check_output_folder(run / "cmp", "compare"), OutputRefused);
  EXPECT_THROW((void)check_output_folder(run / "sub" / "r2", "run"), OutputRefused);
  {
    OutputFolder cmp(dir_ / "cmp", "compare");
    put(cmp.file("compare.csv"), "metric\n");
    cmp.commit();
  }
  fs::rename(dir_ / "cmp", run / "cmp");  // as an older tpusim let it be written
  EXPECT_EQ(foreign_files(run), (std::vector<std::string>{"cmp/"}));
  try {
    (void)check_output_folder(run, "run");
    FAIL() << "expected OutputRefused";
  } catch (const OutputRefused& e) {
    EXPECT_NE(std::string(e.what()).find("a comparison (tpusim compare) written inside it separately"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(OutputFolder(run, "run"), OutputRefused);
  EXPECT_TRUE(fs::exists(run / "cmp" / "compare.csv"));
  // A sweep's points are outputs of their own inside it, as before.
  const fs::path sw = claim_output_folder(dir_ / "sw", "sweep");
  EXPECT_EQ(check_output_folder(sw / "points" / "00000", "run"), fs::weakly_canonical(sw / "points" / "00000"));
}

TEST_F(OutputFolderTest, AManifestLineCutShortListsNothing) {
  const fs::path out = claim_output_folder(dir_ / "sw", "sweep");
  put(out / "plan.json", "{}\n");
  put(out / kOutputManifest, "3\tplan.json");  // no newline: the write was cut short
  EXPECT_EQ(foreign_files(out), std::vector<std::string>{"plan.json"});
}

TEST_F(OutputFolderTest, ADrawingIsTpusimsOnlyWithTheChecksumOfWhatItHolds) {
  const std::string svg = sign_drawing("<?xml version=\"1.0\"?>\n<svg>x</svg>\n", true);
  EXPECT_EQ(svg.substr(0, svg.find('\n', 22) + 1).rfind("<?xml version=\"1.0\"?>\n<!-- written by tpusim, ", 0), 0u);
  EXPECT_EQ(signature_of(svg), Signature::valid);
  std::string edited = svg;
  edited.replace(edited.find(">x<"), 3, ">y<");
  EXPECT_EQ(signature_of(edited), Signature::changed);
  EXPECT_EQ(signature_of("<?xml version=\"1.0\"?>\n<!-- written by tpusim -->\n<svg>x</svg>\n"), Signature::none);
  EXPECT_EQ(signature_of(sign_drawing("digraph {}", false)), Signature::valid);
}

TEST_F(OutputFolderTest, AProgramFileIsSignedInAFieldOfItsOwnAndAnEditIsNamed) {
  const std::string program = "{\n  \"format\": \"tpusim-program\",\n  \"version\": 2\n}\n";
  const std::string text = sign_program(program);
  // The second line: the 64-bit FNV-1a of the unsigned text.
  EXPECT_EQ(text, "{\n  \"signature\": \"written by tpusim, checksum fnv1a64 7a79334d69d9c1fd\",\n"
                  "  \"format\": \"tpusim-program\",\n  \"version\": 2\n}\n");
  EXPECT_EQ(signature_of(text), Signature::valid);
  std::string edited = text;
  edited.replace(edited.find("2\n}"), 1, "1");
  EXPECT_EQ(signature_of(edited), Signature::changed);
  EXPECT_EQ(signature_of(program), Signature::none);
  put(dir_ / "p.json", edited);
  try {
    (void)check_output_file(dir_ / "p.json");
    FAIL() << "an edited program file would be replaced";
  } catch (const OutputRefused& e) {
    EXPECT_NE(std::string(e.what()).find("p.json was changed since tpusim wrote it"), std::string::npos) << e.what();
  }
  put(dir_ / "p.json", text);
  EXPECT_NO_THROW((void)check_output_file(dir_ / "p.json"));
}

// A process that exited (reaped): its id names no process any more.
pid_t gone_process() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

// A run into `out` killed while it wrote (a kill -9: no commit, no clean-up): its staging folder stays. It says
// so on `ready`; with `hold` (a pipe), it waits until the pipe closes before it dies. Returns its id, not reaped.
pid_t writer(const fs::path& out, int ready, const int* hold) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  if (hold != nullptr) close(hold[1]);
  std::optional<OutputFolder> folder;
  folder.emplace(out, "run");
  std::ofstream(folder->file("summary.json")) << "{}\n";
  (void)!write(ready, "r", 1);
  char c = 0;
  if (hold != nullptr) (void)!read(hold[0], &c, 1);
  _exit(0);  // no destructor runs
}

TEST_F(OutputFolderTest, AKilledRunsLeftoversGoWithTheNextRunOnlyWhenProvablyTpusimsAndTheirProcessIsGone) {
  const fs::path out = dir_ / "o";
  int ready[2], hold[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(hold), 0);
  char c = 0;
  const pid_t running = writer(out, ready[1], hold);
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  const pid_t killed = writer(out, ready[1], nullptr);  // leaves the running one's staging alone
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  // Ended but not collected (a zombie, as a killed orphan is until init collects it): gone all the same.
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(killed), &info, WEXITED | WNOWAIT), 0);
  const auto leftover = [&](const char* kind, pid_t pid) { return dir_ / fmt::format(".o.{}-{}", kind, pid); };
  ASSERT_TRUE(fs::exists(leftover("partial", killed) / "summary.json"));
  ASSERT_TRUE(fs::exists(leftover("partial", running) / "summary.json"));
  // A finished folder a kill left mid-swap, and look-alikes, each named after a process that is gone.
  const auto finished = [&](const fs::path& where) {
    OutputFolder f(dir_ / "f", "run");
    put(f.file("summary.json"), "{}\n");
    f.commit();
    fs::rename(dir_ / "f", where);
  };
  const fs::path replaced = leftover("old", gone_process());
  finished(replaced);
  const fs::path with_notes = leftover("old", gone_process());  // a finished folder, and a file of the user's
  finished(with_notes);
  put(with_notes / "notes.txt", "mine");
  const fs::path unmarked = leftover("partial", gone_process());  // a user's folder that merely looks like one
  put(unmarked / "mine.txt", "mine");
  const fs::path other_note = leftover("partial", gone_process());  // the note names another process
  fs::copy(leftover("partial", killed), other_note);
  const fs::path a_file = leftover("old", gone_process());
  put(a_file, "a file, not a folder");
  {
    OutputFolder next(out, "run");
    EXPECT_FALSE(fs::exists(leftover("partial", killed)));
    EXPECT_FALSE(fs::exists(replaced));
    // With no `o`, the folder a kill left mid-swap is the output the user last had: back in place, replaced only
    // if this run completes (it does not: no commit).
    EXPECT_EQ(slurp(out / "summary.json"), "{}\n");
    EXPECT_TRUE(fs::exists(leftover("partial", running))) << "its process still runs";
    for (const fs::path& p : {with_notes, unmarked, other_note, a_file}) EXPECT_TRUE(fs::exists(p)) << p;
  }
  int status = 0;
  waitpid(killed, &status, 0);
  close(hold[1]);
  waitpid(running, &status, 0);
  EXPECT_TRUE(fs::exists(out / "summary.json")) << "the run that did not commit left the restored folder";
  OutputFolder after(out, "run");
  EXPECT_FALSE(fs::exists(leftover("partial", running))) << "its process is gone";
}

TEST_F(OutputFolderTest, TwoStudiesCannotHoldTheSamePointsOfAFolderAtOnce) {
  const fs::path f = claim_output_folder(dir_ / "sw", "sweep");
  const std::string marker = slurp(f / kOutputMarker);
  auto refused = [&](const std::function<void()>& take) -> std::string {
    try {
      take();
    } catch (const OutputRefused& e) {
      return e.what();
    }
    return "";
  };
  auto refusal = [&](const std::vector<std::size_t>& points) {
    return refused([&] { const PointsLock lock(f, points); });
  };
  auto every_refusal = [&] { return refused([&] { const PointsLock lock(f, PointsLock::every); }); };
  {
    const PointsLock share0(f, {0, 3, 6});
    const PointsLock share1(f, {1, 4, 7});  // another share of the same array: disjoint, both run
    EXPECT_NE(every_refusal().find("another tpusim is running or collecting points of " + f.string()),
              std::string::npos)
        << "a whole sweep, or --collect, while the shares run";
    EXPECT_NE(refusal({6, 8}).find("point 6 of"), std::string::npos);
    EXPECT_NE(refusal({2, 3, 4}).find("points 2-4 of"), std::string::npos);
    EXPECT_EQ(refusal({2, 5, 8}), "");  // the third share
    EXPECT_EQ(slurp(f / kOutputMarker), marker) << "the marker is locked, never written";
  }
  EXPECT_THROW(PointsLock(f, std::vector<std::size_t>{}), std::invalid_argument) << "no points is not every point";
  EXPECT_EQ(every_refusal(), "") << "released with their holders";
}

}  // namespace
}  // namespace tpusim::tools
