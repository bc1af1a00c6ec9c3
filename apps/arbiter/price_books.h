// PriceBooks from command-line files, for the commands that bill (meter): *.json
// (report::PriceBooksFromJson) or YAML manifests (PriceBook kinds). Messages go to `err`.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/objects.h"

namespace arbiter::app {

bool LoadPriceBookFiles(const std::vector<std::string>& files, const std::string& who,
                        std::vector<PriceBook>* out, std::ostream& err);

}  // namespace arbiter::app
