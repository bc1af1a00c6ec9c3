// `arbiter serve --token-file F` (loopback, HTTP) changes its tokens without a restart: on SIGHUP,
// and when F changes; a broken F is refused (logged) and the tokens in force stay. Its request
// log lines name the user, verb, resource, namespace, code and latency, and never a token.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "server/serve_process.h"

namespace arbiter::testing {
namespace {

void Write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::in | std::ios::out | std::ios::trunc);  // in place: same inode
  f << text;
}

const std::string kAdmin = "admin-token-0,admin,1,\"system:masters\"\n";
const std::string kDave = "dave-token-00,dave,4,\"arbiter:editors:default\"\n";
const std::string kCarol = "carol-token-0,carl,5,\"arbiter:editors:default\"\n";  // kDave's size
const std::string kErin = "erin-token-00,erin,6,\"arbiter:viewers:default\"\n";

class ServeTokenReload : public ::testing::Test {
 protected:
  // The HTTP code of GET `path` with `token`.
  std::string Code(const std::string& path, const std::string& token) const {
    return RunCommand("curl -sS -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer " + token +
                      "' '" + serve_->url() + path + "' 2>&1")
        .out;
  }
  // Retries until the code is `want` (up to 30 s); returns the last code.
  std::string CodeUntil(const std::string& path, const std::string& token,
                        const std::string& want) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    std::string got;
    do {
      got = Code(path, token);
      if (got == want) return got;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } while (std::chrono::steady_clock::now() < deadline);
    return got;
  }
  bool LogUntil(const std::string& part) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    do {
      if (serve_->log().find(part) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } while (std::chrono::steady_clock::now() < deadline);
    return false;
  }
  std::unique_ptr<ServeProcess> serve_;
};

TEST_F(ServeTokenReload, SighupAndAChangedFileSwapTheTokensABrokenFileKeepsThem) {
  const auto dir = ScratchDir("token-reload");
  const auto file = dir / "tokens.csv";
  ASSERT_EQ(kDave.size(), kCarol.size());
  Write(file, kAdmin + kDave);
  serve_ =
      std::make_unique<ServeProcess>(dir, std::vector<std::string>{"--token-file", file.string()});
  ASSERT_TRUE(serve_->Start()) << serve_->log();
  const std::string pods = "/api/v1/namespaces/default/pods";
  EXPECT_EQ(Code(pods, "dave-token-00"), "200");
  EXPECT_EQ(Code(pods, "carol-token-0"), "401");

  // SIGHUP: the file rewritten in place with the same size and modification time, so only the
  // signal can make the daemon read it.
  const auto mtime = std::filesystem::last_write_time(file);
  Write(file, kAdmin + kCarol);
  std::filesystem::last_write_time(file, mtime);
  ASSERT_EQ(kill(serve_->pid(), SIGHUP), 0);
  EXPECT_EQ(CodeUntil(pods, "carol-token-0", "200"), "200") << serve_->log();
  EXPECT_EQ(Code(pods, "dave-token-00"), "401");
  EXPECT_TRUE(LogUntil("\"trigger\":\"SIGHUP\"")) << serve_->log();

  // A changed file, no signal.
  Write(file, kAdmin + kCarol + kErin);
  EXPECT_EQ(CodeUntil(pods, "erin-token-00", "200"), "200") << serve_->log();
  EXPECT_TRUE(LogUntil("\"trigger\":\"file changed\"")) << serve_->log();
  // The dashboard shares the table: the new token logs in there too, the removed one does not.
  EXPECT_EQ(Code("/ui/api/whoami", "erin-token-00"), "200");
  EXPECT_EQ(Code("/ui/api/whoami", "dave-token-00"), "401");

  // A broken file: refused and logged; the tokens in force stay.
  Write(file, kAdmin + "frank-token-0,frank\n");
  ASSERT_EQ(kill(serve_->pid(), SIGHUP), 0);
  ASSERT_TRUE(LogUntil("token file refused")) << serve_->log();
  EXPECT_TRUE(LogUntil("found 2 (line 2)")) << serve_->log();
  EXPECT_EQ(Code(pods, "carol-token-0"), "200");
  EXPECT_EQ(Code(pods, "erin-token-00"), "200");
  EXPECT_EQ(Code(pods, "frank-token-0"), "401");
  // erin views default: writing is 403, with her name in the log line.
  EXPECT_EQ(RunCommand("curl -sS -o /dev/null -w '%{http_code}' -X DELETE -H 'Authorization: "
                       "Bearer erin-token-00' '" +
                       serve_->url() + pods + "/x' 2>&1")
                .out,
            "403");
  EXPECT_EQ(serve_->Stop(), 0);

  // The request lines: who, what, the code, the latency; no token anywhere in the log.
  const std::string log = serve_->log();
  for (const char* token :
       {"admin-token-0", "dave-token-00", "carol-token-0", "erin-token-00", "frank-token-0"})
    EXPECT_EQ(log.find(token), std::string::npos) << token << " logged:\n" << log;
  std::istringstream lines(log);
  std::string text;
  int carol_lists = 0, erin_forbidden = 0, unauthenticated = 0;
  while (std::getline(lines, text)) {
    const auto l = nlohmann::json::parse(text, nullptr, false);
    if (l.is_discarded() || l.value("msg", "") != "request") continue;
    EXPECT_TRUE(l.contains("latencyMs") && l["latencyMs"].is_number()) << text;
    if (l["user"] == "carl" && l["status"] == 200) {
      EXPECT_EQ(l["verb"], "list") << text;
      EXPECT_EQ(l["resource"], "pods") << text;
      EXPECT_EQ(l["namespace"], "default") << text;
      ++carol_lists;
    }
    if (l["user"] == "erin" && l["status"] == 403) {
      EXPECT_EQ(l["verb"], "delete") << text;
      EXPECT_EQ(l["name"], "x") << text;
      ++erin_forbidden;
    }
    if (l["user"] == "" && l["status"] == 401) ++unauthenticated;
  }
  EXPECT_GE(carol_lists, 2) << log;
  EXPECT_EQ(erin_forbidden, 1) << log;
  EXPECT_GE(unauthenticated, 3) << log;
}

}  // namespace
}  // namespace arbiter::testing
