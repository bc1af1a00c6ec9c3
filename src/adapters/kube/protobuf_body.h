// Kubernetes protobuf request bodies (`Content-Type: application/vnd.kubernetes.protobuf`), as
// kubectl 1.32's typed clients send them (`kubectl create namespace|quota|priorityclass|
// poddisruptionbudget|job`, `kubectl debug POD --copy-to=NAME`), decoded into the JSON object the
// JSON path receives. (`kubectl run` sends its Pod as JSON.)
//
// Wire format (k8s.io/apimachinery/pkg/runtime/serializer/protobuf): the 4 bytes "k8s\0", then a
// runtime.Unknown {1 typeMeta {1 apiVersion, 2 kind}, 2 raw, 3 contentEncoding, 4 contentType}
// whose raw bytes are the object's message (field numbers from the kinds' generated.proto).
// Decoded: ObjectMeta name, generateName, namespace, labels, annotations, finalizers; v1
// Namespace (spec.finalizers); v1 ResourceQuota (spec.hard, scopes, scopeSelector);
// scheduling.k8s.io/v1 PriorityClass (value, globalDefault, description, preemptionPolicy);
// policy/v1 PodDisruptionBudget (spec.minAvailable, maxUnavailable, selector,
// unhealthyPodEvictionPolicy); authorization.k8s.io/v1 SelfSubjectAccessReview (spec) and
// authentication.k8s.io/v1 SelfSubjectReview (`kubectl auth can-i|whoami`); policy/v1 Eviction
// (deleteOptions); batch/v1 Job (spec: every JobSpec field; template.spec: a PodSpec as below);
// v1 Pod (spec: a PodSpec as below; status skipped). A PodSpec: containers, initContainers,
// restartPolicy, terminationGracePeriodSeconds, activeDeadlineSeconds, dnsPolicy, nodeSelector,
// serviceAccountName, nodeName, schedulerName, tolerations, priorityClassName, priority,
// preemptionPolicy; containers: name, image, command, args, workingDir, ports (name, hostPort,
// containerPort, protocol, hostIP), env (name, value), resources (limits, requests),
// imagePullPolicy, securityContext (privileged), stdin, stdinOnce, tty. And DeleteOptions, the
// body of a DELETE (DecodeProtobufDeleteOptions). Unknown fields (status, managedFields, ...) are
// skipped; empty strings and false are left out, as the JSON encoding's omitempty leaves them out,
// except for Go pointer fields, which are members whenever sent (a Job's `completions: 0`) and
// fields without omitempty (a container port's containerPort). In a Job's JobSpec, a
// PodTemplateSpec, PodSpec, Container, ContainerPort, SecurityContext, EnvVar and
// ResourceRequirements, a field not decoded that holds a value (not 0, "", or an empty message; a
// pointer scalar such as automountServiceAccountToken: sent at all) refuses the body as
// kUnsupportedKind, naming the field's path and number, rather than being dropped. Pure: no I/O.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace arbiter::kube {

inline constexpr std::string_view kProtobufMediaType = "application/vnd.kubernetes.protobuf";

struct ProtobufBody {
  enum class Error { kNone, kMalformed, kUnsupportedKind };
  Error error = Error::kNone;
  std::string message;  // why, when error != kNone
  nlohmann::json object;
  bool ok() const { return error == Error::kNone; }
};

// "Namespace (v1), ResourceQuota (v1), PriorityClass (scheduling.k8s.io/v1),
// PodDisruptionBudget (policy/v1), ..., Job (batch/v1), Pod (v1)": the kinds DecodeProtobufBody
// understands, for messages.
std::string ProtobufKinds();

// Decodes a whole body (magic included). Never throws; any byte string gives a result.
ProtobufBody DecodeProtobufBody(std::string_view bytes);

// The body of a DELETE as kube-apiserver's delete handler decodes it: a DeleteOptions of any
// apiVersion (client-go sends its group's: "v1", "batch/v1", ...) or of no kind; an empty body is
// no options ({}). The object is the JSON form (members as JSON names, every field sent kept),
// for the JSON path's decoder. Another kind is kUnsupportedKind, in kube-apiserver's words.
ProtobufBody DecodeProtobufDeleteOptions(std::string_view bytes);

}  // namespace arbiter::kube
