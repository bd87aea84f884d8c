//===- UnityPrefix.h - LibTorch headers first in a unity batch ------------===//
//
// Included before every batch of the kernel probe's unity build
// (memopt_unity_build): LibTorch's headers must be parsed before a source's
// `using namespace mlir` makes names such as Value and Block ambiguous.
//
//===----------------------------------------------------------------------===//

#ifndef MEMOPT_LIB_PROBE_UNITYPREFIX_H
#define MEMOPT_LIB_PROBE_UNITYPREFIX_H

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#endif // MEMOPT_LIB_PROBE_UNITYPREFIX_H
