// Data-driven scheduler scenarios: tests/scenarios/*.yaml.
//
// Each file is a set of manifests (a pool, quotas, classes, pods with arbiter.dev/ simulation
// annotations), then a line `--- # expect` and one YAML document of expectations:
//
//   description: what the scenario shows (free text)
//   until: 2h                    # optional: stop the virtual clock here
//   events:                      # must appear in this order (other events may come between)
//     - {time: 0, type: Scheduled, workload: team-a/a, node: gpu-1}
//     - {type: Preempted, workload: team-a/a, by: team-b/b, message: "grace 30s"}   # substring
//   absent:                      # must not appear at all
//     - {type: Preempted}
//   workloads:                   # final state per workload
//     team-a/a: {phase: Succeeded, node: gpu-1, preemptions: 1, finishTime: 3600, message: "..."}
//   pool: {victimOrder: LeastLostWork}                 # report fields, as their JSON text
//   summary: {gpuSecondsLostToPreemption: "2400.000"}
//
// Every scenario runs with the engine's invariants checked after every step, and twice, to check
// that the report is byte-identical.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "adapters/yaml/manifest_loader.h"
#include "sim/billing_bridge.h"
#include "sim/report.h"
#include "sim/simulator.h"

namespace arbiter {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> ScenarioFiles() {
  std::vector<std::string> out;
  fs::path dir = fs::path(ARBITER_SOURCE_DIR) / "tests" / "scenarios";
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml") out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Loaded {
  yaml::ManifestLoad load;
  YAML::Node expect;
};

Loaded LoadScenario(const std::string& name) {
  Loaded out;
  std::string text = ReadFile(fs::path(ARBITER_SOURCE_DIR) / "tests" / "scenarios" / name);
  const std::string marker = "\n--- # expect\n";
  auto pos = text.find(marker);
  EXPECT_NE(pos, std::string::npos) << name << ": no `--- # expect` line";
  if (pos == std::string::npos) return out;
  yaml::LoadManifestText(text.substr(0, pos + 1), name, &out.load);
  out.expect = YAML::Load(text.substr(pos + marker.size()));
  return out;
}

bool Matches(const YAML::Node& want, const nlohmann::json& ev) {
  for (const auto& kv : want) {
    std::string k = kv.first.as<std::string>();
    std::string v = kv.second.as<std::string>();
    if (k == "message") {
      if (!ev["message"].is_string() ||
          ev["message"].get<std::string>().find(v) == std::string::npos)
        return false;
      continue;
    }
    if (!ev.contains(k)) return false;
    const auto& got = ev[k];
    std::string g = got.is_string() ? got.get<std::string>() : got.is_null() ? "null" : got.dump();
    if (g != v) return false;
  }
  return true;
}

std::string Describe(const nlohmann::json& ev) {
  std::string s = ev["time"].dump() + " " + ev["type"].get<std::string>() + " " +
                  (ev["workload"].is_null() ? std::string("-") : ev["workload"].get<std::string>());
  if (!ev["node"].is_null()) s += " node=" + ev["node"].get<std::string>();
  if (!ev["by"].is_null()) s += " by=" + ev["by"].get<std::string>();
  if (!ev["message"].get<std::string>().empty())
    s += " \"" + ev["message"].get<std::string>() + "\"";
  return s;
}

class ScenarioTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ScenarioTest, Runs) {
  Loaded sc = LoadScenario(GetParam());
  for (const auto& d : sc.load.diagnostics.items) ADD_FAILURE() << d.ToString();
  ASSERT_TRUE(sc.load.ok());
  ASSERT_TRUE(sc.expect.IsMap()) << "expectations must be a map";
  sim::SimOptions opts;
  opts.check_invariants = true;
  if (sc.expect["until"]) opts.until = *ParseDuration(sc.expect["until"].as<std::string>());
  auto run = [&]() {
    auto r = sim::RunSimulation(sc.load.set, opts);
    EXPECT_TRUE(r.ok()) << r.message();
    auto s = sim::Summarise(sc.load.set, *r);
    auto bill = sim::BillSimulation(sc.load.set, *r, sim::DefaultEpoch(sc.load.set));
    EXPECT_TRUE(bill.ok()) << bill.message();
    auto dom = sim::ReportJson(sc.load.set, *r, s, sim::BillJson(*bill));
    // The streamed report `arbiter sim --report-json` writes is the same bytes as the DOM's dump.
    std::ostringstream streamed;
    sim::WriteReportJson(streamed, sc.load.set, *r, s, *bill);
    EXPECT_EQ(streamed.str(), dom.dump(2) + "\n");
    return dom.dump(1);
  };
  std::string first = run();
  std::string second = run();
  EXPECT_EQ(first, second) << "a repeated run must be byte-identical";
  nlohmann::json report = nlohmann::json::parse(first);
  const auto& events = report["events"];
  std::string all;
  for (const auto& ev : events) all += "  " + Describe(ev) + "\n";

  size_t cursor = 0;
  for (const auto& want : sc.expect["events"]) {
    bool found = false;
    for (; cursor < events.size(); ++cursor)
      if (Matches(want, events[cursor])) {
        found = true;
        ++cursor;
        break;
      }
    if (!found) {
      ADD_FAILURE() << "expected event (in order) not found: " << YAML::Dump(want) << "\nevents:\n"
                    << all;
      break;
    }
  }
  for (const auto& bad : sc.expect["absent"])
    for (const auto& ev : events)
      EXPECT_FALSE(Matches(bad, ev)) << "unexpected event " << Describe(ev);
  for (const auto& kv : sc.expect["workloads"]) {
    std::string name = kv.first.as<std::string>();
    const nlohmann::json* w = nullptr;
    for (const auto& x : report["workloads"])
      if (x["name"] == name) w = &x;
    if (!w) {
      ADD_FAILURE() << "no workload " << name;
      continue;
    }
    for (const auto& f : kv.second) {
      std::string k = f.first.as<std::string>();
      std::string v = f.second.as<std::string>();
      const auto& got = (*w)[k];
      std::string g = got.is_string() ? got.get<std::string>()
                      : got.is_null() ? "null"
                                      : got.dump();
      if (k == "message")
        EXPECT_NE(g.find(v), std::string::npos)
            << name << ".message = \"" << g << "\", want substring \"" << v << "\"";
      else
        EXPECT_EQ(g, v) << name << "." << k << "\nevents:\n" << all;
    }
  }
  // Top-level report fields: `pool` and `summary` keys, each compared as its JSON text (strings
  // without quotes).
  for (const char* part : {"pool", "summary"})
    for (const auto& kv : sc.expect[part]) {
      const std::string k = kv.first.as<std::string>();
      const auto& got = report[part][k];
      const std::string g = got.is_string() ? got.get<std::string>() : got.dump();
      EXPECT_EQ(g, kv.second.as<std::string>()) << part << "." << k;
    }
}

INSTANTIATE_TEST_SUITE_P(Scenarios, ScenarioTest, ::testing::ValuesIn(ScenarioFiles()),
                         [](const auto& info) {
                           std::string n = info.param.substr(0, info.param.size() - 5);
                           for (auto& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace arbiter
