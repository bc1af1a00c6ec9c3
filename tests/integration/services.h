// Endpoints of the real services the integration tests run against (started by the CTest
// fixtures, scripts/services/<name>.sh), and helpers. A missing server fails the test.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "apps/run_command.h"

namespace arbiter::testing {

inline std::string Env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}
inline std::string PrometheusUrl() {
  return Env("ARBITER_PROMETHEUS_URL", "http://127.0.0.1:19090");
}
// Where a test puts file_sd target files (JSON) for the fixture's Prometheus to scrape every
// second (scripts/services/prometheus.sh creates it).
inline std::filesystem::path PrometheusTargetsDir() {
  const char* dir = std::getenv("ARBITER_PROMETHEUS_TARGETS");
  if (dir && *dir) return dir;
  return std::filesystem::path(Env("ARBITER_CI_DIR", "/tmp/arbiter-ci")) / "prometheus" / "targets";
}
// The PriceBook of the Prometheus fixture's history (fixture.om).
inline std::filesystem::path PrometheusFixturePriceBook() {
  return std::filesystem::path(ARBITER_SOURCE_DIR) /
         "tests/integration/data/prometheus/pricebook.yaml";
}
inline std::string ClickHouseUrl() {
  return Env("ARBITER_CLICKHOUSE_URL", "clickhouse://127.0.0.1:18123/default");
}
inline std::string PostgresUrl() {
  return Env("ARBITER_POSTGRES_URL", "postgresql://postgres@127.0.0.1:15432/arbiter");
}

inline std::string Arbiter() { return ARBITER_BINARY; }
inline std::string SourceDir() { return ARBITER_SOURCE_DIR; }

// A fresh scratch directory per test.
inline std::filesystem::path Scratch(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() /
           ("arbiter-it-" + std::to_string(getpid()) + "-" + name);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace arbiter::testing
