// The Pods a simulation owns and has yet to submit, in submission order, kept in the state file's
// encoding (core/object_serial.h) in batches: a Pod waiting there takes about 400 bytes instead of
// its 800-byte object and the strings, maps and vectors it holds, and each batch is given back
// once its last Pod is out. So a million-pod run's Pods do not live twice while it is set up (the
// loaded vector, and the Pods moved out of it in submission order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "core/objects.h"
#include "core/serial.h"
#include "core/status.h"

namespace arbiter::sim {

class PendingPods {
 public:
  // At the back.
  void Push(const Pod& pod);
  // The front Pod, out of the store: the same fields as pushed. Not empty. An error only if the
  // store's own bytes do not read back (a bug).
  Result<Pod> Pop();
  // The front Pod's submit time. Not empty.
  Millis FrontSubmitTime() const;
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Writes the Pods still in the store, front first, as serial::Write writes a std::vector<Pod>
  // (a saved simulation's pods to come; that encoding holds no arbiter.dev/exit-code).
  void Write(serial::Writer& w) const;
  // Their exit codes, front first, as serial::Write writes a std::vector<int32_t> (the state
  // file's section after the recorder, version 9).
  void WriteExitCodes(serial::Writer& w) const;

 private:
  static constexpr size_t kBatch = 4096;  // Pods per batch: about 1.6 MB
  struct Batch {
    std::string bytes;                // the Pods, one after another
    std::vector<uint32_t> ends;       // where each Pod's bytes end
    std::vector<Millis> times;        // each Pod's submit time
    std::vector<int32_t> exit_codes;  // each Pod's arbiter.dev/exit-code (not in the encoding)
    size_t Begin(size_t i) const { return i == 0 ? 0 : ends[i - 1]; }
  };

  std::deque<Batch> batches_;
  size_t front_ = 0;  // Pods of batches_.front() already out
  size_t size_ = 0;
};

}  // namespace arbiter::sim
