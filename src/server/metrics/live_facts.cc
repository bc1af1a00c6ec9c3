#include "server/metrics/live_facts.h"

#include <algorithm>

#include "core/placement/node_state.h"

namespace arbiter::server {

namespace {

auto ById(uint64_t id) {
  return [id](const LiveFact& row) { return row.id < id; };
}

LiveFacts::Chunk::iterator At(LiveFacts::Chunk& c, uint64_t id) {
  return std::partition_point(c.begin(), c.end(), ById(id));
}

}  // namespace

const std::string& LiveFact::container_name() const {
  static const std::string kMain = "main";
  return container->empty() ? kMain : *container;
}

const std::string* LiveFacts::Intern(const std::string& s) {
  return &*strings_->set.insert(s).first;
}

LiveFacts::Chunk& LiveFacts::Writable(uint64_t chunk) {
  Entry& e = chunks_[chunk];
  if (!e.rows) {
    e.rows = std::make_shared<Chunk>();
  } else if (e.epoch != epoch_) {  // a View may hold it: copied, the View keeps the old one
    e.rows = std::make_shared<Chunk>(*e.rows);
  }
  e.epoch = epoch_;
  return *e.rows;
}

LiveFact* LiveFacts::FindWritable(uint64_t id) {
  auto c = chunks_.find(id >> kChunkBits);
  if (c == chunks_.end()) return nullptr;
  auto it = At(*c->second.rows, id);
  if (it == c->second.rows->end() || it->id != id) return nullptr;
  Chunk& w = Writable(id >> kChunkBits);
  return &*At(w, id);
}

void LiveFacts::Put(const engine::WorkloadStatus& s, std::string_view container,
                    const placement::GpuAssignment& gpus) {
  const uint64_t id = engine::Value(s.id);
  Chunk& c = Writable(id >> kChunkBits);
  auto it = At(c, id);
  if (it == c.end() || it->id != id) {
    it = c.insert(it, LiveFact{});
    it->id = id;
  }
  LiveFact& row = *it;
  if (!row.namespace_ || *row.namespace_ != s.namespace_) row.namespace_ = Intern(s.namespace_);
  if (!row.node || *row.node != s.node) row.node = Intern(s.node);
  if (!row.reason || *row.reason != s.reason) row.reason = Intern(s.reason);
  if (row.name != s.name) row.name = s.name;
  if (!row.container || *row.container != container) row.container = Intern(std::string(container));
  if (!row.requests_ || !(*row.requests_ == s.requests)) {
    if (!last_requests_ || !(*last_requests_ == s.requests))
      last_requests_ = std::make_shared<const ResourceList>(s.requests);
    row.requests_ = last_requests_;
  }
  row.run_start = s.run_start;
  row.submit_time = s.submit_time;
  row.priority = s.priority;
  row.preemptions = s.preemptions;
  row.pending = s.phase == engine::Phase::kPending;
  row.borrowed = s.borrowed;
  PutNote(row, s);
  if (gpus.devices.empty())
    row.gpus.reset();
  else if (!row.gpus || !(*row.gpus == gpus))
    row.gpus = std::make_shared<const placement::GpuAssignment>(gpus);
}

void LiveFacts::PutNote(LiveFact& row, const engine::WorkloadStatus& s) {
  if (s.phase != engine::Phase::kPending ||
      (s.message.empty() && s.nominated_node.empty() && !s.reservation)) {
    row.note.reset();
    return;
  }
  auto same = [&s](const std::shared_ptr<const PendingNote>& n) {
    return n && n->message == s.message && n->nominated_node == s.nominated_node &&
           n->reservation == s.reservation;
  };
  if (same(row.note)) return;
  if (!same(last_note_))
    last_note_ = std::make_shared<const PendingNote>(
        PendingNote{s.message, s.nominated_node, s.reservation});
  row.note = last_note_;
}

void LiveFacts::SetUsage(uint64_t id, std::shared_ptr<const ResourceList> declared) {
  const LiveFact* now = Find(id);
  if (!now || now->declared == declared) return;
  FindWritable(id)->declared = std::move(declared);
}

void LiveFacts::Erase(uint64_t id) {
  auto c = chunks_.find(id >> kChunkBits);
  if (c == chunks_.end()) return;
  auto it = At(*c->second.rows, id);
  if (it == c->second.rows->end() || it->id != id) return;
  if (c->second.rows->size() == 1) {
    chunks_.erase(c);
    return;
  }
  Chunk& w = Writable(id >> kChunkBits);
  w.erase(At(w, id));
}

const LiveFact* LiveFacts::Find(uint64_t id) const {
  auto c = chunks_.find(id >> kChunkBits);
  if (c == chunks_.end()) return nullptr;
  const Chunk& rows = *c->second.rows;
  auto it = std::partition_point(rows.begin(), rows.end(), ById(id));
  return it == rows.end() || it->id != id ? nullptr : &*it;
}

size_t LiveFacts::size() const {
  size_t n = 0;
  for (const auto& [k, c] : chunks_) n += c.rows->size();
  return n;
}

LiveFacts::View LiveFacts::Share() const {
  ++epoch_;  // every chunk is copied before it is next written
  View v;
  v.chunks_.reserve(chunks_.size());
  for (const auto& [k, c] : chunks_) v.chunks_.push_back(c.rows);
  v.strings_ = strings_;
  return v;
}

std::vector<LiveFact> LiveFacts::Rows(const std::vector<uint64_t>& ids) const {
  std::vector<LiveFact> out;
  out.reserve(ids.size());
  for (uint64_t id : ids)
    if (const LiveFact* row = Find(id)) out.push_back(*row);
  return out;
}

}  // namespace arbiter::server
