// --token-file reloaded while serving (server/http/token_source.h): a good file swaps the table, a
// broken one keeps the table in force and says why, an unchanged file is not read again.
#include "server/http/token_source.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace arbiter::server {
namespace {

void Write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::trunc);
  f << text;
}

std::filesystem::path Scratch(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("arbiter-token-source-" + name);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

TEST(TokenSource, ReloadSwapsTheTableAndABrokenFileKeepsTheOldOne) {
  const auto dir = Scratch("reload");
  const auto file = dir / "tokens.csv";
  Write(file, "a-token,alice,1\n");
  auto src = TokenSource::Load(file.string());
  ASSERT_TRUE(src.ok()) << src.message();
  TokenSource& t = *src.value();
  const auto before = t.Current();
  EXPECT_TRUE(before->by_token.count("a-token"));

  Write(file, "a-token,alice,1\nb-token,bob,2\n");
  ASSERT_TRUE(t.Reload().ok());
  EXPECT_TRUE(t.Current()->by_token.count("b-token"));
  EXPECT_FALSE(before->by_token.count("b-token"));  // a request in flight keeps its table

  Write(file, "a-token,alice,1\nc-token,carol\n");
  const Status bad = t.Reload();
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("found 2 (line 2)"), std::string::npos) << bad.message();
  EXPECT_EQ(bad.message().find("c-token"), std::string::npos) << "no token in a message";
  EXPECT_TRUE(t.Current()->by_token.count("b-token"));
  EXPECT_FALSE(t.Current()->by_token.count("c-token"));

  std::filesystem::remove(file);
  EXPECT_FALSE(t.Reload().ok());
  EXPECT_TRUE(t.Current()->by_token.count("b-token"));
}

TEST(TokenSource, OnlyAChangedFileIsReloaded) {
  const auto dir = Scratch("changed");
  const auto file = dir / "tokens.csv";
  Write(file, "a-token,alice,1\n");
  auto src = TokenSource::Load(file.string());
  ASSERT_TRUE(src.ok()) << src.message();
  TokenSource& t = *src.value();
  EXPECT_FALSE(t.ReloadIfChanged().has_value());

  Write(file, "a-token,alice,1\nb-token,bob,2\n");  // another size
  auto changed = t.ReloadIfChanged();
  ASSERT_TRUE(changed.has_value());
  EXPECT_TRUE(changed->ok());
  EXPECT_TRUE(t.Current()->by_token.count("b-token"));
  EXPECT_FALSE(t.ReloadIfChanged().has_value());

  // A refused file is looked at once, not at every look.
  Write(file, "broken\n");
  auto refused = t.ReloadIfChanged();
  ASSERT_TRUE(refused.has_value());
  EXPECT_FALSE(refused->ok());
  EXPECT_FALSE(t.ReloadIfChanged().has_value());
  EXPECT_TRUE(t.Current()->by_token.count("b-token"));

  // Replaced by rename (another inode), same size and time: seen too.
  const auto next = dir / "next.csv";
  Write(next, "a-token,alice,1\nd-token,dan,22\n");
  std::filesystem::last_write_time(next, std::filesystem::last_write_time(file));
  std::filesystem::rename(next, file);
  auto renamed = t.ReloadIfChanged();
  ASSERT_TRUE(renamed.has_value());
  EXPECT_TRUE(renamed->ok());
  EXPECT_TRUE(t.Current()->by_token.count("d-token"));
}

TEST(TokenSource, AFixedTableHasNoFileToReload) {
  kube::TokenTable table;
  table.by_token["x"] = kube::UserInfo{"x", "1", {}};
  TokenSource t(table);
  EXPECT_TRUE(t.Reload().ok());
  EXPECT_FALSE(t.ReloadIfChanged().has_value());
  EXPECT_TRUE(t.Current()->by_token.count("x"));
}

}  // namespace
}  // namespace arbiter::server
