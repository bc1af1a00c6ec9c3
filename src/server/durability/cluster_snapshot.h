// What Cluster::CaptureSnapshot() takes of a cluster under the daemon's lock, and its bytes made
// from it on any thread while the cluster goes on (issue 27: snapshots off the request path).
// The capture costs little per live object: the stored objects are shared (each is immutable and
// makes its wire text thread-safely), the live and finished pods' keys and the work model's state
// are frozen in O(chunks) (ChunkMap, engine::SlotTable: their chunks shared, copied by the
// cluster before it next writes them), and so is the engine's state (Engine::Capture); the
// live workloads' picking and every encoding are Write's. Bytes() writes exactly what
// Cluster::Snapshot() wrote before the split (the format of cluster_snapshot.cc, docs/serve.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "core/engine/slot_table.h"
#include "driver/work_model.h"
#include "server/state/chunk_map.h"
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
  enum class Long;  // the header's long values (cluster_snapshot.cc)
  static const std::pair<Long, std::string_view> kLong[];  // with their keys
  struct Live;  // what Write derives of the work model's state (cluster_snapshot.cc)
  ObjectStore::Saved store_;
  uint64_t uid_counter_ = 0, event_counter_ = 0;
  std::vector<ObjectStore::Key> events_;
  ChunkMap<uint64_t, ObjectStore::Key>::Frozen pods_;      // live workloads' pods, by id
  ChunkMap<ObjectStore::Key, uint64_t>::Frozen finished_;  // finished pods still stored
  uint64_t decision_digest_ = 0, decision_count_ = 0;
  // The Job controller's back-off memory (Cluster::job_finishes_): [namespace, job, pod, finish
  // time, succeeded] rows, in key order.
  std::vector<std::tuple<ObjectStore::Key, std::string, Millis, bool>> job_finishes_;
  Json job_events_;              // Cluster::job_events_ (EventCorrelator::Save)
  Json job_refusals_;            // Cluster::job_refusals_: [namespace, job, refused, at] rows
  Json jobs_more_;               // Cluster::jobs_more_: [namespace, job] rows (journal format 9)
  Json job_collections_;         // Cluster::job_collections_ rows (journal format 10)
  Json terminating_namespaces_;  // Cluster::terminating_namespaces_ (journal format 6)
  // The work model's state, frozen whole: Write picks the live workloads' (the pods' and the
  // workloads a timer waits for) and sorts the live timers out of the heap.
  engine::SlotTable<driver::Work>::Frozen works_;  // by workload id, of every workload
  driver::WorkTimers::Frozen timers_;
  std::shared_ptr<const engine::EngineCapture> engine_;  // encoded by Write
  // The JSON header's scalars, its long arrays and "store" null: Write() streams those in place.
  std::string Header() const;
  bool WriteLong(Long which, const Live& live, SnapshotPieces& p) const;
  void WriteWorks(const Live& live, SnapshotPieces& p) const;
  void WriteGenerations(const Live& live, SnapshotPieces& p) const;
  static void WriteWork(uint64_t id, const driver::Work& w, SnapshotPieces& p);
};

}  // namespace arbiter::server
