// Slot-indexed storage in fixed-size chunks (the engine's workload table, State::workloads).
// Growing never moves an element nor holds two tables at once: a std::vector that doubles copies
// every element and, during the copy, holds old and new (at a million workloads of ~1 KB, 1.6 GB
// for a moment to keep 1 GB). At most one chunk is allocated ahead of use. Index access is two
// loads more than a vector's (the chunk pointer, the chunk's epoch).
//
// Freeze() hands out the table as it is in O(chunks) (issue 27: a snapshot's capture under the
// daemon's lock): its chunks are shared, and a frozen chunk is never written again. Each chunk
// carries the epoch it was made in; Freeze() starts a new epoch, and the first access to a chunk
// of an older epoch (a read too, through the const accessors) copies it first, so that every
// reference the table gives out after a Freeze() points into a chunk of its own. No reader count
// is consulted (shared_ptr::use_count() is a relaxed load: deciding an in-place write by it is a
// data race in C++'s model), so nothing is shared that is ever written. Consequences: an
// element's address holds until the next Freeze() (a reference kept across one would see the old
// chunk), and even the const accessors may copy a chunk (the table is not safe to read from two
// threads at once; a Frozen is, on any thread, while the table goes on). A chunk written after a
// Freeze() is copied once even if no Frozen holds it any more: a capture's cost, paid where the
// chunk is next touched (O(chunk) each time, at most once per chunk and capture).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace arbiter::engine {

template <typename T, size_t kChunkShift = 10>
class SlotTable {
  struct Chunk {
    explicit Chunk(uint64_t e) : epoch(e) {}
    Chunk(const Chunk&) = delete;
    Chunk& operator=(const Chunk&) = delete;
    ~Chunk() { std::destroy_n(at(0), count); }
    T* at(size_t j) { return std::launder(reinterpret_cast<T*>(bytes)) + j; }
    const T* at(size_t j) const { return std::launder(reinterpret_cast<const T*>(bytes)) + j; }
    const uint64_t epoch;  // made in this epoch of its table: writable while the table's is this
    size_t count = 0;      // elements [0, count) are constructed
    alignas(T) std::byte bytes[sizeof(T) << kChunkShift];
  };

 public:
  static constexpr size_t kChunk = size_t{1} << kChunkShift;
  static constexpr size_t kChunkBytes = sizeof(Chunk);

  // The table at one instant (Freeze, Copy): immutable, readable on any thread.
  class Frozen {
   public:
    size_t size() const { return size_; }
    const T& operator[](size_t i) const { return *chunks_[i >> kChunkShift]->at(i & (kChunk - 1)); }

   private:
    friend class SlotTable;
    std::vector<std::shared_ptr<const Chunk>> chunks_;
    size_t size_ = 0;
  };

  SlotTable() = default;
  SlotTable(const SlotTable&) = delete;
  SlotTable& operator=(const SlotTable&) = delete;
  SlotTable(SlotTable&& o) noexcept
      : chunks_(std::move(o.chunks_)),
        size_(std::exchange(o.size_, 0)),
        epoch_(std::exchange(o.epoch_, 0)) {}
  SlotTable& operator=(SlotTable&& o) noexcept {
    if (this != &o) {
      clear();
      chunks_ = std::move(o.chunks_);
      size_ = std::exchange(o.size_, 0);
      epoch_ = std::exchange(o.epoch_, 0);
    }
    return *this;
  }
  ~SlotTable() = default;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return *Own(i >> kChunkShift).at(i & (kChunk - 1)); }
  const T& operator[](size_t i) const { return *Own(i >> kChunkShift).at(i & (kChunk - 1)); }
  T& back() { return (*this)[size_ - 1]; }
  const T& back() const { return (*this)[size_ - 1]; }

  template <typename... A>
  T& emplace_back(A&&... args) {
    if ((size_ >> kChunkShift) == chunks_.size())
      chunks_.push_back(std::make_shared<Chunk>(epoch_));
    Chunk& c = Own(size_ >> kChunkShift);
    T* at = std::construct_at(c.at(size_ & (kChunk - 1)), std::forward<A>(args)...);
    ++c.count;
    ++size_;
    return *at;
  }
  void push_back(T&& v) { emplace_back(std::move(v)); }
  void push_back(const T& v) { emplace_back(v); }
  void pop_back() {
    Chunk& c = Own((size_ - 1) >> kChunkShift);
    --size_;
    std::destroy_at(c.at(size_ & (kChunk - 1)));
    --c.count;
  }
  // Lets go of every element and chunk (a chunk a Frozen holds stays with it).
  void clear() {
    chunks_.clear();
    size_ = 0;
  }
  // Bytes held: the chunks (used or not; shared or not) and the chunk index.
  size_t capacity_bytes() const {
    return chunks_.size() * kChunkBytes + chunks_.capacity() * sizeof(std::shared_ptr<Chunk>);
  }

  // The table as it is, in O(chunks): its chunks shared, each copied before the table next
  // touches it. Not a change of the elements, hence const (but not thread-safe, as any access).
  Frozen Freeze() const {
    ++epoch_;
    Frozen f;
    f.chunks_.assign(chunks_.begin(), chunks_.end());
    f.size_ = size_;
    return f;
  }
  // The table as it is, copied element by element in O(size): for an instant at which references
  // into the table are held and will be written through (a Freeze() would not see those writes).
  Frozen Copy() const {
    Frozen f;
    f.size_ = size_;
    for (const auto& c : chunks_) f.chunks_.push_back(CopyOf(*c));
    return f;
  }

  template <typename Table, typename V>
  class Iter {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = V*;
    using reference = V&;
    Iter() = default;
    Iter(Table* t, size_t i) : t_(t), i_(i) {}
    V& operator*() const { return (*t_)[i_]; }
    V* operator->() const { return &(*t_)[i_]; }
    Iter& operator++() {
      ++i_;
      return *this;
    }
    Iter operator++(int) {
      Iter r = *this;
      ++i_;
      return r;
    }
    bool operator==(const Iter& o) const { return i_ == o.i_; }
    bool operator!=(const Iter& o) const { return i_ != o.i_; }

   private:
    Table* t_ = nullptr;
    size_t i_ = 0;
  };
  using iterator = Iter<SlotTable, T>;
  using const_iterator = Iter<const SlotTable, const T>;
  iterator begin() { return {this, 0}; }
  iterator end() { return {this, size_}; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size_}; }

 private:
  std::shared_ptr<Chunk> CopyOf(const Chunk& from) const {
    auto c = std::make_shared<Chunk>(epoch_);
    for (; c->count < from.count; ++c->count)
      std::construct_at(c->at(c->count), *from.at(c->count));
    return c;
  }
  // Chunk `k`, copied first if it is of an older epoch (a Frozen may hold it).
  Chunk& Own(size_t k) const {
    Chunk* c = chunks_[k].get();
    if (c->epoch != epoch_) [[unlikely]] {
      chunks_[k] = CopyOf(*c);
      c = chunks_[k].get();
    }
    return *c;
  }
  // Mutable: a const access may replace a chunk by its copy (Own), and Freeze() starts an epoch;
  // neither changes an element.
  mutable std::vector<std::shared_ptr<Chunk>> chunks_;
  size_t size_ = 0;
  mutable uint64_t epoch_ = 0;
};

}  // namespace arbiter::engine
