// The dashboard's history on disk, so that the charts survive a restart of the daemon:
// DIR/history.db (SQLite, WAL) in the daemon's data directory, next to its journal, one row per
// sample the ring kept (its seq, time and the sample as JSON), at most the ring's capacity (the
// oldest rows are deleted as new ones come). The sampler (sampler.h) reads it once at start and
// writes it in batches; not the journal: losing it loses only the charts' past (a crash loses
// the batch not yet written).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "server/dashboard/history.h"

struct sqlite3;

namespace arbiter::server::dashboard {

// A sample as JSON and back ({"v": 1, seq, time, pool, tenants}); kInvalidArgument for anything
// else.
Json SampleToJson(const Sample& s);
Result<Sample> SampleFromJson(const Json& j);

class HistoryStore {
 public:
  // Opens (creating) DIR/history.db, keeping at most `capacity` samples. DIR is made 0700 if it
  // is not there, history.db and its -wal and -shm 0600 (durability/owner_only.h). Fails when
  // one of those is a symbolic link or a hard link (OpenOwnerOnlyDb).
  static Result<std::unique_ptr<HistoryStore>> Open(const std::string& dir, size_t capacity);
  ~HistoryStore();
  HistoryStore(const HistoryStore&) = delete;
  HistoryStore& operator=(const HistoryStore&) = delete;

  const std::string& path() const { return path_; }
  // What Open left as it was, for the log: history.db or its -wal or -shm another user's, or
  // not to be made 0600.
  const std::vector<std::string>& warnings() const { return warnings_; }
  // The newest `capacity` samples, oldest first. A row that does not decode is skipped.
  Result<std::vector<Sample>> Load();
  // Writes `batch` (ascending seq) in one transaction and deletes the rows beyond capacity.
  Status Write(const std::vector<Sample>& batch);

 private:
  HistoryStore(sqlite3* db, std::string path, size_t capacity)
      : db_(db), path_(std::move(path)), capacity_(capacity) {}
  Status Exec(const char* sql);

  sqlite3* db_;
  std::string path_;
  size_t capacity_;
  std::vector<std::string> warnings_;
};

}  // namespace arbiter::server::dashboard
