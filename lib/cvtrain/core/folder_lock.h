// One process at a time in a folder: two runs (or sweeps) writing one folder would rename each
// other's metrics and overwrite each other's checkpoints. An exclusive flock on FOLDER/.cvtrain.lock,
// held while the object lives and released by the kernel when the process ends however it ends,
// so a crash never leaves the folder locked.
#pragma once

#include <string>

namespace cvtrain {

inline constexpr const char* kFolderLockFile = ".cvtrain.lock";

class FolderLock {
 public:
  // `what` names the holder in messages ("run", "sweep"). Waits up to `wait_s` for a holder that
  // is ending (a restart's old rank), then throws Error naming it (pid, host, since when). Where
  // the filesystem has no locks it warns once and goes on unlocked.
  FolderLock(const std::string& folder, const std::string& what, double wait_s = 3);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace cvtrain
