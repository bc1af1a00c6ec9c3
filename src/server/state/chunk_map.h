// An ordered map kept as sorted chunks of at most kMax rows (ObjectStore's objects of a kind),
// which Freeze() hands out as they are in O(chunks) (issue 27: a snapshot's capture under the
// daemon's lock shares the chunks, not each object). The pattern of engine::SlotTable and
// LiveFacts: each chunk carries the epoch it was made in, Freeze() starts a new epoch, and a chunk
// of an older epoch is copied before it is written (once per chunk and Freeze, whether or not a
// Frozen still holds it: no reader count is consulted, as shared_ptr::use_count() is a relaxed
// load), so a frozen chunk is never written again. Reads copy nothing.
//
// A chunk holds 1..kMax rows in key order and the chunks are in key order too: a lookup is a
// binary search of the chunks' first keys then of one chunk. An insert into a full chunk moves
// the new row to a neighbour at an end (so ascending or descending keys fill whole chunks) or
// splits the chunk in two; an erase that leaves a chunk under a quarter full merges it with a
// neighbour that has room. Iterators and references are those of a std::vector: any change ends
// them. Not thread-safe; a Frozen is immutable and may be read on any thread while the map goes
// on changing.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

namespace arbiter::server {

template <typename K, typename V, size_t kMax = 256>
class ChunkMap {
  static_assert(kMax >= 4);

 public:
  using value_type = std::pair<K, V>;

 private:
  struct Chunk {
    Chunk(uint64_t e, std::vector<value_type> r) : epoch(e), rows(std::move(r)) {}
    const uint64_t epoch;          // made in this epoch of its map: writable while it is the map's
    std::vector<value_type> rows;  // 1..kMax, by key
  };

 public:
  // Rows in key order over a list of chunks (the map's or a Frozen's).
  template <typename Chunks>
  class Iter {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = ChunkMap::value_type;
    using difference_type = std::ptrdiff_t;
    using pointer = const value_type*;
    using reference = const value_type&;
    Iter() = default;
    Iter(const Chunks* chunks, size_t c, size_t r) : chunks_(chunks), c_(c), r_(r) {}
    const value_type& operator*() const { return (*chunks_)[c_]->rows[r_]; }
    const value_type* operator->() const { return &**this; }
    Iter& operator++() {
      if (++r_ == (*chunks_)[c_]->rows.size()) {
        ++c_;
        r_ = 0;
      }
      return *this;
    }
    Iter operator++(int) {
      Iter was = *this;
      ++*this;
      return was;
    }
    bool operator==(const Iter& o) const { return c_ == o.c_ && r_ == o.r_; }
    bool operator!=(const Iter& o) const { return !(*this == o); }

   private:
    const Chunks* chunks_ = nullptr;
    size_t c_ = 0, r_ = 0;
  };

  // The map at one instant (Freeze): immutable, readable on any thread.
  class Frozen {
   public:
    using Chunks = std::vector<std::shared_ptr<const Chunk>>;
    using const_iterator = Iter<Chunks>;
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    size_t chunks() const { return chunks_.size(); }
    // The rows of chunk `c` (< chunks()): 1..kMax, in key order, after those of chunk c-1.
    const std::vector<value_type>& chunk(size_t c) const { return chunks_[c]->rows; }
    const_iterator begin() const { return {&chunks_, 0, 0}; }
    const_iterator end() const { return {&chunks_, chunks_.size(), 0}; }

   private:
    friend class ChunkMap;
    Chunks chunks_;
    size_t size_ = 0;
  };

  using Chunks = std::vector<std::shared_ptr<Chunk>>;
  using const_iterator = Iter<Chunks>;
  using iterator = const_iterator;  // rows are changed through insert_or_assign only

