// List pagination's `continue` token, as kube-apiserver writes and reads it
// (k8s.io/apiserver/pkg/storage/continue.go): base64url without padding of
// {"v":"meta.k8s.io/v1","rv":RV,"start":"KEY\u0000"}, where KEY is the last returned object's key
// relative to the list's prefix ("ns/name" in a list over every namespace, "name" in one
// namespace or for a cluster-scoped kind) and the NUL makes the next page start after it.
// rv is the first page's resourceVersion; -1 asks for the rest as of now (the token a 410 Expired
// answer carries). Decode errors are kube-apiserver's texts; the API answers them
// 400 "invalid continue token: <error>". Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace arbiter::kube {

struct ContinueToken {
  int64_t resource_version = 0;
  std::string start;  // KEY + '\0': the first key a page may hold
};

std::string EncodeContinue(const ContinueToken& t);
// "continue key is not valid: ..." errors (bad base64 or JSON, rv 0, empty start key, a start
// key path.Clean would change, an unknown "v").
Result<ContinueToken> DecodeContinue(std::string_view token);

// RFC 4648 base64url without padding (Go's base64.RawURLEncoding), and back ("illegal base64
// data at input byte N" as Go says).
std::string Base64RawUrl(std::string_view bytes);
Result<std::string> DecodeBase64RawUrl(std::string_view text);

// The message of a 410 Expired answer to a continue whose snapshot is gone; the answer's
// metadata.continue holds a token with rv -1 (kube-apiserver's inconsistentContinue).
inline constexpr std::string_view kInconsistentContinue =
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this response "
    "to retrieve the remainder of the results. Continuing with the provided token results in an "
    "inconsistent list - objects that were created, modified, or deleted between the time the "
    "first chunk was returned and now may show up in the list.";

}  // namespace arbiter::kube
