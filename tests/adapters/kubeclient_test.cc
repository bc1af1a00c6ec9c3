// The Kubernetes API client's parsing (src/adapters/kubeclient): kubeconfig files, the watch
// stream's framing, list answers, and bounded input.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "adapters/kube/kubeconfig.h"
#include "adapters/kubeclient/kubeconfig_reader.h"
#include "adapters/kubeclient/watch_decoder.h"

namespace arbiter::kubeclient {
namespace kubeclient_test {

// Files a kubeconfig may name, by path.
FileReader Files(std::map<std::string, std::string> files) {
  return [files](const std::string& path) -> Result<std::string> {
    auto it = files.find(path);
    if (it == files.end()) return Status::InvalidArgument("no such file " + path);
    return it->second;
  };
}

const char* kInline = R"(apiVersion: v1
kind: Config
clusters:
- name: other
  cluster: {server: "https://10.0.0.1:6443"}
- name: test
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority-data: Q0EgUEVN
users:
- name: admin
  user:
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
contexts:
- name: ctx
  context: {cluster: test, user: admin, namespace: team-a}
current-context: ctx
)";

TEST(Kubeconfig, InlineCertificatesOfTheCurrentContext) {
  auto c = ParseKubeconfig(kInline, "/etc", "", Files({}));
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->server, "https://127.0.0.1:6443");  // trailing slash dropped
  EXPECT_EQ(c->ca_pem, "CA PEM");
  EXPECT_EQ(c->client_cert_pem, "CERT");
  EXPECT_EQ(c->client_key_pem, "KEY");
  EXPECT_EQ(c->namespace_, "team-a");
  EXPECT_EQ(c->context, "ctx");
  EXPECT_TRUE(c->token.empty());
}

TEST(Kubeconfig, FilesRelativeToTheKubeconfigAndTokenFile) {
  const char* text = R"(apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://h:443", certificate-authority: pki/ca.crt}
users:
- name: u
  user: {tokenFile: /var/token}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
)";
  auto c = ParseKubeconfig(text, "/home/me/.kube", "",
                           Files({{"/home/me/.kube/pki/ca.crt", "CA"}, {"/var/token", "tok\n"}}));
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->ca_pem, "CA");
  EXPECT_EQ(c->token, "tok");
}

TEST(Kubeconfig, ReadsWhatArbiterKubeconfigWrites) {
  kube::KubeconfigOptions o;
  o.server = "https://127.0.0.1:6443";
  o.user = "alice";
  o.token = "s3cret";
  o.ca_pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  auto text = kube::KubeconfigYaml(o);
  ASSERT_TRUE(text.ok());
  auto c = ParseKubeconfig(*text, "", "", Files({}));
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->token, "s3cret");
  EXPECT_EQ(c->ca_pem, o.ca_pem);
  EXPECT_EQ(c->server, o.server);
}

TEST(Kubeconfig, ClearErrors) {
  auto err = [](const std::string& text, const std::string& context = "") {
    return ParseKubeconfig(text, "", context, Files({})).message();
  };
  EXPECT_EQ(err("[1, 2"), err("[1, 2"));  // deterministic
  EXPECT_NE(err("[1, 2").find("not a kubeconfig"), std::string::npos);
  EXPECT_NE(err("a: b").find("no current-context"), std::string::npos);
  EXPECT_NE(err(kInline, "nope").find("context \"nope\" is not in contexts"), std::string::npos);
  std::string bad_server = kInline;
  bad_server.replace(bad_server.find("https://127.0.0.1:6443/"), 23, "127.0.0.1:6443");
  EXPECT_NE(err(bad_server).find("server must be an https:// or http:// URL"), std::string::npos);
  std::string bad_b64 = kInline;
  bad_b64.replace(bad_b64.find("Q0VSVA=="), 8, "Q0V!SVA=");
  EXPECT_NE(err(bad_b64).find("client-certificate-data: not base64"), std::string::npos);
  std::string exec = kInline;
  const std::string cert_line = "client-certificate-data: Q0VSVA==";
  exec.replace(exec.find(cert_line), cert_line.size(), "exec: {command: aws}");
  EXPECT_NE(err(exec).find("exec and auth-provider credential plugins are not supported"),
            std::string::npos);
  std::string missing = kInline;
  const std::string ca_line = "certificate-authority-data: Q0EgUEVN";
  missing.replace(missing.find(ca_line), ca_line.size(), "certificate-authority: /no/ca");
  EXPECT_NE(err(missing).find("no such file /no/ca"), std::string::npos);
  EXPECT_NE(ParseKubeconfig(std::string(kMaxKubeconfigBytes + 1, ' '), "", "", Files({}))
                .message()
                .find("larger than"),
            std::string::npos);
}