  ChunkMap() = default;
  // A copy shares the chunks as Freeze() does: each is copied before either map next writes it.
  ChunkMap(const ChunkMap& o) : chunks_(o.chunks_), size_(o.size_), epoch_(++o.epoch_) {}
  ChunkMap& operator=(const ChunkMap& o) {
    if (this != &o) {
      chunks_ = o.chunks_;
      size_ = o.size_;
      epoch_ = std::max(epoch_, ++o.epoch_) + 1;
    }
    return *this;
  }
  ChunkMap(ChunkMap&& o) noexcept
      : chunks_(std::exchange(o.chunks_, {})), size_(std::exchange(o.size_, 0)), epoch_(o.epoch_) {}
  ChunkMap& operator=(ChunkMap&& o) noexcept {
    chunks_ = std::exchange(o.chunks_, {});
    size_ = std::exchange(o.size_, 0);
    epoch_ = std::max(epoch_, o.epoch_);
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t chunks() const { return chunks_.size(); }
  const_iterator begin() const { return {&chunks_, 0, 0}; }
  const_iterator end() const { return {&chunks_, chunks_.size(), 0}; }

  const_iterator find(const K& key) const {
    if (chunks_.empty()) return end();
    const size_t c = ChunkOf(key);
    const auto& rows = chunks_[c]->rows;
    const size_t r = RowOf(rows, key);
    return r < rows.size() && !(key < rows[r].first) ? const_iterator{&chunks_, c, r} : end();
  }
  // The value of `key`; throws std::out_of_range if absent (as std::map::at).
  const V& at(const K& key) const {
    auto it = find(key);
    if (it == end()) throw std::out_of_range("ChunkMap::at: no such key");
    return it->second;
  }
  // The first row whose key is not less than `key`.
  const_iterator lower_bound(const K& key) const {
    if (chunks_.empty()) return end();
    const size_t c = ChunkOf(key);
    const size_t r = RowOf(chunks_[c]->rows, key);
    if (r < chunks_[c]->rows.size()) return {&chunks_, c, r};
    return {&chunks_, c + 1, 0};
  }

  // Sets the value of `key`; true if the key is new.
  bool insert_or_assign(const K& key, V value) {
    if (chunks_.empty()) {
      chunks_.push_back(Make({}));
      return Insert(0, 0, key, std::move(value));
    }
    const size_t c = ChunkOf(key);
    const size_t r = RowOf(chunks_[c]->rows, key);
    if (r < chunks_[c]->rows.size() && !(key < chunks_[c]->rows[r].first)) {
      Own(c).rows[r].second = std::move(value);
      return false;
    }
    return Insert(c, r, key, std::move(value));
  }
  // Removes `key`; false if absent.
  bool erase(const K& key) {
    if (chunks_.empty()) return false;
    const size_t c = ChunkOf(key);
    const size_t r = RowOf(chunks_[c]->rows, key);
    if (r == chunks_[c]->rows.size() || key < chunks_[c]->rows[r].first) return false;
    auto& rows = Own(c).rows;
    rows.erase(rows.begin() + static_cast<std::ptrdiff_t>(r));
    --size_;
    if (rows.empty()) {
      chunks_.erase(chunks_.begin() + static_cast<std::ptrdiff_t>(c));
    } else if (rows.size() < kMax / 4) {
      const bool merged = c + 1 < chunks_.size() && Merge(c);
      if (!merged && c > 0) (void)Merge(c - 1);
    }
    return true;
  }
  // Lets go of every row (a chunk a Frozen holds stays with it).
  void clear() {
    chunks_.clear();
    size_ = 0;
  }

  // The map as it is, in O(chunks): its chunks shared, each copied before the map next writes
  // it. Not a change of the rows, hence const (but not thread-safe, as any access).
  Frozen Freeze() const {
    ++epoch_;
    Frozen f;
    f.chunks_.assign(chunks_.begin(), chunks_.end());
    f.size_ = size_;
    return f;
  }

 private:
  std::shared_ptr<Chunk> Make(std::vector<value_type> rows) const {
    return std::make_shared<Chunk>(epoch_, std::move(rows));
  }
  // Chunk `c`, copied first if it is of an older epoch (a Frozen may hold it).
  Chunk& Own(size_t c) {
    if (chunks_[c]->epoch != epoch_) [[unlikely]]
      chunks_[c] = Make(chunks_[c]->rows);
    return *chunks_[c];
  }
  // The chunk where `key` is or would go: the last whose first key is not above it (the first
  // chunk for a key before every other). The map has a chunk.
  size_t ChunkOf(const K& key) const {
    auto it =
        std::upper_bound(chunks_.begin() + 1, chunks_.end(), key,
                         [](const K& k, const auto& ch) { return k < ch->rows.front().first; });
    return static_cast<size_t>(it - chunks_.begin()) - 1;
  }
  static size_t RowOf(const std::vector<value_type>& rows, const K& key) {
    auto it = std::lower_bound(rows.begin(), rows.end(), key,
                               [](const value_type& row, const K& k) { return row.first < k; });
    return static_cast<size_t>(it - rows.begin());
  }
  static void Put(std::vector<value_type>& rows, size_t r, value_type row) {
    if (rows.size() == rows.capacity())  // grown by half, not doubled: less room left unused
      rows.reserve(std::min(kMax, rows.size() + rows.size() / 2 + 1));
    rows.insert(rows.begin() + static_cast<std::ptrdiff_t>(r), std::move(row));
  }
  // Inserts the row at `r` of chunk `c`, where its key goes.
  bool Insert(size_t c, size_t r, const K& key, V value) {
    ++size_;
    value_type row(key, std::move(value));
    const size_t n = chunks_[c]->rows.size();
    if (n < kMax) {
      Put(Own(c).rows, r, std::move(row));
    } else if (r == n && c + 1 < chunks_.size() && chunks_[c + 1]->rows.size() < kMax) {
      Put(Own(c + 1).rows, 0, std::move(row));  // after chunk c's rows: first of the next
    } else if (r == n || r == 0) {              // at an end: a chunk of its own, filled next
      std::vector<value_type> rows;
      rows.push_back(std::move(row));
      chunks_.insert(chunks_.begin() + static_cast<std::ptrdiff_t>(r == n ? c + 1 : c),
                     Make(std::move(rows)));
    } else {  // in the middle: the upper half to a chunk of its own
      auto& rows = Own(c).rows;
      const auto half = rows.begin() + static_cast<std::ptrdiff_t>(kMax / 2);
      std::vector<value_type> upper(std::make_move_iterator(half),
                                    std::make_move_iterator(rows.end()));
      rows.erase(half, rows.end());
      rows.shrink_to_fit();
      if (r <= kMax / 2)
        Put(rows, r, std::move(row));
      else
        Put(upper, r - kMax / 2, std::move(row));
      chunks_.insert(chunks_.begin() + static_cast<std::ptrdiff_t>(c + 1), Make(std::move(upper)));
    }
    return true;
  }
  // Moves chunk c+1's rows to the end of chunk c if they fit in three quarters of a chunk.
  bool Merge(size_t c) {
    if (chunks_[c]->rows.size() + chunks_[c + 1]->rows.size() > kMax * 3 / 4) return false;
    auto& rows = Own(c).rows;
    const auto& next = chunks_[c + 1]->rows;  // copied, not moved: a Frozen may hold it
    rows.reserve(rows.size() + next.size());
    rows.insert(rows.end(), next.begin(), next.end());
    chunks_.erase(chunks_.begin() + static_cast<std::ptrdiff_t>(c + 1));
    return true;
  }

  Chunks chunks_;
  size_t size_ = 0;
  mutable uint64_t epoch_ = 0;  // Freeze() starts the next (not a change of the rows)
};

}  // namespace arbiter::server
