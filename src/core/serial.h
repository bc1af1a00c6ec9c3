// A small, deterministic binary encoding for state files (engine snapshots, paused simulations;
// format in docs/snapshot.md). Values are written field by field in a fixed order:
//   integers   little-endian, fixed width (u8, u32, u64; signed as two's complement)
//   bool       u8 0 or 1
//   string     u64 length, then the bytes
//   optional   u8 0 (absent) or 1, then the value
//   vector     u64 count, then the items
//   map        u64 count, then key, value pairs in key order
//   enum       u32 value (checked against the enum's range when read)
// A file: the magic "ARBSTATE", u32 format version, a kind string ("engine", "simulation"), the
// u64 body length, the SHA-256 of the body (32 bytes), the body. Reading refuses a foreign file, a
// wrong kind or version, a checksum mismatch and a truncated or overlong body, with a message.
//
// One function per type describes its fields for both directions (Io below): the writer and the
// reader cannot disagree on the order.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/int128.h"
#include "core/status.h"

namespace arbiter::serial {

inline constexpr char kMagic[8] = {'A', 'R', 'B', 'S', 'T', 'A', 'T', 'E'};

class Writer {
 public:
  static constexpr bool kReading = false;
  static constexpr bool flavorless = false;       // see Reader
  static constexpr bool latencyless = false;      // see Reader
  static constexpr bool depthless = false;        // see Reader
  static constexpr bool constraintless = false;   // see Reader
  static constexpr bool schedless = false;        // see Reader
  static constexpr bool topologyless = false;     // see Reader
  static constexpr bool reservationless = false;  // see Reader
  static constexpr bool lostworkless = false;     // see Reader
  static constexpr bool backoffless = false;      // see Reader
  static constexpr bool heldless = false;         // see Reader
  static constexpr bool boundless = false;        // see Reader
  static constexpr bool shortenless = false;      // see Reader
  static constexpr bool namespaceless = false;    // see Reader
  static constexpr bool submitless = false;       // see Reader
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U32(uint32_t v) {
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void U64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void Bytes(std::string_view s) {
    U64(s.size());
    out_.append(s.data(), s.size());
  }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  static constexpr bool kReading = true;
  // The file predates resource flavors (engine snapshot and command version 2, simulation state
  // version 2): their fields are absent and read as empty.
  bool flavorless = false;
  // The file predates PoolPolicy spec.latency (engine snapshot and command version 3).
  bool latencyless = false;
  // The file predates PoolPolicy scheduling.backfillDepth and fairSharing.preemptionStrategies
  // (engine snapshot and command version 4): they keep their defaults.
  bool depthless = false;
  // The file predates node constraints: Node taints, Pod tolerations and node affinity (engine
  // snapshot and command version 5, simulation state version 3): they read as empty.
  bool constraintless = false;
  // The file predates PoolPolicy spec.latency.schedInterval (engine snapshot and command version
  // 6, simulation state version 4): it reads as 0 (graceEndDelay as given).
  bool schedless = false;
  // The file predates pod topology: Pod podAffinity, podAntiAffinity and
  // topologySpreadConstraints (engine snapshot and command version 6, simulation state version
  // 4): they read as empty.
  bool topologyless = false;
  // The file predates the workloads' structured backfill reservation (engine snapshot version 7):
  // it reads as none until the next cycle (the message keeps its note).
  bool reservationless = false;
  // The file predates the workloads' checkpoint facts (engine snapshot version 8): they read as
  // none (no checkpoint interval, no shutdown time) until the pod is submitted again.
  bool lostworkless = false;
  // The file predates PoolPolicy preemption.requeuingStrategy (engine snapshot version 9, command
  // version 8, simulation state version 6): no back-off.
  bool backoffless = false;
  // The file predates requeuingStrategy.immediateRequeues and the workloads' time held out of the
  // queue (engine snapshot version 10, command version 9, simulation state version 7): no
  // immediate requeues, no time held counted.
  bool heldless = false;
  // The file predates SubmitPod::node, a pod bound already (engine snapshot version 11, command
  // version 10): none.
  bool boundless = false;
  // The file predates DeletePod::shorten (command version 12): a second delete never shortened.
  bool shortenless = false;
  // The file predates QoS spec.namespaces (engine snapshot version 14, command version 13; a
  // simulation state holds QoS only in its engine snapshot): every namespace may name the QoS.
  bool namespaceless = false;
  // The file predates PoolPolicy quota.maxSubmittedPerNamespace (engine snapshot version 15,
  // command version 14; a simulation state holds the policy only in its engine snapshot): no cap.
  bool submitless = false;
  explicit Reader(std::string_view in) : in_(in) {}
  uint8_t U8() {
    if (!Need(1)) return 0;
    return static_cast<uint8_t>(in_[pos_++]);
  }
  uint32_t U32() {
    if (!Need(4)) return 0;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i)
      v |= static_cast<uint32_t>(static_cast<uint8_t>(in_[pos_++])) << (8 * i);
    return v;
  }
  uint64_t U64() {
    if (!Need(8)) return 0;
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v |= static_cast<uint64_t>(static_cast<uint8_t>(in_[pos_++])) << (8 * i);
    return v;
  }
  std::string Bytes() {
    const uint64_t n = U64();
    if (!Need(n)) return {};
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  // A count of items about to be read; refuses counts the remaining bytes cannot hold.
  uint64_t Count(size_t min_item_bytes = 1) {
    const uint64_t n = U64();
    if (ok() && n > (in_.size() - pos_) / (min_item_bytes ? min_item_bytes : 1))
      Fail("a count larger than the file");
    return ok() ? n : 0;
  }
  void Fail(const std::string& why) {
    if (error_.empty()) error_ = why + " (at byte " + std::to_string(pos_) + ")";
  }
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  bool AtEnd() const { return pos_ == in_.size(); }

 private:
  bool Need(uint64_t n) {
    if (!ok()) return false;
    if (n > in_.size() - pos_) {
      Fail("the data ends early");
      return false;
    }
    return true;
  }
  std::string_view in_;
  size_t pos_ = 0;
  std::string error_;
};

// ------------------------------------------------------------------ Io: one description, two
// directions

inline void Io(Writer& w, const bool& v) { w.U8(v ? 1 : 0); }
inline void Io(Reader& r, bool& v) {
  const uint8_t b = r.U8();
  if (b > 1) r.Fail("a boolean that is neither 0 nor 1");
  v = b == 1;
}
template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
void Io(Writer& w, const T& v) {
  if constexpr (sizeof(T) == 1)
    w.U8(static_cast<uint8_t>(v));
  else if constexpr (sizeof(T) <= 4)
    w.U32(static_cast<uint32_t>(v));
  else
    w.U64(static_cast<uint64_t>(v));
}
template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
void Io(Reader& r, T& v) {
  if constexpr (sizeof(T) == 1)
    v = static_cast<T>(r.U8());
  else if constexpr (sizeof(T) <= 4)
    v = static_cast<T>(r.U32());
  else
    v = static_cast<T>(r.U64());
}
inline void Io(Writer& w, const int128& v) {
  w.U64(static_cast<uint64_t>(static_cast<uint128>(v)));
  w.U64(static_cast<uint64_t>(static_cast<uint128>(v) >> 64));
}
inline void Io(Reader& r, int128& v) {
  const uint64_t lo = r.U64(), hi = r.U64();
  v = static_cast<int128>((static_cast<uint128>(hi) << 64) | lo);
}
inline void Io(Writer& w, const std::string& s) { w.Bytes(s); }
inline void Io(Reader& r, std::string& s) { s = r.Bytes(); }

// Enums: as u32, checked against [0, max] when read (IoEnum).
template <typename E>
void IoEnum(Writer& w, const E& v, E /*max*/) {
  w.U32(static_cast<uint32_t>(v));
}
template <typename E>
void IoEnum(Reader& r, E& v, E max) {
  const uint32_t x = r.U32();
  if (x > static_cast<uint32_t>(max)) r.Fail("an unknown enum value " + std::to_string(x));
  v = static_cast<E>(x > static_cast<uint32_t>(max) ? 0 : x);
}

template <typename A, typename T>
void Io(A& a, std::optional<T>& v) {
  bool has = v.has_value();
  Io(a, has);
  if constexpr (A::kReading) {
    if (has) {
      v.emplace();
      Io(a, *v);
    } else {
      v.reset();
    }
  } else if (has) {
    Io(a, *v);
  }
}
template <typename T>
void Io(Writer& w, const std::optional<T>& v) {
  Io(w, const_cast<std::optional<T>&>(v));
}

template <typename A, typename T>
void Io(A& a, std::vector<T>& v) {
  if constexpr (A::kReading) {
    const uint64_t n = a.Count();
    v.clear();
    for (uint64_t i = 0; i < n && a.ok(); ++i) {
      v.emplace_back();
      Io(a, v.back());
    }
  } else {
    a.U64(v.size());
    for (auto& x : v) Io(a, x);
  }
}
template <typename T>
void Io(Writer& w, const std::vector<T>& v) {
  Io(w, const_cast<std::vector<T>&>(v));
}

template <typename A, typename K, typename V, typename C>
void Io(A& a, std::map<K, V, C>& m) {
  if constexpr (A::kReading) {
    const uint64_t n = a.Count();
    m.clear();
    for (uint64_t i = 0; i < n && a.ok(); ++i) {
      K k{};
      V v{};
      Io(a, k);
      Io(a, v);
      if (!m.emplace(std::move(k), std::move(v)).second) a.Fail("a duplicate map key");
    }
  } else {
    a.U64(m.size());
    for (auto& [k, v] : m) {
      Io(a, const_cast<K&>(k));
      Io(a, v);
    }
  }
}
template <typename K, typename V, typename C>
void Io(Writer& w, const std::map<K, V, C>& m) {
  Io(w, const_cast<std::map<K, V, C>&>(m));
}

template <typename A, typename X, typename Y>
void Io(A& a, std::pair<X, Y>& p) {
  Io(a, p.first);
  Io(a, p.second);
}

// Wraps a body into a state file / unwraps it (checks magic, version, kind, length, checksum).
std::string Seal(std::string_view kind, uint32_t version, std::string_view body);
// The same, `body` taken and the head put in front of it in place (a large body is not copied).
std::string Seal(std::string_view kind, uint32_t version, std::string&& body);
Result<std::string> Unseal(std::string_view file, std::string_view kind, uint32_t version);
// Same, accepting any version from `oldest` to `version`; `*found` gets the file's.
Result<std::string> Unseal(std::string_view file, std::string_view kind, uint32_t oldest,
                           uint32_t version, uint32_t* found);

}  // namespace arbiter::serial
