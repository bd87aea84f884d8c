//===- UnityPrefix.h - LibTorch headers first in a unity batch --*- C++ -*-===//
//
// The import compiles in batches (MEMOPT_UNITY_BUILD; see
// ../TorchScriptExport/UnityPrefix.h): every LibTorch header its sources
// use is parsed before any source's `using namespace mlir`.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_CONVERSION_TORCHSCRIPTIMPORT_UNITYPREFIX_H
#define MEMOPT_LIB_CONVERSION_TORCHSCRIPTIMPORT_UNITYPREFIX_H

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/EmptyTensor.h>
#include <ATen/Functions.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/function_schema.h>
#include <ATen/core/grad_mode.h>
#include <ATen/core/stack.h>
#include <c10/util/strides.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/csrc/jit/ir/scope.h>
#include <torch/csrc/jit/passes/constant_pooling.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/passes/lower_tuples.h>
#include <torch/csrc/jit/runtime/interpreter.h>
#include <torch/csrc/jit/serialization/import.h>

#endif // MEMOPT_LIB_CONVERSION_TORCHSCRIPTIMPORT_UNITYPREFIX_H
