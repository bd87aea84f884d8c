//===- RecurrentProbe.cpp - run a recurrent layer stack, count its memory -===//
//
// Runs aten::lstm / gru / rnn_* forward with autograd recording, as
// training does, and reads the counting allocator: the peak, what stays
// allocated besides the results (what autograd keeps), and which operands
// the graph holds on to (dropping the probe's own handle frees them only
// when it does not). Then the backward from the output sequence.
//
//===----------------------------------------------------------------------===//
#include "ProbeSupport.h"
#include "RecurrentCall.h"

#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/autograd.h>

#include <set>
#include <sstream>

using namespace ::memopt::probe;

std::string RecurrentCall::key() const {
  std::ostringstream os;
  auto list = [&](const std::vector<int64_t> &values) {
    writeKeyList(os, values);
  };
  // "rnn:" keeps these keys apart from the convolutions' in the cache.
  os << "rnn:" << static_cast<int>(form) << ':' << static_cast<int>(element)
     << ':';
  list(input);
  if (transposedInput)
    os << "T";
  for (const std::vector<int64_t> &shape : hidden)
    list(shape);
  os << '|';
  for (const std::vector<int64_t> &shape : params)
    list(shape);
  os << hasBiases << ':' << numLayers << ':' << dropout << ':' << train << ':'
     << bidirectional << ':' << batchFirst << ':' << gradMask << ':' << threads;
  return os.str();
}

static std::vector<at::Tensor> run(const RecurrentCall &call,
                                   const at::Tensor &input,
                                   const std::vector<at::Tensor> &hidden,
                                   const std::vector<at::Tensor> &params) {
  auto args = [&](auto fn, const auto &hx) {
    return fn(input, hx, params, call.hasBiases, call.numLayers, call.dropout,
              call.train, call.bidirectional, call.batchFirst);
  };
  switch (call.form) {
  case RecurrentForm::LSTM: {
    auto [output, h, c] = args([](auto &&...a) { return at::lstm(a...); },
                               at::TensorList(hidden));
    return {output, h, c};
  }
  case RecurrentForm::GRU: {
    auto [output, h] =
        args([](auto &&...a) { return at::gru(a...); }, hidden.at(0));
    return {output, h};
  }
  case RecurrentForm::RNNTanh: {
    auto [output, h] =
        args([](auto &&...a) { return at::rnn_tanh(a...); }, hidden.at(0));
    return {output, h};
  }
  case RecurrentForm::RNNReLU: {
    auto [output, h] =
        args([](auto &&...a) { return at::rnn_relu(a...); }, hidden.at(0));
    return {output, h};
  }
  }
  TORCH_CHECK(false, "memopt: unknown recurrent form");
}

/// Bytes of the distinct storages of `tensors`.
static int64_t getStorageBytes(const std::vector<at::Tensor> &tensors) {
  std::set<const void *> seen;
  int64_t bytes = 0;
  for (const at::Tensor &t : tensors)
    if (t.defined() && seen.insert(t.storage().data()).second)
      bytes += t.storage().nbytes();
  return bytes;
}

namespace memopt::probe {
KernelMarks measureRecurrent(const RecurrentCall &call) {
  ::memopt::runtime::enableMemoryStats();
  ThreadCountScope threads(call.threads);
  at::TensorOptions options =
      at::TensorOptions().dtype(getScalarType(call.element));
  bool inputGrad = call.gradMask & 1, paramGrad = call.gradMask & 2;

  // Small values keep the gates away from saturation; values choose no
  // kernel. A tensor that requires grad is a non-leaf (as in training,
  // where it comes out of an embedding or a layer): a leaf is held by its
  // AccumulateGrad node whatever the op keeps.
  std::vector<int64_t> stored = call.input;
  if (call.transposedInput)
    std::swap(stored.at(0), stored.at(1));
  at::Tensor inputLeaf = at::full(stored, 0.01, options);
  if (inputGrad)
    inputLeaf.requires_grad_(true);
  at::Tensor input = inputGrad ? inputLeaf * 1 : inputLeaf;
  if (call.transposedInput)
    input = input.transpose(0, 1);
  inputLeaf = at::Tensor(); // the non-leaf's graph keeps it alive
  std::vector<at::Tensor> hidden;
  for (const std::vector<int64_t> &shape : call.hidden)
    hidden.push_back(at::zeros(shape, options));
  std::vector<at::Tensor> params;
  for (const std::vector<int64_t> &shape : call.params)
    params.push_back(at::full(shape, 0.01, options).requires_grad_(paramGrad));

  // Owners of each storage before the call (a view and its base are two).
  auto owners = [](const at::Tensor &t) {
    return t.defined() ? static_cast<int64_t>(t.storage().use_count())
                       : int64_t(0);
  };
  int64_t inputOwners = owners(input);
  std::vector<int64_t> hiddenOwners;
  for (const at::Tensor &state : hidden)
    hiddenOwners.push_back(owners(state));

  KernelMarks marks;
  c10::AutoGradMode grad(inputGrad || paramGrad);
  int64_t before = getLiveBytes();
  std::vector<at::Tensor> outputs;
  marks.forward =
      measurePeak([&] { outputs = run(call, input, hidden, params); });
  if (!(inputGrad || paramGrad))
    return marks;
  marks.saved = getLiveBytes() - before - getStorageBytes(outputs);

  // What the graph keeps of the input and the initial states: their
  // storages gained owners (saved variables, saved views).
  marks.retained = 0;
  if (owners(input) > inputOwners)
    marks.retained |= kRecurrentInput;
  for (size_t k = 0; k < hidden.size(); ++k)
    if (owners(hidden[k]) > hiddenOwners[k])
      marks.retained |= kRecurrentHidden;

  // Gradients of the input as the layer below receives them (the
  // non-leaf), not through the probe's own `* 1`.
  std::vector<at::Tensor> wrt;
  if (inputGrad)
    wrt.push_back(input);
  if (paramGrad)
    wrt.insert(wrt.end(), params.begin(), params.end());
  // The engine frees the output's gradient once the stack's first node has
  // consumed it (as in training, where it comes from the layer above), so
  // it reaches the stack through one `* 1` whose gradient the engine owns;
  // that buffer is live before the stack's backward in the model, hence
  // not counted here.
  at::Tensor scaled = outputs[0] * 1;
  at::Tensor scaledGrad = at::ones_like(scaled);
  int64_t incoming = getStorageBytes({scaled});
  std::vector<at::Tensor> grads;
  marks.backward[call.gradMask] =
      measurePeak([&] {
        grads = torch::autograd::grad({scaled}, wrt, {scaledGrad},
                                      /*retain_graph=*/false,
                                      /*create_graph=*/false,
                                      /*allow_unused=*/true);
      }) -
      incoming;
  return marks;
}
} // namespace memopt::probe
