// Slot-indexed storage in fixed-size chunks (the engine's workload table, State::workloads).
// Growing never moves an element nor holds two tables at once: a std::vector that doubles copies
// every element and, during the copy, holds old and new (at a million workloads of ~1 KB, 1.6 GB
// for a moment to keep 1 GB). Elements keep their address for the table's life; at most one chunk
// is allocated ahead of use. Index access is one more load than a vector's (the chunk pointer).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

namespace arbiter::engine {

template <typename T, size_t kChunkShift = 10>
class SlotTable {
 public:
  static constexpr size_t kChunk = size_t{1} << kChunkShift;

  SlotTable() = default;
  SlotTable(const SlotTable&) = delete;
  SlotTable& operator=(const SlotTable&) = delete;
  SlotTable(SlotTable&& o) noexcept
      : chunks_(std::move(o.chunks_)), size_(std::exchange(o.size_, 0)) {}
  SlotTable& operator=(SlotTable&& o) noexcept {
    if (this != &o) {
      clear();
      chunks_ = std::move(o.chunks_);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  ~SlotTable() { clear(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return chunks_[i >> kChunkShift][i & (kChunk - 1)]; }
  const T& operator[](size_t i) const { return chunks_[i >> kChunkShift][i & (kChunk - 1)]; }
  T& back() { return (*this)[size_ - 1]; }
  const T& back() const { return (*this)[size_ - 1]; }

  template <typename... A>
  T& emplace_back(A&&... args) {
    if ((size_ >> kChunkShift) == chunks_.size()) chunks_.push_back(Allocate());
    T* at = &chunks_[size_ >> kChunkShift][size_ & (kChunk - 1)];
    std::construct_at(at, std::forward<A>(args)...);
    ++size_;
    return *at;
  }
  void push_back(T&& v) { emplace_back(std::move(v)); }
  void push_back(const T& v) { emplace_back(v); }
  void pop_back() {
    --size_;
    std::destroy_at(&(*this)[size_]);
  }
  // Destroys every element and frees every chunk.
  void clear() {
    while (size_ > 0) pop_back();
    for (T* c : chunks_) std::allocator<T>().deallocate(c, kChunk);
    chunks_.clear();
  }
  // Bytes held: the chunks (used or not) and the chunk index.
  size_t capacity_bytes() const {
    return chunks_.size() * kChunk * sizeof(T) + chunks_.capacity() * sizeof(T*);
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
  static T* Allocate() { return std::allocator<T>().allocate(kChunk); }
  std::vector<T*> chunks_;
  size_t size_ = 0;
};

}  // namespace arbiter::engine
