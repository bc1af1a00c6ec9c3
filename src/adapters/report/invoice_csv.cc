#include "adapters/report/invoice_csv.h"

namespace arbiter::report {

namespace {

std::string Csv(const std::string& v) {
  if (v.find_first_of(",\"\n") == std::string::npos) return v;
  std::string q = "\"";
  for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

void WriteInvoicesCsv(const std::vector<billing::Invoice>& invs, std::ostream& out) {
  out << "namespace,currency,kind,resource,gpuModel,unit,mode,priceBook,requestQuantity,"
         "usageQuantity,billedQuantity,unitPrice,amount,preemptor,digest\n";
  for (const auto& inv : invs)
    for (const auto& l : inv.lines)
      out << Csv(inv.namespace_) << "," << inv.currency << "," << billing::ToString(l.kind) << ","
          << Csv(l.resource) << "," << Csv(l.gpu_product) << "," << l.unit << ","
          << ToString(l.mode) << "," << Csv(l.price_book) << "," << l.request_quantity.ToString()
          << "," << l.usage_quantity.ToString() << "," << l.billed_quantity.ToString() << ","
          << l.price.unit_price.ToString() << "," << l.amount.ToFixed(billing::kAmountDigits) << ","
          << Csv(l.preemptor) << "," << inv.digest << "\n";
}

}  // namespace arbiter::report
