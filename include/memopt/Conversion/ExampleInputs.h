//===- ExampleInputs.h - A tensor made from a shape alone --------*- C++
//-*-===//
//
// The importer evaluates a method on example inputs of the specs' shapes, and
// the exporter's forward check runs the compiled module on such inputs: one
// rule for both. Only code that links LibTorch includes this header.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_CONVERSION_EXAMPLEINPUTS_H
#define MEMOPT_CONVERSION_EXAMPLEINPUTS_H

#include <ATen/ATen.h>

namespace mlir::memopt {

/// Random floats in [0, 1) (from the default generator), zero integers:
/// valid indices, no all-zero distributions.
inline at::Tensor makeExampleInput(at::IntArrayRef sizes,
                                   at::ScalarType dtype) {
  return at::isFloatingType(dtype)
             ? at::rand(sizes, at::TensorOptions(at::kFloat)).to(dtype)
             : at::zeros(sizes, at::TensorOptions(dtype));
}

} // namespace mlir::memopt

#endif // MEMOPT_CONVERSION_EXAMPLEINPUTS_H
