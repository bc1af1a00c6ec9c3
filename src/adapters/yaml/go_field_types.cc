#include "adapters/yaml/go_field_types.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "adapters/yaml/fast_yaml.h"
#include "adapters/yaml/yaml_reader.h"

namespace arbiter::yaml {

const char kQuantityError[] =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

namespace {

// Row makers: the owner, the JSON name, the Go type(s).
GoFieldRow Str(std::string_view o, std::string_view f, std::string_view t = "string") {
  return {o, f, GoWrap::kOne, GoShape::kString, t, t};
}
GoFieldRow Bool(std::string_view o, std::string_view f) {
  return {o, f, GoWrap::kOne, GoShape::kBool, "bool", "bool"};
}
GoFieldRow I32(std::string_view o, std::string_view f) {
  return {o, f, GoWrap::kOne, GoShape::kInt32, "int32", "int32"};
}
GoFieldRow I64(std::string_view o, std::string_view f) {
  return {o, f, GoWrap::kOne, GoShape::kInt64, "int64", "int64"};
}
GoFieldRow Obj(std::string_view o, std::string_view f, std::string_view t) {
  return {o, f, GoWrap::kOne, GoShape::kStruct, t, t};
}
GoFieldRow Objs(std::string_view o, std::string_view f, std::string_view list, std::string_view t) {
  return {o, f, GoWrap::kList, GoShape::kStruct, list, t};
}
GoFieldRow Strs(std::string_view o, std::string_view f, std::string_view list = "[]string",
                std::string_view t = "string") {
  return {o, f, GoWrap::kList, GoShape::kString, list, t};
}
GoFieldRow StrMap(std::string_view o, std::string_view f) {
  return {o, f, GoWrap::kMap, GoShape::kString, "map[string]string", "string"};
}
GoFieldRow Quantities(std::string_view o, std::string_view f) {
  return {o, f, GoWrap::kMap, GoShape::kQuantity, "v1.ResourceList", "resource.Quantity"};
}
GoFieldRow Qty(std::string_view o, std::string_view f) {
  return {o, f, GoWrap::kOne, GoShape::kQuantity, "resource.Quantity", "resource.Quantity"};
}
GoFieldRow Time(std::string_view o, std::string_view f) {
  return {o, f, GoWrap::kOne, GoShape::kTime, "v1.Time", "v1.Time"};
}
GoFieldRow IntStr(std::string_view o, std::string_view f) {
  return {o, f, GoWrap::kOne, GoShape::kIntOrString, "intstr.IntOrString", "intstr.IntOrString"};
}
GoFieldRow Typed(GoFieldRow r) {  // the loader reads it (and types it) itself
  r.loader_typed = true;
  return r;
}
GoFieldRow Inline(GoFieldRow r, std::string_view go_field) {  // a field of an inline struct
  r.go_field = go_field;
  return r;
}

std::vector<GoFieldRow> MetaRows() {
  const char* m = "ObjectMeta";
  return {Typed(Str(m, "name")),
          Str(m, "generateName"),
          Typed(Str(m, "namespace")),
          Str(m, "selfLink"),
          Str(m, "uid", "types.UID"),
          Str(m, "resourceVersion"),
          I64(m, "generation"),
          Time(m, "creationTimestamp"),
          Time(m, "deletionTimestamp"),
          I64(m, "deletionGracePeriodSeconds"),
          Typed(StrMap(m, "labels")),
          Typed(StrMap(m, "annotations")),
          Objs(m, "ownerReferences", "[]v1.OwnerReference", "v1.OwnerReference"),
          Strs(m, "finalizers"),
          Objs(m, "managedFields", "[]v1.ManagedFieldsEntry", "v1.ManagedFieldsEntry"),
          Str("OwnerReference", "apiVersion"),
          Str("OwnerReference", "kind"),
          Str("OwnerReference", "name"),
          Str("OwnerReference", "uid", "types.UID"),
          Bool("OwnerReference", "controller"),
          Bool("OwnerReference", "blockOwnerDeletion"),
          Str("ManagedFieldsEntry", "manager"),
          Str("ManagedFieldsEntry", "operation", "v1.ManagedFieldsOperationType"),
          Str("ManagedFieldsEntry", "apiVersion"),
          Time("ManagedFieldsEntry", "time"),
          Str("ManagedFieldsEntry", "fieldsType"),
          Str("ManagedFieldsEntry", "subresource")};
}

std::vector<GoFieldRow> PodSpecRows() {
  const char* s = "PodSpec";
  return {Objs(s, "volumes", "[]v1.Volume", "v1.Volume"),
          Typed(Objs(s, "initContainers", "[]v1.Container", "v1.Container")),
          Typed(Objs(s, "containers", "[]v1.Container", "v1.Container")),
          Objs(s, "ephemeralContainers", "[]v1.EphemeralContainer", "v1.EphemeralContainer"),
          Str(s, "restartPolicy", "v1.RestartPolicy"),
          Typed(I64(s, "terminationGracePeriodSeconds")),
          Typed(I64(s, "activeDeadlineSeconds")),
          Str(s, "dnsPolicy", "v1.DNSPolicy"),
          Typed(StrMap(s, "nodeSelector")),
          Str(s, "serviceAccountName"),
          Str(s, "serviceAccount"),
          Bool(s, "automountServiceAccountToken"),
          Str(s, "nodeName"),
          Bool(s, "hostNetwork"),
          Bool(s, "hostPID"),
          Bool(s, "hostIPC"),
          Bool(s, "shareProcessNamespace"),
          Obj(s, "securityContext", "v1.PodSecurityContext"),
          Objs(s, "imagePullSecrets", "[]v1.LocalObjectReference", "v1.LocalObjectReference"),
          Str(s, "hostname"),
          Str(s, "subdomain"),
          Typed(Obj(s, "affinity", "v1.Affinity")),
          Str(s, "schedulerName"),
          Typed(Objs(s, "tolerations", "[]v1.Toleration", "v1.Toleration")),
          Objs(s, "hostAliases", "[]v1.HostAlias", "v1.HostAlias"),
          Typed(Str(s, "priorityClassName")),
          Typed(I32(s, "priority")),
          Obj(s, "dnsConfig", "v1.PodDNSConfig"),
          Objs(s, "readinessGates", "[]v1.PodReadinessGate", "v1.PodReadinessGate"),
          Str(s, "runtimeClassName"),
          Bool(s, "enableServiceLinks"),
          Typed(Str(s, "preemptionPolicy", "v1.PreemptionPolicy")),
          Typed(Quantities(s, "overhead")),
          Typed(Objs(s, "topologySpreadConstraints", "[]v1.TopologySpreadConstraint",
                     "v1.TopologySpreadConstraint")),
          Bool(s, "setHostnameAsFQDN"),
          Obj(s, "os", "v1.PodOS"),
          Bool(s, "hostUsers"),
          Objs(s, "schedulingGates", "[]v1.PodSchedulingGate", "v1.PodSchedulingGate"),
          Objs(s, "resourceClaims", "[]v1.PodResourceClaim", "v1.PodResourceClaim"),
          Obj(s, "resources", "v1.ResourceRequirements"),
          Str(s, "hostnameOverride"),
          Obj(s, "schedulingGroup", "v1.PodSchedulingGroup")};
}

std::vector<GoFieldRow> ContainerRows() {
  const char* c = "Container";
  return {
      Typed(Str(c, "name")), Str(c, "image"), Strs(c, "command"), Strs(c, "args"),
      Str(c, "workingDir"), Objs(c, "ports", "[]v1.ContainerPort", "v1.ContainerPort"),
      Objs(c, "envFrom", "[]v1.EnvFromSource", "v1.EnvFromSource"),
      Objs(c, "env", "[]v1.EnvVar", "v1.EnvVar"),
      Typed(Obj(c, "resources", "v1.ResourceRequirements")),
      Objs(c, "resizePolicy", "[]v1.ContainerResizePolicy", "v1.ContainerResizePolicy"),
      Str(c, "restartPolicy", "v1.ContainerRestartPolicy"),
      Objs(c, "restartPolicyRules", "[]v1.ContainerRestartRule", "v1.ContainerRestartRule"),
      Objs(c, "volumeMounts", "[]v1.VolumeMount", "v1.VolumeMount"),
      Objs(c, "volumeDevices", "[]v1.VolumeDevice", "v1.VolumeDevice"),
      Obj(c, "livenessProbe", "v1.Probe"), Obj(c, "readinessProbe", "v1.Probe"),
      Obj(c, "startupProbe", "v1.Probe"), Obj(c, "lifecycle", "v1.Lifecycle"),
      Str(c, "terminationMessagePath"),
      Str(c, "terminationMessagePolicy", "v1.TerminationMessagePolicy"),
      Str(c, "imagePullPolicy", "v1.PullPolicy"), Obj(c, "securityContext", "v1.SecurityContext"),
      Bool(c, "stdin"), Bool(c, "stdinOnce"), Bool(c, "tty"),
      // ResourceRequirements (a container's, and the pod's spec.resources)
      Typed(Quantities("ResourceRequirements", "limits")),
      Typed(Quantities("ResourceRequirements", "requests")),
      Objs("ResourceRequirements", "claims", "[]v1.ResourceClaim", "v1.ResourceClaim"),
      Str("ResourceClaim", "name"), Str("ResourceClaim", "request"), Str("ContainerPort", "name"),
      I32("ContainerPort", "hostPort"), I32("ContainerPort", "containerPort"),
      Str("ContainerPort", "protocol", "v1.Protocol"), Str("ContainerPort", "hostIP"),
      Str("ContainerResizePolicy", "resourceName", "v1.ResourceName"),
      Str("ContainerResizePolicy", "restartPolicy", "v1.ResourceResizeRestartPolicy"),
      Str("VolumeMount", "name"), Bool("VolumeMount", "readOnly"),
      Str("VolumeMount", "recursiveReadOnly", "v1.RecursiveReadOnlyMode"),
      Str("VolumeMount", "mountPath"), Str("VolumeMount", "subPath"),
      Str("VolumeMount", "mountPropagation", "v1.MountPropagationMode"),
      Str("VolumeMount", "subPathExpr"), Str("VolumeDevice", "name"),
      Str("VolumeDevice", "devicePath")};
}

std::vector<GoFieldRow> EnvRows() {
  const char* v = "EnvVarSource";
  return {Str("EnvVar", "name"),
          Str("EnvVar", "value"),
          Obj("EnvVar", "valueFrom", "v1.EnvVarSource"),
          Obj(v, "fieldRef", "v1.ObjectFieldSelector"),
          Obj(v, "resourceFieldRef", "v1.ResourceFieldSelector"),
          Obj(v, "configMapKeyRef", "v1.ConfigMapKeySelector"),
          Obj(v, "secretKeyRef", "v1.SecretKeySelector"),
          Obj(v, "fileKeyRef", "v1.FileKeySelector"),
          Str("ObjectFieldSelector", "apiVersion"),
          Str("ObjectFieldSelector", "fieldPath"),
          Str("ResourceFieldSelector", "containerName"),
          Str("ResourceFieldSelector", "resource"),
          Qty("ResourceFieldSelector", "divisor"),
          Inline(Str("ConfigMapKeySelector", "name"), "LocalObjectReference.name"),
          Str("ConfigMapKeySelector", "key"),
          Bool("ConfigMapKeySelector", "optional"),
          Inline(Str("SecretKeySelector", "name"), "LocalObjectReference.name"),
          Str("SecretKeySelector", "key"),
          Bool("SecretKeySelector", "optional"),
          Str("FileKeySelector", "volumeName"),
          Str("FileKeySelector", "path"),
          Str("FileKeySelector", "key"),
          Bool("FileKeySelector", "optional"),
          Str("EnvFromSource", "prefix"),
          Obj("EnvFromSource", "configMapRef", "v1.ConfigMapEnvSource"),
          Obj("EnvFromSource", "secretRef", "v1.SecretEnvSource"),
          Inline(Str("ConfigMapEnvSource", "name"), "LocalObjectReference.name"),
          Bool("ConfigMapEnvSource", "optional"),
          Inline(Str("SecretEnvSource", "name"), "LocalObjectReference.name"),
          Bool("SecretEnvSource", "optional")};
}

std::vector<GoFieldRow> ProbeRows() {
  const char* p = "Probe";
  const char* l = "LifecycleHandler";
  return {Inline(Obj(p, "exec", "v1.ExecAction"), "ProbeHandler.exec"),
          Inline(Obj(p, "httpGet", "v1.HTTPGetAction"), "ProbeHandler.httpGet"),
          Inline(Obj(p, "tcpSocket", "v1.TCPSocketAction"), "ProbeHandler.tcpSocket"),
          Inline(Obj(p, "grpc", "v1.GRPCAction"), "ProbeHandler.grpc"),
          I32(p, "initialDelaySeconds"),
          I32(p, "timeoutSeconds"),
          I32(p, "periodSeconds"),
          I32(p, "successThreshold"),
          I32(p, "failureThreshold"),
          I64(p, "terminationGracePeriodSeconds"),
          Strs("ExecAction", "command"),
          Str("HTTPGetAction", "path"),
          IntStr("HTTPGetAction", "port"),
          Str("HTTPGetAction", "host"),
          Str("HTTPGetAction", "scheme", "v1.URIScheme"),
          Objs("HTTPGetAction", "httpHeaders", "[]v1.HTTPHeader", "v1.HTTPHeader"),
          Str("HTTPHeader", "name"),
          Str("HTTPHeader", "value"),
          IntStr("TCPSocketAction", "port"),
          Str("TCPSocketAction", "host"),
          I32("GRPCAction", "port"),
          Str("GRPCAction", "service"),
          Obj("Lifecycle", "postStart", "v1.LifecycleHandler"),
          Obj("Lifecycle", "preStop", "v1.LifecycleHandler"),
          Str("Lifecycle", "stopSignal", "v1.Signal"),
          Obj(l, "exec", "v1.ExecAction"),
          Obj(l, "httpGet", "v1.HTTPGetAction"),
          Obj(l, "tcpSocket", "v1.TCPSocketAction"),
          Obj(l, "sleep", "v1.SleepAction"),
          I64("SleepAction", "seconds")};
}

std::vector<GoFieldRow> SecurityRows() {
  std::vector<GoFieldRow> rows;
  for (const char* s : {"SecurityContext", "PodSecurityContext"}) {
    rows.push_back(Obj(s, "seLinuxOptions", "v1.SELinuxOptions"));
    rows.push_back(Obj(s, "windowsOptions", "v1.WindowsSecurityContextOptions"));
    rows.push_back(I64(s, "runAsUser"));
    rows.push_back(I64(s, "runAsGroup"));
    rows.push_back(Bool(s, "runAsNonRoot"));
    rows.push_back(Obj(s, "seccompProfile", "v1.SeccompProfile"));
    rows.push_back(Obj(s, "appArmorProfile", "v1.AppArmorProfile"));
  }
  const char* c = "SecurityContext";
  const char* p = "PodSecurityContext";
  const std::vector<GoFieldRow> more = {
      Obj(c, "capabilities", "v1.Capabilities"),
      Bool(c, "privileged"),
      Bool(c, "readOnlyRootFilesystem"),
      Bool(c, "allowPrivilegeEscalation"),
      Str(c, "procMount", "v1.ProcMountType"),
      {p, "supplementalGroups", GoWrap::kList, GoShape::kInt64, "[]int64", "int64"},
      Str(p, "supplementalGroupsPolicy", "v1.SupplementalGroupsPolicy"),
      I64(p, "fsGroup"),
      Objs(p, "sysctls", "[]v1.Sysctl", "v1.Sysctl"),
      Str(p, "fsGroupChangePolicy", "v1.PodFSGroupChangePolicy"),
      Str(p, "seLinuxChangePolicy", "v1.PodSELinuxChangePolicy"),
      Strs("Capabilities", "add", "[]v1.Capability", "v1.Capability"),
      Strs("Capabilities", "drop", "[]v1.Capability", "v1.Capability"),
      Str("SELinuxOptions", "user"),
      Str("SELinuxOptions", "role"),
      Str("SELinuxOptions", "type"),
      Str("SELinuxOptions", "level"),
      Str("SeccompProfile", "type", "v1.SeccompProfileType"),
      Str("SeccompProfile", "localhostProfile"),
      Str("AppArmorProfile", "type", "v1.AppArmorProfileType"),
      Str("AppArmorProfile", "localhostProfile"),
      Str("WindowsSecurityContextOptions", "gmsaCredentialSpecName"),
      Str("WindowsSecurityContextOptions", "gmsaCredentialSpec"),
      Str("WindowsSecurityContextOptions", "runAsUserName"),
      Bool("WindowsSecurityContextOptions", "hostProcess"),
      Str("Sysctl", "name"),
      Str("Sysctl", "value")};
  rows.insert(rows.end(), more.begin(), more.end());
  return rows;
}

std::vector<GoFieldRow> SchedulingRows() {
  const char* t = "Toleration";
  const char* c = "TopologySpreadConstraint";
  return {Typed(Str(t, "key")),
          Typed(Str(t, "operator", "v1.TolerationOperator")),
          Typed(Str(t, "value")),
          Typed(Str(t, "effect", "v1.TaintEffect")),
          Typed(I64(t, "tolerationSeconds")),
          Typed(I32(c, "maxSkew")),
          Typed(Str(c, "topologyKey")),
          Typed(Str(c, "whenUnsatisfiable", "v1.UnsatisfiableConstraintAction")),
          Typed(Obj(c, "labelSelector", "v1.LabelSelector")),
          Typed(I32(c, "minDomains")),
          Typed(Str(c, "nodeAffinityPolicy", "v1.NodeInclusionPolicy")),
          Typed(Str(c, "nodeTaintsPolicy", "v1.NodeInclusionPolicy")),
          Typed(Strs(c, "matchLabelKeys")),
          Typed(StrMap("LabelSelector", "matchLabels")),
          Typed(Objs("LabelSelector", "matchExpressions", "[]v1.LabelSelectorRequirement",
                     "v1.LabelSelectorRequirement")),
          Typed(Str("LabelSelectorRequirement", "key")),
          Typed(Str("LabelSelectorRequirement", "operator", "v1.LabelSelectorOperator")),
          Typed(Strs("LabelSelectorRequirement", "values")),
          Str("PodSchedulingGate", "name"),
          Str("PodReadinessGate", "conditionType", "v1.PodConditionType"),
          Str("PodOS", "name", "v1.OSName"),
          Str("LocalObjectReference", "name"),
          Str("HostAlias", "ip"),
          Strs("HostAlias", "hostnames"),
          Strs("PodDNSConfig", "nameservers"),
          Strs("PodDNSConfig", "searches"),
          Objs("PodDNSConfig", "options", "[]v1.PodDNSConfigOption", "v1.PodDNSConfigOption"),
          Str("PodDNSConfigOption", "name"),
          Str("PodDNSConfigOption", "value"),
          Str("PodResourceClaim", "name"),
          Str("PodResourceClaim", "resourceClaimName"),
          Str("PodResourceClaim", "resourceClaimTemplateName")};
}

std::vector<GoFieldRow> VolumeRows() {
  const char* v = "Volume";
  auto source = [&](std::string_view f, std::string_view go_field, std::string_view t) {
    return Inline(Obj(v, f, t), go_field);
  };
  return {Str(v, "name"),
          source("emptyDir", "VolumeSource.emptyDir", "v1.EmptyDirVolumeSource"),
          source("hostPath", "VolumeSource.hostPath", "v1.HostPathVolumeSource"),
          source("configMap", "VolumeSource.configMap", "v1.ConfigMapVolumeSource"),
          source("secret", "VolumeSource.secret", "v1.SecretVolumeSource"),
          source("persistentVolumeClaim", "VolumeSource.persistentVolumeClaim",
                 "v1.PersistentVolumeClaimVolumeSource"),
          Str("EmptyDirVolumeSource", "medium", "v1.StorageMedium"),
          Qty("EmptyDirVolumeSource", "sizeLimit"),
          Str("HostPathVolumeSource", "path"),
          Str("HostPathVolumeSource", "type", "v1.HostPathType"),
          Inline(Str("ConfigMapVolumeSource", "name"), "LocalObjectReference.name"),
          Objs("ConfigMapVolumeSource", "items", "[]v1.KeyToPath", "v1.KeyToPath"),
          I32("ConfigMapVolumeSource", "defaultMode"),
          Bool("ConfigMapVolumeSource", "optional"),
          Str("SecretVolumeSource", "secretName"),
          Objs("SecretVolumeSource", "items", "[]v1.KeyToPath", "v1.KeyToPath"),
          I32("SecretVolumeSource", "defaultMode"),
          Bool("SecretVolumeSource", "optional"),
          Str("KeyToPath", "key"),
          Str("KeyToPath", "path"),
          I32("KeyToPath", "mode"),
          Str("PersistentVolumeClaimVolumeSource", "claimName"),
          Bool("PersistentVolumeClaimVolumeSource", "readOnly")};
}

std::vector<GoFieldRow> BuildTable() {
  std::vector<GoFieldRow> rows = {
      Typed(Str("Pod", "apiVersion")), Typed(Str("Pod", "kind")),  // the loader's, by kind
      Typed(Obj("Pod", "metadata", "v1.ObjectMeta")), Typed(Obj("Pod", "spec", "v1.PodSpec")),
      Obj("Pod", "status", "v1.PodStatus"),
      // A Job: its pod template (the rest of its spec is the Job validation's).
      Str("Job", "apiVersion"), Str("Job", "kind"), Obj("Job", "metadata", "v1.ObjectMeta"),
      Obj("Job", "spec", "v1.JobSpec"), Obj("JobSpec", "template", "v1.PodTemplateSpec"),
      Obj("PodTemplateSpec", "metadata", "v1.ObjectMeta"),
      Obj("PodTemplateSpec", "spec", "v1.PodSpec")};
  for (auto part : {MetaRows, PodSpecRows, ContainerRows, EnvRows, ProbeRows, SecurityRows,
                    SchedulingRows, VolumeRows}) {
    const std::vector<GoFieldRow> more = part();
    rows.insert(rows.end(), more.begin(), more.end());
  }
  return rows;
}

// A row with its struct's rows found (kStruct: nullptr for a struct without rows), and the rows
// of each struct by its name.
struct Compiled {
  const GoFieldRow* row;
  const std::vector<Compiled>* fields = nullptr;
};
using StructIndex = std::unordered_map<std::string_view, std::vector<Compiled>>;

// "v1.Container" -> "Container".
std::string_view StructName(std::string_view go_type) {
  const size_t dot = go_type.rfind('.');
  return dot == std::string_view::npos ? go_type : go_type.substr(dot + 1);
}

const StructIndex& Index() {
  static const StructIndex index = [] {
    StructIndex i;
    for (const GoFieldRow& r : GoFieldTable()) i[r.owner].push_back(Compiled{&r});
    for (auto& [name, rows] : i)  // (no key is added: the vectors stay where they are)
      for (Compiled& c : rows)
        if (c.row->shape == GoShape::kStruct)
          if (auto it = i.find(StructName(c.row->item_type)); it != i.end()) c.fields = &it->second;
    return i;
  }();
  return index;
}

// Where a value is, kept as links up to the root and written out only for a problem: its path
// (spec.containers[0].args) and Go's (spec.containers.args: no index, no map key).
struct Step {
  enum class Kind : uint8_t { kField, kIndex, kKey };
  const Step* up;
  Kind kind;
  std::string_view key;  // a field's JSON name, a map's key
  std::string_view go;   // a field's name in Go's errors
  size_t index;
};

std::string PathOf(const Step* s) {
  if (!s) return "";
  const std::string up = PathOf(s->up);
  return s->kind == Step::Kind::kIndex ? IndexPath(up, s->index) : ChildPath(up, s->key);
}

std::string GoPathOf(const Step* s) {
  if (!s) return "";
  const std::string up = GoPathOf(s->up);
  if (s->kind != Step::Kind::kField) return up;
  return up.empty() ? std::string(s->go) : up + "." + std::string(s->go);
}

enum class JsonKind { kNull, kString, kNumber, kBool, kObject, kArray };

const char* Word(JsonKind k) {  // Go's UnmarshalTypeError.Value
  switch (k) {
    case JsonKind::kString:
      return "string";
    case JsonKind::kNumber:
      return "number";
    case JsonKind::kBool:
      return "bool";
    case JsonKind::kObject:
      return "object";
    case JsonKind::kArray:
      return "array";
    case JsonKind::kNull:
      break;
  }
  return "null";
}

JsonKind ScalarKind(bool quoted, std::string_view text) {
  if (quoted) return JsonKind::kString;
  switch (ResolvePlain(text)) {
    case PlainType::kBool:
      return JsonKind::kBool;
    case PlainType::kInt:
    case PlainType::kFloat:
      return JsonKind::kNumber;
    case PlainType::kString:
      break;
  }
  return JsonKind::kString;
}

// The three trees the checks read: a JSON object (the API), yaml-cpp's and the fast reader's
// (the loader). Kind, a number's text, an object's members, a list's items.
struct JsonTree {
  using Node = const nlohmann::json*;
  static JsonKind Kind(Node n) {
    switch (n->type()) {
      case nlohmann::json::value_t::string:
        return JsonKind::kString;
      case nlohmann::json::value_t::boolean:
        return JsonKind::kBool;
      case nlohmann::json::value_t::number_integer:
      case nlohmann::json::value_t::number_unsigned:
      case nlohmann::json::value_t::number_float:
        return JsonKind::kNumber;
      case nlohmann::json::value_t::object:
        return JsonKind::kObject;
      case nlohmann::json::value_t::array:
        return JsonKind::kArray;
      default:
        return JsonKind::kNull;
    }
  }
  static std::string Text(Node n) { return n->dump(); }
  template <class F>
  static void Members(Node n, F&& f) {
    for (auto it = n->begin(); it != n->end(); ++it) f(std::string_view(it.key()), &it.value());
  }
  template <class F>
  static void Items(Node n, F&& f) {
    for (const auto& item : *n) f(&item);
  }
};

struct YamlTree {
  using Node = YAML::Node;
  static JsonKind Kind(const Node& n) {
    if (n.IsMap()) return JsonKind::kObject;
    if (n.IsSequence()) return JsonKind::kArray;
    if (!n.IsScalar()) return JsonKind::kNull;
    return ScalarKind(IsQuotedScalar(n), n.Scalar());
  }
  static std::string Text(const Node& n) { return n.Scalar(); }
  template <class F>
  static void Members(const Node& n, F&& f) {
    for (auto it = n.begin(); it != n.end(); ++it) {
      const YAML::Node key = it->first;  // copies (yaml-cpp's iterator gives its pair by value)
      const YAML::Node value = it->second;
      if (key.IsScalar()) f(std::string_view(key.Scalar()), value);
    }
  }
  template <class F>
  static void Items(const Node& n, F&& f) {
    for (auto it = n.begin(); it != n.end(); ++it) f(YAML::Node(*it));
  }
};

struct FastTree {
  using Node = const FastNode*;
  const FastReader& r;
  static JsonKind Kind(Node n) {
    switch (n->type) {
      case FastNode::Type::kMap:
        return JsonKind::kObject;
      case FastNode::Type::kSeq:
        return JsonKind::kArray;
      case FastNode::Type::kScalar:
        return ScalarKind(n->quoted, n->text);
      case FastNode::Type::kNull:
        break;
    }
    return JsonKind::kNull;
  }
  static std::string Text(Node n) { return std::string(n->text); }
  template <class F>
  void Members(Node n, F&& f) const {
    for (const FastNode* k = r.first(*n); k; k = r.next_key(*k)) f(k->text, &r.value(*k));
  }
  template <class F>
  void Items(Node n, F&& f) const {
    for (const FastNode* c = r.first(*n); c; c = r.next(*c)) f(c);
  }
};

// An integer's text (an optional sign, digits) in [min, max].
bool IntegerIn(std::string_view s, int64_t min, int64_t max) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size() && v >= min && v <= max;
}

// Walks an object along the table: a field with a row is judged, a struct's fields in turn.
template <class Tree>
class Walker {
 public:
  using Node = typename Tree::Node;
  using Report = std::function<void(const Node&, GoTypeProblem)>;
  Walker(const Tree& tree, bool loader_only, size_t max, Report report)
      : t_(tree), loader_only_(loader_only), max_(max), report_(std::move(report)) {}

