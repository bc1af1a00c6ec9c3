// A sorted map kept in chunks of at most kMax entries (sorted vectors, in key order), which
// Freeze() hands out as it is in O(chunks) (issue 27: a snapshot's capture under the daemon's
// lock; the cluster's live and finished pods' keys). The pattern of engine::SlotTable: each chunk
// carries the epoch it was made in, Freeze() starts a new epoch and shares the chunks, and a chunk
// of an older epoch is copied before it is next written (never read in place of a copy: reads do
// not copy), so a frozen chunk is never written again and a Frozen is readable on any thread while
// the map goes on. A write costs O(kMax) (its chunk's entries moved, or copied once after a
// capture) and O(chunks) pointers moved when a chunk splits or goes. A chunk that falls under
// kMax / 4 entries is merged with a neighbour when both fit in one (a map whose entries go in any
// order keeps few nearly empty chunks). Iterators and references hold until the next write.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

namespace arbiter::server {

template <typename K, typename V, size_t kMax = 256>
class ChunkedMap {
  static_assert(kMax >= 4);
  struct Chunk {
    Chunk(uint64_t e, std::vector<std::pair<K, V>> v) : epoch(e), items(std::move(v)) {}
    const uint64_t epoch;  // made in this epoch of its map: writable while the map's is this
    std::vector<std::pair<K, V>> items;  // sorted by key; never empty
  };
  using Chunks = std::vector<std::shared_ptr<const Chunk>>;

 public:
  using value_type = std::pair<K, V>;

  // In key order over a list of chunks (the map's, or a Frozen's).
  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::pair<K, V>;
    using difference_type = std::ptrdiff_t;
    using pointer = const value_type*;
    using reference = const value_type&;
    const_iterator() = default;
    const_iterator(const Chunks* c, size_t chunk, size_t at) : c_(c), chunk_(chunk), at_(at) {}
    reference operator*() const { return (*c_)[chunk_]->items[at_]; }
    pointer operator->() const { return &**this; }
    const_iterator& operator++() {
      if (++at_ == (*c_)[chunk_]->items.size()) {
        ++chunk_;
        at_ = 0;
      }
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator r = *this;
      ++*this;
      return r;
    }
    bool operator==(const const_iterator& o) const { return chunk_ == o.chunk_ && at_ == o.at_; }
    bool operator!=(const const_iterator& o) const { return !(*this == o); }

   private:
    friend class ChunkedMap;
    const Chunks* c_ = nullptr;
    size_t chunk_ = 0, at_ = 0;
  };

  // The map at one instant: immutable, readable on any thread.
  class Frozen {
   public:
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    const_iterator begin() const { return {&chunks_, 0, 0}; }
    const_iterator end() const { return {&chunks_, chunks_.size(), 0}; }

   private:
    friend class ChunkedMap;
    Chunks chunks_;
    size_t size_ = 0;
  };

  ChunkedMap() = default;
  // Not copied: a copy would share chunks it deems writable (Freeze() shares them safely).
  ChunkedMap(const ChunkedMap&) = delete;
  ChunkedMap& operator=(const ChunkedMap&) = delete;
  ChunkedMap(ChunkedMap&& o) noexcept
      : chunks_(std::move(o.chunks_)), size_(std::exchange(o.size_, 0)), epoch_(o.epoch_) {
    o.chunks_.clear();
  }
  ChunkedMap& operator=(ChunkedMap&& o) noexcept {
    if (this != &o) {
      chunks_ = std::exchange(o.chunks_, {});
      size_ = std::exchange(o.size_, 0);
      epoch_ = o.epoch_;
    }
    return *this;
  }
  ~ChunkedMap() = default;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const_iterator begin() const { return {&chunks_, 0, 0}; }
  const_iterator end() const { return {&chunks_, chunks_.size(), 0}; }
  size_t chunk_count() const { return chunks_.size(); }

  const_iterator find(const K& k) const {
    const size_t c = ChunkOf(k);
    if (c == chunks_.size()) return end();
    const auto& items = chunks_[c]->items;
    const auto it = LowerBound(items, k);
    if (it == items.end() || it->first != k) return end();
    return {&chunks_, c, static_cast<size_t>(it - items.begin())};
  }
  bool contains(const K& k) const { return find(k) != end(); }

