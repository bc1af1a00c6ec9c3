// ?limit=N&continue=TOKEN on lists (kube-apiserver's API chunking), over the daemon's store.
//
// A list is a range of stored objects (one kind, one namespace or all) in key order
// (namespace, name), each shared with the store (never copied; a whole kind's range shares the
// store's chunks of them: ListRange). A page holds at most `limit` objects that pass the
// selectors, from the first key after the token's start: the selectors are applied before the
// limit, and once the page is full the list goes on (a continue token) when any key follows,
// matching or not, so a page may hold fewer objects than asked and the last page may be empty
// (as kube-apiserver on etcd). remainingItemCount: the keys after the page, only when
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

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "server/state/object_store.h"

namespace arbiter::json_sparse {
struct Keep;
}

namespace arbiter::server {

// The objects a list pages through, in key order (namespace, name), each shared with the store
// (never copied), backed either by refs picked one by one (a small namespace's objects, one
// node's pods) or by chunks of a kind's objects shared as they were at the pick, no object
// touched: every object of the kind (ObjectStore::Freeze, O(chunks) under the daemon's lock), or
// one namespace's (ObjectStore::FreezeNamespace, O(log objects + its chunks)), whose first and
// last chunks may hold other namespaces' objects too: the range reads only the namespace's rows
// (from the Frozen's first_row(), size() of them). Its rows are found by the index of each
// chunk's first row, made with the range. Both read the same: size(), operator[] and a random
// access iterator over StoredRefs, and key(). A range is immutable but for push_back and
// pop_back (ranges of refs, as tests make them: a shared range is copied into refs first);
// thread-safe to read, and what it reads never changes, whatever the store does after the pick.
class ListRange {
 public:
  using Frozen = ObjectStore::Objects::Frozen;
  using value_type = StoredRef;
  class const_iterator;
  using iterator = const_iterator;

  ListRange() = default;
  ListRange(std::initializer_list<StoredRef> refs) : refs_(refs) {}
  explicit ListRange(std::vector<StoredRef> refs) : refs_(std::move(refs)) {}
  template <std::input_iterator It>
  ListRange(It first, It last) : refs_(first, last) {}
  // The rows of `frozen` (Frozen::begin() to end()).
  explicit ListRange(Frozen frozen);

  size_t size() const { return frozen_ ? frozen_->size() : refs_.size(); }
  bool empty() const { return size() == 0; }
  const StoredRef& operator[](size_t i) const;  // i < size(); O(log chunks) if shared
  // The store key of the i-th object: the row's if shared, else read from the object (its tree
  // parsed again if the store keeps it as text alone).
  ObjectStore::Key key(size_t i) const;
  const_iterator begin() const;
  const_iterator end() const;
  void push_back(StoredRef ref);
  void pop_back();
  // Shared chunks rather than refs.
  bool shared() const { return frozen_.has_value(); }

 private:
  void ToRefs();  // a shared range as refs
  // Chunk and row of the i-th object of a shared range (i == size(): just after its last row, as
  // the Frozen's end() counts).
  std::pair<size_t, size_t> Locate(size_t i) const;
  std::vector<StoredRef> refs_;
  std::optional<Frozen> frozen_;
  // Shared: the index of each chunk's first row among the chunks' rows, then their number; and
  // the index of the range's first (a namespace's range starts in a chunk of other namespaces').
  std::vector<size_t> starts_;
  size_t first_ = 0;
};

// A random access iterator over a ListRange's objects (as StoredRef): ++ is O(1), a jump
// O(log chunks) if shared. Valid as long as its range.
class ListRange::const_iterator {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = StoredRef;
  using difference_type = std::ptrdiff_t;
  using pointer = const StoredRef*;
  using reference = const StoredRef&;

  const_iterator() = default;
  reference operator*() const {
    return r_->frozen_ ? r_->frozen_->chunk(chunk_)[row_].second : r_->refs_[i_];
  }
  pointer operator->() const { return &**this; }
  reference operator[](difference_type n) const { return *(*this + n); }
  const_iterator& operator++() {
    ++i_;
    if (r_->frozen_ && ++row_ == r_->frozen_->chunk(chunk_).size()) {
      ++chunk_;
      row_ = 0;
    }
    return *this;
  }
  const_iterator operator++(int) {
    const_iterator was = *this;
    ++*this;
    return was;
  }
  const_iterator& operator--() { return *this -= 1; }
  const_iterator operator--(int) {
    const_iterator was = *this;
    --*this;
    return was;
  }
  const_iterator& operator+=(difference_type n) {
    Seek(static_cast<size_t>(static_cast<difference_type>(i_) + n));
    return *this;
  }
  const_iterator& operator-=(difference_type n) { return *this += -n; }
  friend const_iterator operator+(const_iterator it, difference_type n) { return it += n; }
  friend const_iterator operator+(difference_type n, const_iterator it) { return it += n; }
  friend const_iterator operator-(const_iterator it, difference_type n) { return it -= n; }
  friend difference_type operator-(const const_iterator& a, const const_iterator& b) {
    return static_cast<difference_type>(a.i_) - static_cast<difference_type>(b.i_);
  }
  friend bool operator==(const const_iterator& a, const const_iterator& b) { return a.i_ == b.i_; }
  friend auto operator<=>(const const_iterator& a, const const_iterator& b) {
    return a.i_ <=> b.i_;
  }

