// Parser of `sacct --parsable2` output (Slurm 22.05+): allocation records (one per run of a job
// with --duplicates/-D) and the job steps that follow each of them.
//
// Input: a header line naming the fields (sacct prints it unless -n), then one record a line,
// fields separated by '|' (`--parsable`, with a trailing '|', is accepted too). Field order is
// free; names are matched case-insensitively. Required fields: JobID, JobName, Account, QOS,
// State, Start, End, AllocTRES, and Elapsed or ElapsedRaw. Used when present: JobIDRaw, Cluster,
// Partition, User, ExitCode, Submit, Eligible, NodeList, TRESUsageInTot, TRESUsageInAve. Other
// fields are ignored. The full list `arbiter slurm import --since` asks for is kSacctFormat.
//
// Values:
//  - JobID: "123", "123_4" (array task), "123+0" (het job component) for an allocation;
//    "<allocation>.<step>" ("123.batch", "123.extern", "123.0") for a step, which must follow
//    its allocation record.
//  - Times: ISO 8601 "2026-11-29T17:01:26" (sacct's default, the local time of the machine that
//    ran sacct: pass its UTC offset), optionally with "Z" or "+HH:MM"; or Unix seconds
//    (SLURM_TIME_FORMAT=%s). "Unknown", "None" and "" mean no time.
//  - Elapsed: [D-][HH:]MM:SS; ElapsedRaw: seconds.
//  - State: a word in capitals, optionally followed by a detail ("CANCELLED by 0").
//  - AllocTRES: "billing=8,cpu=8,gres/gpu:a100=2,gres/gpu=2,mem=64000M,node=1"; mem in MiB unless a
//    K/M/G/T/P suffix (powers of 1024; "62.50G" is exact); with --noconvert sacct prints "64000M".
//  - TRESUsageInTot / TRESUsageInAve (step records): "cpu=00:01:02,mem=1184K,..."; cpu is CPU time
//    ([D-]HH:MM:SS), mem bytes unless a suffix.
// Errors say FILE:LINE:COLUMN: FIELD: what is wrong. Memory: one line at a time (at most
// max_line_bytes), each run keeps only its steps' summary.
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/duration.h"
#include "core/status.h"

namespace arbiter::slurm {

// The --format list `arbiter slurm import --since` runs sacct with.
inline constexpr std::string_view kSacctFormat =
    "JobID,JobIDRaw,JobName,Cluster,Partition,Account,User,QOS,State,ExitCode,Submit,Eligible,"
    "Start,End,"
    "Elapsed,ElapsedRaw,NodeList,AllocTRES,TRESUsageInTot,TRESUsageInAve";

// What a run was allocated (AllocTRES).
struct AllocTres {
  int64_t cpus = 0;
  int64_t mem_bytes = 0;
  int64_t gpus = 0;                          // gres/gpu (every GPU, typed or not)
  std::map<std::string, int64_t> gpu_types;  // gres/gpu:TYPE
  int64_t nodes = 0;
  std::optional<int64_t> billing;
};

// Usage of a step (TRESUsageInTot, else TRESUsageInAve).
struct StepUsage {
  std::optional<int64_t> cpu_ms;     // CPU time of all its tasks
  std::optional<int64_t> mem_bytes;  // total of its tasks' peak RSS
};

struct SacctStep {
  std::string name;  // "batch", "extern", "0"
  std::string state;
  std::optional<Millis> start, end;
  StepUsage usage;
  int line = 0;
};

// One allocation record: one run of a job (a requeued job has one per run with -D).
struct SacctRun {
  std::string job_id;      // "123", "123_4", "123+0"
  std::string job_id_raw;  // "" when the field is absent
  std::string job_name, cluster, partition, account, user, qos;
  std::string state;         // "COMPLETED", "PREEMPTED", "CANCELLED", ...
  std::string state_detail;  // "by 0" of "CANCELLED by 0"
  std::string exit_code;
  std::optional<Millis> submit, eligible, start, end;  // Unix ms
  std::optional<Millis> elapsed;
  std::string node_list;
  AllocTres alloc;
  std::vector<SacctStep> steps;
  int line = 0;  // line of the record in the input (1-based)
};

struct SacctParseOptions {
  Millis utc_offset_ms = 0;           // of ISO times without a zone (sacct prints local time)
  size_t max_line_bytes = 1 << 20;    // a longer line is an error, not an allocation
  size_t max_steps_per_run = 100000;  // beyond it steps are an error (a corrupt or hostile input)
};

// Streaming parser: Feed() one line at a time (without its '\n'), then Finish().
class SacctParser {
 public:
  SacctParser(std::string file, SacctParseOptions opts) : file_(std::move(file)), opts_(opts) {}
  Status Feed(std::string_view line);
  // Checks the input had a header; returns the runs in input order.
  Result<std::vector<SacctRun>> Finish();
  int line() const { return line_; }

 private:
  Status Header(std::string_view line);
  Status Record(std::string_view line);
  Status Err(size_t column, std::string_view field, const std::string& msg) const;

  std::string file_;
  SacctParseOptions opts_;
  int line_ = 0;
  bool have_header_ = false;
  size_t nfields_ = 0;
  std::vector<std::string> names_;     // header names as written
  std::map<std::string, size_t> col_;  // lowercased name -> index
  std::vector<SacctRun> runs_;
};

Result<std::vector<SacctRun>> ParseSacct(std::istream& in, const std::string& file,
                                         const SacctParseOptions& opts = {});
Result<std::vector<SacctRun>> ParseSacctText(std::string_view text, const std::string& file,
                                             const SacctParseOptions& opts = {});

// Value parsers (exposed for tests). Each returns nullopt-free results or an error message.
Result<std::optional<Millis>> ParseSacctTime(std::string_view text, Millis utc_offset_ms);
Result<Millis> ParseSacctDuration(std::string_view text);  // [D-][HH:]MM:SS[.frac], to ms
// "64000M", "62.50G", "1184K", "0": bytes, with `base` the unit of a plain number (1 for bytes,
// 1 MiB for AllocTRES mem).
Result<int64_t> ParseSacctBytes(std::string_view text, int64_t base);

// Parses "+08:00" / "-0500" / "Z" / "UTC" into an offset in ms.
Result<Millis> ParseUtcOffset(std::string_view text);

}  // namespace arbiter::slurm
