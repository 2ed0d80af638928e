// Precompiled header for the torch-heavy sources only (see lib/CMakeLists.txt); never included directly.
#pragma once

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules.h>
#include <torch/optim.h>
#include <torch/serialize.h>
