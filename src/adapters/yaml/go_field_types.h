// The JSON type each field of a Pod (and of a Job's pod template) has in Kubernetes' Go types
// (k8s.io/api core/v1 types.go, metav1 ObjectMeta): one table, one row a struct field. A body
// whose field has another JSON type is refused as kube-apiserver's decoder refuses it
// (sigs.k8s.io/json, Go's encoding/json): "json: cannot unmarshal string into Go struct field
// Container.spec.containers.args of type []string"; the API answers it 400 BadRequest, "Pod in
// version \"v1\" cannot be handled as a Pod: <that>" (apiserver endpoints/handlers/rest.go
// transformDecodeError). A stored object of the wrong types would break every typed client that
// lists it. null is every type (Go leaves the zero value); fields not in the table are not
// judged here (the loader refuses those it does not know).
//
// The loader (manifest_loader.cc, fast_objects.cc) checks the rows it does not read itself (the
// fields it ignores, at any depth: image, args, env, ...); the fields it reads are typed there,
// with its own messages. The API checks every row before the loader (DecodeErrorMessage).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace YAML {
class Node;
}

namespace arbiter::yaml {

class FastReader;
struct FastNode;

enum class GoShape : uint8_t {
  kString,       // a JSON string (string, and Go's named string types: v1.Protocol, types.UID)
  kBool,         // true or false
  kInt32,        // a JSON number with an integer's text, in range
  kInt64,        //
  kQuantity,     // resource.Quantity: a string or a number (else kQuantityError)
  kTime,         // metav1.Time: a string
  kIntOrString,  // intstr.IntOrString: a string, or an int32
  kStruct,       // an object, its fields the rows of the struct `item_type` names
};
enum class GoWrap : uint8_t { kOne, kList, kMap };  // the value, []T, map[string]T

struct GoFieldRow {
  std::string_view owner;          // the Go struct the field is in ("Container")
  std::string_view field;          // its JSON name ("args")
  GoWrap wrap;                     //
  GoShape shape;                   // of the value, or of a list's items / a map's values
  std::string_view go_type;        // the field's Go type as Go prints it ("[]string")
  std::string_view item_type;      // an item's / a value's ("string"); a struct's ("v1.Container")
  bool loader_typed = false;       // the loader reads it and reports a wrong type itself
  std::string_view go_field = {};  // Go's name in its error when not `field` (an inline struct's
                                   // field: "VolumeSource.emptyDir")
};

// The table (go_field_types.cc); roots are the structs "Pod" and "Job".
const std::vector<GoFieldRow>& GoFieldTable();

// quantity.go ErrFormatWrong: a Quantity given a boolean, an object or a list.
extern const char kQuantityError[];

struct GoTypeProblem {
  std::string path;     // with indexes and keys: spec.containers[0].args
  std::string message;  // Go's: "json: cannot unmarshal string into Go struct field ..."
};

// Every row (or, `loader_only`, the rows not loader_typed) of an object of struct `root` ("Pod",
// "Job"); at most `max` problems, in the object's key order. Never throws.
std::vector<GoTypeProblem> CheckGoTypes(const nlohmann::json& object, std::string_view root,
                                        size_t max = 1, bool loader_only = false);
// The loader's checks of a Pod document (loader_only rows): `report` gets each problem's node.
void CheckPodGoTypes(
    const YAML::Node& doc,
    const std::function<void(const YAML::Node& at, const GoTypeProblem& problem)>& report);
// The same for the fast reader's tree: true when there is no problem.
bool PodGoTypesOk(const FastReader& reader, const FastNode& root);

// kube-apiserver's 400 message for a create's or update's body of `kind` (Pod, Job) in
// `version`, when a field has the wrong type: `Pod in version "v1" cannot be handled as a Pod:
// json: cannot unmarshal ...`; nullopt when every field has its type or the kind has no rows.
std::optional<std::string> DecodeErrorMessage(const nlohmann::json& object, std::string_view kind,
                                              std::string_view version);

}  // namespace arbiter::yaml