  size_t found() const { return found_; }

  // The object `n` of a struct of those rows (nullptr: none), at `at`.
  void Struct(const Node& n, const std::vector<Compiled>* rows, const Step* at) {
    if (!rows) return;
    t_.Members(n, [&](std::string_view key, const Node& v) {
      if (found_ >= max_) return;
      for (const Compiled& c : *rows) {
        if (c.row->field != key) continue;
        // The loader types it, and nothing under it is left to judge.
        if (loader_only_ && c.row->loader_typed && c.row->shape != GoShape::kStruct) break;
        const Step here{at, Step::Kind::kField, key,
                        c.row->go_field.empty() ? c.row->field : c.row->go_field, 0};
        Field(c, v, &here);
        break;
      }
    });
  }

 private:
  void Field(const Compiled& c, const Node& v, const Step* at) {
    const GoFieldRow& row = *c.row;
    const bool report = !(loader_only_ && row.loader_typed);
    const JsonKind k = t_.Kind(v);
    if (k == JsonKind::kNull) return;
    if (row.wrap == GoWrap::kOne) return Value(c, v, row.go_type, at, report);
    const bool list = row.wrap == GoWrap::kList;
    if (k != (list ? JsonKind::kArray : JsonKind::kObject)) {
      if (report) Mistyped(row, v, Word(k), row.go_type, at);
      return;
    }
    if (list) {
      size_t i = 0;
      t_.Items(v, [&](const Node& item) {
        const Step here{at, Step::Kind::kIndex, {}, {}, i++};
        Value(c, item, row.item_type, &here, report);
      });
    } else {
      t_.Members(v, [&](std::string_view key, const Node& value) {
        const Step here{at, Step::Kind::kKey, key, {}, 0};
        Value(c, value, row.item_type, &here, report);
      });
    }
  }

