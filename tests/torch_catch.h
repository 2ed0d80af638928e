// Catch2 for test files that include LibTorch: c10/util/Logging.h defines glog-style CHECK macros
// that would silently replace Catch's CHECK (passing checks uncounted, failing ones aborting the
// process). Including c10's header first and dropping its CHECK lets Catch's definition stand; the
// include guard keeps later torch headers from defining it again. Include this first.
#pragma once

#include <c10/util/Logging.h>
#undef CHECK

#include <catch2/catch.hpp>
