#include "adapters/warehouse/row_text.h"

namespace arbiter::warehouse {

void AppendEscapedField(std::string* out, std::string_view s) {
  for (char c : s) {
    switch (c) {
      case '\t':
        *out += "\\t";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\\':
        *out += "\\\\";
        break;
      default:
        *out += c;
    }
  }
}

void AppendHourlyRow(std::string* out, const billing::StoredRow& s, HourColumn hour) {
  const billing::HourlyRow& r = s.row;
  auto field = [out](std::string_view v) {
    AppendEscapedField(out, v);
    *out += '\t';
  };
  auto number = [out](const std::string& v) {
    *out += v;
    *out += '\t';
  };
  field(r.namespace_);
  field(r.workload);
  field(r.resource);
  field(r.gpu_product);
  number(std::to_string(r.gpu_replicas));
  number(std::to_string(static_cast<int>(r.kind)));
  field(r.preemptor);
  number(std::to_string(hour == HourColumn::kSeconds ? r.hour / 1000 : r.hour));
  number(std::to_string(s.version));
  number(billing::I128ToString(r.request_raw));
  number(billing::I128ToString(r.usage_raw));
  number(billing::I128ToString(r.max_raw));
  number(std::to_string(r.samples));
  number(std::to_string(r.covered_ms));
  number(std::to_string(r.run_ms));
  field(s.unit);
  field(s.rated.price_book);
  field(s.rated.currency);
  field(s.rated.price_book.empty() ? std::string() : ToString(s.rated.mode));
  number(s.rated.unit_price.ToString());
  number(s.rated.billed_quantity.ToString());
  *out += s.rated.amount.ToString();
  *out += '\n';
}

}  // namespace arbiter::warehouse
