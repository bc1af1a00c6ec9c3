#include "server/state/packed_text.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/status.h"

namespace arbiter::server {
namespace {

// Typical objects, the likeliest last (a match there is found first): a finished Pod of a Job, a
// pending Pod, a running Pod, as `arbiter serve` writes them.
constexpr std::string_view kDictionary =
    R"dict({"apiVersion":"v1","kind":"Pod","metadata":{"annotations":{"arbiter.dev/duration":"1h"},"creationTimestamp":"2026-01-01T00:00:00Z","deletionGracePeriodSeconds":0,"deletionTimestamp":"2026-01-01T00:00:00Z","finalizers":["batch.kubernetes.io/job-tracking"],"generation":1,"labels":{"batch.kubernetes.io/controller-uid":"00000000-0000-4000-8000-000000000000","batch.kubernetes.io/job-name":"sweep","controller-uid":"00000000-0000-4000-8000-000000000000","job-name":"sweep"},"name":"sweep-x","namespace":"default","ownerReferences":[{"apiVersion":"batch/v1","blockOwnerDeletion":true,"controller":true,"kind":"Job","name":"sweep","uid":"00000000-0000-4000-8000-000000000000"}],"resourceVersion":"1","uid":"00000000-0000-4000-8000-000000000000"},"spec":{"containers":[{"image":"busybox","name":"main","resources":{"requests":{"cpu":"1"}}}],"nodeName":"node-0","preemptionPolicy":"PreemptLowerPriority","priority":0,"restartPolicy":"Never"},"status":{"conditions":[{"lastProbeTime":null,"lastTransitionTime":"2026-01-01T00:00:00Z","status":"True","type":"PodScheduled"},{"lastProbeTime":null,"lastTransitionTime":"2026-01-01T00:00:00Z","reason":"PodCompleted","status":"False","type":"Ready"}],"containerStatuses":[{"image":"busybox","imageID":"","name":"main","ready":false,"restartCount":0,"started":false,"state":{"terminated":{"exitCode":0,"finishedAt":"2026-01-01T00:00:00Z","reason":"Completed","startedAt":"2026-01-01T00:00:00Z"}}}],"phase":"Succeeded","qosClass":"BestEffort","startTime":"2026-01-01T00:00:00Z"}}{"apiVersion":"v1","kind":"Pod","metadata":{"creationTimestamp":"2026-01-01T00:00:00Z","generation":1,"labels":{"app":"train"},"name":"p-0","namespace":"default","resourceVersion":"1","uid":"00000000-0000-4000-8000-000000000000"},"spec":{"containers":[{"image":"busybox","name":"main","resources":{"limits":{"cpu":"1","memory":"1Gi","nvidia.com/gpu":"1"},"requests":{"cpu":"1","memory":"1Gi","nvidia.com/gpu":"1"}}}],"preemptionPolicy":"PreemptLowerPriority","priority":0},"status":{"conditions":[{"lastProbeTime":null,"lastTransitionTime":"2026-01-01T00:00:00Z","message":"0/1 nodes are available: 1 Insufficient cpu. No preemption victims found: no node frees enough by preempting lower-priority workloads.","reason":"Unschedulable","status":"False","type":"PodScheduled"},{"lastProbeTime":null,"lastTransitionTime":"2026-01-01T00:00:00Z","reason":"PodNotReady","status":"False","type":"Ready"}],"message":"0/1 nodes are available: 1 Insufficient cpu. No preemption victims found: no node frees enough by preempting lower-priority workloads.","phase":"Pending","qosClass":"Guaranteed"}}{"apiVersion":"v1","kind":"Pod","metadata":{"creationTimestamp":"2026-01-01T00:00:00Z","generation":1,"name":"p-0","namespace":"default","resourceVersion":"1","uid":"00000000-0000-4000-8000-000000000000"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"10m"}}}],"nodeName":"node-0","preemptionPolicy":"PreemptLowerPriority","priority":0},"status":{"conditions":[{"lastProbeTime":null,"lastTransitionTime":"2026-01-01T00:00:00Z","status":"True","type":"PodScheduled"},{"lastProbeTime":null,"lastTransitionTime":"2026-01-01T00:00:00Z","status":"True","type":"Ready"}],"containerStatuses":[{"image":"","imageID":"","name":"c","ready":true,"restartCount":0,"started":true,"state":{"running":{"startedAt":"2026-01-01T00:00:00Z"}}}],"phase":"Running","qosClass":"Burstable","startTime":"2026-01-01T00:00:00Z"}})dict";

// The packed form: tokens, each a header byte and what it says.
//   0x00-0x7F  h + 1 literal bytes follow (1..128).
//   0x80-0xFF  a match: (h & 0x7F) + kMinMatch bytes (4..131) copied from `distance` bytes back
//              (two bytes follow, little-endian, 1..65535) in the dictionary followed by the text
//              written so far. A match never runs from the dictionary into the text.
constexpr size_t kMinMatch = 4;
constexpr size_t kMaxMatch = 0x7F + kMinMatch;
constexpr size_t kMaxLiterals = 0x80;
constexpr size_t kMaxDistance = 0xFFFF;
constexpr int kHashBits = 13;      // the dictionary's index
constexpr int kTextHashBits = 10;  // the text's (cleared for each text)
constexpr int kChainSteps = 8;     // candidates looked at in each of the dictionary and the text

uint32_t Hash(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return (v * 2654435761u) >> (32 - kHashBits);
}

// The dictionary's positions by the hash of their first 4 bytes, newest first: built once.
struct DictionaryIndex {
  std::vector<int32_t> head = std::vector<int32_t>(size_t{1} << kHashBits, -1);
  std::vector<int32_t> prev = std::vector<int32_t>(kDictionary.size(), -1);
  DictionaryIndex() {
    for (size_t i = 0; i + kMinMatch <= kDictionary.size(); ++i) {
      const uint32_t h = Hash(kDictionary.data() + i);
      prev[i] = head[h];
      head[h] = static_cast<int32_t>(i);
    }
  }
};
const DictionaryIndex& Index() {
  static const DictionaryIndex index;
  return index;
}

size_t Common(const char* a, const char* b, size_t most) {
  size_t n = 0;
  while (n < most && a[n] == b[n]) ++n;
  return n;
}

// One text's packing; its tables are the thread's, reused (an object is packed in a few µs).
class Packer {
 public:
  explicit Packer(std::string_view text)
      : t_(text),
        head_(Tables().head),
        prev_(Tables().prev),
        literals_(Tables().literals),
        out_(Tables().out) {
    head_.assign(size_t{1} << kTextHashBits, -1);
    prev_.resize(text.size());
    literals_.clear();
    out_.clear();
  }
  std::string Pack() {
    size_t i = 0;
    while (i < t_.size()) {
      size_t len = 0, distance = 0;
      if (i + kMinMatch <= t_.size()) Longest(i, len, distance);
      if (len < kMinMatch) {
        Insert(i);
        literals_.push_back(t_[i++]);
        if (literals_.size() == kMaxLiterals) Flush();
        continue;
      }
      Flush();
      out_.push_back(static_cast<char>(0x80 | (len - kMinMatch)));
      out_.push_back(static_cast<char>(distance & 0xFF));
      out_.push_back(static_cast<char>(distance >> 8));
      for (const size_t end = i + len; i < end; ++i) Insert(i);
    }
    Flush();
    return std::string(out_.data(), out_.size());
  }

