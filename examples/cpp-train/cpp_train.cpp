// Trains a bundled example from C++, before (the original TorchScript) and
// after memopt (the module memopt_add_model compiled at build time, with its
// launch stubs linked in), from the same weights and inputs:
//   cpp_train spiking_vgg|resnet [steps]
// Prints peak training memory (the runtime's counting allocator, above what
// was live before the step), step time, compression kernel launches per
// step (stubs vs generic kernels), and whether every parameter is bitwise
// equal after the SGD steps. Exit 1 when they are not.
#include "resnet_memopt.h"
#include "spiking_vgg_memopt.h"

#include "memopt/Runtime/LaunchStubs.h"
#include "memopt/Runtime/MemoryStats.h"

#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Example {
  const char *name;
  const char *compiled;
  const char *signature;
  int64_t predictedBaseline, predictedPlanned;
};

struct Measured {
  int64_t peakBytes = 0;
  double stepSeconds = 0;
  int64_t genericLaunches = 0, stubLaunches = 0;
};

/// "x:4x8x2x48x48" -> {4, 8, 2, 48, 48}.
std::vector<int64_t> shapeOf(const std::string &signature) {
  std::vector<int64_t> shape;
  std::stringstream dims(signature.substr(signature.find(':') + 1));
  for (std::string dim; std::getline(dims, dim, 'x');)
    shape.push_back(std::stoll(dim));
  return shape;
}

std::vector<torch::Tensor> parameters(torch::jit::script::Module &module) {
  std::vector<torch::Tensor> result;
  for (const auto &p : module.parameters())
    result.push_back(p);
  return result;
}

/// A warm-up step, then `steps` SGD steps; peak and time of the latter.
Measured train(torch::jit::script::Module &module, const torch::Tensor &x,
               int steps) {
  module.train();
  auto params = parameters(module);
  torch::optim::SGD sgd(params, torch::optim::SGDOptions(0.01).momentum(0.9));
  Measured m;
  double seconds = 0;
  for (int step = 0; step <= steps; ++step) {
    sgd.zero_grad();
    memopt_reset_launch_counts();
    auto before = memopt::runtime::memoryStats();
    memopt::runtime::resetPeakMemoryStats();
    auto start = std::chrono::steady_clock::now();
    torch::manual_seed(7 + step); // dropout and the loss weights
    torch::Tensor out = module.forward({x}).toTensor();
    (out * torch::randn(out.sizes())).sum().backward();
    sgd.step();
    std::chrono::duration<double> took =
        std::chrono::steady_clock::now() - start;
    auto after = memopt::runtime::memoryStats();
    if (step == 0)
      continue; // warm-up
    seconds += took.count();
    m.peakBytes = std::max(m.peakBytes, after.peakBytes - before.currentBytes);
    memopt_launch_counts(&m.genericLaunches, &m.stubLaunches);
  }
  m.stepSeconds = seconds / steps;
  return m;
}

double mib(int64_t bytes) { return bytes / 1048576.0; }

} // namespace

int main(int argc, char **argv) {
  const Example examples[] = {
      {"spiking_vgg", memopt_models::spiking_vgg::kCompiledModule,
       memopt_models::spiking_vgg::kSignatures[0],
       memopt_models::spiking_vgg::kBaselinePeakBytes[0],
       memopt_models::spiking_vgg::kPlannedPeakBytes[0]},
      {"resnet", memopt_models::resnet::kCompiledModule,
       memopt_models::resnet::kSignatures[0],
       memopt_models::resnet::kBaselinePeakBytes[0],
       memopt_models::resnet::kPlannedPeakBytes[0]},
  };
  const Example *example = nullptr;
  for (const Example &e : examples)
    if (argc >= 2 && std::strcmp(argv[1], e.name) == 0)
      example = &e;
  if (!example || argc > 3) {
    std::fprintf(stderr, "usage: cpp_train spiking_vgg|resnet [steps]\n");
    return 2;
  }
  const int steps = argc == 3 ? std::max(1, std::atoi(argv[2])) : 3;

  // Dropout masks redrawn by the profiling executor from a function's second
  // call on would differ between the two modules: run them unoptimized.
  torch::jit::setGraphExecutorOptimize(false);
  at::set_num_threads(1);
  memopt::runtime::enableMemoryStats();
  const std::string original =
      std::string(ORIGINAL_DIR) + "/" + example->name + ".pt";
  torch::jit::script::Module eager = torch::jit::load(original);
  torch::jit::script::Module compiled = torch::jit::load(example->compiled);

  torch::manual_seed(1);
  // Binary inputs: spikes for the spiking VGG, any image for the ResNet.
  torch::Tensor x =
      (torch::rand(shapeOf(example->signature)) > 0.7).to(torch::kFloat);
  Measured before = train(eager, x, steps);
  Measured after = train(compiled, x, steps);

  auto a = parameters(eager), b = parameters(compiled);
  bool bitwise = a.size() == b.size();
  for (size_t i = 0; bitwise && i < a.size(); ++i)
    bitwise = a[i].sizes() == b[i].sizes() && torch::equal(a[i], b[i]);

  std::printf("%s %s: %d SGD steps after a warm-up, 1 thread, %lld launch "
              "stub sites\n",
              example->name, example->signature, steps,
              (long long)memopt_launch_stub_sites());
  std::printf("  %-22s %12s %12s %26s\n", "", "peak memory", "step time",
              "compression launches/step");
  std::printf("  %-22s %8.1f MiB %9.1f ms %26s\n", "original .pt",
              mib(before.peakBytes), before.stepSeconds * 1e3, "-");
  std::printf("  %-22s %8.1f MiB %9.1f ms %12lld stub, %lld generic\n",
              "memopt (build time)", mib(after.peakBytes),
              after.stepSeconds * 1e3, (long long)after.stubLaunches,
              (long long)after.genericLaunches);
  std::printf("  peak reduction %.2fx (predicted %.1f -> %.1f MiB, %.2fx)\n",
              double(before.peakBytes) / std::max<int64_t>(after.peakBytes, 1),
              mib(example->predictedBaseline), mib(example->predictedPlanned),
              double(example->predictedBaseline) /
                  std::max<int64_t>(example->predictedPlanned, 1));
  std::printf("  measured peak original %lld compiled %lld\n",
              (long long)before.peakBytes, (long long)after.peakBytes);
  std::printf("  parameters %zu bitwise %s\n", a.size(),
              bitwise ? "equal" : "DIFFERENT");
  return bitwise ? 0 : 1;
}
