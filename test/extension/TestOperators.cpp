//===- TestOperators.cpp - a model's own operators, for the tests ---------===//
//
// A library of the kind teams bring: a C++ extension that registers its
// operators with TORCH_LIBRARY and is loaded with torch.ops.load_library.
// memopt-compile --load-library and memopt.wrap must import, price, plan,
// check and train models that call it (test_operator_libraries.py,
// test/Compile/operator-libraries.test). It links LibTorch only.
//
//   memopt_test::scale(Tensor x) -> Tensor
//       2 * x, composite: autograd sees the multiplication.
//   memopt_test::soft_clip(Tensor x, float limit) -> Tensor
//       limit * tanh(x / limit), with its own backward: it saves only its
//       result, and its forward allocates two temporaries the size of x,
//       so that the memory model is right only if the kernel probe ran it.
//   memopt_test::accumulate(Tensor(a!) acc, Tensor x) -> Tensor(a!)
//       acc += x in place, composite.
//
//===----------------------------------------------------------------------===//
#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class SoftClip : public torch::autograd::Function<SoftClip> {
public:
  static at::Tensor forward(AutogradContext *context, const at::Tensor &x,
                            double limit) {
    at::Tensor scaled = x / limit;
    at::Tensor bent = at::tanh(scaled);
    at::Tensor result = bent * limit;
    context->save_for_backward({result});
    context->saved_data["limit"] = limit;
    return result;
  }

  static variable_list backward(AutogradContext *context,
                                variable_list outputGrads) {
    double limit = context->saved_data["limit"].toDouble();
    at::Tensor bent = context->get_saved_variables()[0] / limit;
    return {outputGrads[0] * (1 - bent * bent), at::Tensor()};
  }
};

at::Tensor scale(const at::Tensor &x) { return x * 2.0; }

at::Tensor softClip(const at::Tensor &x, double limit) {
  return SoftClip::apply(x, limit);
}

at::Tensor accumulate(at::Tensor acc, const at::Tensor &x) {
  return acc.add_(x);
}

} // namespace

TORCH_LIBRARY(memopt_test, library) {
  library.def("scale(Tensor x) -> Tensor", &scale);
  library.def("soft_clip(Tensor x, float limit) -> Tensor", &softClip);
  library.def("accumulate(Tensor(a!) acc, Tensor x) -> Tensor(a!)",
              &accumulate);
}