 private:
  struct ThreadTables {
    std::vector<int32_t> head, prev;
    std::vector<char> literals, out;
  };
  static ThreadTables& Tables() {
    thread_local ThreadTables tables;
    return tables;
  }
  void Insert(size_t i) {
    if (i + kMinMatch > t_.size()) return;
    const uint32_t h = Hash(t_.data() + i) >> (kHashBits - kTextHashBits);
    prev_[i] = head_[h];
    head_[h] = static_cast<int32_t>(i);
  }
  // The longest match for the text at `i`: in the text before it, then in the dictionary.
  void Longest(size_t i, size_t& len, size_t& distance) const {
    const size_t most = std::min(kMaxMatch, t_.size() - i);
    const uint32_t h = Hash(t_.data() + i);
    int steps = 0;
    for (int32_t at = head_[h >> (kHashBits - kTextHashBits)]; at >= 0 && steps < kChainSteps;
         at = prev_[at], ++steps) {
      const size_t d = i - static_cast<size_t>(at);
      if (d > kMaxDistance) break;
      const size_t n = Common(t_.data() + at, t_.data() + i, most);
      if (n > len) len = n, distance = d;
    }
    const DictionaryIndex& index = Index();
    steps = 0;
    for (int32_t at = index.head[h]; at >= 0 && steps < kChainSteps; at = index.prev[at], ++steps) {
      const size_t d = kDictionary.size() - static_cast<size_t>(at) + i;
      if (d > kMaxDistance) break;
      const size_t room = std::min(most, kDictionary.size() - static_cast<size_t>(at));
      const size_t n = Common(kDictionary.data() + at, t_.data() + i, room);
      if (n > len) len = n, distance = d;
    }
  }
  void Flush() {
    if (literals_.empty()) return;
    out_.push_back(static_cast<char>(literals_.size() - 1));
    out_.insert(out_.end(), literals_.begin(), literals_.end());
    literals_.clear();
  }

