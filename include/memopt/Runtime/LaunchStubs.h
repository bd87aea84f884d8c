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

/// One tensor an offload site moves: `numel` elements of `element_size`
/// bytes (a contiguous tensor), at `offset` in the site's host block.
typedef struct memopt_stub_copy {
  int64_t numel;
  int32_t element_size;
  int32_t reserved; // 0
  int64_t offset;   // multiple of MEMOPT_STUB_COPY_ALIGN
} memopt_stub_copy;

/// Offsets in a site's host block are multiples of this (any element type,
/// and whole cache lines).
#define MEMOPT_STUB_COPY_ALIGN 256

/// Copies tensor i of the site from `device[i]` to `host + copies[i].offset`
/// (CUDA sites: asynchronously on `stream`, the runtime's side stream, which
/// already waits for the forward that wrote them). Returns 0 or a
/// cudaError_t.
typedef int (*memopt_stub_offload_fn)(const void *const *device, void *host,
                                      void *stream);
/// The way back: `host + copies[i].offset` to `device[i]` on `stream`.
typedef int (*memopt_stub_prefetch_fn)(const void *host, void *const *device,
                                       void *stream);

/// A checkpoint region of a CUDA plan whose inputs go to pinned host memory
/// (`#memopt.offload<host>`): the copy schedule memopt-schedule-prefetch
/// made, with every size fixed. The inputs go out on the side stream when
/// the region's forward has run, and come back when the backward of region
/// `trigger` starts (the region itself when it names itself).
typedef struct memopt_stub_offload_site {
  const char *name;    // the region
  const char *trigger; // the region whose backward starts the prefetch
  int32_t device;      // memopt_stub_device
  int32_t count;       // tensors offloaded
  const memopt_stub_copy *copies;
  int64_t host_bytes; // the site's host block
  int32_t held_for;   // forward ops the copies run alongside (modelled)
  int32_t reserved;   // 0
  memopt_stub_offload_fn offload;
  memopt_stub_prefetch_fn prefetch;
} memopt_stub_offload_site;

/// Registers the offload sites of `model` (same rules as
/// memopt_register_launch_stubs).
int memopt_register_offload_stubs(int32_t abi_version, const char *model,
                                  const memopt_stub_offload_site *sites,
                                  int32_t count);

/// Offload sites registered so far (every model).
int64_t memopt_offload_stub_sites(void);

/// Offload and prefetch copy calls since the last reset: `generic` counts
/// one per tensor the runtime's generic offload group copies (each a
/// separate copy call), `stubs` one per site launcher call (all of a
/// site's tensors). Reset with memopt_reset_launch_counts.
void memopt_offload_copy_counts(int64_t *generic, int64_t *stubs);

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
