// Server-side printing: meta.k8s.io/v1 Table responses for `kubectl get` (kubectl asks with
// Accept: application/json;as=Table;v=v1;g=meta.k8s.io, ...). Columns follow kube-apiserver's
// printers (pkg/printers/internalversion); priority-1 columns are the `-o wide` ones.
//
//   pods             NAME READY STATUS RESTARTS AGE | IP NODE NOMINATED NODE READINESS GATES
//                    STATUS: kube's rules (status.reason, container waiting/terminated reasons,
//                    Terminating when deletionTimestamp is set), except that an unscheduled Pending
//                    pod (no spec.nodeName) whose PodScheduled condition is False shows that
//                    condition's reason, also over a container's waiting reason (the pending
//                    reason's short form: Unschedulable, QuotaExceeded, WaitingForVictims, ...)
//   nodes            NAME STATUS ROLES AGE VERSION | INTERNAL-IP EXTERNAL-IP OS-IMAGE
//                    KERNEL-VERSION CONTAINER-RUNTIME GPU GPU-PRODUCT. STATUS from the Ready
//                    condition; a node without conditions (an applied virtual node) is Ready;
//                    ",SchedulingDisabled" when spec.unschedulable
//   namespaces       NAME STATUS AGE
//   resourcequotas   NAME AGE REQUEST LIMIT ("requests.cpu: 1/10, pods: 2/10": status.used /
//                    status.hard; spec.hard and 0 used before the status is written)
//   limitranges      NAME CREATED AT
//   events           LAST SEEN TYPE REASON OBJECT MESSAGE | SUBOBJECT SOURCE FIRST SEEN COUNT NAME
//   priorityclasses  NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY
//   poddisruptionbudgets  NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE
//   elasticquotas    NAME USED MIN MAX BORROWED AGE | COHORT (per resource "nvidia.com/gpu: 12";
//                    USED from status.used as the daemon keeps it, BORROWED = used above min)
//   qoses            NAME PRIORITY PREEMPT PREEMPT MODE AGE
//   jobs             NAME STATUS COMPLETIONS DURATION AGE | CONTAINERS IMAGES SELECTOR (kube's
//                    printJob: STATUS Complete, Failed, Terminating, Suspended, ... else Running;
//                    COMPLETIONS succeeded/completions, "N/1 of P" without completions)
//   poolpolicies     NAME AGE;  pricebooks  NAME CURRENCY MODE EFFECTIVE FROM AGE
// AGE is kube's HumanDuration of now - creationTimestamp ("5m", "2d3h"), "<unknown>" without one.
// Pure: `now` is passed in, in Unix milliseconds.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/kube/resources.h"
#include "core/api_kinds.h"
#include "core/duration.h"

namespace arbiter::json_sparse {
struct Keep;
}

namespace arbiter::kube {

// ?includeObject=: None (no object in rows), Metadata (PartialObjectMetadata, kube's default),
// Object (the whole object).
enum class IncludeObject { kNone, kMetadata, kObject };
// "" -> kMetadata; unknown text -> kMetadata.
IncludeObject ParseIncludeObject(std::string_view text);
// True when an Accept header asks for a Table (as=Table;g=meta.k8s.io, v1 or v1beta1).
bool WantsTable(std::string_view accept);

struct Column {
  std::string name;    // "Name", "Nominated Node"
  std::string type;    // "string", "integer", "date"
  std::string format;  // "name" for the name column, else ""
  std::string description;
  int priority = 0;  // 1: -o wide only
};

// One kind's printer: its columns, and one object's cells in that order (strings and integers).
// `reads`, when set, is every member `cells` reads (cells of json_sparse::Prune(object, *reads)
// are those of the object, a test checks it on many objects): a row written from the object's
// text parses only those (TableRowFromText).
struct TablePrinter {
  std::vector<Column> (*columns)();
  nlohmann::json (*cells)(const nlohmann::json& object, Millis now);
  const json_sparse::Keep* reads = nullptr;
};
// The printer of a kind (kinds without their own print NAME AGE).
const TablePrinter& TablePrinterOf(KindId id);

// The printer of the resource's kind (NAME AGE for a kind not in core/api_kinds.h).
std::vector<Column> ColumnsOf(const ResourceInfo& r);
// One row's cells, in ColumnsOf(r) order (strings and integers).
nlohmann::json CellsOf(const ResourceInfo& r, const nlohmann::json& object, Millis now);

// A Table of `objects` (kind Table, apiVersion meta.k8s.io/v1). `list_metadata` is the list's
// metadata (resourceVersion, continue), copied as the Table's metadata.
nlohmann::json MakeTable(const ResourceInfo& r, const std::vector<nlohmann::json>& objects,
                         Millis now, IncludeObject include,
                         const nlohmann::json& list_metadata = nlohmann::json::object());
// The same with a `const json*` per object (the caller's store keeps them).
nlohmann::json MakeTable(const ResourceInfo& r, const std::vector<const nlohmann::json*>& objects,
                         Millis now, IncludeObject include,
                         const nlohmann::json& list_metadata = nlohmann::json::object());

// The same Table written straight into `out`, one row at a time (a list's answer: no copy of the
// objects): TableOpen (its columns and metadata, then `"rows":[`), TableRow per object (with
// `first` for the first row), TableClose.
void TableOpen(std::string& out, const ResourceInfo& r, const nlohmann::json& list_metadata);
void TableRow(std::string& out, const ResourceInfo& r, const nlohmann::json& object, Millis now,
              IncludeObject include, bool first);
void TableClose(std::string& out);
// TableRow's bytes from the object's wire text (kube::WireJson's bytes, as the daemon stores it)
// rather than its tree: only what the kind's printer reads is parsed (`reads`; the whole text
// for a printer without it), and the object or its metadata is copied from the text. False, and
// nothing written, when the text is not a JSON object.
bool TableRowFromText(std::string& out, const ResourceInfo& r, std::string_view text, Millis now,
                      IncludeObject include, bool first);

// kube's duration.HumanDuration: "0s".."119s", "2m".."9m59s", "10m".."179m", "3h".."7h59m",
// "8h".."47h", "2d".."7d23h", "8d".."729d", "2y".."7y364d", "8y"; below -1s "<invalid>".
std::string HumanDuration(Millis d);

}  // namespace arbiter::kube
