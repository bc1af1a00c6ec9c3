#include "adapters/io/output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace arbiter::io {

DroppingFileBuf::~DroppingFileBuf() { Close(); }

bool DroppingFileBuf::Open(const std::string& path, size_t buffer, uint64_t window) {
  Close();
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) return false;
  failed_ = false;
  buffer_.assign(std::max<size_t>(buffer, 1), '\0');
  window_ = std::max<uint64_t>(window, 1);
  written_ = dropped_ = 0;
  setp(buffer_.data(), buffer_.data() + buffer_.size());
  return true;
}

bool DroppingFileBuf::Close() {
  if (fd_ < 0) return !failed_;
  Drain();
  if (::close(fd_) != 0) failed_ = true;
  fd_ = -1;
  setp(nullptr, nullptr);
  return !failed_;
}

bool DroppingFileBuf::WriteAll(const char* p, size_t n) {
  while (n > 0 && !failed_) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      failed_ = true;
      break;
    }
    p += w;
    n -= static_cast<size_t>(w);
    written_ += static_cast<uint64_t>(w);
  }
  DropWritten();
  return !failed_;
}

void DroppingFileBuf::DropWritten() {
  // Windows [dropped_, written_ - window_) are complete and not the latest: each is written out
  // (waiting for it) and dropped; the next one's writing is started. Errors (not a regular file)
  // change nothing but the cache.
  while (written_ >= dropped_ + 2 * window_) {
    const auto off = static_cast<off_t>(dropped_), len = static_cast<off_t>(window_);
    (void)sync_file_range(
        fd_, off, len,
        SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
    (void)posix_fadvise(fd_, off, len, POSIX_FADV_DONTNEED);
    dropped_ += window_;
    (void)sync_file_range(fd_, static_cast<off_t>(dropped_), len, SYNC_FILE_RANGE_WRITE);
  }
}

bool DroppingFileBuf::Drain() {
  if (fd_ < 0) return false;
  const size_t n = static_cast<size_t>(pptr() - pbase());
  const bool ok = WriteAll(pbase(), n);
  setp(buffer_.data(), buffer_.data() + buffer_.size());
  return ok;
}

DroppingFileBuf::int_type DroppingFileBuf::overflow(int_type ch) {
  if (fd_ < 0 || !Drain()) return traits_type::eof();
  if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
  *pptr() = traits_type::to_char_type(ch);
  pbump(1);
  return ch;
}

int DroppingFileBuf::sync() { return fd_ >= 0 && Drain() ? 0 : -1; }

std::streamsize DroppingFileBuf::xsputn(const char* s, std::streamsize n) {
  if (fd_ < 0 || failed_) return 0;
  const auto room = static_cast<std::streamsize>(epptr() - pptr());
  if (n <= room) {
    std::memcpy(pptr(), s, static_cast<size_t>(n));
    pbump(static_cast<int>(n));
    return n;
  }
  // Larger than the room left: the buffer goes out, then the rest is buffered or, when it is
  // at least a buffer's worth, written directly.
  if (!Drain()) return 0;
  if (static_cast<size_t>(n) >= buffer_.size()) return WriteAll(s, static_cast<size_t>(n)) ? n : 0;
  std::memcpy(pptr(), s, static_cast<size_t>(n));
  pbump(static_cast<int>(n));
  return n;
}

}  // namespace arbiter::io
