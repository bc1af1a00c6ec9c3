// A certificate authority and a server certificate for 127.0.0.1, made by the `openssl` CLI, for
// the tests of TLS servers and clients: DIR/ca.pem (ca.key) and DIR/server.pem (server.key)
// signed by it. EC P-256 keys: quick to make.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "apps/run_command.h"

namespace arbiter::testing {

inline void MakeTestPki(const std::filesystem::path& dir) {
  const std::string d = dir.string() + "/";
  std::ofstream(dir / "ext.cnf") << "subjectAltName=IP:127.0.0.1\n";
  const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes ";
  CommandOutput r = RunCommand(
      "openssl req -x509" + ec + "-days 2 -subj /CN=arbiter-test-ca -keyout " + d + "ca.key -out " +
      d + "ca.pem 2>&1 && openssl req" + ec + "-subj /CN=127.0.0.1 -keyout " + d +
      "server.key -out " + d + "server.csr 2>&1 && openssl x509 -req -in " + d + "server.csr -CA " +
      d + "ca.pem -CAkey " + d + "ca.key -CAcreateserial -days 2 -extfile " + d + "ext.cnf -out " +
      d + "server.pem 2>&1");
  ASSERT_EQ(r.rc, 0) << r.out;
}

}  // namespace arbiter::testing
