#pragma once
// The part of NCCL's profiler-plugin interface, version 5 (NCCL 2.26 – 2.28; NCCL ≥ 2.29 still loads v5), that
// scalescope's plugin uses, declared here because NCCL installs no header for it. Layouts follow NCCL's interface
// description (ext-profiler/README.md and example/nccl/profiler_v5.h in NCCL 2.28.9): the descriptor is
// {type, parentObj, rank, union {...}}, and only the union members read here are declared — every member starts at
// the union's offset, so the ones left out change nothing. If NCCL changes v5, this file is what to revisit;
// tests/profile/test_nccl_plugin.cpp drives the plugin through these declarations and bench/device-nccl-plugin.sh
// checks them against a real NCCL.

#include <cstddef>
#include <cstdint>

namespace scalescope::nccl_abi {

using Result = int;                 // ncclResult_t: 0 = ncclSuccess
inline constexpr Result kSuccess = 0;

// Event types (ncclProfile*), a bit mask.
inline constexpr std::uint64_t kGroup = 1u << 0;
inline constexpr std::uint64_t kColl = 1u << 1;
inline constexpr std::uint64_t kP2p = 1u << 2;
inline constexpr std::uint64_t kKernelCh = 1u << 6;

// Event states (ncclProfilerEventState_v5_t), an int-sized enum.
using EventState = int;
inline constexpr EventState kKernelChStop = 22;

/// NCCL's logger (ncclDebugLogger_t): level 2 = WARN, 3 = INFO; flags a subsystem mask (1 = INIT).
using Logger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

struct EventDescrV5 {
  std::uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      std::uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      std::size_t count;
      int root;
      const char* datatype;
      std::uint8_t nChannels;
      std::uint8_t nWarps;
      const char* algo;
      const char* proto;
      void* parentGroup;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      std::size_t count;
      int peer;
      std::uint8_t nChannels;
      void* parentGroup;
    } p2p;
    struct {
      std::uint8_t channelId;
      std::uint64_t pTimer;  // GPU globaltimer, ns
    } kernelCh;
  };
};

union EventStateArgsV5 {
  struct {
    std::size_t transSize;
  } proxyStep;
  struct {
    std::uint64_t pTimer;  // GPU globaltimer, ns
  } kernelCh;
  void* data;
};

struct ProfilerV5 {
  const char* name;
  Result (*init)(void** context, std::uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                 int nranks, int rank, Logger logfn);
  Result (*startEvent)(void* context, void** eHandle, EventDescrV5* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, EventState eState, EventStateArgsV5* eStateArgs);
  Result (*finalize)(void* context);
};

// Layout checks against NCCL's v5 descriptor on LP64: the union at 24, coll.count at 24 + 32, coll.datatype at
// 24 + 48, coll.algo at 24 + 64; kernelCh.pTimer at 24 + 8.
static_assert(offsetof(EventDescrV5, coll) == 24);
static_assert(offsetof(EventDescrV5, coll.count) == 56);
static_assert(offsetof(EventDescrV5, coll.datatype) == 72);
static_assert(offsetof(EventDescrV5, coll.algo) == 88);
static_assert(offsetof(EventDescrV5, kernelCh.pTimer) == 32);
static_assert(offsetof(EventDescrV5, p2p.peer) == 56);

}  // namespace scalescope::nccl_abi
