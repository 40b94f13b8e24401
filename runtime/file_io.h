// Small POSIX file helpers shared by the kernel cache and its packs (internal to runtime/):
// an owning file descriptor, whole writes and reads that retry after EINTR, and temporary
// names no other writer uses, for write-then-rename.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace tilejit::file_io {

class UniqueFd {
 public:
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd& operator=(UniqueFd&&) = delete;
  ~UniqueFd();
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  // Closes now and reports the result: on network file systems a failed write can show up
  // only here.
  bool close();

 private:
  int fd_;
};

bool write_all(int fd, std::string_view data);
// Reads exactly `size` bytes at the current position; false on an error or an early end of file.
bool read_exact(int fd, char* out, size_t size);
// The same at `offset`, leaving the position alone (safe from several threads at once).
bool read_exact_at(int fd, uint64_t offset, char* out, size_t size);

// Makes the renames into `directory` durable (fsync of the directory); false on failure.
bool sync_directory(const std::filesystem::path& directory);

// strerror(errno).
std::string errno_text();

// A name next to `final_path` that no other writer uses: the pid separates processes on this
// host (and forked children, whose random generators start out as copies), the random part
// separates hosts sharing a network file system.
std::filesystem::path temp_path_for(const std::filesystem::path& final_path);

// Integers in files are little-endian.
void append_le(std::string& out, uint64_t value, int bytes);
uint64_t read_le(const char* in, int bytes);

}  // namespace tilejit::file_io
