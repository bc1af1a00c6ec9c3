#include "cli_errors.h"

#include <algorithm>
#include <cstdio>

namespace arbiter::app {

namespace {

// "arbiter", "arbiter sim", "arbiter sim compare".
std::string PathOf(const CLI::App* cmd) {
  std::string path;
  for (const CLI::App* c = cmd; c != nullptr; c = c->get_parent())
    path = c->get_parent() == nullptr ? "arbiter" + path : " " + c->get_name() + path;
  return path;
}

std::vector<std::string> SubcommandNames(const CLI::App* cmd) {
  std::vector<std::string> names;
  for (const CLI::App* s :
       cmd->get_subcommands([](const CLI::App* a) { return !a->get_name().empty(); }))
    names.push_back(s->get_name());
  return names;
}

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

std::vector<std::string> FlagNames(const CLI::App* cmd) {
  std::vector<std::string> names;
  for (const CLI::Option* o : cmd->get_options()) {
    for (const auto& l : o->get_lnames()) names.push_back("--" + l);
    for (const auto& s : o->get_snames()) names.push_back("-" + s);
  }
  return names;
}

bool HasFileOption(const CLI::App* cmd) {
  for (const CLI::Option* o : cmd->get_options())
    for (const auto& s : o->get_snames())
      if (s == "f") return true;
  return false;
}

// The deepest command the parser entered.
const CLI::App* Deepest(const CLI::App& root) {
  const CLI::App* cur = &root;
  while (!cur->get_subcommands().empty()) cur = cur->get_subcommands().back();
  return cur;
}

std::string HelpHint(const CLI::App* cmd) {
  return "Run `" + PathOf(cmd) + " --help` for " +
         (SubcommandNames(cmd).empty() ? std::string("the options") : "the commands and options") +
         ".\n";
}

// `what` is one argument the command did not expect.
std::string UnexpectedMessage(const CLI::App* cmd, const std::string& what) {
  const std::string path = PathOf(cmd);
  std::string msg;
  if (!what.empty() && what[0] == '-' && what != "-") {
    const std::string flag = what.substr(0, what.find('='));
    msg = path + ": unknown option \"" + flag + "\"";
    const std::string guess = Closest(flag, FlagNames(cmd));
    if (!guess.empty()) msg += "; did you mean \"" + guess + "\"?";
    return msg + "\n" + HelpHint(cmd);
  }
  const std::vector<std::string> subs = SubcommandNames(cmd);
  const std::string guess = Closest(what, subs);
  if (!subs.empty() && (!guess.empty() || !HasFileOption(cmd))) {
    msg = path + ": unknown command \"" + what + "\"";
    if (!guess.empty()) msg += "; did you mean \"" + guess + "\"?";
    msg += "\nCommands: " + Join(subs, ", ") + ".\n";
    return msg + HelpHint(cmd);
  }
  msg = path + ": unexpected argument \"" + what + "\"";
  if (HasFileOption(cmd)) msg += "; did you mean \"-f " + what + "\"?";
  return msg + "\n" + HelpHint(cmd);
}

}  // namespace

CLI::Validator InRange(double lo, double hi) {
  const auto text = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.15g", v);
    return std::string(buf);
  };
  const std::string range = text(lo) + " to " + text(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& value) {
        double v = 0;
        const bool ok = CLI::detail::lexical_cast(value, v) && v >= lo && v <= hi;
        return ok ? std::string() : "must be a number from " + range + ", not " + value;
      },
      "");
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string Closest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = 0;
  for (const auto& c : candidates) {
    const size_t d = EditDistance(word, c);
    if (best.empty() || d < best_d || (d == best_d && c < best)) {
      best = c;
      best_d = d;
    }
  }
  // Close enough to be a typo: at most a third of the word, and at most 3 edits; or a prefix.
  const std::string_view stem = word.substr(
      word.find_first_not_of('-') == std::string_view::npos ? 0 : word.find_first_not_of('-'));
  const size_t limit = std::min<size_t>(3, std::max<size_t>(1, stem.size() / 3));
  if (!best.empty() && stem.size() >= 3 && best_d <= limit) return best;  // "-x" is no typo of "-f"
  if (stem.size() >=
      3)  // an unambiguous start of a name: "--rep" -> "--report-json" is not, "comp" is
    for (const auto& c : candidates) {
      const size_t at = c.find_first_not_of('-');
      if (at != std::string::npos && c.compare(at, stem.size(), stem) == 0) {
        size_t n = 0;
        for (const auto& d : candidates) {
          const size_t dat = d.find_first_not_of('-');
          n += dat != std::string::npos && d.compare(dat, stem.size(), stem) == 0;
        }
        if (n == 1) return c;
      }
    }
  return "";
}

std::string UsageErrorMessage(const CLI::App& root, const CLI::ParseError& e) {
  // Unknown options and arguments first, deepest command first.
  std::vector<const CLI::App*> chain;
  for (const CLI::App* c = Deepest(root); c != nullptr; c = c->get_parent()) chain.push_back(c);
  for (const CLI::App* c : chain) {
    const std::vector<std::string> extra = c->remaining();
    if (!extra.empty()) return UnexpectedMessage(c, extra.front());
  }
  const CLI::App* cmd = Deepest(root);
  const std::string path = PathOf(cmd);
  std::string what = e.what();
  if (e.get_name() == "RequiredError" && what.rfind("A subcommand", 0) == 0) {
    return path + ": missing command (" + Join(SubcommandNames(cmd), ", ") + ")\n" + HelpHint(cmd);
  }
  // "--file: 1 required TEXT missing" -> "option --file needs a value (TEXT)".
  const size_t req = what.find(": 1 required ");
  if (e.get_name() == "ArgumentMismatch" && req != std::string::npos &&
      what.ends_with(" missing")) {
    const std::string type = what.substr(req + 13, what.size() - 8 - (req + 13));
    return path + ": option " + what.substr(0, req) + " needs a value (" + type + ")\n" +
           HelpHint(cmd);
  }
  // "Could not convert: --seed = abc" -> "--seed: "abc" is not a number".
  if (e.get_name() == "ConversionError" && what.rfind("Could not convert: ", 0) == 0 &&
      what.find(" = ") != std::string::npos) {
    const size_t eq = what.find(" = ");
    const std::string flag = what.substr(19, eq - 19), value = what.substr(eq + 3);
    return path + ": " + flag + ": \"" + value.substr(0, 80) + "\" is not a whole number\n" +
           HelpHint(cmd);
  }
  if (e.get_name() == "RequiredError" && what.ends_with(" is required")) {
    std::string name = what.substr(0, what.size() - 12);
    if (const CLI::Option* o = cmd->get_option_no_throw(name)) {
      std::string all;
      for (const auto& sn : o->get_snames()) all += (all.empty() ? "-" : "/-") + sn;
      for (const auto& ln : o->get_lnames()) all += (all.empty() ? "--" : "/--") + ln;
      if (!all.empty()) name = all;
    }
    return path + ": missing required option " + name + "\n" + HelpHint(cmd);
  }
  return path + ": " + what + "\n" + HelpHint(cmd);
}

}  // namespace arbiter::app
