// What Cluster::CaptureSnapshot() takes of a cluster under the daemon's lock, and its bytes made
// from it on any thread while the cluster goes on (issue 27: snapshots off the request path).
// The capture costs little per live object: the stored objects are shared (each is immutable and
// makes its wire text thread-safely), the bookkeeping of live pods is copied as plain values, and
// so is the engine's state (Engine::Capture: its records copied, not encoded; the encoding is
// Write's). Bytes() writes exactly what Cluster::Snapshot() wrote before the split (the format of
// cluster_snapshot.cc, docs/serve.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "driver/work_model.h"
#include "server/state/object_store.h"

namespace arbiter::engine {
struct EngineCapture;  // engine.h
}  // namespace arbiter::engine

namespace arbiter::server {

class SnapshotPieces;  // cluster_snapshot.cc

class SnapshotCapture {
 public:
  // The snapshot's bytes, given to `out` in pieces (thread-safe; the cluster it was taken from
  // may change meanwhile): no copy of the whole snapshot is made. False if `out` said false.
  bool Write(const ObjectStore::Saved::Sink& out) const;
  std::string Bytes() const;  // Write() into one string

 private:
  friend class Cluster;
  using Keyed = std::vector<std::pair<uint64_t, ObjectStore::Key>>;
  ObjectStore::Saved store_;
  uint64_t uid_counter_ = 0, event_counter_ = 0;
  std::vector<ObjectStore::Key> events_;
  Keyed pods_;      // live workloads' pods, by workload id
  Keyed finished_;  // finished pods still stored, by (namespace, name)
  uint64_t decision_digest_ = 0, decision_count_ = 0;
  size_t work_count_ = 0;
  std::vector<std::pair<uint64_t, driver::Work>> works_;  // of the live workloads
  std::vector<driver::WorkTimers::Timer> timers_;
  uint64_t timer_seq_ = 0;
  size_t generation_count_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>> generations_;  // the live ones' (not 0)
  std::shared_ptr<const engine::EngineCapture> engine_;     // encoded by Write
  // The JSON header's scalars, its long arrays and "store" null: Write() streams those in place.
  std::string Header() const;
  void WriteLong(std::string_view key, SnapshotPieces& p) const;
  static void WriteWork(const std::pair<uint64_t, driver::Work>& x, SnapshotPieces& p);
};

}  // namespace arbiter::server
