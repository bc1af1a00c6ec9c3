// The main of every test binary (in place of gtest_main): the tests run with TMPDIR set to a
// directory of their own, `$TMPDIR/arbiter-<binary>-XXXXXX`, which is removed when they pass.
// Tests make their scratch files under std::filesystem::temp_directory_path() (which reads
// TMPDIR), and so do the processes they start; without this, every run of the suite left about
// 300 directories (2.6 GB in a day of CI runs) in /tmp. A failing run keeps its directory as
// evidence and says where it is; ARBITER_KEEP_TMP=1 keeps it in any case.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

namespace {

std::string MakeScratchDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/arbiter-" +
                        program_invocation_short_name + "-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    std::fprintf(stderr, "test_main: cannot create a scratch directory %s: %s\n", pattern.c_str(),
                 std::strerror(errno));
    std::exit(2);
  }
  // As /tmp itself (mkdtemp makes it 0700): some tests run commands as another user (a
  // read-only ledger reader), which must reach their files and may make temporary files here.
  chmod(pattern.c_str(), 01777);
  return pattern;
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleMock(&argc, argv);
  const std::string dir = MakeScratchDir();
  setenv("TMPDIR", dir.c_str(), 1);
  const int rc = RUN_ALL_TESTS();
  const char* keep = std::getenv("ARBITER_KEEP_TMP");
  if (rc != 0 || (keep && std::string(keep) == "1")) {
    std::fprintf(stderr, "test_main: scratch files kept in %s\n", dir.c_str());
  } else {
    std::error_code ec;  // a file a stray child still writes: best effort, never a failure
    std::filesystem::remove_all(dir, ec);
  }
  return rc;
}
