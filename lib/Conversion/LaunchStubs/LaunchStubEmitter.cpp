//===- LaunchStubEmitter.cpp - Planned module -> launch stubs source ------===//
//
// Collects the plan sites of a planned module (checkpoint regions that save
// binary inputs packed, layers that keep their binary input packed) and
// writes one launcher pair per site: host loops always, fused CUDA kernels
// under __CUDACC__. Every size is a constant of the generated source:
// element counts as template arguments, the CUDA grid as a literal.
//
//===----------------------------------------------------------------------===//
#include "OffloadStubs.h"

#include "memopt/Conversion/LaunchStubs.h"
#include "memopt/Runtime/PackedFormat.h"

#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Dialect/MemoptAttrs.h"
#include "memopt/Dialect/MemoptDialect.h"
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Planning/FunctionChain.h"
#include "memopt/Runtime/LaunchStubs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <string>
#include <vector>

using namespace mlir;
using namespace mlir::memopt;

namespace {

/// Values one CUDA block handles (the runtime contract, LaunchStubs.h).
constexpr int64_t kStubTile = MEMOPT_STUB_TILE;
/// Tensors one fused launch takes (its by-value kernel argument grows with
/// them); a site with more uses the generic kernels.
constexpr size_t kMaxSiteTensors = 64;

struct StubTensor {
  std::string what; // "input 3: tensor<8x16xf32>"
  int64_t numel = 0;
  const char *dtype = "";   // MEMOPT_STUB_F32 ...
  const char *element = ""; // F32, F16, BF16
  bool bit = true;          // else bool
  int64_t blocks() const { return (numel + kStubTile - 1) / kStubTile; }
};

struct StubSite {
  std::string name;
  bool region = true;
  std::vector<StubTensor> tensors;
  std::string skipped; // why the site uses the generic kernels, if it does
};

} // namespace

std::string mlir::memopt::stubCString(StringRef text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += llvm::formatv("\\{0:o3}", static_cast<unsigned>(c)).str();
      continue;
    }
    out += c;
  }
  return out + "\"";
}

namespace {
using mlir::memopt::stubCString;

/// Fills `tensor` from a value's type, or fails naming `site`.
LogicalResult describeTensor(Operation *op, const Twine &site,
                             const Twine &role, Type type, CompressionKind kind,
                             StubTensor &tensor) {
  std::string typeText;
  llvm::raw_string_ostream(typeText) << type;
  tensor.what = (role + ": " + typeText).str();
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked || !ranked.hasStaticShape())
    return op->emitError("cannot emit launch stubs for ")
           << site << ": " << tensor.what
           << " has no static shape; launch stubs need static sizes (compile "
              "with --input-shape or --spec)";
  Type element = ranked.getElementType();
  if (element.isF32()) {
    tensor.dtype = "MEMOPT_STUB_F32";
    tensor.element = "F32";
  } else if (element.isF16()) {
    tensor.dtype = "MEMOPT_STUB_F16";
    tensor.element = "F16";
  } else if (element.isBF16()) {
    tensor.dtype = "MEMOPT_STUB_BF16";
    tensor.element = "BF16";
  } else {
    return op->emitError("cannot emit launch stubs for ")
           << site << ": " << tensor.what
           << " is not float32, float16 or bfloat16";
  }
  tensor.numel = ranked.getNumElements();
  tensor.bit = kind == CompressionKind::bit;
  return success();
}

bool stubKind(CompressionKind kind) {
  return kind == CompressionKind::bit || kind == CompressionKind::bool_;
}

LogicalResult collectRegion(CheckpointOp region, std::vector<StubSite> &sites) {
  StubSite site;
  site.name = region.getLabel().str();
  std::string what = ("region '" + region.getLabel() + "'").str();
  for (auto [index, policy] : llvm::enumerate(region.getPolicies())) {
    auto compress = dyn_cast<CompressPolicyAttr>(policy);
    if (!compress)
      continue;
    if (!stubKind(compress.getKind())) {
      site.skipped = llvm::formatv("input {0} is saved as {1}", index,
                                   stringifyCompressionKind(compress.getKind()))
                         .str();
      continue;
    }
    StubTensor tensor;
    if (failed(describeTensor(region, what, "input " + Twine(index),
                              region.getInputs()[index].getType(),
                              compress.getKind(), tensor)))
      return failure();
    site.tensors.push_back(std::move(tensor));
  }
  if (site.tensors.empty() && site.skipped.empty())
    return success(); // nothing packed
  if (site.tensors.size() > kMaxSiteTensors)
    site.skipped = llvm::formatv("it packs {0} tensors, a fused launch at most "
                                 "{1}",
                                 site.tensors.size(), kMaxSiteTensors)
                       .str();
  sites.push_back(std::move(site));
  return success();
}

