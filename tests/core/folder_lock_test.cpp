// FolderLock: a second holder of the same folder is refused with the first one named; the folder is
// free again once the first lets go.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <memory>
#include <string>

#include "cvtrain/core/error.h"
#include "cvtrain/core/folder_lock.h"
#include "temp_dir.h"

using namespace cvtrain;
using cvtrain::testing::TempDir;

TEST_CASE("a folder locked by one run refuses a second, naming the first, and is free once it ends", "[core]") {
  TempDir dir;
  auto first = std::make_unique<FolderLock>(dir.path().string(), "run");
  // flock locks belong to each open of the file, so a second open in this process is refused as another process's would be.
  CHECK_THROWS_WITH(FolderLock(dir.path().string(), "run", 0.3),
                    Catch::Contains(dir.path().string() + " is in use by cvtrain run pid " + std::to_string(getpid())) &&
                        Catch::Contains("give this run another folder"));
  first.reset();
  CHECK_NOTHROW(FolderLock(dir.path().string(), "sweep", 0));
}
