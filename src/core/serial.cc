#include "core/serial.h"

#include "core/billing/sha256.h"

namespace arbiter::serial {

namespace {
std::string Digest(std::string_view body) {
  billing::Sha256 h;
  h.Update(body);
  const auto d = h.Finish();
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}
}  // namespace

namespace {
// What goes before the body: magic, version, kind, length, checksum.
std::string SealHead(std::string_view kind, uint32_t version, std::string_view body) {
  Writer w;
  w.bytes().append(kMagic, sizeof kMagic);
  w.U32(version);
  w.Bytes(kind);
  w.U64(body.size());
  w.bytes() += Digest(body);
  return std::move(w.bytes());
}
}  // namespace

std::string Seal(std::string_view kind, uint32_t version, std::string_view body) {
  std::string file = SealHead(kind, version, body);
  file.append(body.data(), body.size());
  return file;
}

std::string Seal(std::string_view kind, uint32_t version, std::string&& body) {
  body.insert(0, SealHead(kind, version, body));  // in place when `body` has the room
  return std::move(body);
}

Result<std::string> Unseal(std::string_view file, std::string_view kind, uint32_t version) {
  uint32_t found = 0;
  return Unseal(file, kind, version, version, &found);
}

Result<std::string> Unseal(std::string_view file, std::string_view kind, uint32_t oldest,
                           uint32_t version, uint32_t* found) {
  using R = Result<std::string>;
  if (file.size() < sizeof kMagic || std::memcmp(file.data(), kMagic, sizeof kMagic) != 0)
    return R::Error(StatusCode::kInvalidArgument,
                    "not an Arbiter state file (it does not start with ARBSTATE)");
  Reader r(file.substr(sizeof kMagic));
  const uint32_t v = r.U32();
  const std::string k = r.Bytes();
  const uint64_t n = r.U64();
  if (!r.ok()) return R::Error(StatusCode::kInvalidArgument, "truncated state file: " + r.error());
  if (k != kind)
    return R::Error(StatusCode::kInvalidArgument, "this state file holds a state of kind \"" + k +
                                                      "\", not \"" + std::string(kind) + "\"");
  *found = v;
  if (v < oldest || v > version)
    return R::Error(
        StatusCode::kFailedPrecondition,
        "state file format version " + std::to_string(v) + ": this arbiter reads version " +
            (oldest == version ? "" : std::to_string(oldest) + " to ") + std::to_string(version) +
            " (save it again with the arbiter that resumes it)");
  const size_t head = sizeof kMagic + 4 + 8 + k.size() + 8;
  if (file.size() < head + 32 || file.size() - head - 32 != n)
    return R::Error(StatusCode::kInvalidArgument,
                    "corrupt state file: it is " + std::to_string(file.size()) +
                        " bytes, its header says " + std::to_string(head + 32 + n));
  const std::string_view body = file.substr(head + 32);
  if (Digest(body) != file.substr(head, 32))
    return R::Error(StatusCode::kInvalidArgument,
                    "corrupt state file: its checksum does not match its contents");
  return std::string(body);
}

}  // namespace arbiter::serial