  std::string_view t_;
  std::vector<int32_t>& head_;  // the text's positions by hash, newest first
  std::vector<int32_t>& prev_;
  std::vector<char>& literals_;  // waiting to be written as a run
  std::vector<char>& out_;
};

}  // namespace

std::string PackText(std::string_view text) { return Packer(text).Pack(); }

size_t UnpackedSize(std::string_view packed) {
  size_t i = 0, n = 0;
  while (i < packed.size()) {
    const auto h = static_cast<unsigned char>(packed[i++]);
    if (h < 0x80) {
      const size_t len = size_t{h} + 1;
      i += len;
      n += len;
    } else {
      i += 2;
      n += (h & 0x7F) + kMinMatch;
    }
  }
  ARB_CHECK_MSG(i == packed.size(), "a packed object's text does not unpack");
  return n;
}

void UnpackText(std::string_view packed, std::string& out) {
  // Sized first, then written in place (no append checks, a match copied whole).
  const size_t start = out.size();
  out.resize(start + UnpackedSize(packed));
  char* const base = out.data() + start;
  size_t i = 0, w = 0;
  auto check = [](bool ok) { ARB_CHECK_MSG(ok, "a packed object's text does not unpack"); };
  while (i < packed.size()) {
    const auto h = static_cast<unsigned char>(packed[i++]);
    if (h < 0x80) {
      const size_t n = size_t{h} + 1;
      std::memcpy(base + w, packed.data() + i, n);
      i += n;
      w += n;
      continue;
    }
    const size_t len = (h & 0x7F) + kMinMatch;
    const size_t distance = static_cast<unsigned char>(packed[i]) |
                            (size_t{static_cast<unsigned char>(packed[i + 1])} << 8);
    i += 2;
    check(distance >= 1 && distance <= kDictionary.size() + w);
    if (distance > w) {  // from the dictionary
      const size_t at = kDictionary.size() + w - distance;
      check(at + len <= kDictionary.size());
      std::memcpy(base + w, kDictionary.data() + at, len);
    } else if (distance >= len) {  // from the text, not overlapping what it writes
      std::memcpy(base + w, base + w - distance, len);
    } else {  // from the text, overlapping: byte by byte
      for (size_t k = 0; k < len; ++k) base[w + k] = base[w - distance + k];
    }
    w += len;
  }
}

}  // namespace arbiter::server
