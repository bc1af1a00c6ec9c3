// request_options.h against kube-apiserver 1.36's answers (each text below was read from a live
// kube-apiserver): the query's integers as strconv.ParseInt reads them, a DeleteOptions body's
// type errors in encoding/json's words, an Eviction's, and fieldManager's printable check.
#include "adapters/kube/request_options.h"

#include <gtest/gtest.h>

namespace arbiter::kube {
namespace {

std::string Message(const std::optional<KubeStatus>& s) { return s ? s->Message() : "ok"; }

TEST(RequestOptions, QueryGracePeriodIsParsedAsStrconvParseInt) {
  auto grace = [](const std::string& v) {
    DeleteOptions o;
    auto bad = DecodeDeleteOptions({{"gracePeriodSeconds", v}}, "", false, &o);
    return bad ? bad->Message() : std::to_string(*o.grace_period_seconds);
  };
  EXPECT_EQ(grace("+5"), "5");
  EXPECT_EQ(grace("-5"), "-5");
  EXPECT_EQ(grace("007"), "7");
  EXPECT_EQ(grace("9223372036854775807"), "9223372036854775807");
  EXPECT_EQ(grace("-9223372036854775809"),
            "strconv.ParseInt: parsing \"-9223372036854775809\": value out of range");
  EXPECT_EQ(grace("+-5"), "strconv.ParseInt: parsing \"+-5\": invalid syntax");
  EXPECT_EQ(grace("--5"), "strconv.ParseInt: parsing \"--5\": invalid syntax");
  EXPECT_EQ(grace("+"), "strconv.ParseInt: parsing \"+\": invalid syntax");
  EXPECT_EQ(grace(" 5"), "strconv.ParseInt: parsing \" 5\": invalid syntax");
  EXPECT_EQ(grace("0x10"), "strconv.ParseInt: parsing \"0x10\": invalid syntax");
}

TEST(RequestOptions, AnEvictionsDeleteOptionsAreItsBodys) {
  DeleteOptions o;
  EXPECT_EQ(
      Message(DecodeDeleteOptions({{"gracePeriodSeconds", "abc"}},
                                  R"({"deleteOptions":{"gracePeriodSeconds":1.5}})", true, &o)),
      "Eviction in version \"v1\" cannot be handled as a Eviction: json: cannot unmarshal "
      "number 1.5 into Go struct field DeleteOptions.deleteOptions.gracePeriodSeconds of "
      "type int64");
  EXPECT_EQ(Message(DecodeDeleteOptions({{"gracePeriodSeconds", "abc"}}, "", true, &o)), "ok");
  EXPECT_FALSE(o.grace_period_seconds);
  EXPECT_EQ(Message(DecodeDeleteOptions(
                {}, R"({"deleteOptions":{"gracePeriodSeconds":7,"dryRun":["All"]}})", true, &o)),
            "ok");
  EXPECT_EQ(*o.grace_period_seconds, 7);
  EXPECT_TRUE(o.DryRun());
}

TEST(RequestOptions, TheNumberInAnErrorIsItsText) {
  DeleteOptions o;
  EXPECT_EQ(Message(DecodeDeleteOptions(
                {}, R"({"x":[1.25],"gracePeriodSeconds":-1E+02,"y":{"gracePeriodSeconds":2.5}})",
                false, &o)),
            "json: cannot unmarshal number -1E+02 into Go struct field "
            "DeleteOptions.gracePeriodSeconds of type int64");
  EXPECT_EQ(
      Message(DecodeDeleteOptions({}, R"({"gracePeriodSeconds":null,"dryRun":null})", false, &o)),
      "ok");
  EXPECT_FALSE(o.grace_period_seconds);
}

TEST(RequestOptions, AFieldManagerIsPrintableAndAtMost128Bytes) {
  EXPECT_TRUE(FieldManagerCauses(std::string(128, 'm')).empty());
  EXPECT_TRUE(FieldManagerCauses("kubectl-client-side-apply é ü 日本").empty());
  const auto causes = FieldManagerCauses(std::string(129, 'm') + "\t");
  ASSERT_EQ(causes.size(), 2u);
  EXPECT_EQ(causes[0].reason, "FieldValueTooLong");
  EXPECT_NE(causes[1].message.find(": invalid character U+0009 (at position 129)"),
            std::string::npos)
      << causes[1].message;
  ASSERT_EQ(FieldManagerCauses("a\xC2\x85").size(), 1u);  // U+0085, a C1 control
  EXPECT_EQ(FieldManagerCauses("a\xC2\x85")[0].message,
            "Invalid value: \"a\\u0085\": invalid character U+0085 (at position 1)");
}

TEST(RequestOptions, WriteOptionsSetDryRun) {
  bool dry = false;
  EXPECT_EQ(Message(CheckWriteOptions({{"dryRun", "All"}, {"fieldManager", "kubectl"}},
                                      OptionsKind::kApply, &dry)),
            "ok");
  EXPECT_TRUE(dry);
  EXPECT_EQ(Message(CheckWriteOptions({{"force", "false"}}, OptionsKind::kApply, &dry)),
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required "
            "for apply patch");
  EXPECT_FALSE(dry);
}

TEST(RequestOptions, AMediaTypeIsReadAsGosMimeParseMediaType) {
  auto media = [](std::string_view ct) { return MediaTypeOf(ct).value_or("refused"); };
  EXPECT_EQ(media(""), "");
  EXPECT_EQ(media("APPLICATION/JSON"), "application/json");
  EXPECT_EQ(media(" application/json ; charset=utf-8"), "application/json");
  EXPECT_EQ(media("application/json; charset=\"utf-8\"; a=b"), "application/json");
  EXPECT_EQ(media("application/json;"), "application/json");
  EXPECT_EQ(media("application/json;;"), "refused");
  EXPECT_EQ(media("application/json; foo"), "refused");
  EXPECT_EQ(media("application/json, text/plain"), "refused");
  EXPECT_EQ(media("application/"), "refused");
  EXPECT_EQ(media("; charset=utf-8"), "refused");
}

}  // namespace
}  // namespace arbiter::kube