LogicalResult collectLayer(TorchOp op, std::vector<StubSite> &sites) {
  CompressPolicyAttr saved = op.getSavedInputAttr();
  if (!saved || !stubKind(saved.getKind()) || op->getNumOperands() == 0)
    return success(); // the exporter reports the forms it cannot write
  StubSite site;
  site.region = false;
  std::string path = getModulePath(op);
  site.name = path.empty() ? op.getName().str()
                           : (path + " (" + op.getName() + ")").str();
  StubTensor tensor;
  if (failed(describeTensor(op, "'" + site.name + "'", "operand 0",
                            op->getOperand(0).getType(), saved.getKind(),
                            tensor)))
    return failure();
  site.tensors.push_back(std::move(tensor));
  sites.push_back(std::move(site));
  return success();
}

class StubWriter {
public:
  StubWriter(llvm::raw_ostream &os, StringRef model) : os(os), model(model) {}

  void write(ArrayRef<StubSite> sites,
             const std::vector<OffloadStubSite> &offloadSites) {
    writePreamble(sites, offloadSites);
    size_t next = 0;
    for (const StubSite &site : sites)
      if (site.skipped.empty())
        writeSite(next++, site);
    writeRegistration(sites);
    writeOffloadSites(os, offloadSites, model);
    os << "} // namespace\n";
  }

private:
  void writePreamble(ArrayRef<StubSite> sites,
                     const std::vector<OffloadStubSite> &offloadSites) {
    size_t stubbed = llvm::count_if(
        sites, [](const StubSite &s) { return s.skipped.empty(); });
    size_t offloads = llvm::count_if(
        offloadSites, [](const auto &s) { return s.skipped.empty(); });
    os << "// Launch stubs of model " << stubCString(model)
       << ", generated by memopt from its planned IR: " << stubbed
       << " site(s) with one pack and one unpack launcher each";
    if (offloads)
      os << ", " << offloads
         << " offload site(s) with one launcher out and one back";
    os << ".\n"
       << "// Compile as C++ for the host launchers, or with nvcc -x cu for "
          "the host and CUDA ones;\n"
       << "// loading the result registers them with libmemopt_runtime "
          "(docs/launch-stubs.md).\n"
       << "#include \"memopt/Runtime/LaunchStubHost.h\"\n"
       << "#include \"memopt/Runtime/LaunchStubs.h\"\n"
       << "#ifdef __CUDACC__\n"
       << "#include \"memopt/Runtime/LaunchStubDevice.cuh\"\n"
       << "#endif\n\n"
       << "namespace {\nusing namespace memopt_stubs;\n";
    for (const StubSite &site : sites)
      if (!site.skipped.empty())
        os << "\n// " << (site.region ? "region " : "layer ")
           << stubCString(site.name)
           << " uses the generic kernels: " << site.skipped << "\n";
  }

