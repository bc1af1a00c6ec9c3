#include "server/state/event_book.h"

namespace arbiter::server {

void EventBook::Resize(const std::string& ns, size_t from, size_t to) {
  if (from > 0) sizes_.erase({from, ns});
  if (to > 0) sizes_.insert({to, ns});
}

void EventBook::Note(Key key, std::optional<Preemption> preemption) {
  const uint64_t seq = next_++;
  auto& mine = by_ns_[key.first];
  mine.push_back(seq);
  Resize(key.first, mine.size() - 1, mine.size());
  by_seq_.emplace(seq, Entry{std::move(key), std::move(preemption)});
}

EventBook::Key EventBook::Drop(bool fair) {
  const std::string ns = fair ? sizes_.rbegin()->second : by_seq_.begin()->second.key.first;
  auto it = by_ns_.find(ns);
  const uint64_t seq = it->second.front();  // (the oldest of all is its namespace's oldest)
  it->second.pop_front();
  Resize(ns, it->second.size() + 1, it->second.size());
  if (it->second.empty()) by_ns_.erase(it);
  auto entry = by_seq_.find(seq);
  Key key = std::move(entry->second.key);
  by_seq_.erase(entry);
  return key;
}

std::vector<EventBook::Key> EventBook::Add(Key key, std::optional<Preemption> preemption,
                                           size_t cap, bool fair) {
  Note(std::move(key), std::move(preemption));
  std::vector<Key> gone;
  while (by_seq_.size() > cap) gone.push_back(Drop(fair));
  return gone;
}

std::vector<EventBook::Key> EventBook::Keys() const {
  std::vector<Key> keys;
  keys.reserve(by_seq_.size());
  for (const auto& [seq, e] : by_seq_) keys.push_back(e.key);
  return keys;
}

std::vector<Preemption> EventBook::Preemptions() const {
  std::vector<Preemption> out;
  for (const auto& [seq, e] : by_seq_)
    if (e.preemption) out.push_back(*e.preemption);
  return out;
}

}  // namespace arbiter::server
