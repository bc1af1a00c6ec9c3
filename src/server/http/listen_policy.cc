#include "server/http/listen_policy.h"

#include <arpa/inet.h>

#include <string>

namespace arbiter::server {

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  in_addr a{};
  const std::string h(host);
  if (inet_pton(AF_INET, h.c_str(), &a) != 1) return false;
  return (ntohl(a.s_addr) >> 24) == 127;
}

Status CheckListenPolicy(std::string_view host, bool has_token_file, bool has_tls) {
  if (IsLoopbackHost(host)) return Status::Ok();
  const std::string h = host.empty() ? "every address" : "'" + std::string(host) + "'";
  if (!has_token_file)
    return Status::InvalidArgument(
        h +
        " is not a loopback address, and without --token-file the API is open to anyone who "
        "reaches it: give --token-file with --tls-cert-file and --tls-private-key-file, or "
        "listen on 127.0.0.1");
  if (!has_tls)
    return Status::InvalidArgument(
        h +
        " is not a loopback address: --token-file there needs --tls-cert-file and "
        "--tls-private-key-file (bearer tokens must not cross a network in clear text, and "
        "kubectl sends its token only to an https:// server)");
  return Status::Ok();
}

}  // namespace arbiter::server
