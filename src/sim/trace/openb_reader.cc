#include "sim/trace/openb_reader.h"

#include <charconv>
#include <fstream>
#include <sstream>

#include "adapters/io/input_file.h"
#include "core/placement/rng.h"
#include "core/text.h"

namespace arbiter::sim::trace {

namespace {

// GPUs per node and per pod: the placement layer's per-node device limit.
constexpr int64_t kMaxGpus = 64;
// Every number is range-checked here, so that nothing downstream (sums over a cluster, bytes from
// MiB, milliseconds from seconds) can overflow: see the limits in openb_reader.h.
constexpr int64_t kMaxCpuMilli = kTraceMaxCpuMilli;
constexpr int64_t kMaxMemoryMib = kTraceMaxMemoryMib;
constexpr int64_t kMaxTimeSeconds = kTraceMaxSeconds;
constexpr size_t kMaxNameBytes = kTraceMaxNameBytes;

// At most this many columns: a line of a billion commas is refused, not split into a billion
// fields.
constexpr size_t kMaxColumns = 256;

// The fields of a line; at most kMaxColumns + 1 of them (the last then holds the rest).
std::vector<std::string_view> SplitCsv(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    if (out.size() == kMaxColumns) {
      out.push_back(line.substr(start));
      break;
    }
    size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) {
      out.push_back(line.substr(start));
      break;
    }
    out.push_back(line.substr(start, comma - start));
    start = comma + 1;
  }
  for (auto& f : out) {
    while (!f.empty() && (f.front() == ' ' || f.front() == '"')) f.remove_prefix(1);
    while (!f.empty() && (f.back() == ' ' || f.back() == '"' || f.back() == '\r'))
      f.remove_suffix(1);
  }
  return out;
}

bool Absent(std::string_view v) { return v.empty() || v == "nan" || v == "NaN" || v == "None"; }

std::string Where(std::string_view source, size_t line) {
  return std::string(source) + ":" + std::to_string(line) + ": ";
}

// A cell echoed in a message: at most 40 bytes of it.
std::string Cell(std::string_view v) { return "'" + Echo(v, 40) + "'"; }

// Integer cell; accepts a trailing ".0" (pandas float export).
bool ParseInt(std::string_view v, int64_t* out) {
  if (v.size() > 2 && v.substr(v.size() - 2) == ".0") v.remove_suffix(2);
  if (v.empty()) return false;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
  return ec == std::errc() && p == v.data() + v.size();
}

struct Columns {
  std::vector<std::string> names;
  int Find(std::string_view n) const {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == n) return static_cast<int>(i);
    return -1;
  }
};

// Iterates over the non-empty lines of text with 1-based line numbers.
template <typename F>
Status ForEachLine(std::string_view text, F&& f) {
  size_t line_no = 0, pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) {
      Status s = f(line, line_no);
      if (!s.ok()) return s;
    }
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return Status::Ok();
}

// A non-negative integer cell at most `max`, or the error "FIELD: ...".
Status RangeCell(std::string_view cell, const char* field, int64_t max, const char* unit,
                 int64_t* out) {
  if (!ParseInt(cell, out) || *out < 0)
    return Status::Error(std::string(field) + ": not a non-negative integer: " + Cell(cell));
  if (*out > max)
    return Status::Error(std::string(field) + ": " + Cell(cell) + " is more than " +
                         std::to_string(max) + " " + unit + " (the largest value Arbiter accepts)");
  return Status::Ok();
}

Status NameCell(std::string_view cell, const char* field) {
  if (cell.size() > kMaxNameBytes)
    return Status::Error(std::string(field) + ": " + Cell(cell) + " is longer than " +
                         std::to_string(kMaxNameBytes) + " bytes");
  return Status::Ok();
}

// The header line's names into `cols` (echoed, at most kMaxColumns of them).
Status ReadHeaderRow(const std::vector<std::string_view>& f, std::string_view source, size_t no,
                     Columns* cols) {
  if (f.size() > kMaxColumns)
    return Status::Error(Where(source, no) + "more than " + std::to_string(kMaxColumns) +
                         " columns in the header");
  for (auto v : f) cols->names.emplace_back(Echo(v, kMaxNameBytes));
  return Status::Ok();
}

