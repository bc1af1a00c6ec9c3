// Writing a large output file (a million-pod simulation report: about 2 GB) without filling the
// page cache with it.
//
// A file written through an ordinary stream leaves every page it wrote in the page cache (dirty,
// then clean) until memory is needed: the kernel takes fresh pages for all of it, and on a
// virtual machine a page the guest has not used lately is expensive to take (a 1 GiB write: 4-10 s
// of system time on the project's shared 2-core VM). DroppingFileBuf writes through a buffer and,
// after each `window` of bytes, has the kernel write the window before last to disk and drop it
// from the cache: the cache holds about two windows of the file, the same pages are taken again
// and again, and the write costs a tenth of that system time (0.3 s for 1 GiB). The writes to disk
// start earlier than they would otherwise: nothing waits for them but this stream.
//
// Where the file is not a regular file (a pipe, /dev/null) the flushing and dropping do nothing.
#pragma once

#include <cstdint>
#include <streambuf>
#include <string>
#include <vector>

namespace arbiter::io {

class DroppingFileBuf : public std::streambuf {
 public:
  static constexpr size_t kDefaultBuffer = size_t{1} << 20;
  static constexpr uint64_t kDefaultWindow = uint64_t{64} << 20;

  DroppingFileBuf() = default;
  DroppingFileBuf(const DroppingFileBuf&) = delete;
  DroppingFileBuf& operator=(const DroppingFileBuf&) = delete;
  ~DroppingFileBuf() override;

  // Creates or truncates `path` (mode 0666 less the umask); false when it cannot be opened.
  bool Open(const std::string& path, size_t buffer = kDefaultBuffer,
            uint64_t window = kDefaultWindow);
  // Writes what is buffered and closes the file; false when a write or the close failed (or
  // did before).
  bool Close();
  bool is_open() const { return fd_ >= 0; }

 protected:
  int_type overflow(int_type ch) override;
  int sync() override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;

 private:
  bool Drain();        // writes the buffer to the file
  void DropWritten();  // the windows wholly before the last one: to disk, out of cache
  bool WriteAll(const char* p, size_t n);

  int fd_ = -1;
  bool failed_ = false;
  std::vector<char> buffer_;
  uint64_t window_ = kDefaultWindow;
  uint64_t written_ = 0;  // bytes written to the file
  uint64_t dropped_ = 0;  // bytes before this are on disk and out of the cache
};

}  // namespace arbiter::io
