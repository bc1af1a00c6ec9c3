// `arbiter kubeconfig --server URL --user U --token-file F [--namespace NS]
// [--certificate-authority FILE]`: print a kubeconfig for user U of `arbiter serve`, with the
// first token the token file gives that user (kube-apiserver's --token-auth-file CSV).
#include <iostream>

#include "adapters/io/input_file.h"
#include "adapters/kube/auth.h"
#include "adapters/kube/kubeconfig.h"
#include "cli_flags.h"
#include "commands.h"

namespace arbiter::app {
namespace {

constexpr io::InputKind kTokenFileInput{"token file", 16 * io::kMiB};
constexpr io::InputKind kCaInput{"certificate", 1 * io::kMiB};

struct KubeconfigFlags {
  std::string server, user, token_file, ns, ca;
};

// Prints the kubeconfig of --user: 0, or the exit code.
int RunKubeconfig(const KubeconfigFlags& f) {
  const char* name = "arbiter kubeconfig";
  auto text = io::ReadInputFile(f.token_file, kTokenFileInput);
  if (!text.ok()) return InputError(name, text.message());
  auto tokens = kube::ParseTokenFile(*text, f.token_file);
  if (!tokens.ok()) return InputError(name, tokens.message());
  auto it = tokens->first_token_of_user.find(f.user);
  if (it == tokens->first_token_of_user.end())
    return InputError(name, io::InputName(f.token_file) + ": no token for user \"" + f.user + "\"");
  kube::KubeconfigOptions o;
  o.server = f.server;
  o.user = f.user;
  o.token = it->second;
  o.namespace_ = f.ns;
  if (!f.ca.empty()) {
    auto ca = io::ReadInputFile(f.ca, kCaInput);
    if (!ca.ok()) return InputError(name, ca.message());
    o.ca_pem = *ca;
  }
  auto yaml = kube::KubeconfigYaml(o);
  if (!yaml.ok()) return FlagError(name, "--server", yaml.message());
  std::cout << *yaml;
  return kExitOk;
}

}  // namespace

void RegisterKubeconfig(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "kubeconfig",
      "Print a kubeconfig for a user of `arbiter serve`.\n"
      "The user's token is the first record of the token file (CSV: token,user,uid,\"groups\",\n"
      "the format of kube-apiserver's --token-auth-file) whose user is --user.\n"
      "Example: arbiter kubeconfig --server https://127.0.0.1:6443 --user alice \\\n"
      "           --token-file tokens.csv --certificate-authority ca.crt > alice.kubeconfig\n"
      "Exit status: 0 printed, 1 unreadable file or unknown user, 2 usage error.");
  auto f = std::make_shared<KubeconfigFlags>();
  cmd->add_option("--server", f->server, "The server's URL (http:// or https://)")->required();
  cmd->add_option("--user", f->user, "User name, as in the token file")->required();
  cmd->add_option("--token-file", f->token_file, "Token file (token,user,uid,\"groups\")")
      ->required();
  cmd->add_option("--namespace", f->ns, "Default namespace of the context");
  cmd->add_option("--certificate-authority", f->ca, "PEM file of the server's CA (https)");
  cmd->callback([f, exit_code] { *exit_code = RunKubeconfig(*f); });
}

}  // namespace arbiter::app
