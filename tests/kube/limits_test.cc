#include "adapters/kube/limits.h"

#include <gtest/gtest.h>

#include "adapters/kube/selectors.h"

namespace arbiter::kube {
namespace limits_test {

using nlohmann::json;

TEST(LimitsTest, Utf8) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));  // été € 😀
  EXPECT_FALSE(IsValidUtf8("\xFF"));
  EXPECT_FALSE(IsValidUtf8("\x80"));                        // a continuation byte first
  EXPECT_FALSE(IsValidUtf8("\xC3"));                        // truncated
  EXPECT_FALSE(IsValidUtf8("\xC3\x28"));                    // not a continuation
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));                    // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xE0\x80\xAF"));                // overlong, 3 bytes
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));                // a surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));            // past U+10FFFF
  EXPECT_FALSE(IsValidUtf8(std::string("ok\xE2\x82", 4)));  // truncated at the end
}

TEST(LimitsTest, NestingOnTextAndValues) {
  EXPECT_FALSE(JsonTextNestsDeeperThan("{\"a\":[1,{\"b\":2}]}", 3));
  EXPECT_TRUE(JsonTextNestsDeeperThan("{\"a\":[1,{\"b\":[]}]}", 3));
  // Brackets in strings, escaped quotes included, do not count.
  EXPECT_FALSE(JsonTextNestsDeeperThan("{\"a\":\"[[[[\\\"[[[[\"}", 1));
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_TRUE(JsonTextNestsDeeperThan(deep, kMaxNesting));
  EXPECT_FALSE(JsonTextNestsDeeperThan(std::string(64, '[') + std::string(64, ']'), kMaxNesting));
  json v = json::parse(std::string(65, '[') + std::string(65, ']'));
  EXPECT_TRUE(NestsDeeperThan(v, kMaxNesting));
  EXPECT_FALSE(NestsDeeperThan(v, 65));
}

TEST(LimitsTest, QualifiedNamesAsApimachinery) {
  EXPECT_TRUE(QualifiedNameErrors("app").empty());
  EXPECT_TRUE(QualifiedNameErrors("example.com/My_name-1.x").empty());
  EXPECT_EQ(QualifiedNameErrors(std::string(64, 'a')),
            std::vector<std::string>{"name part must be no more than 63 characters"});
  EXPECT_EQ(QualifiedNameErrors("/a"), std::vector<std::string>{"prefix part must be non-empty"});
  ASSERT_EQ(QualifiedNameErrors("a/b/c").size(), 1u);
  EXPECT_EQ(QualifiedNameErrors("a/b/c")[0].rfind("a qualified name must consist of", 0), 0u);
  ASSERT_EQ(QualifiedNameErrors("Example.com/x").size(), 1u);
  EXPECT_EQ(QualifiedNameErrors("Example.com/x")[0].rfind("prefix part a lowercase RFC 1123", 0),
            0u);
  EXPECT_EQ(QualifiedNameErrors("x/").size(), 2u);  // empty, and not matching the pattern
  EXPECT_TRUE(LabelValueErrors("").empty());
  EXPECT_EQ(LabelValueErrors("-x").size(), 1u);
}

TEST(LimitsTest, LabelsAndAnnotations) {
  EXPECT_TRUE(
      ValidateLabelsAndAnnotations(
          json::parse(
              R"({"metadata":{"labels":{"a":"b"},"annotations":{"Some.Key/X":"free text"}}})"))
          .empty());
  // Not objects of strings: the loader's business.
  EXPECT_TRUE(
      ValidateLabelsAndAnnotations(json::parse(R"({"metadata":{"labels":{"a":1}}})")).empty());
  auto causes = ValidateLabelsAndAnnotations(
      json{{"metadata",
            {{"labels", {{"ok", std::string(64, 'v')}}},
             {"annotations", {{"a", std::string(kMaxAnnotationBytes, 'x')}}}}}});
  ASSERT_EQ(causes.size(), 2u);
  EXPECT_EQ(causes[0].field, "metadata.labels");
  EXPECT_EQ(causes[0].message,
            "Invalid value: \"" + std::string(64, 'v') + "\": must be no more than 63 characters");
  EXPECT_EQ(causes[1].field, "metadata.annotations");
  EXPECT_EQ(causes[1].reason, "FieldValueTooLong");
  EXPECT_EQ(causes[1].message, "Too long: must have at most 262144 bytes");
  // Exactly the limit (keys and values together) passes.
  EXPECT_TRUE(
      ValidateLabelsAndAnnotations(
          json{{"metadata", {{"annotations", {{"a", std::string(kMaxAnnotationBytes - 1, 'x')}}}}}})
          .empty());
}

// Found by a review: a Job's template annotations were not checked, so a Job made pods with
// annotations a pod's create is refused (422) for. kube validates the template's ObjectMeta.
TEST(LimitsTest, APodTemplatesLabelsAndAnnotationsAreCheckedToo) {
  auto causes = ValidateLabelsAndAnnotations(
      json{{"metadata", {{"name", "j"}}},
           {"spec",
            {{"template",
              {{"metadata",
                {{"labels", {{"app", "-bad"}}},
                 {"annotations",
                  {{"in valid!", "x"}, {"big", std::string(kMaxAnnotationBytes, 'x')}}}}}}}}}});
  ASSERT_EQ(causes.size(), 3u);
  EXPECT_EQ(causes[0].field, "spec.template.metadata.labels");
  EXPECT_EQ(causes[1].field, "spec.template.metadata.annotations");
  EXPECT_NE(causes[1].message.find("Invalid value: \"in valid!\""), std::string::npos)
      << causes[1].message;
  EXPECT_EQ(causes[2].field, "spec.template.metadata.annotations");
  EXPECT_EQ(causes[2].reason, "FieldValueTooLong");
  EXPECT_TRUE(ValidateLabelsAndAnnotations(
                  json{{"spec", {{"template", {{"metadata", {{"annotations", {{"a/b", "x"}}}}}}}}}})
                  .empty());
}

TEST(LimitsTest, StatusBodies) {
  EXPECT_EQ(BodyTooLarge().code, 413);
  EXPECT_EQ(BodyTooLarge().Reason(), "RequestEntityTooLarge");
  EXPECT_EQ(BodyTooLarge().Message(), "Request entity too large: limit is 3145728");
  EXPECT_EQ(BodyTooDeep().code, 400);
  // Invalid UTF-8 in a message is written as U+FFFD, never thrown.
  EXPECT_EQ(WireJson(json("a\xFF")), "\"a\xEF\xBF\xBD\"");
  EXPECT_NE(NotFound({"", "pods"}, "\xFF").Message().find("pods"), std::string::npos);
}

}  // namespace limits_test
}  // namespace arbiter::kube
