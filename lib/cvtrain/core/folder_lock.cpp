// FolderLock (folder_lock.h): flock(2) on FOLDER/.cvtrain.lock, whose text names the holder.
#include "cvtrain/core/folder_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "cvtrain/core/error.h"
#include "cvtrain/core/log.h"
#include "cvtrain/core/this_machine.h"

namespace cvtrain {
namespace {

std::string holder_text(const std::string& what) {
  return fmt::format("cvtrain {} pid {} on {} since {}\n", what, static_cast<long>(getpid()), host_name(), utc_now());
}

std::string read_holder(int fd) {
  char text[512] = {};
  const ssize_t n = pread(fd, text, sizeof text - 1, 0);
  std::string holder(text, n > 0 ? static_cast<size_t>(n) : 0);
  while (!holder.empty() && holder.back() == '\n') holder.pop_back();
  return holder.empty() ? "another cvtrain process" : holder;
}

// Filesystems that cannot lock (some network mounts) answer with these.
bool locks_unsupported(int err) { return err == ENOLCK || err == EOPNOTSUPP || err == ENOSYS || err == EINVAL; }

}  // namespace

FolderLock::FolderLock(const std::string& folder, const std::string& what, double wait_s) {
  const std::string path = folder + "/" + kFolderLockFile;
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (locks_unsupported(err)) {
      log::warn("{}: this filesystem cannot lock files ({}); nothing stops a second {} from writing into {} at the same time", path,
                std::strerror(err), what, folder);
      return;
    }
    if (err != EWOULDBLOCK && err != EINTR) throw Error(fmt::format("{}: cannot lock ({})", path, std::strerror(err)));
    if (std::chrono::steady_clock::now() >= deadline) {
      const std::string holder = read_holder(fd_);
      ::close(fd_);
      fd_ = -1;
      throw Error(fmt::format("{} is in use by {}; one folder holds one {} at a time: stop that one, or give this {} another folder",
                              folder, holder, what, what));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  const std::string text = holder_text(what);
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
    log::warn("{}: cannot note this process as the holder ({})", path, std::strerror(errno));
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace cvtrain
