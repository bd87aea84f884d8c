//===- MaskBits.h - One bit per value, packed a chunk at a time -*- C++ -*-===//
//
// Private to the runtime. The masks that memopt's saved forms keep instead of
// a tensor (ReLU: where the result is <= 0; dropout: where a value was kept),
// packed 8 per byte in logical order. Packing and unpacking run kMaskChunk
// values at a time, so their transient buffers stay small next to the
// tensors (the memory model, lib/Analysis/MemorySimulatorOps.cpp, counts one
// chunk as a bool and one of the gradient's dtype; DropoutMasked.cpp's
// one-pass float kernels need none).
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_RUNTIME_MASKBITS_H
#define MEMOPT_LIB_RUNTIME_MASKBITS_H

#include <ATen/ATen.h>

namespace memopt::runtime {

/// Values packed or unpacked at a time (a multiple of 8).
constexpr int64_t kMaskChunk = int64_t(1) << 18;

/// Which values of a chunk a mask marks: a bool tensor of the chunk's size.
using MaskTest = at::Tensor (*)(const at::Tensor &chunk);

/// `test` of every value of `tensor`, packed 8 per byte in logical order.
at::Tensor packMask(const at::Tensor &tensor, MaskTest test);

/// Values [begin, begin + count) of a packed mask, as bool.
at::Tensor unpackMask(const at::Tensor &bits, int64_t begin, int64_t count);

} // namespace memopt::runtime

#endif // MEMOPT_LIB_RUNTIME_MASKBITS_H
