#include "server/http/token_source.h"

#include <sys/stat.h>

#include "adapters/io/input_file.h"

namespace arbiter::server {

namespace {
Result<kube::TokenTable> ReadTokenFile(const std::string& path) {
  auto text = io::ReadInputFile(path, {"token file", 16 * io::kMiB});
  if (!text.ok()) return text.status();
  return kube::ParseTokenFile(text.value(), path);
}
}  // namespace

TokenSource::Stamp TokenSource::StampOf(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return Stamp{};
  return Stamp{static_cast<unsigned long long>(st.st_dev),
               static_cast<unsigned long long>(st.st_ino), static_cast<long long>(st.st_size),
               static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec};
}

Result<std::shared_ptr<TokenSource>> TokenSource::Load(std::string path) {
  const Stamp stamp = StampOf(path);
  auto table = ReadTokenFile(path);
  if (!table.ok()) return table.status();
  auto src = std::make_shared<TokenSource>(std::move(table).value());
  src->path_ = std::move(path);
  src->stamp_ = stamp;
  return src;
}

TokenSource::TokenSource(kube::TokenTable table)
    : table_(std::make_shared<const kube::TokenTable>(std::move(table))) {}

std::shared_ptr<const kube::TokenTable> TokenSource::Current() const {
  std::lock_guard<std::mutex> l(mu_);
  return table_;
}

Status TokenSource::Reload() {
  if (path_.empty()) return Status::Ok();
  const Stamp stamp = StampOf(path_);  // before reading: a change while reading is seen next time
  auto table = ReadTokenFile(path_);
  std::lock_guard<std::mutex> l(mu_);
  stamp_ = stamp;
  if (!table.ok()) return table.status();
  table_ = std::make_shared<const kube::TokenTable>(std::move(table).value());
  return Status::Ok();
}

std::optional<Status> TokenSource::ReloadIfChanged() {
  if (path_.empty()) return std::nullopt;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (StampOf(path_) == stamp_) return std::nullopt;
  }
  return Reload();
}

}  // namespace arbiter::server
