//===- UnityPrefix.h - LibTorch headers first in a unity batch --*- C++ -*-===//
//
// The export compiles in batches (MEMOPT_UNITY_BUILD). Its sources say
// `using namespace mlir;`, after which a LibTorch header first parsed by a
// later source of the batch no longer compiles (llvm::ArrayRef and
// c10::ArrayRef both visible). The batch includes this header first, so
// every LibTorch header the export uses is parsed before any of that.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_CONVERSION_TORCHSCRIPTEXPORT_UNITYPREFIX_H
#define MEMOPT_LIB_CONVERSION_TORCHSCRIPTEXPORT_UNITYPREFIX_H

#include <ATen/ATen.h>
#include <ATen/Functions.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/frontend/function_schema_parser.h>
#include <torch/csrc/jit/frontend/resolver.h>
#include <torch/csrc/jit/frontend/sugared_value.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/csrc/jit/mobile/type_parser.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/runtime/operator.h>
#include <torch/csrc/jit/serialization/import.h>

#endif // MEMOPT_LIB_CONVERSION_TORCHSCRIPTEXPORT_UNITYPREFIX_H