// A line has as many fields as the header.
Status CheckRowWidth(const std::vector<std::string_view>& f, const Columns& cols,
                     std::string_view source, size_t no) {
  if (f.size() == cols.names.size()) return Status::Ok();
  return Status::Error(Where(source, no) + "expected " + std::to_string(cols.names.size()) +
                       " fields, found " +
                       (f.size() > kMaxColumns ? "more than " + std::to_string(kMaxColumns)
                                               : std::to_string(f.size())));
}

// The columns of a pod list (-1: absent).
struct OpenbPodColumns {
  int name = -1, cpu = -1, mem = -1, ngpu = -1, gmilli = -1, spec = -1, qos = -1, phase = -1,
      ct = -1, dt = -1, st = -1;
};

OpenbPodColumns OpenbPodColumnsOf(const Columns& cols) {
  OpenbPodColumns c;
  c.name = cols.Find("name");
  c.cpu = cols.Find("cpu_milli");
  c.mem = cols.Find("memory_mib");
  c.ngpu = cols.Find("num_gpu");
  c.gmilli = cols.Find("gpu_milli");
  c.spec = cols.Find("gpu_spec");
  c.qos = cols.Find("qos");
  c.phase = cols.Find("pod_phase");
  c.ct = cols.Find("creation_time");
  c.dt = cols.Find("deletion_time");
  c.st = cols.Find("scheduled_time");
  return c;
}

// The pod's CPU, memory and GPUs (num_gpu whole GPUs, or one GPU's gpu_milli).
Status ReadPodResources(const std::vector<std::string_view>& f, const OpenbPodColumns& c,
                        TracePod* p) {
  int64_t v = 0;
  if (Status s = RangeCell(f[c.cpu], "cpu_milli", kMaxCpuMilli, "millicores", &p->cpu_milli);
      !s.ok())
    return s;
  if (Status s = RangeCell(f[c.mem], "memory_mib", kMaxMemoryMib, "MiB", &p->memory_mib); !s.ok())
    return s;
  if (!ParseInt(f[c.ngpu], &v) || v < 0 || v > kMaxGpus)
    return Status::Error("num_gpu: not an integer in 0..64: " + Cell(f[c.ngpu]));
  p->num_gpu = static_cast<int32_t>(v);
  if (!ParseInt(f[c.gmilli], &v) || v < 0 || v > 1000)
    return Status::Error("gpu_milli: not an integer in 0..1000: " + Cell(f[c.gmilli]));
  p->gpu_milli = static_cast<int32_t>(v);
  if (p->num_gpu > 1 && p->gpu_milli != 1000)
    return Status::Error("gpu_milli: a pod with num_gpu " + std::to_string(p->num_gpu) +
                         " must ask whole GPUs (1000), found " + std::to_string(p->gpu_milli));
  if (p->num_gpu >= 1 && p->gpu_milli == 0)
    return Status::Error("gpu_milli: a pod with num_gpu >= 1 needs gpu_milli > 0");
  return Status::Ok();
}

// gpu_spec: the GPU models the pod accepts, separated by '|'.
Status ReadGpuSpec(std::string_view s, TracePod* p) {
  size_t start = 0;
  while (start <= s.size()) {
    size_t bar = s.find('|', start);
    std::string_view m =
        s.substr(start, bar == std::string_view::npos ? std::string_view::npos : bar - start);
    if (Status st = NameCell(m, "gpu_spec"); !st.ok()) return st;
    if (p->gpu_spec.size() == static_cast<size_t>(kMaxGpus))
      return Status::Error("gpu_spec: more than " + std::to_string(kMaxGpus) + " GPU models");
    if (!m.empty()) p->gpu_spec.emplace_back(m);
    if (bar == std::string_view::npos) break;
    start = bar + 1;
  }
  return Status::Ok();
}

