// SelectorReads: matching a list's selectors on the part of an object they read gives what
// matching them on the whole object gives.
#include "adapters/kube/selector_reads.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "adapters/kube/resources.h"

namespace arbiter::kube {
namespace selector_reads_test {

using nlohmann::json;

json RandomObject(std::mt19937& rng) {
  const auto pick = [&](std::initializer_list<json> options) {
    return *(options.begin() + rng() % options.size());
  };
  json o = {{"apiVersion", "v1"}, {"kind", "Pod"}};
  o["metadata"] = {{"name", pick({"p-1", "p-2"})}, {"namespace", pick({"a", "b"})}};
  if (rng() % 3) o["metadata"]["labels"] = {{"team", pick({"a", "b", "c"})}, {"tier", "3"}};
  if (rng() % 5 == 0) o["metadata"]["labels"] = pick({nullptr, "x", json::array()});
  if (rng() % 2) o["spec"] = {{"nodeName", pick({"n-1", "n-2", 7})}, {"containers", json::array()}};
  if (rng() % 6 == 0) o["spec"] = json::array({{{"nodeName", "n-1"}}});
  if (rng() % 2) o["status"] = {{"phase", pick({"Running", "Pending", true})}};
  if (rng() % 3 == 0) o["source"] = {{"component", pick({"arbiter", "kubelet"})}, {"host", "h"}};
  if (rng() % 3 == 0) o["involvedObject"] = {{"kind", "Pod"}, {"name", "p-1"}};
  return o;
}

TEST(SelectorReads, MatchingWhatTheSelectorsReadIsMatchingTheObject) {
  const ResourceInfo& pods = *FindResourceByKind("v1", "Pod");
  const ResourceInfo& events = *FindResourceByKind("v1", "Event");
  const char* label_texts[] = {"", "team=a", "team!=a", "team in (a,b)", "!team", "tier>2,team"};
  const std::pair<const ResourceInfo*, const char*> field_texts[] = {
      {&pods, ""},
      {&pods, "metadata.name=p-1"},
      {&pods, "spec.nodeName=n-1,status.phase!=Pending"},
      {&pods, "metadata.namespace=a,spec.nodeName="},
      {&pods, "status.podIPs=x,metadata.name!=p-2"},
      {&events, "source=arbiter,involvedObject.kind=Pod"},
      {&events, "involvedObject.name=p-1,metadata.name=p-2"}};
  std::mt19937 rng(27);
  std::vector<json> objects;
  for (int i = 0; i < 400; ++i) objects.push_back(RandomObject(rng));
  size_t matched = 0, checked = 0;
  for (const char* lt : label_texts)
    for (const auto& [r, ft] : field_texts) {
      const LabelSelector labels = ParseLabelSelector(lt).value();
      const FieldSelector fields = ParseFieldSelector(ft, *r).value();
      const json_sparse::Keep keep = SelectorReads(labels, fields);
      for (const json& o : objects) {
        const bool want = labels.MatchesObject(o) && fields.Matches(o);
        json part;
        ASSERT_TRUE(json_sparse::Parse(o.dump(), keep, part));
        EXPECT_EQ(part, json_sparse::Prune(o, keep));
        ASSERT_EQ(labels.MatchesObject(part) && fields.Matches(part), want)
            << lt << " | " << ft << " | " << o.dump();
        matched += want;
        ++checked;
      }
    }
  EXPECT_GT(matched, checked / 20) << "the selectors match some objects";
  EXPECT_LT(matched, checked) << "and not all";
}

TEST(SelectorReads, KeepsEachPathOnceAndAWholeMemberCoversItsPaths) {
  const ResourceInfo& pods = *FindResourceByKind("v1", "Pod");
  const json o = json::parse(
      R"({"metadata":{"name":"p","labels":{"a":"1"},"annotations":{"x":"y"}},"spec":{"nodeName":"n","containers":[1]}})");
  json part;
  ASSERT_TRUE(json_sparse::Parse(
      o.dump(),
      SelectorReads(
          ParseLabelSelector("a").value(),
          ParseFieldSelector("metadata.name=p,spec.nodeName=n,metadata.name!=q", pods).value()),
      part));
  EXPECT_EQ(part,
            json::parse(R"({"metadata":{"name":"p","labels":{"a":"1"}},"spec":{"nodeName":"n"}})"));
  ASSERT_TRUE(json_sparse::Parse(o.dump(), SelectorReads({}, {}), part));
  EXPECT_EQ(part, json::object());
}

}  // namespace selector_reads_test
}  // namespace arbiter::kube