  void writeSite(size_t index, const StubSite &site) {
    const std::string id = "site" + std::to_string(index);
    const size_t count = site.tensors.size();
    os << "\n// " << id << ": " << (site.region ? "region " : "layer ")
       << stubCString(site.name) << ", " << count << " tensor(s)\n";
    for (const StubTensor &t : site.tensors)
      os << "//   " << t.what << " as " << (t.bit ? "bit" : "bool") << ", "
         << t.numel << " values -> "
         << ::memopt::packed::maxPayloadBytes(
                t.bit ? ::memopt::packed::Kind::Bit
                      : ::memopt::packed::Kind::Bool,
                t.numel)
         << " bytes\n";
    os << "constexpr memopt_stub_tensor " << id << "Tensors[] = {";
    for (auto [i, t] : llvm::enumerate(site.tensors))
      os << (i ? ", " : "") << "{" << t.numel << ", " << t.dtype << ", "
         << (t.bit ? "MEMOPT_STUB_BIT" : "MEMOPT_STUB_BOOL") << "}";
    os << "};\n\n";

    // Host: the element loops, sizes as template arguments.
    os << "int " << id
       << "HostPack(const void *const *in, void *const *out, int64_t *first, "
          "void *) {\n  if (first) {\n";
    for (auto [i, t] : llvm::enumerate(site.tensors))
      os << "    first[" << i << "] = hostFirstInvalid<" << t.element << ", "
         << t.numel << ">(in[" << i << "]);\n";
    os << "  }\n";
    for (auto [i, t] : llvm::enumerate(site.tensors))
      os << "  " << (t.bit ? "hostBitPack<" : "hostBoolPack<") << t.element
         << ", " << t.numel << ">(in[" << i << "], out[" << i << "]);\n";
    os << "  return 0;\n}\n\n";
    os << "int " << id
       << "HostUnpack(const void *const *in, void *const *out, void *) {\n";
    for (auto [i, t] : llvm::enumerate(site.tensors))
      os << "  " << (t.bit ? "hostBitUnpack<" : "hostBoolUnpack<") << t.element
         << ", " << t.numel << ">(in[" << i << "], out[" << i << "]);\n";
    os << "  return 0;\n}\n";

    writeCudaSite(id, site);
  }

  void writeCudaSite(const std::string &id, const StubSite &site) {
    const size_t count = site.tensors.size();
    int64_t grid = 0;
    for (const StubTensor &t : site.tensors)
      grid += t.blocks();
    os << "\n#ifdef __CUDACC__\n";
    for (bool packing : {true, false}) {
      os << "// grid: ";
      for (auto [i, t] : llvm::enumerate(site.tensors))
        os << (i ? " + " : "") << t.blocks();
      os << " = " << grid << " block(s) of " << MEMOPT_STUB_THREADS
         << " threads\n";
      os << "__global__ void __launch_bounds__(kStubThreads) " << id
         << (packing ? "Pack" : "Unpack") << "Kernel(StubArgs<" << count
         << "> a) {\n  const long long block = blockIdx.x;\n";
      int64_t start = 0;
      for (auto [i, t] : llvm::enumerate(site.tensors)) {
        int64_t end = start + t.blocks();
        if (t.blocks() > 0) {
          os << "  if (block < " << end << ")\n    return ";
          std::string form = t.bit ? "Bit" : "Bool";
          if (packing)
            os << "stub" << form << "PackTile<" << t.element << ", " << t.numel
               << ">(a.in[" << i << "], a.out[" << i << "], block - " << start
               << ", a.firstInvalid ? a.firstInvalid + " << i
               << " : nullptr);\n";
          else
            os << "stub" << form << "UnpackTile<" << t.element << ", "
               << t.numel << ">(a.in[" << i << "], a.out[" << i << "], block - "
               << start << ");\n";
        }
        start = end;
      }
      os << "}\n\n";
    }
    // Launchers: one kernel launch each (plus, for a checked pack, the
    // memset that starts every slot above any index).
    os << "int " << id
       << "CudaPack(const void *const *in, void *const *out, int64_t *first, "
          "void *stream) {\n  StubArgs<"
       << count << "> a;\n  for (int i = 0; i < " << count
       << "; ++i) {\n    a.in[i] = in[i];\n    a.out[i] = out[i];\n  }\n"
       << "  a.firstInvalid = reinterpret_cast<long long *>(first);\n"
       << "  cudaStream_t s = static_cast<cudaStream_t>(stream);\n"
       << "  if (first) {\n    cudaError_t err = cudaMemsetAsync(first, 0x7F, "
       << count << " * sizeof(int64_t), s);\n    if (err != cudaSuccess)\n"
       << "      return err;\n  }\n";
    if (grid > 0)
      os << "  " << id << "PackKernel<<<" << grid
         << ", kStubThreads, 0, s>>>(a);\n";
    os << "  return cudaGetLastError();\n}\n\n";
    os << "int " << id
       << "CudaUnpack(const void *const *in, void *const *out, void *stream) "
          "{\n  StubArgs<"
       << count << "> a;\n  for (int i = 0; i < " << count
       << "; ++i) {\n    a.in[i] = in[i];\n    a.out[i] = out[i];\n  }\n"
       << "  a.firstInvalid = nullptr;\n";
    if (grid > 0)
      os << "  " << id << "UnpackKernel<<<" << grid
         << ", kStubThreads, 0, static_cast<cudaStream_t>(stream)>>>(a);\n";
    os << "  return cudaGetLastError();\n}\n#endif // __CUDACC__\n";
  }

