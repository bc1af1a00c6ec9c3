// What /metrics says about each live workload (issue 27: "/metrics off the lock, O(changed)"),
// kept by the Cluster as its mutations change the engine's workloads, so that a scrape copies no
// workload under the daemon's lock: Share() hands out the table as it is (its chunks shared, not
// copied: O(live / 256) pointers), and a later change copies only the chunk it writes, once after
// each Share() (copy on write). A shared chunk is never written again: Share() starts an epoch,
// and a chunk last copied in an older one is copied before it is written, whether or not a View
// still holds it (no reader count is consulted: shared_ptr::use_count() is a relaxed load, and
// deciding an in-place write by it is a data race in C++'s model that ThreadSanitizer reports).
// The text is made from the View after the lock is released (metrics.h).
//
// A row is the engine's WorkloadStatus as /metrics and the dashboard's views read it (phase, node,
// reason, requests, run start; priority, submit time, preemptions, borrowed, a pending one's
// message, nominated node and reservation; the GPU devices it holds) with the API pod's first
// container and arbiter.dev/usage. Namespaces, nodes, reasons and container names are interned
// (a few distinct values among many pods; never let go while the table lives), equal requests
// and equal pending notes shared: 168 bytes a row besides the pod's name and its own message or
// devices. The Cluster puts a row again whenever the engine says its status may have moved (an
// Event, or EventSink::OnRestated for what moves without one). Rows are
// kept in workload id order, the order of Engine::Workloads. Not thread-safe, but a View is: it is
// immutable and may be read on any thread while the table goes on changing.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/engine/types.h"
#include "core/resources.h"

namespace arbiter::placement {
struct GpuAssignment;
}

namespace arbiter::server {

struct PendingNote {
  std::string message;  // the engine's, verbatim
  std::string nominated_node;
  std::optional<engine::BackfillReservation> reservation;
  bool operator==(const PendingNote&) const = default;
};

struct LiveFact {
  uint64_t id = 0;
  // Interned (LiveFacts::Intern), never null in a table.
  const std::string* namespace_ = nullptr;
  const std::string* node = nullptr;       // "" when not bound
  const std::string* reason = nullptr;     // the engine's reason code, "" none
  const std::string* container = nullptr;  // the API pod's first container ("" unknown: "main")
  std::string name;
  // Shared with the rows before it that ask the same (most pods of a fill do).
  std::shared_ptr<const ResourceList> requests_;
  std::shared_ptr<const ResourceList> declared;  // arbiter.dev/usage, nullptr: none
  // What the dashboard's queue and tenants views show of a pending workload (its message, the
  // node nominated for it, its backfill reservation); nullptr when it runs or has none of them.
  std::shared_ptr<const PendingNote> note;
  // The GPU devices it holds on its node (Engine::GpusOf), nullptr when none.
  std::shared_ptr<const placement::GpuAssignment> gpus;
  Millis run_start = 0;
  Millis submit_time = 0;
  int32_t priority = 0;
  int32_t preemptions = 0;  // suffered so far
  bool pending = false;
  bool borrowed = false;  // runs on quota borrowed from its cohort

  bool running() const { return !node->empty(); }
  const ResourceList& requests() const { return *requests_; }
  // Its use: the declared one, else its requests.
  const ResourceList& usage() const { return declared ? *declared : *requests_; }
  const std::string& container_name() const;
};

class LiveFacts {
 public:
  static constexpr int kChunkBits = 8;  // 256 ids a chunk
  using Chunk = std::vector<LiveFact>;  // sorted by id, all in one 2^kChunkBits id range

  // Interned strings: stable addresses that outlive the table as long as a View holds them.
  struct Strings {
    std::unordered_set<std::string> set;
  };

  // The table at one instant; immutable, readable on any thread.
  class View {
   public:
    template <typename F>
    void ForEach(F&& f) const {
      for (const auto& c : chunks_)
        for (const LiveFact& row : *c) f(row);
    }
    size_t chunks() const { return chunks_.size(); }

   private:
    friend class LiveFacts;
    std::vector<std::shared_ptr<const Chunk>> chunks_;
    std::shared_ptr<const Strings> strings_;
  };

  LiveFacts() : strings_(std::make_shared<Strings>()) {}

  // The workload's row from the engine's status and the devices it holds (container and usage
  // kept from its old row unless given).
  void Put(const engine::WorkloadStatus& s, std::string_view container,
           const placement::GpuAssignment& gpus);
  void SetUsage(uint64_t id, std::shared_ptr<const ResourceList> declared);  // if it has a row
  void Erase(uint64_t id);
  void Clear() { chunks_.clear(); }
  const LiveFact* Find(uint64_t id) const;
  size_t size() const;

  View Share() const;
  // Rows of the given ids (absent ones skipped), in that order, and what keeps their strings.
  std::vector<LiveFact> Rows(const std::vector<uint64_t>& ids) const;
  std::shared_ptr<const Strings> strings() const { return strings_; }

 private:
  const std::string* Intern(const std::string& s);
  void PutNote(LiveFact& row, const engine::WorkloadStatus& s);
  LiveFact* FindWritable(uint64_t id);
  Chunk& Writable(uint64_t chunk);
  struct Entry {
    std::shared_ptr<Chunk> rows;
    uint64_t epoch = 0;  // copied (or made) in this epoch: written in place while it is epoch_'s
  };
  std::map<uint64_t, Entry> chunks_;  // by id >> kChunkBits
  mutable uint64_t epoch_ = 0;        // Share() starts the next (not a change of the rows)
  std::shared_ptr<Strings> strings_;
  std::shared_ptr<const ResourceList> last_requests_;  // the newest requests made
  std::shared_ptr<const PendingNote> last_note_;       // the newest note made
};

// The nodes' labels as kube_node_labels gives them ({node, NAME}, then the allowlisted GPU
// labels), made again only when a Node changed (the store's kind_version("Node") moved).
using NodeLabelRows = std::vector<std::vector<std::pair<std::string, std::string>>>;
struct NodeLabelCache {
  int64_t version = -1;
  std::shared_ptr<const NodeLabelRows> rows;
};

}  // namespace arbiter::server
