#include "price_books.h"

#include <fstream>
#include <sstream>

#include "adapters/report/invoice_json.h"
#include "adapters/yaml/manifest_loader.h"

namespace arbiter::app {

bool LoadPriceBookFiles(const std::vector<std::string>& files, const std::string& who,
                        std::vector<PriceBook>* out, std::ostream& err) {
  std::vector<std::string> yaml;
  for (const auto& f : files) {
    if (f.size() >= 5 && f.substr(f.size() - 5) == ".json") {
      std::ifstream in(f);
      if (!in) {
        err << who << ": cannot read " << f << "\n";
        return false;
      }
      std::stringstream ss;
      ss << in.rdbuf();
      auto j = nlohmann::json::parse(ss.str(), nullptr, false);
      if (j.is_discarded()) {
        err << f << ": not valid JSON\n";
        return false;
      }
      auto b = report::PriceBooksFromJson(j);
      if (!b.ok()) {
        err << f << ": " << b.message() << "\n";
        return false;
      }
      for (auto& x : *b) out->push_back(std::move(x));
    } else {
      yaml.push_back(f);
    }
  }
  if (!yaml.empty()) {
    yaml::ManifestLoad load = yaml::LoadManifestFiles(yaml);
    if (!load.ok()) {
      load.diagnostics.Sort();
      for (const auto& d : load.diagnostics.items) err << d.ToString() << "\n";
      return false;
    }
    for (auto& b : load.set.price_books) out->push_back(std::move(b));
  }
  return true;
}

}  // namespace arbiter::app