// A time column (seconds), when the list has it and the cell is not empty.
Status TimeCell(const std::vector<std::string_view>& f, int c, const char* what,
                std::optional<int64_t>* out) {
  if (c < 0 || Absent(f[c])) return Status::Ok();
  int64_t t = 0;
  if (Status s = RangeCell(f[c], what, kMaxTimeSeconds, "seconds", &t); !s.ok()) return s;
  *out = t;
  return Status::Ok();
}

// A pod's line; the messages without the line's place.
Status ReadTracePod(const std::vector<std::string_view>& f, const OpenbPodColumns& c, TracePod* p) {
  if (f[c.name].empty()) return Status::Error("name: empty pod name");
  if (Status s = NameCell(f[c.name], "name"); !s.ok()) return s;
  p->name = std::string(f[c.name]);
  if (Status s = ReadPodResources(f, c, p); !s.ok()) return s;
  if (c.spec >= 0 && !Absent(f[c.spec]))
    if (Status s = ReadGpuSpec(f[c.spec], p); !s.ok()) return s;
  if (c.qos >= 0) {
    if (Status s = NameCell(f[c.qos], "qos"); !s.ok()) return s;
    p->qos = std::string(f[c.qos]);
  }
  if (c.phase >= 0) {
    if (Status s = NameCell(f[c.phase], "pod_phase"); !s.ok()) return s;
    p->phase = std::string(f[c.phase]);
  }
  if (Status s = TimeCell(f, c.ct, "creation_time", &p->creation_s); !s.ok()) return s;
  if (Status s = TimeCell(f, c.dt, "deletion_time", &p->deletion_s); !s.ok()) return s;
  return TimeCell(f, c.st, "scheduled_time", &p->scheduled_s);
}

}  // namespace

int32_t QosPriorities::Of(std::string_view qos) const {
  if (qos == "LS") return ls;
  if (qos == "Burstable") return burstable;
  if (qos == "Guaranteed") return guaranteed;
  if (qos == "BE") return be;
  return unknown;
}

int32_t TenantOf(std::string_view pod_name, int32_t tenants, uint64_t seed) {
  if (tenants <= 1) return 0;
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
  for (unsigned char c : pod_name) h = (h ^ c) * 0x100000001b3ULL;
  return static_cast<int32_t>(placement::Mix64(h ^ placement::Mix64(seed)) %
                              static_cast<uint64_t>(tenants));
}