  // Sets k's value (inserted if absent). A key past every other one goes to a new chunk when the
  // last is full (keys that grow, as workload ids, fill their chunks).
  void insert_or_assign(K k, V v) {
    size_t c = ChunkOf(k);
    if (c == chunks_.size()) {  // past every key
      if (c == 0 || chunks_.back()->items.size() >= kMax) {
        std::vector<value_type> items;
        items.emplace_back(std::move(k), std::move(v));
        chunks_.push_back(std::make_shared<Chunk>(epoch_, std::move(items)));
        ++size_;
        return;
      }
      --c;
    }
    auto& items = Own(c).items;
    const auto it = LowerBound(items, k);
    if (it != items.end() && it->first == k) {
      it->second = std::move(v);
      return;
    }
    items.emplace(it, std::move(k), std::move(v));
    ++size_;
    if (items.size() > kMax) Split(c);
  }

  size_t erase(const K& k) {
    const size_t c = ChunkOf(k);
    if (c == chunks_.size()) return 0;
    const auto& found = chunks_[c]->items;
    const auto at = LowerBound(found, k);
    if (at == found.end() || at->first != k) return 0;
    const size_t i = static_cast<size_t>(at - found.begin());
    auto& items = Own(c).items;
    items.erase(items.begin() + static_cast<std::ptrdiff_t>(i));
    --size_;
    if (items.empty()) {
      chunks_.erase(chunks_.begin() + static_cast<std::ptrdiff_t>(c));
    } else if (items.size() < kMax / 4) {
      Merge(c);
    }
    return 1;
  }
  void erase(const_iterator it) {
    const K k = it->first;  // (the entry may go with its chunk's copy)
    erase(k);
  }

  // Lets go of every entry (chunks a Frozen holds stay with it).
  void clear() {
    chunks_.clear();
    size_ = 0;
  }

  // The map as it is, in O(chunks): its chunks shared, each copied before the map next writes it.
  Frozen Freeze() const {
    ++epoch_;
    Frozen f;
    f.chunks_ = chunks_;
    f.size_ = size_;
    return f;
  }

 private:
  template <typename Items>  // const or not
  static auto LowerBound(Items& items, const K& k) {
    return std::lower_bound(items.begin(), items.end(), k,
                            [](const value_type& e, const K& key) { return e.first < key; });
  }
  // The first chunk whose last key is not below k (chunks_.size() if none).
  size_t ChunkOf(const K& k) const {
    const auto it = std::partition_point(chunks_.begin(), chunks_.end(),
                                         [&](const auto& c) { return c->items.back().first < k; });
    return static_cast<size_t>(it - chunks_.begin());
  }
  // Chunk `c`, writable: copied first if it is of an older epoch (a Frozen may hold it).
  Chunk& Own(size_t c) {
    if (chunks_[c]->epoch != epoch_)
      chunks_[c] = std::make_shared<Chunk>(epoch_, chunks_[c]->items);
    // Made in this epoch by this map, hence never handed out by a Freeze(): only this map holds it.
    return const_cast<Chunk&>(*chunks_[c]);
  }
  // Chunk `c` (over kMax) cut in two halves.
  void Split(size_t c) {
    auto& items = Own(c).items;
    const auto half = items.begin() + static_cast<std::ptrdiff_t>(items.size() / 2);
    std::vector<value_type> upper(std::make_move_iterator(half),
                                  std::make_move_iterator(items.end()));
    items.erase(half, items.end());
    items.shrink_to_fit();  // (grown to twice kMax by the entry that made it split)
    chunks_.insert(chunks_.begin() + static_cast<std::ptrdiff_t>(c + 1),
                   std::make_shared<Chunk>(epoch_, std::move(upper)));
  }
  // Chunk `c` (under kMax / 4) merged into a neighbour when both fit in one chunk.
  void Merge(size_t c) {
    const size_t n = chunks_[c]->items.size();
    size_t into;  // the first of the two
    if (c > 0 && chunks_[c - 1]->items.size() + n <= kMax) {
      into = c - 1;
    } else if (c + 1 < chunks_.size() && chunks_[c + 1]->items.size() + n <= kMax) {
      into = c;
    } else {
      return;
    }
    auto& first = Own(into).items;
    const Chunk& second = *chunks_[into + 1];
    if (second.epoch == epoch_) {  // only this map holds it: its entries can be moved
      auto& from = const_cast<Chunk&>(second).items;
      first.insert(first.end(), std::make_move_iterator(from.begin()),
                   std::make_move_iterator(from.end()));
    } else {
      first.insert(first.end(), second.items.begin(), second.items.end());
    }
    chunks_.erase(chunks_.begin() + static_cast<std::ptrdiff_t>(into + 1));
  }

  // Mutable: Freeze() starts an epoch (no entry changes).
  Chunks chunks_;
  size_t size_ = 0;
  mutable uint64_t epoch_ = 0;
};

}  // namespace arbiter::server
