// An ordered map kept as sorted chunks of at most kMax rows (ObjectStore's objects of a kind),
// which Freeze() hands out as they are in O(chunks) (issue 27: a snapshot's capture under the
// daemon's lock shares the chunks, not each object), and FreezeRange() a key range of it in
// O(log rows + the range's chunks) (one namespace's objects: a list of them).
//
// A frozen chunk is never written again: the map copies a chunk before writing it unless the
// chunk is its own alone, which a chunk tells by its epoch. The pattern of engine::SlotTable and
// LiveFacts: each chunk carries the epoch it was made in, and is writable while that is the map's
// epoch. Freeze() starts a new epoch, so every chunk is copied before its next write (once per
// chunk and Freeze, whether or not a Frozen still holds it: no reader count is consulted, as
// shared_ptr::use_count() is a relaxed load); a copy of the map takes a new epoch of its own,
// both maps' chunks of older ones. FreezeRange() leaves the epoch as it is and marks only the
// chunks it shares: a chunk of the current epoch takes the epoch kShared, which no map ever
// reaches, so it is copied before its next write and the copy is of the current epoch again; the
// other chunks stay writable (a range's pick costs the writes after it at most one copy of each
// chunk of the range, not of every chunk). A chunk of an older epoch (or kShared) is left as it
// is: older views may hold it and it is copied before its next write anyway, so the mark is only
// ever written to a chunk that the map alone holds, under the writer's hand, and never to one a
// Frozen (read on any thread) holds. Reads copy nothing. copies(): the chunks copied so.
//
// A chunk holds 1..kMax rows in key order and the chunks are in key order too: a lookup is a
// binary search of the chunks' first keys then of one chunk. An insert into a full chunk moves
// the new row to a neighbour at an end (so ascending or descending keys fill whole chunks) or
// splits the chunk in two; an erase that leaves a chunk under a quarter full merges it with a
// neighbour that has room. Iterators and references are those of a std::vector: any change ends
// them. Not thread-safe (one writer; its Freeze and FreezeRange are writes too); a Frozen is
// immutable and may be read on any thread while the map goes on changing.
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
    // Made in this epoch of its map: writable while it is the map's (kShared: a range shares it).
    uint64_t epoch;
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

  // The map, or a key range of it, at one instant (Freeze, FreezeRange): immutable, readable on
  // any thread. Its rows are those of its chunks from row first_row() of the first, size() in
  // all (a range's first and last chunks may hold rows outside it; Freeze's hold none).
  class Frozen {
   public:
    using Chunks = std::vector<std::shared_ptr<const Chunk>>;
    using const_iterator = Iter<Chunks>;
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    size_t chunks() const { return chunks_.size(); }
    // The rows of chunk `c` (< chunks()): 1..kMax, in key order, after those of chunk c-1; all
    // of them, those outside the range too.
    const std::vector<value_type>& chunk(size_t c) const { return chunks_[c]->rows; }
    // The rows of the first chunk before the range's first (0 but for a range's).
    size_t first_row() const { return first_; }
    const_iterator begin() const { return {&chunks_, 0, first_}; }
    const_iterator end() const { return {&chunks_, end_chunk_, end_row_}; }

   private:
    friend class ChunkMap;
    Chunks chunks_;
    size_t size_ = 0;
    size_t first_ = 0;                    // in chunk 0
    size_t end_chunk_ = 0, end_row_ = 0;  // just after the last row (as Iter counts)
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
  // The chunks copied before a write since the map was made (a copy of the map counts its own;
  // a move does not carry the count).
  uint64_t copies() const { return copies_; }
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
    const auto [c, r] = Bound(key);
    return {&chunks_, c, r};
  }
  // The rows whose keys are in [lo, hi): their number, in O(log rows + the chunks they are in).
  size_t count(const K& lo, const K& hi) const {
    if (!(lo < hi)) return 0;
    const auto [c0, r0] = Bound(lo);
    const auto [c1, r1] = Bound(hi);
    size_t n = r1;
    for (size_t c = c0; c < c1; ++c) n += chunks_[c]->rows.size();
    return n - r0;
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
    f.end_chunk_ = chunks_.size();
    return f;
  }
  // The rows whose keys are in [lo, hi) as they are, in O(log rows + the chunks they are in):
  // those chunks shared (none if no row is in the range), each copied before the map next
  // writes it; the map's other chunks stay writable as they were (the header). Const as Freeze.
  Frozen FreezeRange(const K& lo, const K& hi) const {
    Frozen f;
    if (!(lo < hi)) return f;
    const auto [c0, r0] = Bound(lo);
    const auto [c1, r1] = Bound(hi);
    if (c0 == c1 && r0 == r1) return f;
    const size_t last = r1 == 0 ? c1 : c1 + 1;  // after the last chunk that holds a row in range
    f.chunks_.reserve(last - c0);
    for (size_t c = c0; c < last; ++c) {
      if (chunks_[c]->epoch == epoch_) chunks_[c]->epoch = kShared;  // the map's alone: no reader
      f.chunks_.push_back(chunks_[c]);
    }
    f.size_ = count(lo, hi);
    f.first_ = r0;
    f.end_chunk_ = c1 - c0;
    f.end_row_ = r1;
    return f;
  }

 private:
  // No map's epoch: a chunk a range shares (FreezeRange). Epochs start at 0 and only increase,
  // by a few a Freeze or copy of the map, so never reach it.
  static constexpr uint64_t kShared = UINT64_MAX;

  std::shared_ptr<Chunk> Make(std::vector<value_type> rows) const {
    return std::make_shared<Chunk>(epoch_, std::move(rows));
  }
  // Chunk `c`, copied first if it is not of the map's epoch (a Frozen or a copy may hold it).
  Chunk& Own(size_t c) {
    if (chunks_[c]->epoch != epoch_) [[unlikely]] {
      chunks_[c] = Make(chunks_[c]->rows);
      ++copies_;
    }
    return *chunks_[c];
  }
  // Where the first row whose key is not less than `key` is, as an Iter counts: (chunk, row), or
  // (chunks(), 0) after the last row. O(log rows).
  std::pair<size_t, size_t> Bound(const K& key) const {
    if (chunks_.empty()) return {0, 0};
    const size_t c = ChunkOf(key);
    const size_t r = RowOf(chunks_[c]->rows, key);
    if (r < chunks_[c]->rows.size()) return {c, r};
    return {c + 1, 0};
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
  uint64_t copies_ = 0;
};

}  // namespace arbiter::server