  // One value of the row's shape (the field's, an item's, a map value's), of Go type `type`.
  void Value(const Compiled& c, const Node& v, std::string_view type, const Step* at, bool report) {
    const GoFieldRow& row = *c.row;
    const JsonKind k = t_.Kind(v);
    if (k == JsonKind::kNull || found_ >= max_) return;
    const std::string word = Word(k);
    auto number = [&] { return word + " " + t_.Text(v); };  // Go: "number 1.5"
    switch (row.shape) {
      case GoShape::kString:
      case GoShape::kBool:
        if (k != (row.shape == GoShape::kString ? JsonKind::kString : JsonKind::kBool) && report)
          Mistyped(row, v, word, type, at);
        return;
      case GoShape::kInt32:
      case GoShape::kInt64: {
        const bool i32 = row.shape == GoShape::kInt32;
        const int64_t min =
            i32 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
        const int64_t max =
            i32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
        if (report && (k != JsonKind::kNumber || !IntegerIn(t_.Text(v), min, max)))
          Mistyped(row, v, k == JsonKind::kNumber ? number() : word, type, at);
        return;
      }
      case GoShape::kQuantity:  // Quantity.UnmarshalJSON parses any other JSON text
        if (report && k != JsonKind::kString && k != JsonKind::kNumber)
          Problem(v, at, kQuantityError);
        return;
      case GoShape::kTime:  // Time.UnmarshalJSON: json.Unmarshal(b, &str)
        if (report && k != JsonKind::kString)
          Problem(v, at, "json: cannot unmarshal " + word + " into Go value of type string");
        return;
      case GoShape::kIntOrString:  // IntOrString.UnmarshalJSON: a string, else an int32
        if (report && k != JsonKind::kString &&
            (k != JsonKind::kNumber || !IntegerIn(t_.Text(v), std::numeric_limits<int32_t>::min(),
                                                  std::numeric_limits<int32_t>::max())))
          Problem(v, at,
                  "json: cannot unmarshal " + (k == JsonKind::kNumber ? number() : word) +
                      " into Go value of type int32");
        return;
      case GoShape::kStruct:
        if (k == JsonKind::kObject)
          Struct(v, c.fields, at);
        else if (report)
          Mistyped(row, v, word, type, at);
        return;
    }
  }

