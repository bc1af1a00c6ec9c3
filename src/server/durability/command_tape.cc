#include "server/durability/command_tape.h"

#include <variant>

#include "core/serial.h"

namespace arbiter::server {

namespace {
constexpr std::string_view kTapeMagic = "ARBTAPE";
constexpr uint8_t kTapeVersion = 1;
constexpr uint8_t kTapeCommandTag = 1;
constexpr uint8_t kTapeRefusalTag = 2;  // (journal formats 2-4)
constexpr uint8_t kTapeRefusalTextTag = 3;

void StartTape(std::string& bytes) {
  if (!bytes.empty()) return;
  bytes.append(kTapeMagic);
  bytes.push_back(static_cast<char>(kTapeVersion));
}
}  // namespace

void CommandTape::Add(const engine::Command& c) {
  StartTape(bytes_);
  serial::Writer w;
  w.U8(kTapeCommandTag);
  int32_t exit_code = 0;
  if (const auto* submit = std::get_if<engine::SubmitPod>(&c.op))
    exit_code = submit->pod.sim.exit_code;
  w.U32(static_cast<uint32_t>(exit_code));
  w.Bytes(engine::EncodeCommand(c));
  bytes_ += w.bytes();
}

void CommandTape::AddRefusal(const std::string& message) {
  StartTape(bytes_);
  serial::Writer w;
  w.U8(kTapeRefusalTextTag);
  w.Bytes(message);
  bytes_ += w.bytes();
}

void CommandTape::Truncate(size_t mark) {
  if (mark < bytes_.size()) bytes_.resize(mark);
}

void CommandTape::Clear() { bytes_.clear(); }

std::string CommandTape::Take() {
  std::string out;
  out.swap(bytes_);
  return out;
}

Result<CommandTape> CommandTape::Decode(std::string_view bytes) {
  using R = Result<CommandTape>;
  CommandTape t;
  if (bytes.empty()) return t;
  if (bytes.size() <= kTapeMagic.size() || bytes.substr(0, kTapeMagic.size()) != kTapeMagic)
    return R::Error("corrupt command tape: no ARBTAPE header");
  const auto version = static_cast<uint8_t>(bytes[kTapeMagic.size()]);
  if (version != kTapeVersion)
    return R::Error("command tape version " + std::to_string(version) + " (this arbiter reads " +
                    std::to_string(kTapeVersion) + ")");
  serial::Reader r(bytes.substr(kTapeMagic.size() + 1));
  while (r.ok() && !r.AtEnd()) {
    const uint8_t tag = r.U8();
    Entry e;
    if (tag == kTapeRefusalTag) {
      e.refused = true;
    } else if (tag == kTapeRefusalTextTag) {
      e.refused = true;
      e.message = r.Bytes();
      if (!r.ok()) break;
    } else if (tag == kTapeCommandTag) {
      const auto exit_code = static_cast<int32_t>(r.U32());
      const std::string command = r.Bytes();
      if (!r.ok()) break;
      auto c = engine::DecodeCommand(command);
      if (!c.ok())
        return R::Error("command tape entry " + std::to_string(t.entries_.size()) + ": " +
                        c.message());
      e.command = std::move(c).value();
      if (auto* submit = std::get_if<engine::SubmitPod>(&e.command.op))
        submit->pod.sim.exit_code = exit_code;
    } else {
      return R::Error("corrupt command tape: entry " + std::to_string(t.entries_.size()) +
                      " has tag " + std::to_string(tag));
    }
    t.entries_.push_back(std::move(e));
  }
  if (!r.ok()) return R::Error("corrupt command tape: " + r.error());
  return t;
}

}  // namespace arbiter::server
