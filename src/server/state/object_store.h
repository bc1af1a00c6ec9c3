// The API objects of `arbiter serve`, as Kubernetes JSON, keyed by kind / namespace / name.
//
// Every write takes the next value of one global resourceVersion counter (as etcd's revision)
// and is written into the object's metadata.resourceVersion; the change is also recorded as a
// watch event (ADDED / MODIFIED / DELETED with the object as of that version) for the watch log.
// A stored object is immutable (a write replaces it), so the store, its watch events and readers
// share one copy: Share() and ListShared() hand it out to be serialized after the lock is let go.
// Pure: no I/O, no threads, no clock. Not thread-safe (the Cluster's lock guards it).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace arbiter::server {

using Json = nlohmann::json;

// One change, as a watch stream delivers it.
struct WatchEvent {
  int64_t resource_version = 0;
  std::string kind;                    // "Pod", "Node", ...
  std::string namespace_;              // "" for cluster-scoped kinds
  std::string type;                    // ADDED, MODIFIED, DELETED
  std::shared_ptr<const Json> object;  // shared with the store (never changed)
};

// A stored object, and its wire text (kube::WireJson's bytes), made once, by the first list that
// writes it: a list of many objects copies their texts rather than walking every object's tree.
class StoredObject {
 public:
  explicit StoredObject(Json j) : json_(std::move(j)) {}
  const Json& json() const { return json_; }
  const std::string& WireText() const;  // thread-safe

 private:
  const Json json_;
  mutable std::once_flag once_;
  mutable std::string text_;
};

// Points at a stored object and reads as a `const Json*` does (*p, p->at(...), p.get()).
class StoredRef {
 public:
  StoredRef() = default;
  explicit StoredRef(std::shared_ptr<const StoredObject> p) : p_(std::move(p)) {}
  const Json& operator*() const { return p_->json(); }
  const Json* operator->() const { return &p_->json(); }
  const Json* get() const { return p_ ? &p_->json() : nullptr; }
  explicit operator bool() const { return p_ != nullptr; }
  const StoredObject& stored() const { return *p_; }
  // The object as a shared Json (it keeps the stored object alive).
  std::shared_ptr<const Json> json_ptr() const {
    return p_ ? std::shared_ptr<const Json>(p_, &p_->json()) : nullptr;
  }

 private:
  std::shared_ptr<const StoredObject> p_;
};

class ObjectStore {
 public:
  using Key = std::pair<std::string, std::string>;  // namespace, name
  using Objects = std::map<Key, StoredRef>;         // in (namespace, name) order

  const Json* Get(const std::string& kind, const std::string& ns, const std::string& name) const;
  std::shared_ptr<const Json> Share(const std::string& kind, const std::string& ns,
                                    const std::string& name) const;
  // Objects of a kind, of one namespace ("" for all), in (namespace, name) order.
  std::vector<const Json*> List(const std::string& kind, const std::string& ns) const;
  std::vector<std::shared_ptr<const Json>> ListShared(const std::string& kind,
                                                      const std::string& ns) const;
  std::vector<StoredRef> ListStored(const std::string& kind, const std::string& ns) const;
  const Objects& All(const std::string& kind) const;

  // Stores the object (ADDED if new, else MODIFIED) with the next resourceVersion; returns it.
  int64_t Put(const std::string& kind, const std::string& ns, const std::string& name, Json object);
  // Removes it (DELETED, the last state with a new resourceVersion); false if absent.
  bool Remove(const std::string& kind, const std::string& ns, const std::string& name);

  // A secondary index of `kind` by the string `key_of` gives an object ("" : not indexed), e.g.
  // Pods by their Job's uid: set once, before the first Put or Load. ByIndex gives the objects
  // with that value in (namespace, name) order, in O(their number); TakeTouched the values whose
  // objects were written or removed since its last call (after a Load: every value).
  using IndexKey = std::string (*)(const Json&);
  void AddIndex(const std::string& kind, IndexKey key_of);
  std::vector<const Json*> ByIndex(const std::string& kind, const std::string& value) const;
  std::set<std::string> TakeTouched(const std::string& kind);

  int64_t resource_version() const { return rv_; }
  // The resourceVersion of the newest change to an object of `kind` (after a Load: at least the
  // loaded counter, as the changes before it are not known). The objects of a kind are as they
  // were at any resourceVersion from this one on: what a list's `continue` relies on.
  int64_t kind_version(const std::string& kind) const;
  // The watch events recorded since the last call, in resourceVersion order.
  std::vector<WatchEvent> TakeEvents() { return std::exchange(events_, {}); }

  // Whole state (for snapshots): every object plus the counter.
  Json Save() const;
  void Load(Json&& saved);  // moves the objects out of `saved`

 private:
  std::map<std::string, Objects> kinds_;
  int64_t rv_ = 0;
  int64_t loaded_rv_ = 0;
  std::map<std::string, int64_t> kind_versions_;
  std::vector<WatchEvent> events_;
  struct Index {
    IndexKey key_of = nullptr;
    std::map<std::string, std::set<Key>> keys;  // value -> objects
    std::set<std::string> touched;
  };
  std::map<std::string, Index> indexes_;  // by kind
  void Reindex(const std::string& kind, const Key& key, const Json* was, const Json* now);
};

}  // namespace arbiter::server
