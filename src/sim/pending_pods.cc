#include "sim/pending_pods.h"

#include "core/object_serial.h"

namespace arbiter::sim {

void PendingPods::Push(const Pod& pod) {
  if (batches_.empty() || batches_.back().times.size() == kBatch) {
    if (!batches_.empty()) batches_.back().bytes.shrink_to_fit();
    Batch& b = batches_.emplace_back();
    b.ends.reserve(kBatch);
    b.times.reserve(kBatch);
    b.exit_codes.reserve(kBatch);
  }
  Batch& b = batches_.back();
  serial::Writer w;
  w.bytes().swap(b.bytes);  // the writer appends to the batch's bytes
  serial::Write(w, pod);
  w.bytes().swap(b.bytes);
  b.ends.push_back(static_cast<uint32_t>(b.bytes.size()));
  b.times.push_back(pod.sim.submit_time);
  b.exit_codes.push_back(pod.sim.exit_code);
  ++size_;
}

Result<Pod> PendingPods::Pop() {
  const Batch& b = batches_.front();
  const size_t begin = b.Begin(front_);
  serial::Reader r(std::string_view(b.bytes).substr(begin, b.ends[front_] - begin));
  Pod pod;
  serial::Io(r, pod);
  if (!r.ok() || !r.AtEnd())  // the store's own bytes: never
    return Result<Pod>::Error("internal error: a pending Pod does not read back (" +
                              (r.ok() ? std::string("bytes left over") : r.error()) + ")");
  pod.sim.exit_code = b.exit_codes[front_];
  --size_;
  if (++front_ == b.times.size()) {
    batches_.pop_front();
    front_ = 0;
  }
  return pod;
}

Millis PendingPods::FrontSubmitTime() const { return batches_.front().times[front_]; }

void PendingPods::Write(serial::Writer& w) const {
  w.U64(size_);
  for (size_t k = 0; k < batches_.size(); ++k) {
    const Batch& b = batches_[k];
    const size_t begin = b.Begin(k == 0 ? front_ : 0);
    w.bytes().append(b.bytes, begin, b.bytes.size() - begin);
  }
}

void PendingPods::WriteExitCodes(serial::Writer& w) const {
  w.U64(size_);  // as a std::vector<int32_t> of them encodes, read in place
  for (size_t k = 0; k < batches_.size(); ++k) {
    const Batch& b = batches_[k];
    for (size_t i = k == 0 ? front_ : 0; i < b.exit_codes.size(); ++i)
      serial::Io(w, b.exit_codes[i]);
  }
}

}  // namespace arbiter::sim
