// Who may reach `arbiter serve`, decided before it listens:
//   - without --token-file the API is open, so it serves loopback only (127.0.0.0/8, ::1,
//     localhost);
//   - with --token-file on any other address it needs TLS (--tls-cert-file and
//     --tls-private-key-file): bearer tokens never cross a network in clear text (and kubectl
//     sends a kubeconfig's token only to an https:// server).
// TLS without a token file, and a token file on loopback without TLS, are allowed. Pure.
#pragma once

#include <string_view>

#include "core/status.h"

namespace arbiter::server {

// 127.0.0.0/8 ("127.0.0.1"), "::1" (with or without brackets) and "localhost".
bool IsLoopbackHost(std::string_view host);

// InvalidArgument with the reason when `host` may not be served this way.
Status CheckListenPolicy(std::string_view host, bool has_token_file, bool has_tls);

}  // namespace arbiter::server