  void writeRegistration(ArrayRef<StubSite> sites) {
    os << "\nconst memopt_stub_site kSites[] = {\n";
    bool any = false;
    for (bool cuda : {false, true}) {
      if (cuda)
        os << "#ifdef __CUDACC__\n";
      size_t next = 0;
      for (const StubSite &site : sites) {
        if (!site.skipped.empty())
          continue;
        any = true;
        const std::string id = "site" + std::to_string(next++);
        const char *device = cuda ? "MEMOPT_STUB_CUDA" : "MEMOPT_STUB_HOST";
        const char *prefix = cuda ? "Cuda" : "Host";
        os << "    {" << stubCString(site.name) << ", "
           << (site.region ? "MEMOPT_STUB_REGION" : "MEMOPT_STUB_LAYER") << ", "
           << device << ", " << site.tensors.size() << ", " << id << "Tensors, "
           << id << prefix << "Pack, " << id << prefix << "Unpack, 1},\n";
      }
      if (cuda)
        os << "#endif\n";
    }
    if (!any)
      os << "    {\"\", MEMOPT_STUB_REGION, MEMOPT_STUB_HOST, 0, nullptr, "
            "nullptr, nullptr, 0},\n";
    os << "};\n\n"
       << "struct Registrar {\n  Registrar() {\n"
       << "    memopt_register_launch_stubs(MEMOPT_LAUNCH_STUBS_ABI, "
       << stubCString(model) << ", kSites, "
       << (any ? "sizeof(kSites) / sizeof(kSites[0])" : "0") << ");\n"
       << "  }\n} registrar;\n";
  }

  llvm::raw_ostream &os;
  StringRef model;
};

} // namespace

std::string mlir::memopt::defaultLaunchStubsModel(ModuleOp module) {
  auto source = module->getAttrOfType<StringAttr>(kSourceAttrName);
  StringRef stem = source ? llvm::sys::path::stem(source.getValue()) : "";
  return stem.empty() ? "model" : stem.str();
}

LogicalResult mlir::memopt::emitLaunchStubs(ModuleOp module, StringRef model,
                                            llvm::raw_ostream &os) {
  std::vector<StubSite> sites;
  std::vector<OffloadStubSite> offloadSites;
  // Pre-order: a region's site before those of the layers inside it.
  WalkResult walk = module.walk<WalkOrder::PreOrder>([&](Operation *op) {
    LogicalResult collected = success();
    if (auto region = dyn_cast<CheckpointOp>(op))
      collected = succeeded(collectRegion(region, sites)) &&
                          succeeded(collectOffloadSite(region, offloadSites))
                      ? success()
                      : failure();
    else if (auto torchOp = dyn_cast<TorchOp>(op))
      collected = collectLayer(torchOp, sites);
    return failed(collected) ? WalkResult::interrupt() : WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  StubWriter(os, model).write(sites, offloadSites);
  return success();
}

void mlir::memopt::registerLaunchStubsTranslation() {
  static llvm::cl::opt<std::string> stubsModel(
      "launch-stubs-model",
      llvm::cl::desc("Model name in the launch stubs (default: the module's "
                     "memopt.source file stem, or 'model')"),
      llvm::cl::init(""));
  TranslateFromMLIRRegistration registration(
      "emit-launch-stubs",
      "write the launch stubs (host + CUDA launchers) of a planned module",
      [](Operation *op, llvm::raw_ostream &output) -> LogicalResult {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitError("expected a builtin.module");
        std::string model = stubsModel;
        if (model.empty())
          model = defaultLaunchStubsModel(module);
        return emitLaunchStubs(module, model, output);
      },
      [](DialectRegistry &registry) {
        registry.insert<MemoptDialect, func::FuncDialect>();
      });
}