  void Mistyped(const GoFieldRow& row, const Node& v, const std::string& word,
                std::string_view type, const Step* at) {
    Problem(v, at,
            "json: cannot unmarshal " + word + " into Go struct field " + std::string(row.owner) +
                "." + GoPathOf(at) + " of type " + std::string(type));
  }
  void Problem(const Node& v, const Step* at, std::string message) {
    if (found_ >= max_) return;
    ++found_;
    report_(v, GoTypeProblem{PathOf(at), std::move(message)});
  }

  const Tree& t_;
  bool loader_only_;
  size_t max_;
  size_t found_ = 0;
  Report report_;
};

const std::vector<Compiled>* Rows(std::string_view root) {
  const auto it = Index().find(root);
  return it == Index().end() ? nullptr : &it->second;
}

}  // namespace

const std::vector<GoFieldRow>& GoFieldTable() {
  static const std::vector<GoFieldRow> table = BuildTable();
  return table;
}

std::vector<GoTypeProblem> CheckGoTypes(const nlohmann::json& object, std::string_view root,
                                        size_t max, bool loader_only) {
  std::vector<GoTypeProblem> out;
  if (!object.is_object()) return out;
  try {
    JsonTree tree;
    Walker<JsonTree> w(tree, loader_only, max, [&](const JsonTree::Node&, GoTypeProblem p) {
      out.push_back(std::move(p));
    });
    w.Struct(&object, Rows(root), nullptr);
  } catch (const std::exception&) {  // (out of memory): what was found
  }
  return out;
}

