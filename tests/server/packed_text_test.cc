// Packed text (packed_text.h): whatever the text, it unpacks to the same bytes.
#include "server/state/packed_text.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace arbiter::server {
namespace {

TEST(PackedText, UnpacksToTheSameBytes) {
  std::mt19937 rng(27);
  std::vector<std::string> texts = {
      "{}",
      "null",
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p-1","namespace":"default"}})",
      std::string(100000, 'x'),                     // larger than the window
      std::string("a\0b\xff\xfe caf\xc3\xa9", 12),  // any bytes
  };
  std::string noise;
  for (int i = 0; i < 20000; ++i) noise += static_cast<char>(rng() % 256);
  texts.push_back(noise);  // does not compress: packed is larger
  // Pieces of Pods and runs, shuffled: matches in the dictionary, in the text, overlapping ones,
  // and (past 64 KiB) a dictionary out of reach.
  const std::vector<std::string> pieces = {R"({"apiVersion":"v1","kind":"Pod","metadata":{)",
                                           R"("creationTimestamp":"2026-12-04T21:43:27Z")",
                                           R"("lastProbeTime":null,"lastTransitionTime":")",
                                           "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                                           "0/1 nodes are available: 1 Insufficient cpu.",
                                           "\u00e9\n",
                                           "x",
                                           "}",
                                           "ab"};
  for (int round = 0; round < 200; ++round) {
    std::string text;
    const size_t n = rng() % (round < 190 ? 60 : 4000);
    for (size_t i = 0; i < n; ++i) text += pieces[rng() % pieces.size()];
    texts.push_back(text);
  }
  for (const std::string& text : texts) {
    const std::string packed = PackText(text);
    EXPECT_EQ(packed.empty(), text.empty());
    std::string out = "prefix";
    UnpackText(packed, out);
    EXPECT_EQ(out, "prefix" + text) << text.substr(0, 40);
    EXPECT_EQ(UnpackedSize(packed), text.size()) << text.substr(0, 40);
  }
}

// A running Pod as `arbiter serve` writes it: packed to a small part of its text.
TEST(PackedText, APodPacksSmall) {
  const std::string pod =
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"creationTimestamp":"2026-12-04T21:43:27Z","generation":1,"name":"p-123456","namespace":"default","resourceVersion":"6","uid":"c4003355-0000-4000-8000-000000000004"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"10m"}}}],"nodeName":"node-0","preemptionPolicy":"PreemptLowerPriority","priority":0},"status":{"conditions":[{"lastProbeTime":null,"lastTransitionTime":"2026-12-04T21:43:27Z","status":"True","type":"PodScheduled"},{"lastProbeTime":null,"lastTransitionTime":"2026-12-04T21:43:27Z","status":"True","type":"Ready"}],"containerStatuses":[{"image":"","imageID":"","name":"c","ready":true,"restartCount":0,"started":true,"state":{"running":{"startedAt":"2026-12-04T21:43:27Z"}}}],"phase":"Running","qosClass":"Burstable","startTime":"2026-12-04T21:43:27Z"}})";
  const std::string packed = PackText(pod);
  EXPECT_LT(packed.size(), pod.size() / 4);
  std::string out;
  UnpackText(packed, out);
  EXPECT_EQ(out, pod);
}

TEST(PackedTextDeathTest, BytesItDidNotMakeAbort) {
  EXPECT_DEATH(
      {
        std::string out;
        UnpackText(PackText("{\"a\":1}").substr(0, 2), out);
      },
      "does not unpack");
  // A token cut short: its length is not known either.
  const std::string packed = PackText(std::string(300, 'y') + "{\"apiVersion\":\"v1\"}");
  EXPECT_DEATH((void)UnpackedSize(packed.substr(0, packed.size() - 1)), "does not unpack");
  EXPECT_DEATH(
      {
        std::string out;
        UnpackText(packed.substr(0, packed.size() - 1), out);
      },
      "does not unpack");
}

}  // namespace
}  // namespace arbiter::server
