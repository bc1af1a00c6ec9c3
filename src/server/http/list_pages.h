// ?limit=N&continue=TOKEN on lists (kube-apiserver's API chunking), over the daemon's store.
//
// A list is a range of stored objects (one kind, one namespace or all) in key order
// (namespace, name), each shared with the store (never copied). A page holds at most `limit`
// objects that pass the selectors, from the first key after the token's start: the selectors are
// applied before the limit, and once the page is full the list goes on (a continue token) when any
// key follows, matching or not, so a page may hold fewer objects than asked and the last page may
// be empty (as kube-apiserver on etcd). remainingItemCount: the keys after the page, only when
// there are no selectors.
//
// Consistency: every page of a list is served from the range as it was at the first page's
// resourceVersion. When a first page leaves objects for later, its range is kept in
// ListSnapshots (a few, for a few minutes: kube-apiserver's etcd compacts its history every 5
// minutes); a continue finds it there. Whole lists (a kind in a namespace or in all) and per-node
// lists (spec.nodeName=NODE: kubelets, node agents, many and small) are kept apart, each under its
// own caps on ranges and objects: however many nodes page their pods, they never push out a large
// list's range (whose continues would then get 410 under churn), nor the other way round, and the
// memory kept stays bounded by the sum of both caps. When a range is gone (evicted, expired, the
// daemon restarted), the current objects are still the snapshot if none of the kind changed since
// (ObjectStore::kind_version); otherwise the answer is kube-apiserver's for a compacted
// revision: 410 Expired, kube::kInconsistentContinue, and a token with resourceVersion -1 that
// continues from the current objects. Pure: no I/O, no clock (times are passed in).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "server/state/object_store.h"

namespace arbiter::server {

using ListRange = std::vector<StoredRef>;

struct ListPage {
  std::vector<const StoredObject*> items;   // into the range
  std::optional<std::string> continue_key;  // more follow: the start of the next page
  std::optional<int64_t> remaining;         // keys after the page (no selectors only)
};

// The objects a list reads, picked under the daemon's lock, in key order: those of `kind` in `ns`
// ("" : all); when `node` is given (a field selector spec.nodeName=NODE, as kubelets and node
// agents list their pods), only the Pods bound to it, from the store's index (PodNodeName) in
// O(their number) rather than O(all the kind's objects). The list's selectors still apply.
ListRange PickObjects(const ObjectStore& store, const std::string& kind, const std::string& ns,
                      const std::string* node);

// The index of the first object of `range` whose key is not below `start` (a token's start key:
// "ns/name\0" when `all_namespaces` of a namespaced kind, else "name\0").
size_t StartIndex(const ListRange& range, const std::string& start, bool all_namespaces);

// The page of `range` from `begin`: at most `limit` objects (0: all) that `match` accepts
// (nullptr: every one). `all_namespaces`: the keys in continue_key are "ns/name".
ListPage PageOf(const ListRange& range, size_t begin, size_t limit,
                const std::function<bool(const Json&)>& match, bool all_namespaces);

// The ranges kept for continues, by (kind, namespace, node, resourceVersion). Whole lists and
// per-node lists (`node` given) are two pools with their own caps: a Put evicts only within its
// own pool, the oldest first (by when kept, then key); every Put and Find lets go the ranges of
// both pools older than the TTL. Thread-safe.
class ListSnapshots {
 public:
  struct Options {
    size_t max_ranges = 8;              // whole lists
    int64_t ttl_ms = 5 * 60 * 1000;     // from the first page, for both pools
    size_t max_objects = 4'000'000;     // over whole lists' ranges (a pointer per object)
    size_t max_node_ranges = 64;        // per-node lists
    size_t max_node_objects = 256'000;  // over per-node lists' ranges
  };
  ListSnapshots() : ListSnapshots(Options{}) {}
  explicit ListSnapshots(Options o)
      : ttl_ms_(o.ttl_ms),
        whole_{o.max_ranges, o.max_objects, {}, 0},
        nodes_{o.max_node_ranges, o.max_node_objects, {}, 0} {}

  // Keeps `range` (once per key: a second Put of the same key keeps the first). `node`: the range
  // is one node's pods (PickObjects' `node`); nullptr: a whole list.
  void Put(const std::string& kind, const std::string& ns, int64_t rv,
           std::shared_ptr<const ListRange> range, int64_t now_ms,
           const std::string* node = nullptr);
  // The range, if still kept (and not older than the TTL).
  std::shared_ptr<const ListRange> Find(const std::string& kind, const std::string& ns, int64_t rv,
                                        int64_t now_ms, const std::string* node = nullptr);
  size_t size() const;  // ranges kept, both pools

 private:
  struct Kept {
    std::shared_ptr<const ListRange> range;
    int64_t at_ms = 0;
  };
  using Key = std::tuple<std::string, std::string, std::string, int64_t>;  // kind, ns, node, rv
  struct Pool {
    size_t max_ranges = 0;
    size_t max_objects = 0;
    std::map<Key, Kept> kept;
    size_t objects = 0;
  };
  Pool& PoolOf(const std::string* node) { return node ? nodes_ : whole_; }
  void Expire(int64_t now_ms);  // mu_ held
  int64_t ttl_ms_;
  mutable std::mutex mu_;
  Pool whole_;
  Pool nodes_;
};

}  // namespace arbiter::server
