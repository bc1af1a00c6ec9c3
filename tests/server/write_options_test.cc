// The query options of creates, updates, patches and applies through the HTTP API, in process,
// against kube-apiserver 1.36's answers (apimachinery's Validate{Create,Update,Patch}Options):
// a fieldManager past 128 bytes or with a character that is not printable, a dryRun other than
// All, an unknown fieldValidation, `force` on a patch that is not an apply, an apply without a
// fieldManager: 422 Invalid <Kind>Options.meta.k8s.io, checked before the body, nothing written.
// They were accepted (a fieldManager of any length), or 400 (dryRun, apply's fieldManager).
#include <gtest/gtest.h>

#include <string>

#include "served_api.h"

namespace arbiter::server {
namespace write_options_test {

using api_fixture::Check;

struct Served : api_fixture::ServedApi {
  explicit Served(const std::string& name)
      : ServedApi(api_fixture::FreshDir("write-options-test", name)) {}
};

std::string PodBody(const std::string& name) {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
         R"("},"spec":{"containers":[{"name":"c","image":"x"}]}})";
}

constexpr char kTooLong[] = "fieldManager: Too long: may not be more than 128 bytes";

TEST(WriteOptionsTest, AFieldManagerPast128BytesIsInvalidOnEveryWrite) {
  Served s("too-long");
  const std::string pods = "/api/v1/namespaces/default/pods";
  const std::string m128(128, 'm'), m129(129, 'm');
  Json c =
      Check(s.cli->Post(pods + "?fieldManager=" + m129, PodBody("p0"), "application/json"), 422);
  EXPECT_EQ(c["message"], std::string("CreateOptions.meta.k8s.io \"\" is invalid: ") + kTooLong);
  EXPECT_EQ(c["details"]["kind"], "CreateOptions");
  EXPECT_EQ(c["details"]["group"], "meta.k8s.io");
  EXPECT_EQ(c["details"]["causes"][0]["reason"], "FieldValueTooLong");
  EXPECT_EQ(c["details"]["causes"][0]["field"], "fieldManager");
  EXPECT_FALSE(s.Has("p0"));
  Check(s.cli->Post(pods + "?fieldManager=" + m128, PodBody("p0"), "application/json"), 201);
  Json u =
      Check(s.cli->Put(pods + "/p0?fieldManager=" + m129, PodBody("p0"), "application/json"), 422);
  EXPECT_EQ(u["message"], std::string("UpdateOptions.meta.k8s.io \"\" is invalid: ") + kTooLong);
  Json p = Check(
      s.cli->Patch(pods + "/p0?fieldManager=" + m129, "{}", "application/merge-patch+json"), 422);
  EXPECT_EQ(p["message"], std::string("PatchOptions.meta.k8s.io \"\" is invalid: ") + kTooLong);
  Json a = Check(s.cli->Patch(pods + "/p1?fieldManager=" + m129, PodBody("p1"),
                              "application/apply-patch+yaml"),
                 422);
  EXPECT_EQ(a["message"], std::string("PatchOptions.meta.k8s.io \"\" is invalid: ") + kTooLong);
  EXPECT_FALSE(s.Has("p1"));
  // The options are read before the body: a body that does not parse is not reached.
  Json first = Check(s.cli->Post(pods + "?fieldManager=" + m129, "{", "application/json"), 422);
  EXPECT_EQ(first["details"]["kind"], "CreateOptions");
}

TEST(WriteOptionsTest, TheOtherWriteOptionsAreCheckedAsKubeApiserverChecksThem) {
  Served s("others");
  const std::string pods = "/api/v1/namespaces/default/pods";
  Json ctl =
      Check(s.cli->Post(pods + "?fieldManager=a%01b%7Fc", PodBody("p0"), "application/json"), 422);
  EXPECT_EQ(ctl["message"],
            "CreateOptions.meta.k8s.io \"\" is invalid: [fieldManager: Invalid value: "
            "\"a\\x01b\\x7fc\": invalid character U+0001 (at position 1), fieldManager: Invalid "
            "value: \"a\\x01b\\x7fc\": invalid character U+007F (at position 3)]");
  Json uni = Check(
      s.cli->Post(pods + "?fieldManager=%C2%A0%E2%80%8B%C3%A9", PodBody("p0"), "application/json"),
      422);
  EXPECT_EQ(uni["message"],
            "CreateOptions.meta.k8s.io \"\" is invalid: [fieldManager: Invalid value: "
            "\"\\u00a0\\u200b\xC3\xA9\": invalid character U+00A0 (at position 0), fieldManager: "
            "Invalid value: \"\\u00a0\\u200b\xC3\xA9\": invalid character U+200B (at position "
            "2)]");
  Json all = Check(s.cli->Post(pods + "?fieldValidation=x&dryRun=x&dryRun=All&fieldManager=" +
                                   std::string(129, 'm'),
                               PodBody("p0"), "application/json"),
                   422);
  EXPECT_EQ(all["message"],
            "CreateOptions.meta.k8s.io \"\" is invalid: [fieldManager: Too long: may not be more "
            "than 128 bytes, dryRun: Unsupported value: [\"x\",\"All\"]: supported values: "
            "\"All\", fieldValidation: Unsupported value: \"x\": supported values: \"\", "
            "\"Ignore\", \"Strict\", \"Warn\"]");
  EXPECT_FALSE(s.Has("p0"));
  Check(s.cli->Post(pods, PodBody("p0"), "application/json"), 201);
  Json force =
      Check(s.cli->Patch(pods + "/p0?force=maybe", "{}", "application/merge-patch+json"), 422);
  EXPECT_EQ(force["message"],
            "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified "
            "for non-apply patch");
  Json apply =
      Check(s.cli->Patch(pods + "/p0", PodBody("p0"), "application/apply-patch+yaml"), 422);
  EXPECT_EQ(apply["message"],
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is "
            "required for apply patch");
  Check(s.cli->Patch(pods + "/p0?fieldManager=me&force=true", PodBody("p0"),
                     "application/apply-patch+yaml"),
        200);
}

// A body's Content-Type as Go's mime.ParseMediaType reads it (kube-apiserver's input
// negotiation): case-insensitive, and 415 when its parameters do not parse. `APPLICATION/JSON`
// was 415 and `application/json;;` was taken as JSON.
TEST(WriteOptionsTest, AContentTypeIsParsedAsGoParsesAMediaType) {
  Served s("media-type");
  const std::string pods = "/api/v1/namespaces/default/pods?dryRun=All";
  for (const char* ok :
       {"APPLICATION/JSON", "application/json; charset=utf-8", "application/json;"})
    Check(s.cli->Post(pods, PodBody("p0"), ok), 201);
  for (const char* bad :
       {"application/json;;", "application/json; foo", "application/json, text/plain"}) {
    Json r = Check(s.cli->Post(pods, PodBody("p0"), bad), 415);
    EXPECT_EQ(r["reason"], "UnsupportedMediaType") << bad;
  }
}

}  // namespace write_options_test
}  // namespace arbiter::server
