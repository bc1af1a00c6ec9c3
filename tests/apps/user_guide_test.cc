// Runs every `$ arbiter ...` example of docs/user-guide.md and checks its output, so the guide
// stays true. Commands run in a scratch directory holding links to examples/, data/, docs/ and
// tests/; a command must exit 0 unless its line ends with `# exit N`; every following line other
// than `...` must appear in the command's output (stdout and stderr).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

namespace fs = std::filesystem;

struct Example {
  int line = 0;
  std::string command;
  int exit_code = 0;
  std::vector<std::string> expect;
};

std::string Trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::vector<Example> ParseGuide(const fs::path& path) {
  std::ifstream f(path);
  std::vector<Example> out;
  std::string line;
  bool in_console = false;
  int n = 0;
  while (std::getline(f, line)) {
    ++n;
    if (line.rfind("```", 0) == 0) {
      in_console = !in_console && line.rfind("```console", 0) == 0;
      continue;
    }
    if (!in_console) continue;
    if (line.rfind("$ ", 0) == 0) {
      Example e;
      e.line = n;
      std::string cmd = line.substr(2);
      auto hash = cmd.find("# exit ");
      if (hash != std::string::npos) {
        e.exit_code = std::stoi(cmd.substr(hash + 7));
        cmd = cmd.substr(0, hash);
      }
      e.command = Trim(cmd);
      out.push_back(e);
    } else if (!out.empty() && Trim(line) != "..." && !Trim(line).empty()) {
      out.back().expect.push_back(Trim(line));
    }
  }
  return out;
}

TEST(UserGuide, EveryExampleRunsAsWritten) {
  const fs::path src = ARBITER_SOURCE_DIR;
  auto examples = ParseGuide(src / "docs" / "user-guide.md");
  ASSERT_GE(examples.size(), 8u) << "the guide lost its examples";
  const fs::path dir = fs::temp_directory_path() / ("arbiter_guide_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* d : {"examples", "data", "docs", "tests"})
    fs::create_directory_symlink(src / d, dir / d);
  for (const auto& e : examples) {
    SCOPED_TRACE("docs/user-guide.md:" + std::to_string(e.line) + ": $ " + e.command);
    ASSERT_EQ(e.command.rfind("arbiter ", 0), 0u) << "examples must run arbiter";
    const std::string cmd =
        "cd '" + dir.string() + "' && " + ARBITER_BINARY + e.command.substr(7) + " > out.txt 2>&1";
    int rc = std::system(cmd.c_str());
    int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    std::ifstream f(dir / "out.txt");
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string output = ss.str();
    EXPECT_EQ(code, e.exit_code) << output;
    for (const auto& want : e.expect)
      EXPECT_NE(output.find(want), std::string::npos) << "missing: " << want << "\noutput:\n"
                                                      << output;
  }
  fs::remove_all(dir);
}

}  // namespace
