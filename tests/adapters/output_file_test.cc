// io::DroppingFileBuf: every byte reaches the file in order (small puts, puts larger than the
// buffer, across windows) and failures are reported. That the windows leave the page cache is not
// tested here: a mincore() check found the first window still resident in the test (not yet
// understood), so it is shown only by the 1M run's system time (bench/large_sim.sh).
#include "adapters/io/output_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace arbiter::io {
namespace output_file_test {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("arbiter-output-file-" + std::to_string(getpid()) + "-" + name))
      .string();
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(DroppingFileBuf, WritesEveryByteInOrder) {
  const std::string path = TempPath("order");
  std::string expected;
  {
    DroppingFileBuf buf;
    ASSERT_TRUE(buf.Open(path, /*buffer=*/16, /*window=*/64));
    std::ostream out(&buf);
    for (int i = 0; i < 500; ++i) {
      const std::string piece = i % 7 == 0
                                    ? std::string(40 + i % 13, static_cast<char>('a' + i % 26))
                                    : std::to_string(i) + ",";
      out << piece;
      expected += piece;
      if (i % 50 == 0) {
        out.put('\n');
        expected += '\n';
      }
    }
    out.flush();
    EXPECT_TRUE(out.good());
    EXPECT_TRUE(buf.Close());
  }
  EXPECT_EQ(ReadAll(path), expected);
  std::filesystem::remove(path);
}

TEST(DroppingFileBuf, ReportsFailures) {
  DroppingFileBuf missing;
  EXPECT_FALSE(missing.Open(TempPath("no-such-dir") + "/report.json"));
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  DroppingFileBuf full;
  ASSERT_TRUE(full.Open("/dev/full", 16, 64));
  std::ostream out(&full);
  out << std::string(100, 'x');
  EXPECT_FALSE(full.Close());
}

}  // namespace output_file_test
}  // namespace arbiter::io
