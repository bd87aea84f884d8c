//===- PackedInputSaved.h - A layer input kept packed ------*- C++ -*-===//
//
// Private to the runtime. conv_packed and linear_packed save their input
// with packInput and get it back in backward with unpackInput: same values,
// same sizes and, for a dense input (contiguous, channels-last, any
// permutation), the same strides, so backward kernels choose the same
// algorithms and memory formats as eager's.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_RUNTIME_PACKEDINPUTSAVED_H
#define MEMOPT_LIB_RUNTIME_PACKEDINPUTSAVED_H

#include "memopt/Runtime/Compression.h"
#include "memopt/Runtime/LaunchStubs.h"

#include <c10/util/string_view.h>

#include <vector>

namespace memopt::runtime {

/// What is needed besides the payload to restore a packed input.
struct PackedInputLayout {
  CompressionKind kind = CompressionKind::Bit;
  at::ScalarType dtype = at::kFloat;
  std::vector<int64_t> sizes;   // of the input
  std::vector<int64_t> strides; // of the input
  std::vector<int64_t>
      packedSizes;             // of the view whose logical order was packed
  bool restoreStrides = false; // dense but not contiguous
  /// The registered launch stub that packed it, or null (generic kernels).
  const memopt_stub_site *site = nullptr;
};

/// "bit" or "bool"; anything else raises "memopt: <op>: kind must be ...".
CompressionKind parsePackedInputKind(c10::string_view kind, const char *op);

/// Packs `x` (float32 / float16 / bfloat16, CPU or CUDA) and fills `layout`.
/// When the check is on (setPackedInputCheck) a value other than 0 and 1
/// raises "memopt: <op> input is not binary (...)". Dense inputs are packed
/// in memory order, so the read is sequential and the restore needs no copy.
at::Tensor packInput(const at::Tensor &x, CompressionKind kind, const char *op,
                     PackedInputLayout &layout);

/// The input again: a new tensor with the sizes and values of the packed one,
/// and its strides if it was dense.
at::Tensor unpackInput(const at::Tensor &payload,
                       const PackedInputLayout &layout);

/// A tensor with the input's sizes, strides, dtype and device whose values
/// are never read: backward passes it where ATen wants the input only for
/// its shape and layout (the input gradient of a convolution).
at::Tensor inputPlaceholder(const PackedInputLayout &layout,
                            const at::TensorOptions &options);

/// Records sizes, strides and dtype of `x` in `layout` (without packing).
void describeInput(const at::Tensor &x, PackedInputLayout &layout);

} // namespace memopt::runtime

#endif // MEMOPT_LIB_RUNTIME_PACKEDINPUTSAVED_H