void CheckPodGoTypes(
    const YAML::Node& doc,
    const std::function<void(const YAML::Node& at, const GoTypeProblem& problem)>& report) {
  if (!doc.IsMap()) return;
  YamlTree tree;
  Walker<YamlTree> w(tree, /*loader_only=*/true, /*max=*/100,
                     [&](const YAML::Node& at, GoTypeProblem p) { report(at, p); });
  w.Struct(doc, Rows("Pod"), nullptr);
}

bool PodGoTypesOk(const FastReader& reader, const FastNode& root) {
  if (root.type != FastNode::Type::kMap) return true;
  FastTree tree{reader};
  Walker<FastTree> w(tree, /*loader_only=*/true, /*max=*/1,
                     [](const FastTree::Node&, GoTypeProblem) {});
  w.Struct(&root, Rows("Pod"), nullptr);
  return w.found() == 0;
}

std::optional<std::string> DecodeErrorMessage(const nlohmann::json& object, std::string_view kind,
                                              std::string_view version) {
  const std::vector<GoTypeProblem> p = CheckGoTypes(object, kind, 1);
  if (p.empty()) return std::nullopt;
  const std::string k(kind);
  return k + " in version \"" + std::string(version) + "\" cannot be handled as a " + k + ": " +
         p[0].message;
}

}  // namespace arbiter::yaml
