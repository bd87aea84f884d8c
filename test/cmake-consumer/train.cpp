// Trains the original model and its memopt-compiled module from the same
// state for a few SGD steps in C++ and compares the parameters bit for bit;
// prints the peaks the runtime's counting allocator measured and the ones
// memopt predicted (MEMOPT_MODEL_HEADER, generated at build time for the
// memopt_add_model target MEMOPT_MODEL).
//   train <original.pt> <N,C,H,W>
#include MEMOPT_MODEL_HEADER

#include "memopt/Runtime/MemoryStats.h"

#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace model = memopt_models::MEMOPT_MODEL;

namespace {

std::vector<torch::Tensor> parameters(torch::jit::script::Module &module) {
  std::vector<torch::Tensor> result;
  for (const auto &p : module.parameters())
    result.push_back(p);
  return result;
}

/// Three SGD steps on fixed inputs; returns the highest step peak.
int64_t train(torch::jit::script::Module &module, const torch::Tensor &x) {
  module.train();
  auto params = parameters(module);
  torch::optim::SGD sgd(params, torch::optim::SGDOptions(0.05).momentum(0.9));
  int64_t peak = 0;
  for (int step = 0; step < 3; ++step) {
    sgd.zero_grad();
    auto before = memopt::runtime::memoryStats();
    memopt::runtime::resetPeakMemoryStats();
    torch::Tensor out = module.forward({x}).toTensor();
    torch::manual_seed(7);
    (out * torch::randn(out.sizes())).sum().backward();
    auto after = memopt::runtime::memoryStats();
    if (step > 0)
      peak = std::max(peak, after.peakBytes - before.currentBytes);
    sgd.step();
  }
  return peak;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: train <original.pt> <N,C,H,W>\n");
    return 2;
  }
  std::vector<int64_t> shape;
  std::stringstream dims(argv[2]);
  for (std::string dim; std::getline(dims, dim, ',');)
    shape.push_back(std::stoll(dim));
  // Train with the threads the plan was made for: they pick the kernels.
  if (model::kIntraOpThreads > 0)
    at::set_num_threads(model::kIntraOpThreads);
  torch::manual_seed(1);
  torch::Tensor x = torch::randn(shape);

  // As memopt's Python comparisons do: the profiling executor would redraw
  // dropout masks from a function's second call on.
  torch::jit::setGraphExecutorOptimize(false);
  memopt::runtime::enableMemoryStats();
  torch::jit::script::Module original = torch::jit::load(argv[1]);
  torch::jit::script::Module compiled =
      torch::jit::load(model::kCompiledModule);
  int64_t originalPeak = train(original, x);
  int64_t compiledPeak = train(compiled, x);

  auto a = parameters(original), b = parameters(compiled);
  bool bitwise = a.size() == b.size();
  for (size_t i = 0; bitwise && i < a.size(); ++i)
    bitwise = a[i].sizes() == b[i].sizes() && torch::equal(a[i], b[i]);
  std::printf("signature %s\n", model::kSignatures[0]);
  std::printf("intra-op threads %d\n", at::get_num_threads());
  std::printf("parameters %zu bitwise %d\n", a.size(), bitwise ? 1 : 0);
  std::printf("measured peak original %lld compiled %lld\n",
              (long long)originalPeak, (long long)compiledPeak);
  std::printf("predicted peak baseline %lld planned %lld\n",
              (long long)model::kBaselinePeakBytes[0],
              (long long)model::kPlannedPeakBytes[0]);
  return bitwise ? 0 : 1;
}
