// Builders shared by the daemon's in-process tests: the mutations the HTTP layer hands a Cluster,
// minimal API objects (Namespace, Node, Pod, PriorityClass) as kubectl would send them, and the
// dashboard's viewer of a tenant token.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/dashboard/views.h"
#include "server/state/cluster.h"
#include "server/state/job_controller.h"

namespace arbiter::server::fixtures {

inline constexpr Millis kT0 = 1764583200000;  // 2025-12-01T10:00:00Z

inline Mutation Create(Millis t, const Json& obj) {
  Mutation m;
  m.op = Mutation::Op::kCreate;
  m.time = t;
  m.kind = obj.at("kind");
  m.namespace_ = obj["metadata"].value("namespace", "");
  m.object = obj;
  return m;
}
// An update of `obj` (a PUT of the whole object, as kubectl replace sends it).
inline Mutation Update(Millis t, const Json& obj) {
  Mutation m = Create(t, obj);
  m.op = Mutation::Op::kUpdate;
  m.name = obj.at("metadata").at("name");
  return m;
}
// The pods of Job `job` in namespace default (by its job-name label).
inline std::vector<const Json*> PodsOf(const Cluster& c, const std::string& job) {
  std::vector<const Json*> out;
  for (const Json* p : c.store().List("Pod", "default"))
    if (p->at("metadata").value("labels", Json::object()).value(kJobNameLabel, "") == job)
      out.push_back(p);
  return out;
}
// Every Job and Pod of namespace default as one text: two clusters with the same text hold the
// same objects (replay and restore tests).
inline std::string JobsAndPods(const Cluster& c) {
  Json out = Json::array();
  for (const char* kind : {"Job", "Pod"})
    for (const Json* o : c.store().List(kind, "default")) out.push_back(*o);
  return out.dump();
}
inline Mutation Delete(Millis t, const std::string& kind, const std::string& ns,
                       const std::string& name) {
  Mutation m;
  m.op = Mutation::Op::kDelete;
  m.time = t;
  m.kind = kind;
  m.namespace_ = ns;
  m.name = name;
  return m;
}
// Applies `m`, failing the test (with the refusal and the mutation) when it is refused.
inline void Ok(Cluster& c, const Mutation& m) {
  MutationResult r = c.Apply(m);
  ASSERT_TRUE(r.ok()) << (r.error ? r.error->message : "") << " " << m.Encode();
  const Status facts = c.CheckJobPodFacts();  // what the Job controller keeps of its pods
  ASSERT_TRUE(facts.ok()) << facts.message() << " after " << m.Encode();
  const Status budgets = c.CheckPdbStatuses();  // the budgets' statuses, refreshed as they move
  ASSERT_TRUE(budgets.ok()) << budgets.message() << " after " << m.Encode();
}

inline Mutation Advance(Millis t) {
  Mutation m;
  m.op = Mutation::Op::kAdvance;
  m.time = t;
  return m;
}

// Advances to every due instant up to `end`, then to `end` (the daemon's clock, step by step).
inline void RunUntil(Cluster& c, Millis end) {
  while (auto due = c.NextDue()) {
    if (*due > end) break;
    Ok(c, Advance(*due));
  }
  Ok(c, Advance(end));
}

inline Json Namespace(const std::string& name) {
  return {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}};
}
// A node with 16 CPUs, 64 GiB and `gpus` nvidia.com/gpu.
inline Json Node(const std::string& name, int gpus) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}}},
          {"status",
           {{"capacity",
             {{"cpu", "16"}, {"memory", "64Gi"}, {"nvidia.com/gpu", std::to_string(gpus)}}}}}};
}
// A one-container pod requesting 1 CPU and `gpus` GPUs; `duration` is arbiter.dev/duration
// (empty: runs until deleted), `priority_class` spec.priorityClassName (empty: none).
inline Json PodIn(const std::string& ns, const std::string& name, int gpus,
                  const std::string& duration = "", const std::string& priority_class = "") {
  Json p = {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", name}, {"namespace", ns}}},
            {"spec",
             {{"containers",
               {{{"name", "main"},
                 {"image", "busybox"},
                 {"resources",
                  {{"requests", {{"cpu", "1"}, {"nvidia.com/gpu", std::to_string(gpus)}}},
                   {"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}}};
  if (!duration.empty()) p["metadata"]["annotations"]["arbiter.dev/duration"] = duration;
  if (!priority_class.empty()) p["spec"]["priorityClassName"] = priority_class;
  return p;
}
// Namespace default and one node of 8 GPUs, gpu-0 (the Job tests' pool).
inline void StartOneNode(Cluster& c) {
  Ok(c, Create(kT0, Namespace("default")));
  Ok(c, Create(kT0, Node("gpu-0", 8)));
}

// The stored status of Job `name` in namespace default.
inline const Json& JobStatus(const Cluster& c, const std::string& name) {
  return c.store().Get("Job", "default", name)->at("status");
}
// The condition of `type` of Job `job` in namespace default as "Status/Reason" ("" when absent).
inline std::string JobCondition(const Cluster& c, const std::string& job, const std::string& type) {
  for (const auto& cond : JobStatus(c, job).value("conditions", Json::array()))
    if (cond.value("type", "") == type)
      return cond.value("status", "") + "/" + cond.value("reason", "");
  return "";
}
// A Job in `ns` whose pods ask 1 CPU and 1 GPU and run `duration` (restartPolicy Never); `spec` is
// merged into its spec (its top-level fields replace the Job's).
inline Json GpuJob(const std::string& ns, const std::string& name, const Json& spec,
                   const std::string& duration) {
  Json pod_spec = {{"restartPolicy", "Never"},
                   {"containers",
                    {{{"name", "main"},
                      {"image", "busybox"},
                      {"resources",
                       {{"requests", {{"cpu", "1"}, {"nvidia.com/gpu", "1"}}},
                        {"limits", {{"nvidia.com/gpu", "1"}}}}}}}}};
  Json j = {{"apiVersion", "batch/v1"},
            {"kind", "Job"},
            {"metadata", {{"name", name}, {"namespace", ns}}},
            {"spec",
             {{"template",
               {{"metadata", {{"annotations", {{"arbiter.dev/duration", duration}}}}},
                {"spec", pod_spec}}}}}};
  if (spec.is_object()) j["spec"].update(spec);
  return j;
}

inline Json PriorityClass(const std::string& name, int value) {
  return {{"apiVersion", "scheduling.k8s.io/v1"},
          {"kind", "PriorityClass"},
          {"metadata", {{"name", name}}},
          {"value", value}};
}

// The dashboard's viewer of a token that sees namespace `ns` only (user "NS-user").
inline dashboard::Viewer Tenant(const std::string& ns) {
  dashboard::Viewer v;
  v.user = ns + "-user";
  v.all = false;
  v.namespaces = {ns};
  return v;
}

}  // namespace arbiter::server::fixtures