TEST(Kubeconfig, Base64) {
  EXPECT_EQ(*Base64Decode("aGVsbG8="), "hello");
  EXPECT_EQ(*Base64Decode("aGVs\nbG8h"), "hello!");
  EXPECT_FALSE(Base64Decode("aGVsbG8=x").ok());
  EXPECT_FALSE(Base64Decode("a").ok());
  for (const std::string& s :
       std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)})
    EXPECT_EQ(*Base64Decode(kube::Base64(s)), s);
}

const char* kTwoEvents =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\","
    "\"resourceVersion\":\"10\"}}}\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":"
    "\"12\"}}}\n";

TEST(WatchStream, EventsSplitAtAnyByteAreReassembled) {
  const std::string stream = kTwoEvents;
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    WatchDecoder d;
    d.Feed(stream.substr(0, cut));
    d.Feed(stream.substr(cut));
    auto a = d.Next();
    auto b = d.Next();
    ASSERT_TRUE(a && b) << "cut at " << cut;
    EXPECT_EQ(a->type, WatchEvent::Type::kAdded);
    EXPECT_EQ(a->object["metadata"]["name"], "a");
    EXPECT_EQ(a->resource_version, "10");
    EXPECT_EQ(b->type, WatchEvent::Type::kBookmark);
    EXPECT_EQ(b->resource_version, "12");
    EXPECT_FALSE(d.Next());
    EXPECT_TRUE(d.status().ok());
  }
  WatchDecoder bytewise;  // one byte at a time
  for (char c : stream) bytewise.Feed(std::string_view(&c, 1));
  EXPECT_TRUE(bytewise.Next() && bytewise.Next());
}

TEST(WatchStream, GoneErrorCarriesItsCode) {
  WatchDecoder d;
  d.Feed(
      "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":"
      "\"too old resource version: 5 (90)\",\"reason\":\"Expired\",\"code\":410}}\r\n");
  auto e = d.Next();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->type, WatchEvent::Type::kError);
  EXPECT_EQ(e->error_code, 410);
}

TEST(WatchStream, BadInputFailsTheStreamWithoutCrashing) {
  for (const std::string& bad :
       {std::string("not json\n"), std::string("{\"type\":\"ADDED\"}\n"),
        std::string("{\"type\":\"WHAT\",\"object\":{\"metadata\":{}}}\n"),
        std::string("{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\"}}\n"),
        std::string("[1,2,3]\n"), std::string(100000, '[') + "\n",
        std::string("{\"type\":\"ADDED\",\"object\":") + std::string(5000, '{') + "\n"}) {
    WatchDecoder d;
    d.Feed(bad);
    EXPECT_FALSE(d.status().ok()) << bad.substr(0, 60);
    EXPECT_FALSE(d.Next());
    d.Feed(kTwoEvents);  // a failed stream stays failed
    EXPECT_FALSE(d.Next());
  }
}

TEST(WatchStream, LineOverTheCapIsRefusedBeforeItIsBuffered) {
  WatchDecoder d(1000);
  d.Feed(std::string(600, ' '));
  EXPECT_TRUE(d.status().ok());
  d.Feed(std::string(600, ' '));  // no newline yet: 1200 bytes > 1000
  EXPECT_EQ(d.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(d.buffered(), 0u);
}

TEST(ListAnswer, ItemsGetTheirKindAndTheListsVersion) {
  auto p = ParseListBody(
      R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"77","continue":"abc"},
          "items":[{"metadata":{"name":"a"}},{"kind":"Pod","metadata":{"name":"b"}}]})");
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_EQ(p->resource_version, "77");
  EXPECT_EQ(p->continue_token, "abc");
  ASSERT_EQ(p->items.size(), 2u);
  EXPECT_EQ(p->items[0]["kind"], "Pod");
  EXPECT_EQ(p->items[0]["apiVersion"], "v1");
  auto empty =
      ParseListBody(R"({"kind":"NodeList","metadata":{"resourceVersion":"1"},"items":null})");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->items.empty());
  EXPECT_FALSE(ParseListBody("{").ok());
  EXPECT_FALSE(ParseListBody(R"({"items":[1]})").ok());
  EXPECT_FALSE(ParseListBody(R"({"items":[{"kind":"Pod"}]})").ok());
  EXPECT_FALSE(ParseListBody(std::string(100000, '[')).ok());
  EXPECT_EQ(StatusMessage(R"({"kind":"Status","message":"pods \"x\" not found","code":404})"),
            "pods \"x\" not found");
  EXPECT_EQ(StatusMessage("plain text"), "plain text");
  EXPECT_EQ(StatusReason(std::string(100000, '[')), "");
}

}  // namespace kubeclient_test
}  // namespace arbiter::kubeclient
