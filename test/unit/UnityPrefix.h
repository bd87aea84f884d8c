//===- UnityPrefix.h - LibTorch headers first in a unit-test batch --------===//
//
// Included before every batch of the LibTorch unit tests' unity build
// (memopt_unity_build): LibTorch's headers come before any source's
// `using namespace mlir::memopt`.
//
//===----------------------------------------------------------------------===//

#ifndef MEMOPT_TEST_UNIT_UNITYPREFIX_H
#define MEMOPT_TEST_UNIT_UNITYPREFIX_H

#include <ATen/ATen.h>
#include <ATen/Functions.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/jit.h>

#endif // MEMOPT_TEST_UNIT_UNITYPREFIX_H