Result<std::vector<TraceNode>> ParseOpenbNodes(std::string_view text, std::string_view source) {
  std::vector<TraceNode> nodes;
  Columns cols;
  int c_sn = -1, c_cpu = -1, c_mem = -1, c_gpu = -1, c_model = -1;
  Status st = ForEachLine(text, [&](std::string_view line, size_t no) -> Status {
    auto f = SplitCsv(line);
    if (cols.names.empty()) {
      if (Status s = ReadHeaderRow(f, source, no, &cols); !s.ok()) return s;
      c_sn = cols.Find("sn");
      c_cpu = cols.Find("cpu_milli");
      c_mem = cols.Find("memory_mib");
      c_gpu = cols.Find("gpu");
      c_model = cols.Find("model");
      if (c_sn < 0 || c_cpu < 0 || c_mem < 0 || c_gpu < 0)
        return Status::Error(
            Where(source, no) +
            "node list header must have columns sn,cpu_milli,memory_mib,gpu[,model]");
      return Status::Ok();
    }
    if (Status s = CheckRowWidth(f, cols, source, no); !s.ok()) return s;
    TraceNode n;
    if (f[c_sn].empty()) return Status::Error(Where(source, no) + "sn: empty node name");
    if (Status s = NameCell(f[c_sn], "sn"); !s.ok())
      return Status::Error(Where(source, no) + s.message());
    n.name = std::string(f[c_sn]);
    int64_t gpu = 0;
    if (Status s = RangeCell(f[c_cpu], "cpu_milli", kMaxCpuMilli, "millicores", &n.cpu_milli);
        !s.ok())
      return Status::Error(Where(source, no) + s.message());
    if (Status s = RangeCell(f[c_mem], "memory_mib", kMaxMemoryMib, "MiB", &n.memory_mib); !s.ok())
      return Status::Error(Where(source, no) + s.message());
    if (!ParseInt(f[c_gpu], &gpu) || gpu < 0 || gpu > kMaxGpus)
      return Status::Error(Where(source, no) + "gpu: not an integer in 0..64: " + Cell(f[c_gpu]));
    n.gpus = static_cast<int32_t>(gpu);
    if (c_model >= 0 && !Absent(f[c_model])) {
      if (Status s = NameCell(f[c_model], "model"); !s.ok())
        return Status::Error(Where(source, no) + s.message());
      n.model = std::string(f[c_model]);
    }
    if (n.gpus > 0 && n.model.empty())
      return Status::Error(Where(source, no) + "model: a node with GPUs needs a GPU model");
    nodes.push_back(std::move(n));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  if (cols.names.empty())
    return Result<std::vector<TraceNode>>::Error(std::string(source) + ": empty node list");
  return nodes;
}

Result<PodTrace> ParseOpenbPods(std::string_view text, std::string_view source,
                                const PodMappingOptions& options) {
  PodTrace trace;
  Columns cols;
  OpenbPodColumns c;
  Status st = ForEachLine(text, [&](std::string_view line, size_t no) -> Status {
    auto f = SplitCsv(line);
    if (cols.names.empty()) {
      if (Status s = ReadHeaderRow(f, source, no, &cols); !s.ok()) return s;
      c = OpenbPodColumnsOf(cols);
      if (c.name < 0 || c.cpu < 0 || c.mem < 0 || c.ngpu < 0 || c.gmilli < 0)
        return Status::Error(
            Where(source, no) +
            "pod list header must have columns name,cpu_milli,memory_mib,num_gpu,gpu_milli");
      trace.has_times = c.ct >= 0 && c.dt >= 0 && c.st >= 0;
      return Status::Ok();
    }
    if (Status s = CheckRowWidth(f, cols, source, no); !s.ok()) return s;
    TracePod p;
    if (Status s = ReadTracePod(f, c, &p); !s.ok())
      return Status::Error(Where(source, no) + s.message());
    // The pod as the engine sees it.
    p.priority = options.priorities.Of(p.qos);
    p.tenant = TenantOf(p.name, options.tenants, options.tenant_seed);
    placement::PodShape& s = p.shape;
    s.cpu_milli = p.cpu_milli;
    s.mem_bytes = p.memory_mib << 20;
    if (p.num_gpu >= 1) {
      s.gpu_count = p.num_gpu;
      s.gpu_milli_per_device = p.gpu_milli;
      s.allowed_gpu_models = p.gpu_spec;
    }
    trace.pods.push_back(std::move(p));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  if (cols.names.empty()) return Result<PodTrace>::Error(std::string(source) + ": empty pod list");
  return trace;
}

Result<std::vector<TraceNode>> ReadOpenbNodes(const std::string& path) {
  auto text = io::ReadInputFile(path, io::kTraceCsvInput);
  if (!text.ok()) return text.status();
  return ParseOpenbNodes(*text, io::InputName(path));
}

Result<PodTrace> ReadOpenbPods(const std::string& path, const PodMappingOptions& options) {
  auto text = io::ReadInputFile(path, io::kTraceCsvInput);
  if (!text.ok()) return text.status();
  return ParseOpenbPods(*text, io::InputName(path), options);
}

std::vector<placement::NodeState> ToNodeStates(const std::vector<TraceNode>& nodes) {
  std::vector<placement::NodeState> out;
  out.reserve(nodes.size());
  for (const TraceNode& n : nodes) {
    placement::NodeState s;
    s.name = n.name;
    s.gpu_model = n.model;
    s.cpu_capacity_milli = n.cpu_milli;
    s.mem_capacity_bytes = n.memory_mib << 20;
    s.gpu_used_milli.assign(static_cast<size_t>(n.gpus), 0);
    s.RecountGpus();
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace arbiter::sim::trace
