//===- BitwiseEqual.h - tensors equal bit for bit (runtime tests) -*- C++
//-*-===//
#ifndef MEMOPT_TEST_UNIT_RUNTIME_BITWISEEQUAL_H
#define MEMOPT_TEST_UNIT_RUNTIME_BITWISEEQUAL_H

#include <ATen/ATen.h>

namespace memopt::test {

/// Same shape, same dtype and the same bits (float32, or a 16-bit float).
inline bool bitwiseEqual(const at::Tensor &a, const at::Tensor &b) {
  const at::ScalarType bits =
      a.scalar_type() == at::kFloat ? at::kInt : at::kShort;
  return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() &&
         at::equal(a.contiguous().view(bits), b.contiguous().view(bits));
}

} // namespace memopt::test

#endif // MEMOPT_TEST_UNIT_RUNTIME_BITWISEEQUAL_H
