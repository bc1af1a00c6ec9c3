// Hostile inputs (issue 14): every bad input is refused with a clear message, in bounded time and
// memory. Each command runs under a 1 GiB address-space limit (RLIMIT_AS; not in sanitizer
// builds) and a CPU-time limit (RLIMIT_CPU, so that load does not fail it); a test fails if the
// command is killed, crashes, or takes its output anywhere near the size of the input. Each test
// prints its wall time and peak memory.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "run_command.h"

namespace {

namespace fs = std::filesystem;
using arbiter::testing::BoundedRun;
using arbiter::testing::Bounds;
using arbiter::testing::RunBounded;

const std::string kArbiter = ARBITER_BINARY;

// The test's files (about 150 MB of hostile inputs), removed when the test binary exits.
struct ScratchDir {
  fs::path dir = fs::temp_directory_path() / ("arbiter-hostile-" + std::to_string(getpid()));
  ScratchDir() { fs::create_directories(dir); }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

fs::path Scratch() {
  static const ScratchDir scratch;
  return scratch.dir;
}

std::string Write(const std::string& name, const std::string& text) {
  const fs::path p = Scratch() / name;
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

std::string Repeat(const std::string& s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

// Runs `arbiter ARGS` under the bounds and checks the common promises: not killed, no crash,
// the expected exit code, `want` in its standard error (or output), and an output far smaller
// than any input (messages echo at most a few hundred bytes of a value).
BoundedRun Expect(const std::string& args, int rc, const std::string& want, Bounds bounds = {}) {
  BoundedRun r = RunBounded(kArbiter + " " + args, Scratch(), bounds);
  const std::string what = "arbiter " + args.substr(0, 200);
  std::cerr << "  [bounded] " << r.seconds << " s (" << r.cpu_seconds << " CPU s), "
            << r.max_rss_kib / 1024 << " MiB peak: " << what << "\n";
  EXPECT_FALSE(r.timed_out) << what << ": stopped after " << r.cpu_seconds << " CPU seconds ("
                            << r.seconds << " s), its bound " << bounds.seconds << " CPU seconds";
  EXPECT_EQ(r.signal, 0) << what << ": killed by signal " << r.signal << "\n"
                         << r.err.substr(0, 2000);
  EXPECT_EQ(r.rc, rc) << what << "\nstdout: " << r.out.substr(0, 2000)
                      << "\nstderr: " << r.err.substr(0, 2000);
  EXPECT_NE((r.err + r.out).find(want), std::string::npos)
      << what << ": missing \"" << want << "\"\nstdout: " << r.out.substr(0, 2000)
      << "\nstderr: " << r.err.substr(0, 2000);
  EXPECT_LT(r.out.size() + r.err.size(), 16u * 1024)
      << what << ": " << r.out.size() + r.err.size() << " bytes of output";
  return r;
}

const std::string kPool = std::string(ARBITER_SOURCE_DIR) + "/examples/pool.yaml";
const std::string kNodes =
    std::string(ARBITER_SOURCE_DIR) + "/data/openb/openb_node_list_gpu_node.csv";
const std::string kPods =
    std::string(ARBITER_SOURCE_DIR) + "/data/openb/openb_pod_list_default.csv";
const std::string kPriceBook =
    std::string(ARBITER_SOURCE_DIR) + "/tests/data/billing/pricebook.json";

// ---------------------------------------------------------------- files that are not files

TEST(HostileInput, DevicesAreRefusedWithoutReading) {
  for (const char* cmd : {"sim -f", "validate -f"})
    for (const char* dev : {"/dev/zero", "/dev/urandom"})
      Expect(std::string(cmd) + " " + dev, 1,
             std::string(dev) + ": cannot read file: it is a character device");
  Expect("sim --nodes /dev/zero --pods " + kPods, 1,
         "arbiter sim: --nodes: /dev/zero: it is a character device");
  Expect("sim --nodes " + kNodes + " --pods /dev/urandom", 1,
         "/dev/urandom: it is a character device");
  Expect("invoice ingest --db " + (Scratch() / "dev.db").string() +
             " --segments /dev/zero --pricebook " + kPriceBook,
         1, "/dev/zero: it is a character device");
  EXPECT_FALSE(fs::exists(Scratch() / "dev.db"));
  const std::string zero_json = (Scratch() / "zero.json").string();
  fs::remove(zero_json);
  fs::create_symlink("/dev/zero", zero_json);  // a PriceBook "JSON" that is a device
  Expect("invoice ingest --db " + (Scratch() / "dev.db").string() + " --segments " +
             Write("one.jsonl", "\n") + " --pricebook " + zero_json,
         1, "zero.json: it is a character device");
  Expect("invoice --db /dev/zero", 1, "/dev/zero: it is a character device");
  // Writing a bill into a device would "succeed" and keep nothing.
  Expect("sim -q -f " + kPool + " --ledger /dev/null", 2,
         "arbiter sim: --ledger: /dev/null: it is a character device");
  Expect("invoice ingest --db /dev/null --segments " + Write("one.jsonl", "\n") + " --pricebook " +
             kPriceBook,
         1, "/dev/null: it is a character device");
  Expect("ledger check --db /dev/urandom", 1, "it is a character device");
}

TEST(HostileInput, FifoIsRefusedByEveryReaderWithoutBlocking) {
  const std::string fifo = (Scratch() / "fifo.yaml").string();
  fs::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  // Nobody ever writes to it: opening it for reading would block forever.
  Expect("validate -f " + fifo, 1, "it is a FIFO (named pipe), not a regular file", {5, 1024});
  Expect("sim -f " + fifo, 1, "it is a FIFO (named pipe), not a regular file", {5, 1024});
  Expect("sim --nodes " + fifo + " --pods " + kPods, 1, "it is a FIFO", {5, 1024});
  Expect("invoice ingest --db " + (Scratch() / "fifo.db").string() + " --segments " + fifo +
             " --pricebook " + kPriceBook,
         1, "it is a FIFO", {5, 1024});
  Expect("invoice --db " + fifo, 1, "it is a FIFO", {5, 1024});
  Expect("sim -f " + Scratch().string(), 1, "cannot read file: it is a directory");
}

TEST(HostileInput, StandardInputIsBoundedToo) {
  // An endless stream of NUL bytes stops at the first block, not at the size limit.
  Expect("sim -f - < /dev/zero", 1, "stdin:1: not YAML text: a NUL byte (column 1)");
  Expect("validate -f - < /dev/urandom", 1, "not YAML text: a NUL byte");
  Expect("invoice ingest --db " + (Scratch() / "stdin.db").string() + " --segments - --pricebook " +
             kPriceBook + " < /dev/zero",
         1, "stdin:1: a NUL byte");
  Expect("sim --nodes - --pods " + kPods + " < /dev/urandom", 1, "stdin");
}

TEST(HostileInput, EndlessTextOnStandardInputStopsAtTheLimit) {
  Expect("validate -f - < /dev/null", 0, "stdin: 0 objects");
  // Text without end stops at the limit (512 MiB for manifests; the text may double once as it
  // grows).
  const std::string yes = "yes | " + kArbiter + " validate -f -";
  BoundedRun y = RunBounded(yes, Scratch(), {60, 2600});
  std::cerr << "  [bounded] " << y.seconds << " s, " << y.max_rss_kib / 1024 << " MiB peak: " << yes
            << "\n";
  EXPECT_FALSE(y.timed_out);
  EXPECT_EQ(y.signal, 0) << y.err;
  EXPECT_EQ(y.rc, 1);
  EXPECT_NE(y.out.find("stdin: cannot read file: more than 512 MiB, larger than the 512 MiB limit "
                       "for a manifest"),
            std::string::npos)
      << y.out << y.err;
}

TEST(HostileInput, StandardInputOnlyOnce) {
  Expect("validate -f - -f -", 2,
         "arbiter validate: -f -: standard input is already read for -f -");
  Expect("sim --nodes - --pods -", 2,
         "arbiter sim: --pods -: standard input is already read for --nodes -");
}

TEST(HostileInput, OversizedFilesAreRefusedByTheirSize) {
  // Sparse files: refused by their size, before a byte is read (fast, no memory).
  const fs::path big = Scratch() / "big.yaml";
  { std::ofstream(big) << "a: 1\n"; }
  fs::resize_file(big, (600ull << 20));
  Expect("validate -f " + big.string(), 1,
         "big.yaml: cannot read file: 600 MiB, larger than the 512 MiB limit for a manifest");
  Expect("sim -f " + big.string(), 1, "larger than the 512 MiB limit for a manifest");
  const fs::path csv = Scratch() / "big.csv";
  { std::ofstream(csv) << "sn,cpu_milli,memory_mib,gpu,model\n"; }
  fs::resize_file(csv, (1100ull << 20));
  Expect("sim --nodes " + csv.string() + " --pods " + kPods, 1,
         "1.1 GiB, larger than the 1 GiB limit for a trace CSV");
  const fs::path seg = Scratch() / "big.jsonl";
  { std::ofstream(seg) << "\n"; }
  fs::resize_file(seg, (1100ull << 20));
  Expect("invoice ingest --db " + (Scratch() / "big.db").string() + " --segments " + seg.string() +
             " --pricebook " + kPriceBook,
         1, "larger than the 1 GiB limit for a segments file");
}

TEST(HostileInput, BinaryFilesAreNotParsed) {
  std::string bytes;
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < (1 << 20); ++i) {  // xorshift: a MiB of noise with NUL bytes in it
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    bytes += static_cast<char>(x & 0xff);
  }
  const std::string f = Write("noise.bin", bytes);
  Expect("validate -f " + f, 1, "noise.bin:1: not YAML text: a NUL byte");
  Expect("sim --nodes " + f + " --pods " + kPods, 1, "noise.bin:1: a NUL byte");
  Expect("validate -f " + Write("utf16.yaml", std::string("\xff\xfe"
                                                          "a\0:\0 \0"
                                                          "1\0",
                                                          10)),
         1, "the text is UTF-16; save it as UTF-8");
}

// ---------------------------------------------------------------- YAML in the user's terms

TEST(HostileInput, YamlMistakesInTheUsersTerms) {
  const std::string head = "apiVersion: v1\nkind: Pod\nmetadata:\n";
  Expect("validate -f " + Write("tab.yaml", head + "\tname: x\n"), 1,
         "tab.yaml:4: a tab in the indentation: YAML indents with spaces only");
  Expect("validate -f " + Write("nul.yaml", head + "  name: a" + std::string(1, '\0') + "b\n"), 1,
         "nul.yaml:4: not YAML text: a NUL byte (column 10): this is binary data, not a text file");
  Expect("validate -f " + Write("esc.yaml", head + "  name: \"C:\\quotes\"\n"), 1,
         "esc.yaml:4: not valid YAML: unknown escape \"\\q\" in a double-quoted string");
  Expect("validate -f " + Write("uesc.yaml", head + "  name: \"C:\\users\"\n"), 1,
         "uesc.yaml:4: not valid YAML: a bad \\x, \\u or \\U escape in a double-quoted string");
  Expect("validate -f " + Write("flow.yaml", head + "  labels: {a: b\n"), 1,
         "a \"{\" without its closing \"}\"");
  // 10,000 levels: flow lists, flow maps, block lists, block maps.
  const std::string deep[] = {
      "a: " + Repeat("[", 10000) + Repeat("]", 10000) + "\n",
      Repeat("{a: ", 10000) + "1" + Repeat("}", 10000) + "\n",
      Repeat("- ", 10000) + "x\n",
  };
  for (size_t i = 0; i < 3; ++i)
    Expect("validate -f " + Write("deep" + std::to_string(i) + ".yaml", deep[i]), 1,
           "lists and mappings nested more than 2000 levels deep");
  std::string block;
  for (int i = 0; i < 10000; ++i) block += std::string(static_cast<size_t>(i), ' ') + "a:\n";
  Expect("validate -f " + Write("deepblock.yaml", block), 1, "nested more than 2000 levels deep");
}

TEST(HostileInput, HugeValuesAreEchoedShort) {
  // The issue's case: a 50 MB integer where a name belongs was echoed twice (157 MB of output).
  // yaml-cpp reads about 10 MB/s, so the other cases use 8 MB.
  const size_t kBig = 50u << 20, kMid = 8u << 20;
  const std::string f =
      Write("huge.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + std::string(kBig, '9') + "\n");
  BoundedRun r = Expect("validate -f " + f, 1,
                        "metadata.name: expected a string, got an integer 999", {60, 1024});
  EXPECT_NE(r.out.find("... (" + std::to_string(kBig) + " bytes)"), std::string::npos)
      << r.out.substr(0, 2000);
  // YAML limits a plain key to 1024 characters: said so, not "illegal map value".
  const std::string key = Write("hugekey.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  " +
                                                    std::string(kMid, 'k') + ": 1\n");
  Expect("validate -f " + key, 1,
         "hugekey.yaml:4: not valid YAML: a mapping key longer than 1024 characters");
  const std::string cpu =
      Write("hugecpu.yaml",
            "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus:\n  capacity: {cpu: \"" +
                std::string(kMid, '1') + "\"}\n");
  Expect("validate -f " + cpu, 1, "(" + std::to_string(kMid) + " bytes)\" has too many digits");
  Expect("sim --nodes " +
             Write("hugename.csv", "sn,cpu_milli,memory_mib,gpu,model\n" + std::string(kMid, 'n') +
                                       ",1000,1024,0,\n") +
             " --pods " + kPods,
         1, "sn: 'nnnn");
  Expect(
      "invoice ingest --db " + (Scratch() / "huge.db").string() + " --pricebook " + kPriceBook +
          " --segments " +
          Write("hugeseg.jsonl", "{\"workload\":\"" + std::string(kMid, 'w') +
                                     "\",\"requests\":{\"cpu\":\"1\"},\"start\":0,\"end\":1000}\n"),
      1, "(" + std::to_string(kMid) + " bytes)");
}

// ---------------------------------------------------------------- trace CSV ranges

TEST(HostileInput, TraceNumbersAreRangeChecked) {
  const std::string nodes_head = "sn,cpu_milli,memory_mib,gpu,model\n";
  const std::string pods_head =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_"
      "time,scheduled_time\n";
  const std::string ok_nodes = Write("ok_nodes.csv", nodes_head + "n1,96000,786432,8,V100M32\n");
  const std::string ok_pods =
      Write("ok_pods.csv", pods_head + "p1,1000,1024,1,1000,,LS,Running,0,100,0\n");
  Expect("sim --nodes " + ok_nodes + " --pods " + ok_pods, 0, "pods submitted 1, placed 1");
  Expect("sim --nodes " +
             Write("n_cpu.csv", nodes_head + "n1,9223372036854775807,786432,8,V100M32\n") +
             " --pods " + ok_pods,
         1, "n_cpu.csv:2: cpu_milli: '9223372036854775807' is more than 1000000000 millicores");
  Expect("sim --nodes " +
             Write("n_mem.csv", nodes_head + "n1,96000,9223372036854775807,8,V100M32\n") +
             " --pods " + ok_pods,
         1, "memory_mib: '9223372036854775807' is more than 1073741824 MiB");
  Expect("sim --nodes " + ok_nodes + " --pods " +
             Write("p_cpu.csv",
                   pods_head + "p1,9223372036854775807,1024,1,1000,,LS,Running,0,100,0\n"),
         1, "p_cpu.csv:2: cpu_milli: '9223372036854775807' is more than 1000000000 millicores");
  Expect("sim --nodes " + ok_nodes + " --pods " +
             Write("p_mem.csv",
                   pods_head + "p1,1000,4611686018427387904,1,1000,,LS,Running,0,100,0\n"),
         1, "memory_mib: '4611686018427387904' is more than");
  for (const char* col : {"creation_time", "deletion_time", "scheduled_time"}) {
    std::string row = "p1,1000,1024,1,1000,,LS,Running,0,100,0";
    const int idx = std::string(col) == "creation_time"   ? 8
                    : std::string(col) == "deletion_time" ? 9
                                                          : 10;
    std::vector<std::string> cells;
    size_t start = 0;
    for (size_t c; (c = row.find(',', start)) != std::string::npos; start = c + 1)
      cells.push_back(row.substr(start, c - start));
    cells.push_back(row.substr(start));
    cells[static_cast<size_t>(idx)] = "9223372036854775807";
    std::string line;
    for (size_t i = 0; i < cells.size(); ++i) line += (i ? "," : "") + cells[i];
    Expect("sim --nodes " + ok_nodes + " --pods " +
               Write(std::string("p_") + col + ".csv", pods_head + line + "\n"),
           1, std::string(col) + ": '9223372036854775807' is more than 10000000000 seconds");
  }
  Expect("sim --nodes " + ok_nodes + " --pods " +
             Write("p_neg.csv", pods_head + "p1,-1,1024,1,1000,,LS,Running,0,100,0\n"),
         1, "cpu_milli: not a non-negative integer: '-1'");
  // A line of ten million commas is refused, not split into ten million fields.
  Expect("sim --nodes " + Write("commas.csv", nodes_head + std::string(10000000, ',') + "\n") +
             " --pods " + ok_pods,
         1, "commas.csv:2: expected 5 fields, found more than 256");
  Expect(
      "sim --nodes " + Write("wide.csv", std::string(10000000, ',') + "\n") + " --pods " + ok_pods,
      1, "more than 256 columns in the header");
  // The largest values accepted still run (no overflow in the replay's sums).
  Expect(
      "sim --nodes " +
          Write("max_nodes.csv",
                nodes_head +
                    "n1,1000000000,1073741824,64,V100M32\nn2,1000000000,1073741824,64,V100M32\n") +
          " --pods " +
          Write("max_pods.csv", pods_head +
                                    "p1,1000000000,1073741824,64,1000,,LS,Running,0,10000000000,0\n"
                                    "p2,1000000000,1073741824,64,1000,,BE,Running,10000000000,"
                                    "10000000000,10000000000\n"),
      0, "pods submitted 2, placed 2");
}

// ---------------------------------------------------------------- ingest bounds

TEST(HostileInput, IngestChecksTimesAndSizeBeforeMetering) {
  const std::string db = (Scratch() / "ingest.db").string();
  auto ingest = [&](const std::string& name, const std::string& lines) {
    return "invoice ingest --db " + db + " --pricebook " + kPriceBook + " --segments " +
           Write(name, lines);
  };
  const std::string seg =
      R"({"workload":"team-a/x","requests":{"cpu":"1","memory":"1Gi","nvidia.com/gpu":"1"},)";
  Expect(
      ingest("year0.jsonl", seg + R"("start":"0000-01-01T00:00:00Z","end":"0000-01-01T01:00:00Z"})"
                                  "\n"),
      1,
      "year0.jsonl:1: segment of team-a/x on <no node>: time 0000-01-01T00:00:00Z is outside the "
      "supported range "
      "1970-01-01T00:00:00Z .. 2100-01-01T00:00:00Z");
  Expect(
      ingest("span.jsonl", seg + R"("start":"0000-01-01T00:00:00Z","end":"9999-12-31T23:00:00Z"})"
                                 "\n"),
      1, "outside the supported range");
  Expect(ingest("year9999.jsonl",
                seg + R"("start":"2026-01-01T00:00:00Z","end":"9999-12-31T23:00:00Z"})"
                      "\n"),
         1, "time 9999-12-31T23:00:00Z is outside the supported range");
  Expect(ingest("ms.jsonl", seg + R"("start":-9223372036854775808,"end":9223372036854775807})"
                                  "\n"),
         1, "(Unix ms) is outside the supported range");
  Expect(ingest("ms2.jsonl", seg + R"("start":0,"end":18446744073709551615})"
                                   "\n"),
         1, "Unix milliseconds too large");
  // Within the range, but before the PriceBook (2026-01-01): refused before a sample is taken.
  Expect(
      ingest("early.jsonl", seg + R"("start":"1970-01-01T00:00:00Z","end":"2099-12-31T00:00:00Z"})"
                                  "\n"),
      1,
      "no PriceBook is in force at 1970-01-01T00:00:00Z (the first takes effect "
      "2026-01-01T00:00:00Z)");
  // Priced, but 20 segments of 74 years are 38 million hourly rows: more than one ingest meters.
  std::string many;
  for (int i = 0; i < 20; ++i)
    many +=
        R"({"workload":"team-a/x)" + std::to_string(i) +
        R"(","requests":{"cpu":"1","memory":"1Gi","nvidia.com/gpu":"1"},"start":"2026-01-01T00:00:00Z","end":"2099-12-31T00:00:00Z"})"
        "\n";
  Expect(ingest("rows.jsonl", many), 1, "hourly rows, more than the 10000000 one ingest meters");
  Expect(
      ingest(
          "prio.jsonl",
          seg +
              R"("priority":99999999999,"start":"2026-01-01T00:00:00Z","end":"2026-01-01T01:00:00Z"})"
              "\n"),
      1, "priority: expected an integer between");
  for (const char* s : {"", "-wal", "-shm"}) EXPECT_FALSE(fs::exists(db + s)) << db << s;
}

}  // namespace
