//===- ConvolutionCall.cpp - a convolution call's key ---------------------===//
//
// Plain C++: the CPU probe (LibTorch) and the marks measured on a GPU
// (MLIR only) key their measurements the same way.
//
//===----------------------------------------------------------------------===//
#include "ConvolutionCall.h"

#include <sstream>

using namespace ::memopt::probe;

std::string ConvolutionCall::key() const {
  std::ostringstream os;
  auto list = [&](const std::vector<int64_t> &values) {
    writeKeyList(os, values);
  };
  os << static_cast<int>(form) << ':' << static_cast<int>(element) << ':';
  list(input);
  list(weight);
  os << bias;
  list(stride);
  list(padding);
  list(dilation);
  list(outputPadding);
  os << paddingMode << ':' << transposed << ':' << groups << ':' << threads;
  // Contiguous calls keep the keys earlier caches wrote.
  if (channelsLastInput)
    os << ":channels_last";
  return os.str();
}
