// The options of a write or a delete as kube-apiserver decodes and checks them before it looks at
// the object (apiserver's endpoints/handlers, apimachinery's meta/v1 validation), with its texts:
//
//   ?fieldManager= of 129 bytes      422 CreateOptions.meta.k8s.io "" is invalid: fieldManager:
//                                        Too long: may not be more than 128 bytes
//   ?dryRun=x                        422 ... dryRun: Unsupported value: ["x"]: supported values:
//                                        "All"
//   ?gracePeriodSeconds=abc          400 strconv.ParseInt: parsing "abc": invalid syntax
//   {"gracePeriodSeconds": 1.5}      400 json: cannot unmarshal number 1.5 into Go struct field
//                                        DeleteOptions.gracePeriodSeconds of type int64
//
// A DELETE's options come from its body when it has one, else from its query (kube-apiserver
// reads one or the other, never both). Pure: no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/kube/status.h"

namespace arbiter::kube {

using Query = std::multimap<std::string, std::string>;

// The media type of a body's Content-Type as Go's mime.ParseMediaType reads it (kube-apiserver's
// NegotiateInputSerializer): lower-cased, without its parameters; nullopt when it does not parse
// (`application/json, text/plain`, `application/json;;`, a parameter without `=`), which
// kube-apiserver answers 415. "" for an empty header.
std::optional<std::string> MediaTypeOf(std::string_view content_type);

// Which options a request carries: CreateOptions (POST), UpdateOptions (PUT), PatchOptions
// (PATCH; kApply for an apply patch, whose fieldManager is required), DeleteOptions.
enum class OptionsKind { kCreate, kUpdate, kPatch, kApply };

// apimachinery's ValidateFieldManager: at most 128 bytes, every character printable (Go's
// unicode.IsPrint: no control, format or space character but U+0020).
std::vector<Cause> FieldManagerCauses(std::string_view manager);

// The query options of a create, update or patch (fieldManager, dryRun, fieldValidation, force)
// checked as Validate{Create,Update,Patch}Options does: nullopt when valid (`*dry_run` set).
std::optional<KubeStatus> CheckWriteOptions(const Query& query, OptionsKind kind, bool* dry_run);

// A bool of the query as kube-apiserver's parameter codec reads it (the first value): absent is
// false, "0" and "false" (any case) are false, anything else ("", "yes") is true.
bool QueryBool(const Query& query, const std::string& name);
// What Go's encoding/json calls a JSON value in its UnmarshalTypeError ("string", "number", ...).
std::string GoValueWord(const nlohmann::json& v);

// A list's or watch's query as kube-apiserver decodes it (ListOptions) and checks it
// (ValidateListOptions, WatchList on): timeoutSeconds and limit are strconv.ParseInt's (400);
// resourceVersionMatch only with a resourceVersion (list) or sendInitialEvents (watch), never
// with continue; sendInitialEvents only on a watch, with resourceVersionMatch=NotOlderThan (422
// Invalid ListOptions.meta.k8s.io). Selectors and resourceVersion are the caller's.
std::optional<KubeStatus> CheckListOptions(const Query& query);

struct DeleteOptions {
  std::optional<int64_t> grace_period_seconds;  // as given (negative: the caller's 1 s)
  std::optional<std::string> propagation_policy;
  std::optional<bool> orphan_dependents;
  std::vector<std::string> dry_run;
  std::optional<std::string> precondition_uid, precondition_resource_version;
  bool DryRun() const { return !dry_run.empty(); }
  // The propagation asked for: the policy, else orphanDependents as Orphan / Background, else "".
  std::string Propagation() const;
};

// A DELETE's options: from `body` when it is not empty (JSON DeleteOptions; `eviction`: a
// policy Eviction whose deleteOptions member holds them), else from the query. Errors: 400 (a
// value that does not decode, in Go's words), 422 Invalid DeleteOptions.meta.k8s.io
// (ValidateDeleteOptions: propagationPolicy, orphanDependents with it, dryRun). nullopt: `*out`
// holds them.
std::optional<KubeStatus> DecodeDeleteOptions(const Query& query, std::string_view body,
                                              bool eviction, DeleteOptions* out);

}  // namespace arbiter::kube
