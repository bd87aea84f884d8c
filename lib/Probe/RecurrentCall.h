//===- RecurrentCall.h - one recurrent layer stack as the probe runs it -*- C++
//-*-===//
//
// aten::lstm / gru / rnn_tanh / rnn_relu run a whole stack of layers over a
// whole sequence in one call. What autograd keeps for them depends on the
// PyTorch release and the kernel it picks (on the CPU, PyTorch 1.13 records
// every gate of every step as separate autograd nodes; 2.x may run oneDNN's
// fused layer, which keeps a workspace): no per-operator table row can say
// it. The probe runs the call at its static shapes and measures it. Plain
// C++, shared by the IR side and the LibTorch side.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_PROBE_RECURRENTCALL_H
#define MEMOPT_LIB_PROBE_RECURRENTCALL_H

#include "KernelMarks.h"

#include <cstdint>
#include <string>
#include <vector>

namespace memopt::probe {

enum class RecurrentForm { LSTM, GRU, RNNTanh, RNNReLU };

/// Operand groups of a recurrent call (the bits of KernelMarks::retained).
enum RecurrentOperand : unsigned {
  kRecurrentInput = 1u << 0,  // the input sequence
  kRecurrentHidden = 1u << 1, // the initial hidden (and cell) states
};

struct RecurrentCall {
  RecurrentForm form = RecurrentForm::LSTM;
  ElementKind element = ElementKind::F32;
  std::vector<int64_t> input;
  /// The input is a transpose of its two leading dims (a batch-first
  /// sequence viewed time-major): kernels that need it contiguous copy it.
  bool transposedInput = false;
  std::vector<std::vector<int64_t>> hidden; // h0 (and c0 for LSTM)
  std::vector<std::vector<int64_t>> params; // in the op's order
  bool hasBiases = true;
  int64_t numLayers = 1;
  double dropout = 0;
  bool train = true;
  bool bidirectional = false;
  bool batchFirst = false;
  /// Gradients training asks for: bit 0 the input, bit 1 the parameters.
  unsigned gradMask = 0;
  int threads = 1;

  /// Everything above, as a key for reusing a measurement.
  std::string key() const;
};

/// Runs the call's forward with the gradients of `gradMask` enabled and,
/// when it records a graph, its backward from output 0. Fills `forward`
/// (the peak above what was live before, counting results and what is
/// kept for backward), `saved`, `retained` and `backward[gradMask]`.
/// Throws what PyTorch throws.
KernelMarks measureRecurrent(const RecurrentCall &call);

} // namespace memopt::probe

#endif // MEMOPT_LIB_PROBE_RECURRENTCALL_H