 private:
  friend class ListRange;
  const_iterator(const ListRange* r, size_t i) : r_(r) { Seek(i); }
  void Seek(size_t i) {
    i_ = i;
    if (r_->frozen_) std::tie(chunk_, row_) = r_->Locate(i);
  }
  const ListRange* r_ = nullptr;
  size_t i_ = 0;
  size_t chunk_ = 0, row_ = 0;  // shared: where the i-th object is
};

struct ListPage {
  std::vector<const StoredObject*> items;   // into the range
  std::optional<std::string> continue_key;  // more follow: the start of the next page
  std::optional<int64_t> remaining;         // keys after the page (no selectors only)
};

// The objects a list reads, picked under the daemon's lock, in key order: those of `kind` in `ns`
// ("" : all); when `node` is given (a field selector spec.nodeName=NODE, as kubelets and node
// agents list their pods), only the Pods bound to it, from the store's index (PodNodeName) in
// O(their number) rather than O(all the kind's objects). The list's selectors still apply.
// One node's pods are picked as refs, in O(their number); every object of a kind (ns "": a
// namespaced kind in all namespaces, a cluster-scoped kind) as the kind's chunks shared
// (ObjectStore::Freeze), in O(chunks) and no object touched (issue 27: `kubectl get pods -A` at
// 1M pods; a ref per object held the lock 27-61 ms at 300k pods); one namespace's objects as the
// chunks that hold them shared (ObjectStore::FreezeNamespace, O(log objects + its chunks): a
// namespace of 300k pods would otherwise hold the lock as long as the refs' whole pick did), or
// as refs if it has fewer than kNamespaceRefsBelow objects (below).
// The cost moves to the writes that follow: the first write to each chunk after a whole pick
// copies the chunk (up to 256 keys and refs: at 300k pods in BM_ListPick a copy alone takes
// ~20 us, and 6,400 creates that reach 2,240 of the 2,325 chunks take ~107 ms more than without
// a pick, +9%, ~48 us a chunk); after a namespace's pick only its chunks are copied so (the same
// creates copy 24 chunks after a pick of ns-7's 3,000 pods, 2,224 after a whole pick).
// So an object's write pays at most the copy of the chunk it goes in (and of a neighbour, on a
// merge), and the writes after a pick at most one copy of each chunk they write of those it
// shares: more work in all than the refs' pick, but spread over the writes rather than in one
// piece under the lock that every create waits for. Acceptable against the creates' p99 goal of
// 50 ms at 1M pods, where the refs' pick held the lock ~150 ms.
ListRange PickObjects(const ObjectStore& store, const std::string& kind, const std::string& ns,
                      const std::string* node);
// A namespace of fewer objects than this (two chunks' rows) is picked as refs, not shared
// (PickObjects): its refs' pick is short, and it costs the writes after it no copy, where sharing
// it would mark the few chunks it spans (one to nine: chunks hold 64 to 256 rows).
// BM_NamespacePickSizes at 300k pods (jemalloc, the daemon's allocator, preloaded; load 1.3, 3
// runs): refs 0.3-0.6 us for 8-32 pods (shared 0.6-1.3), 2-3 us for 128 (shared 0.8-1.3), 9-13 us
// for 512 (shared 1.5-3.4), 55-73 us for 2,048 (shared 4.6-5.5, 15 chunks), ~30 ns a pod; a chunk's
// copy after a shared pick 1.5-2.5 us there, warm (BM_ListPick's cold copies, glibc's malloc: 20-48
// us). So below 512 pods the refs' pick holds the lock about as long as the copies sharing would
// add (and at most ~13 us), above it the refs' pick grows ~30 ns a pod where the shared one stays
// O(its chunks).
inline constexpr size_t kNamespaceRefsBelow = 512;

// The index of the first object of `range` whose key is not below `start` (a token's start key:
// "ns/name\0" when `all_namespaces` of a namespaced kind, else "name\0").
size_t StartIndex(const ListRange& range, const std::string& start, bool all_namespaces);

// Whether `matches` accepts `o`, given of an object kept as text alone (a cold Pod) only the
// members `reads` names (parsed from its text, json_sparse::Parse), of another its tree. `scratch`
// holds the text. `reads` must name every member `matches` reads (kube::SelectorReads does).
bool MatchesStored(const StoredObject& o, const json_sparse::Keep& reads,
                   const std::function<bool(const Json&)>& matches, std::string& scratch);

// The page of `range` from `begin`: at most `limit` objects (0: all) that `match` accepts
// (nullptr: every one; given the stored object, so that it reads of a compacted one only what it
// needs). `all_namespaces`: the keys in continue_key are "ns/name".
ListPage PageOf(const ListRange& range, size_t begin, size_t limit,
                const std::function<bool(const StoredObject&)>& match, bool all_namespaces);

// The ranges kept for continues, by (kind, namespace, node, resourceVersion). Whole lists and
// per-node lists (`node` given) are two pools with their own caps: a Put evicts only within its
// own pool, the oldest first (by when kept, then key); every Put and Find lets go the ranges of
// both pools older than the TTL. Thread-safe.
// The object caps count the objects of the ranges kept (their size()), and bound the memory they
// keep from being let go: each object's version at the pick (the same whatever the range's
// backing), and a ref to it (16 bytes) in a range of refs, or in a shared range a row of a chunk
// (a key of two strings and a ref: 80 bytes, plus names longer than 15 characters), which costs
// nothing until the store writes that chunk and copies it. A whole kind's range shares every
// chunk of the kind, all counted: so at most 4M rows, 320 MB if every chunk was written within
// the TTL (where refs took 64 MB), beside the object versions. A namespace's shared range counts
// its own rows; its first and last chunks may keep up to 2 * 255 rows of other namespaces
// uncounted (their keys and refs, 40 KB a range at most, and the versions of those objects the
// refs keep alive once the store has replaced them; 8 ranges).
class ListSnapshots {
 public:
  struct Options {
    size_t max_ranges = 8;              // whole lists
    int64_t ttl_ms = 5 * 60 * 1000;     // from the first page, for both pools
    size_t max_objects = 4'000'000;     // over whole lists' ranges (counted as above)
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
