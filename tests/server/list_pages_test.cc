#include "server/http/list_pages.h"

#include <gtest/gtest.h>

namespace arbiter::server {
namespace list_pages_test {

StoredRef Obj(const std::string& ns, const std::string& name, bool gpu) {
  Json m = {{"name", name}};
  if (!ns.empty()) m["namespace"] = ns;
  if (gpu) m["labels"] = {{"gpu", "yes"}};
  return StoredRef(std::make_shared<const StoredObject>(Json{{"metadata", m}}));
}

// a/p0..p4, b/p0..p4 (every third one labelled gpu), in key order.
ListRange Range() {
  ListRange r;
  int i = 0;
  for (const std::string ns : {"a", "b"})
    for (int k = 0; k < 5; ++k, ++i) r.push_back(Obj(ns, "p" + std::to_string(k), i % 3 == 0));
  return r;
}

std::vector<std::string> Names(const ListPage& p) {
  std::vector<std::string> out;
  for (const StoredObject* o : p.items)
    out.push_back(o->json().at("metadata").value("namespace", "") + "/" +
                  o->json().at("metadata").value("name", ""));
  return out;
}

bool Gpu(const StoredObject& o) { return o.tree()->at("metadata").contains("labels"); }

TEST(ListPagesTest, LimitZeroIsTheWholeListWithoutContinue) {
  const ListRange r = Range();
  ListPage p = PageOf(r, 0, 0, nullptr, true);
  EXPECT_EQ(p.items.size(), 10u);
  EXPECT_FALSE(p.continue_key);
  EXPECT_FALSE(p.remaining);
}

TEST(ListPagesTest, LimitLargerThanTheListOrEqualToItHasNoContinue) {
  const ListRange r = Range();
  for (size_t limit : {10u, 11u, 500u}) {
    ListPage p = PageOf(r, 0, limit, nullptr, true);
    EXPECT_EQ(p.items.size(), 10u);
    EXPECT_FALSE(p.continue_key) << limit;
  }
}

TEST(ListPagesTest, PagesFollowKeyOrderAndGiveEveryObjectOnce) {
  const ListRange r = Range();
  std::vector<std::string> all;
  size_t begin = 0;
  int pages = 0;
  while (true) {
    ListPage p = PageOf(r, begin, 3, nullptr, true);
    ++pages;
    for (auto& n : Names(p)) all.push_back(n);
    if (!p.continue_key) break;
    EXPECT_EQ(*p.remaining, static_cast<int64_t>(10 - all.size()));
    begin = StartIndex(r, *p.continue_key, true);
  }
  EXPECT_EQ(pages, 4);
  EXPECT_EQ(all, (std::vector<std::string>{"a/p0", "a/p1", "a/p2", "a/p3", "a/p4", "b/p0", "b/p1",
                                           "b/p2", "b/p3", "b/p4"}));
  // The first page's token names the last key returned, NUL-terminated.
  EXPECT_EQ(*PageOf(r, 0, 3, nullptr, true).continue_key, std::string("a/p2\0", 5));
  EXPECT_EQ(*PageOf(r, 0, 3, nullptr, false).continue_key, std::string("p2\0", 3));
}

TEST(ListPagesTest, SelectorIsAppliedBeforeTheLimitAndMayLeaveAnEmptyLastPage) {
  const ListRange r = Range();  // gpu: a/p0, a/p3, b/p1, b/p4
  ListPage first = PageOf(r, 0, 2, Gpu, true);
  EXPECT_EQ(Names(first), (std::vector<std::string>{"a/p0", "a/p3"}));
  ASSERT_TRUE(first.continue_key);
  EXPECT_FALSE(first.remaining);  // unknown with a selector, as kube-apiserver
  ListPage second = PageOf(r, StartIndex(r, *first.continue_key, true), 2, Gpu, true);
  EXPECT_EQ(Names(second), (std::vector<std::string>{"b/p1", "b/p4"}));
  EXPECT_FALSE(second.continue_key);  // b/p4 is the last key
  // A page that fills before the last key continues even when nothing after it matches.
  ListRange r2 = Range();
  r2.pop_back();  // gpu now: a/p0, a/p3, b/p1; last key b/p3 does not match
  ListPage a = PageOf(r2, 0, 3, Gpu, true);
  EXPECT_EQ(a.items.size(), 3u);
  ASSERT_TRUE(a.continue_key);
  ListPage b = PageOf(r2, StartIndex(r2, *a.continue_key, true), 3, Gpu, true);
  EXPECT_TRUE(b.items.empty());
  EXPECT_FALSE(b.continue_key);
}

TEST(ListPagesTest, StartIndexIsAfterTheKeyEvenWhenItIsGone) {
  const ListRange r = Range();
  EXPECT_EQ(StartIndex(r, std::string("a/p1\0", 5), true), 2u);
  EXPECT_EQ(StartIndex(r, std::string("a/p10\0", 6), true), 2u);  // between p1 and p2
  EXPECT_EQ(StartIndex(r, std::string("a/p4\0", 5), true), 5u);
  EXPECT_EQ(StartIndex(r, std::string("z/x\0", 4), true), 10u);
  ListRange one_ns(r.begin(), r.begin() + 5);
  EXPECT_EQ(StartIndex(one_ns, std::string("p2\0", 3), false), 3u);
}

TEST(ListPagesTest, SnapshotsAreKeptByKindNamespaceAndVersionForTheirTtl) {
  ListSnapshots s({/*max_ranges=*/2, /*ttl_ms=*/1000, /*max_objects=*/100});
  auto r = std::make_shared<const ListRange>(Range());
  s.Put("Pod", "", 7, r, 0);
  EXPECT_EQ(s.Find("Pod", "", 7, 500), r);
  EXPECT_EQ(s.Find("Pod", "a", 7, 500), nullptr);
  EXPECT_EQ(s.Find("Pod", "", 8, 500), nullptr);
  EXPECT_EQ(s.Find("Pod", "", 7, 1001), nullptr);  // expired
  EXPECT_EQ(s.size(), 0u);
}

TEST(ListPagesTest, SnapshotsEvictTheOldestBeyondTheirCaps) {
  ListSnapshots s({/*max_ranges=*/2, /*ttl_ms=*/100000, /*max_objects=*/25});
  auto r = std::make_shared<const ListRange>(Range());  // 10 objects
  s.Put("Pod", "", 1, r, 0);
  s.Put("Pod", "", 2, r, 1);
  s.Put("Pod", "", 3, r, 2);  // over max_ranges: 1 goes
  EXPECT_EQ(s.Find("Pod", "", 1, 3), nullptr);
  EXPECT_NE(s.Find("Pod", "", 2, 3), nullptr);
  EXPECT_NE(s.Find("Pod", "", 3, 3), nullptr);
  ListSnapshots small({8, 100000, 25});
  small.Put("Pod", "", 1, r, 0);
  small.Put("Pod", "", 2, r, 1);
  small.Put("Pod", "", 3, r, 2);  // 30 objects > 25: 1 goes
  EXPECT_EQ(small.size(), 2u);
  EXPECT_EQ(small.Find("Pod", "", 1, 3), nullptr);
}

// Per-node lists (spec.nodeName=NODE: many kubelets and node agents paging their pods) are kept
// apart from whole lists: however many of them come after an all-namespaces list, its range stays
// for its continues, and a whole list pushes out no node's range either.
TEST(ListPagesTest, PerNodeListsNeverEvictAWholeListsRange) {
  ListSnapshots s({/*max_ranges=*/2, /*ttl_ms=*/100000, /*max_objects=*/100,
                   /*max_node_ranges=*/4, /*max_node_objects=*/100});
  auto all = std::make_shared<const ListRange>(Range());
  s.Put("Pod", "", 1, all, 0);
  const auto one = std::make_shared<const ListRange>(ListRange{Obj("a", "p0", false)});
  std::vector<std::string> nodes;
  for (int i = 0; i < 50; ++i) nodes.push_back("node-" + std::to_string(i));
  for (int i = 0; i < 50; ++i) s.Put("Pod", "", 2 + i, one, 1 + i, &nodes[i]);
  EXPECT_EQ(s.Find("Pod", "", 1, 100), all);
  EXPECT_EQ(s.Find("Pod", "", 1, 100, &nodes[0]), nullptr);  // a node's range is not the whole's
  // The node pool keeps its newest 4, under their node's name only.
  EXPECT_EQ(s.Find("Pod", "", 2 + 45, 100, &nodes[45]), nullptr);
  EXPECT_EQ(s.Find("Pod", "", 2 + 49, 100, &nodes[49]), one);
  EXPECT_EQ(s.Find("Pod", "", 2 + 49, 100, &nodes[48]), nullptr);
  EXPECT_EQ(s.Find("Pod", "", 2 + 49, 100), nullptr);
  EXPECT_EQ(s.size(), 1u + 4u);
  // Whole lists evict among themselves only.
  s.Put("Pod", "", 60, all, 60);
  s.Put("Pod", "", 61, all, 61);
  EXPECT_EQ(s.Find("Pod", "", 1, 100), nullptr);
  EXPECT_EQ(s.Find("Pod", "", 2 + 46, 100, &nodes[46]), one);
  EXPECT_EQ(s.size(), 2u + 4u);
}

// A range goes after its TTL whichever pool the lists that come later use: a large whole list's
// range is not held by kubelets paging their pods, nor node ranges by whole lists.
TEST(ListPagesTest, RangesOfBothPoolsExpireWhateverListsCome) {
  ListSnapshots s({/*max_ranges=*/2, /*ttl_ms=*/1000, /*max_objects=*/100,
                   /*max_node_ranges=*/4, /*max_node_objects=*/100});
  auto all = std::make_shared<const ListRange>(Range());
  const std::string node = "node-1";
  s.Put("Pod", "", 1, all, 0);
  s.Put("Pod", "", 2, all, 0, &node);
  s.Put("Pod", "", 3, all, 2000, &node);  // a node list, after the whole list's TTL
  EXPECT_EQ(s.size(), 1u);
  s.Put("Pod", "", 4, all, 4000);  // a whole list, after the node list's TTL
  EXPECT_EQ(s.size(), 1u);
  EXPECT_EQ(s.Find("Pod", "", 4, 4000), all);
}

}  // namespace list_pages_test
}  // namespace arbiter::server
