#include "adapters/io/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace arbiter::io {

namespace {

std::string KindOf(mode_t m) {
  if (S_ISDIR(m)) return "it is a directory";
  if (S_ISFIFO(m))
    return "it is a FIFO (named pipe), not a regular file; to read a stream, pipe it to standard "
           "input and give "
           "the file as -";
  if (S_ISCHR(m)) return "it is a character device (such as /dev/zero), not a regular file";
  if (S_ISBLK(m)) return "it is a block device, not a regular file";
  if (S_ISSOCK(m)) return "it is a socket, not a regular file";
  if (!S_ISREG(m)) return "it is not a regular file";
  return "";
}

std::string Errno(int e) {
  if (e == ENOENT) return "no such file";
  if (e == EACCES) return "permission denied";
  if (e == ENOTDIR) return "a part of the path is not a directory";
  return std::strerror(e);
}

std::string TooLarge(uint64_t size, const InputKind& kind, bool at_least) {
  return std::string(at_least ? "more than " : "") + SizeText(size) + ", larger than the " +
         SizeText(kind.limit_bytes) + " limit for a " + kind.what;
}

// Refuses binary data: a NUL byte anywhere, or UTF-16 (whose ASCII characters have NUL halves).
ReadProblem CheckText(std::string_view text) {
  if (text.size() >= 2 &&
      ((text[0] == '\xFF' && text[1] == '\xFE') || (text[0] == '\xFE' && text[1] == '\xFF')))
    return {0, "the text is UTF-16; save it as UTF-8"};
  const TextPosition p = FindNul(text);
  if (p.line > 0)
    return {p.line, "a NUL byte (column " + std::to_string(p.column) +
                        "): this is binary data, not a text file"};
  return {};
}

}  // namespace

std::string InputName(const std::string& path) { return path == "-" ? "stdin" : path; }

std::string SizeText(uint64_t bytes) {
  char buf[64];
  if (bytes >= (uint64_t{1} << 30)) {
    std::snprintf(buf, sizeof buf, "%.1f GiB",
                  static_cast<double>(bytes) / static_cast<double>(uint64_t{1} << 30));
  } else if (bytes >= kMiB) {
    std::snprintf(buf, sizeof buf, "%.1f MiB",
                  static_cast<double>(bytes) / static_cast<double>(kMiB));
  } else if (bytes >= 1024) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(bytes) / 1024.0);
  } else {
    return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  }
  std::string s = buf;
  const size_t dot = s.find(".0 ");  // "512.0 MiB" -> "512 MiB"
  if (dot != std::string::npos) s.erase(dot, 2);
  return s;
}

std::string WhyNotReadable(const std::string& path) {
  if (path == "-") return "";
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Errno(errno);
  return KindOf(st.st_mode);
}

TextPosition FindNul(std::string_view text) {
  const void* at = std::memchr(text.data(), '\0', text.size());
  if (at == nullptr) return {};
  const size_t pos = static_cast<size_t>(static_cast<const char*>(at) - text.data());
  const std::string_view before = text.substr(0, pos);
  const size_t line = 1 + static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
  const size_t nl = before.rfind('\n');
  return {line, nl == std::string_view::npos ? pos + 1 : pos - nl};
}

ReadProblem ReadInput(const std::string& path, const InputKind& kind, std::string* out) {
  std::string& text = *out;
  text.clear();
  int fd = 0;
  bool close_fd = false;
  uint64_t expected = 0;
  if (path != "-") {
    if (std::string why = WhyNotReadable(path); !why.empty()) return {0, why};
    // O_NONBLOCK: should the path have become a FIFO since the stat, opening it does not wait for a
    // writer; fstat below then refuses it.
    fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return {0, Errno(errno)};
    close_fd = true;
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return {0, KindOf(st.st_mode)};
    }
    if (static_cast<uint64_t>(st.st_size) > kind.limit_bytes) {
      ::close(fd);
      return {0, TooLarge(static_cast<uint64_t>(st.st_size), kind, false)};
    }
    expected = static_cast<uint64_t>(st.st_size);
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  }
  constexpr size_t kChunk = 1 << 16;
  // Room for the last read (the one that finds the end) too: else that read's resize would copy
  // the whole text into a new buffer (a second 300 MB for a million-pod manifest).
  text.reserve(static_cast<size_t>(expected) + kChunk + 1);
  ReadProblem problem;
  while (true) {
    const size_t at = text.size();
    // Never past the limit (+1 to notice a larger input): a file that grows while it is read, or
    // an endless stream on standard input, stops there.
    const uint64_t room = kind.limit_bytes + 1 - at;
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, room));
    text.resize(at + want);
    const ssize_t n = ::read(fd, text.data() + at, want);
    if (n < 0) {
      text.resize(at);
      if (errno == EINTR) continue;
      problem = {0, "cannot read: " + Errno(errno)};
      break;
    }
    text.resize(at + static_cast<size_t>(n));
    if (n == 0) break;
    if (text.size() > kind.limit_bytes) {
      problem = {0, TooLarge(kind.limit_bytes, kind, true)};
      break;
    }
    // Binary data on a stream is refused at once, not after reading it up to the limit.
    if (path == "-" && std::memchr(text.data() + at, '\0', static_cast<size_t>(n)) != nullptr) {
      problem = CheckText(text);
      break;
    }
  }
  if (close_fd) ::close(fd);
  if (problem.ok()) problem = CheckText(text);
  if (!problem.ok()) {
    text.clear();
    text.shrink_to_fit();
  }
  return problem;
}

Result<std::string> ReadInputFile(const std::string& path, const InputKind& kind) {
  std::string text;
  ReadProblem p = ReadInput(path, kind, &text);
  if (!p.ok())
    return Result<std::string>::Error(InputName(path) +
                                      (p.line ? ":" + std::to_string(p.line) : std::string()) +
                                      ": " + p.reason);
  return text;
}

}  // namespace arbiter::io
