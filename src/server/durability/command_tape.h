// The engine commands one mutation gave the engine, in the order it gave them: what journal
// format 2 stores beside each mutation (docs/serve.md, "Journal and recovery"), and what replay
// gives the engine instead of deriving the commands again from the object, so that replay runs
// no loader, validator or admission.
//
// An entry is a command (EncodeCommand's bytes: versioned and checksummed) or a refusal (a pod
// the Job controller tried to create and that was refused: replay refuses it again without
// judging it). A SubmitPod's entry also carries the work model's exit code (the pod's
// arbiter.dev/exit-code, which commands do not carry).
//
// Bytes: "ARBTAPE" and a version byte (1), then per entry a tag byte (1: command, 2: refusal,
// 3: refusal with its message, since journal format 5); a command's tag is followed by its exit
// code (u32) and the command's bytes (u64 length, bytes), a refusal's message by its bytes (u64
// length, bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/engine/command.h"
#include "core/status.h"

namespace arbiter::server {

class CommandTape {
 public:
  struct Entry {
    bool refused = false;
    std::string message;      // a refusal's (tag 3: as the Status said it; "" before format 5)
    engine::Command command;  // (not a refusal) a SubmitPod's pod has its sim.exit_code back
  };

  // ---- recording (encoded as they come)
  void Add(const engine::Command& c);
  void AddRefusal(const std::string& message);
  // A mark to Truncate back to (the entries recorded since are dropped).
  size_t Mark() const { return bytes_.size(); }
  void Truncate(size_t mark);
  void Clear();
  // The encoded entries, and the tape emptied.
  std::string Take();

  // ---- playing
  static Result<CommandTape> Decode(std::string_view bytes);
  const Entry* Peek() const { return at_ < entries_.size() ? &entries_[at_] : nullptr; }
  const Entry* Next() { return at_ < entries_.size() ? &entries_[at_++] : nullptr; }
  size_t size() const { return entries_.size(); }
  size_t played() const { return at_; }

 private:
  std::string bytes_;
  std::vector<Entry> entries_;
  size_t at_ = 0;
};

}  // namespace arbiter::server
