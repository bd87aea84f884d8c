//===- LaunchStubs.h - Per-model launchers, C ABI ---------------*- C++ -*-===//
//
// The contract between the launch stubs memopt-compile --emit-stubs writes
// for one planned model and the runtime that calls them. A stubs source
// holds, per plan site (a checkpoint region that saves binary inputs packed,
// or a layer that keeps its binary input packed), one launcher that packs
// every binary tensor of the site at once and one that unpacks them, with
// element counts fixed at compile time. Loading the compiled stubs registers
// them (a static initializer calls memopt_register_launch_stubs); from then
// on the runtime calls a site's launcher wherever the tensors it is about to
// pack match the site exactly (count, element counts, dtypes, kinds, device,
// contiguous), and the generic compression kernels everywhere else.
//
// Plain C: the generated sources need neither LibTorch nor CUDA headers for
// the host launchers (docs/launch-stubs.md).
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_RUNTIME_LAUNCHSTUBS_H
#define MEMOPT_RUNTIME_LAUNCHSTUBS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Layout version of the structs below; a stubs library built against
/// another version is refused at registration.
#define MEMOPT_LAUNCH_STUBS_ABI 1

/// CUDA geometry of a fused launch, shared by the emitter (which writes the
/// grid size into the source) and LaunchStubDevice.cuh: blocks of
/// MEMOPT_STUB_THREADS threads, each block packing or unpacking
/// MEMOPT_STUB_TILE values of one tensor.
#define MEMOPT_STUB_THREADS 256
#define MEMOPT_STUB_TILE (32 * MEMOPT_STUB_THREADS)

enum memopt_stub_dtype {
  MEMOPT_STUB_F32 = 0,
  MEMOPT_STUB_F16 = 1,
  MEMOPT_STUB_BF16 = 2,
};

/// The packed formats of docs/runtime-compression.md.
enum memopt_stub_kind {
  MEMOPT_STUB_BIT = 0,  // (numel + 7) / 8 bytes, element i = bit i % 8
  MEMOPT_STUB_BOOL = 1, // numel bytes, 0 or 1
};

enum memopt_stub_device {
  MEMOPT_STUB_HOST = 0, // launchers run on the calling thread
  MEMOPT_STUB_CUDA = 1, // launchers enqueue on `stream` (a cudaStream_t)
};

/// How the runtime finds a site: a region by its name and tensors, a layer
/// by its tensors alone (layer ops carry no name; a launcher depends only on
/// what it packs, so any site with the same tensors is the same launcher).
enum memopt_stub_site_kind {
  MEMOPT_STUB_REGION = 0,
  MEMOPT_STUB_LAYER = 1,
};

typedef struct memopt_stub_tensor {
  int64_t numel;
  int32_t dtype; // memopt_stub_dtype
  int32_t kind;  // memopt_stub_kind
} memopt_stub_tensor;

/// Packs tensor i of the site from inputs[i] (contiguous) into payloads[i].
/// When `first_invalid` is not null it has one slot per tensor (device
/// memory for CUDA sites) and receives, per tensor, the smallest flat index
/// whose value is not 0 or 1, or a value >= the element count when every
/// value is.
/// Returns 0, or a cudaError_t from a CUDA launch.
typedef int (*memopt_stub_pack_fn)(const void *const *inputs,
                                   void *const *payloads,
                                   int64_t *first_invalid, void *stream);
/// Writes tensor i of the site from payloads[i] into outputs[i] (contiguous).
typedef int (*memopt_stub_unpack_fn)(const void *const *payloads,
                                     void *const *outputs, void *stream);

typedef struct memopt_stub_site {
  const char *name;  // region name, or "<op> at <module path>" for a layer
  int32_t site_kind; // memopt_stub_site_kind
  int32_t device;    // memopt_stub_device
  int32_t count;     // tensors packed at the site
  const memopt_stub_tensor *tensors;
  memopt_stub_pack_fn pack;
  memopt_stub_unpack_fn unpack;
  int32_t launches; // kernel launches per pack (and per unpack): 1
} memopt_stub_site;

/// Registers the sites of `model`. Returns 0, or -1 (with a message on
/// stderr) for an ABI mismatch. Sites stay registered for the process.
int memopt_register_launch_stubs(int32_t abi_version, const char *model,
                                 const memopt_stub_site *sites, int32_t count);

/// Number of sites registered so far (every model).
int64_t memopt_launch_stub_sites(void);

/// On by default: whether the runtime calls registered launchers.
void memopt_set_launch_stubs_enabled(int enabled);
int memopt_launch_stubs_enabled(void);

/// Compression kernel launches since the last reset: `generic` counts those
/// of the generic runtime kernels as the CUDA backend issues them (a checked
/// pack is a check launch and a pack launch; an unpack one launch), `stubs`
/// those of registered launchers. Counted alike on CPU and CUDA tensors.
void memopt_launch_counts(int64_t *generic, int64_t *stubs);
void memopt_reset_launch_counts(void);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // MEMOPT_RUNTIME_LAUNCHSTUBS_H
