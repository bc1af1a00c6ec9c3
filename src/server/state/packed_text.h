// The wire text of a stored object of the many-object kinds (Pods), packed for memory: LZ77 against
// a built-in dictionary of typical objects (a running, a pending and a Job's Pod), so that what
// every Pod repeats (field names, conditions, the uid's form, its own timestamps) costs a few
// bytes: a running Pod's 827 bytes of text pack into 81. About 2 µs of CPU to pack a Pod and 0.25
// µs to unpack it (a list of 10,000 Pods unpacks in about 3 ms). In memory only: snapshots and the
// journal hold plain text, so the dictionary and the form may change from one release to the next.
// Thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace arbiter::server {

// `text` packed (never empty for a non-empty text).
std::string PackText(std::string_view text);
// Appends the text `packed` holds to `out` (aborts on bytes PackText did not make).
void UnpackText(std::string_view packed, std::string& out);
// The length of the text `packed` holds, from its tokens' headers alone (no text made).
size_t UnpackedSize(std::string_view packed);

}  // namespace arbiter::server
