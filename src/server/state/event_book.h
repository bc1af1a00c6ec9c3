// The core/v1 Events the daemon keeps, at most a cap of them, in the order they came, with the
// preemptions they record (the dashboard's). Beyond the cap one goes for each that comes: since
// journal format 7 the oldest of the namespace that keeps the most (ties: the last such namespace
// in name order), so that a tenant creating and deleting pods in a loop pushes out its own Events,
// never another namespace's while it keeps more than that one (a hostile-tenant trial erased
// every other team's Events so, 8,000 cycles within its quota); formats 1-6 dropped the oldest of
// all. O(log Events + log namespaces) an Event. Pure: the caller removes what goes from the store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "server/state/event_text.h"
#include "server/state/object_store.h"

namespace arbiter::server {

class EventBook {
 public:
  using Key = ObjectStore::Key;  // (namespace, name)

  // Notes an Event stored under `key` (with its preemption, if it records one). Returns the keys
  // of those that go (beyond `cap`), for the caller to remove from the store; `fair` picks them as
  // above (journal format 7), else the oldest of all.
  std::vector<Key> Add(Key key, std::optional<Preemption> preemption, size_t cap, bool fair);

  size_t size() const { return by_seq_.size(); }
  // Every kept key, oldest first (what a snapshot saves).
  std::vector<Key> Keys() const;
  // The preemptions recorded, oldest first.
  std::vector<Preemption> Preemptions() const;
  // Kept keys as a snapshot saved them (oldest first), each with the preemption its stored Event
  // records (`preemption_of`, read from the store).
  template <typename F>
  void Assign(const std::vector<Key>& keys, F preemption_of) {
    *this = EventBook();
    for (const auto& k : keys) Note(k, preemption_of(k));
  }

 private:
  struct Entry {
    Key key;
    std::optional<Preemption> preemption;
  };
  void Note(Key key, std::optional<Preemption> preemption);
  Key Drop(bool fair);
  void Resize(const std::string& ns, size_t from, size_t to);

  uint64_t next_ = 0;
  std::map<uint64_t, Entry> by_seq_;                   // arrival order
  std::map<std::string, std::deque<uint64_t>> by_ns_;  // each namespace's, oldest first
  std::set<std::pair<size_t, std::string>> sizes_;     // (how many kept, namespace)
};

}  // namespace arbiter::server
