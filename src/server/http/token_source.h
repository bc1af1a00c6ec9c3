// The token table of `arbiter serve --token-file F`, reloadable while the daemon serves.
// Reload() re-reads F (adapters/kube/auth.h's parser, the same checks as at start-up) and swaps
// the table atomically: a request holds the table it was authenticated with (Current() is a
// shared pointer), the next one sees the new table. A file that cannot be read or parsed changes
// nothing: the table in force stays, and the Status says why (the daemon logs it).
// ReloadIfChanged() reloads only when F's identity, size or modification time changed since the
// last look (the daemon looks every second; SIGHUP reloads unconditionally). Tokens never appear
// in a message.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "adapters/kube/auth.h"
#include "core/status.h"

namespace arbiter::server {

class TokenSource {
 public:
  // Reads and parses `path` (the messages of io::ReadInputFile and kube::ParseTokenFile).
  static Result<std::shared_ptr<TokenSource>> Load(std::string path);
  // A fixed table (no file; Reload() keeps it).
  explicit TokenSource(kube::TokenTable table);

  std::shared_ptr<const kube::TokenTable> Current() const;
  const std::string& path() const { return path_; }

  // Re-reads the file; on success the new table is in force. On failure the old one stays.
  Status Reload();
  // Reload() if the file changed since the last load or look; nullopt when it did not.
  std::optional<Status> ReloadIfChanged();

 private:
  struct Stamp {
    unsigned long long dev = 0, ino = 0;
    long long size = -1, mtime_ns = -1;
    bool operator==(const Stamp&) const = default;
  };
  static Stamp StampOf(const std::string& path);

  std::string path_;
  mutable std::mutex mu_;
  std::shared_ptr<const kube::TokenTable> table_;
  Stamp stamp_;  // of the file as last looked at (loaded or refused)
};

}  // namespace arbiter::server
