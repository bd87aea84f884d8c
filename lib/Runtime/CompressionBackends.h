//===- CompressionBackends.h - Per-device compression kernels ---*- C++ -*-===//
//
// Private to the runtime. Compression.cpp validates arguments, formats errors
// and picks a backend; the backends only move bytes. Arguments reaching them
// are already checked: a float32/float16/bfloat16 input, a payload whose
// dtype and size match the kind, an output of the logical shape.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_RUNTIME_COMPRESSIONBACKENDS_H
#define MEMOPT_LIB_RUNTIME_COMPRESSIONBACKENDS_H

#include "memopt/Runtime/Compression.h"

#include <string>

namespace memopt::runtime::detail {

/// How errors name dtypes ("float32", "bfloat16", "int64", ...).
const char *dtypeName(at::ScalarType dtype);
/// Shortest decimal that reads back as `value` ("0.5", "nan", "inf").
std::string formatValue(float value);

/// Returns the payload of `x` (any strides). With `check`, stops at the first
/// value the kind cannot represent, stores its flat (logical) index in
/// `firstInvalid` and returns an undefined tensor; otherwise `firstInvalid`
/// is -1.
at::Tensor compressCPU(const at::Tensor &x, CompressionKind kind, bool check,
                       int64_t &firstInvalid);
/// Fills the contiguous `out` from `payload`.
void decompressCPU(const at::Tensor &payload, CompressionKind kind,
                   at::Tensor &out);
/// The first flat index of `x` the kind cannot represent, or -1.
int64_t findFirstInvalidCPU(const at::Tensor &x, CompressionKind kind);

/// CUDA counterparts; without MEMOPT_WITH_CUDA they throw a c10::Error.
at::Tensor compressCUDA(const at::Tensor &x, CompressionKind kind, bool check,
                        int64_t &firstInvalid);
void decompressCUDA(const at::Tensor &payload, CompressionKind kind,
                    at::Tensor &out);
int64_t findFirstInvalidCUDA(const at::Tensor &x, CompressionKind kind);

} // namespace memopt::runtime::detail

#endif // MEMOPT_LIB_RUNTIME_COMPRESSIONBACKENDS_H
