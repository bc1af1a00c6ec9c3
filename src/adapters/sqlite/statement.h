// The one SQLite wrapper (the ledger's, the daemon's journal): a prepared statement that is
// finalized with its scope, and a transaction that rolls back unless committed. Every result is
// looked at: a statement that did not prepare says why (error()), Run() answers the step's error.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace arbiter::sqlite {

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr);
    if (rc_ != SQLITE_OK) error_ = std::string(sqlite3_errmsg(db)) + " (" + sql + ")";
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool ok() const { return rc_ == SQLITE_OK; }
  // Why it did not prepare ("" when it did).
  const std::string& error() const { return error_; }
  sqlite3_stmt* get() { return s_; }
  void Reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  void Text(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  // Binds without a copy: `v` must outlive the step.
  void TextRef(int i, std::string_view v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }
  void BlobRef(int i, std::string_view v) {
    sqlite3_bind_blob(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }
  void Int(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  int Step() { return sqlite3_step(s_); }
  // A step that must finish (an INSERT, UPDATE, DELETE): its error, with `what` in front.
  Status Run(const std::string& what) {
    if (!ok()) return Status::Error(what + ": " + error_);
    if (Step() != SQLITE_DONE) return Status::Error(what + ": " + sqlite3_errmsg(db_));
    return Status::Ok();
  }
  std::string ColText(int i) {
    const unsigned char* t = sqlite3_column_text(s_, i);
    return t ? std::string(reinterpret_cast<const char*>(t),
                           static_cast<size_t>(sqlite3_column_bytes(s_, i)))
             : std::string();
  }
  std::string ColBlob(int i) {
    const void* p = sqlite3_column_blob(s_, i);
    return p ? std::string(static_cast<const char*>(p),
                           static_cast<size_t>(sqlite3_column_bytes(s_, i)))
             : std::string();
  }
  int64_t ColInt(int i) { return sqlite3_column_int64(s_, i); }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
  int rc_;
  std::string error_;
};

// BEGIN IMMEDIATE ... COMMIT; rolled back when it goes out of scope uncommitted. `who` names the
// store in errors ("ledger: commit: disk I/O error").
class Txn {
 public:
  Txn(sqlite3* db, std::string who) : db_(db), who_(std::move(who)) {
    rc_ = sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
  }
  ~Txn() {
    if (rc_ == SQLITE_OK && !done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;

  bool ok() const { return rc_ == SQLITE_OK; }
  // Why BEGIN failed.
  Status status() const {
    return ok() ? Status::Ok() : Status::Error(who_ + ": begin: " + sqlite3_errstr(rc_));
  }
  Status Commit() {
    done_ = true;
    if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
      Status s = Status::Error(who_ + ": commit: " + sqlite3_errmsg(db_));
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return s;
    }
    return Status::Ok();
  }

 private:
  sqlite3* db_;
  std::string who_;
  int rc_;
  bool done_ = false;
};

}  // namespace arbiter::sqlite
