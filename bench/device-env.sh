# Sourced by the bench/device-*.sh scripts on a lent GPU machine, which has no package registry: libraries the
# build needs and the machine lacks (simdjson, zlib headers) and the default training text (fortunes) are
# unpacked from the Debian packages carried in .device/debs into /tmp/scalescope-deps — never into /.
DEPS=/tmp/scalescope-deps
unpack() { for deb in "$@"; do [ -f "$deb" ] && dpkg -x "$deb" "$DEPS"; done; }
if [ -d .device/debs ]; then
  mkdir -p "$DEPS"
  if ! ls /usr/lib/x86_64-linux-gnu/cmake/simdjson /usr/lib/cmake/simdjson >/dev/null 2>&1; then
    unpack .device/debs/libsimdjson*.deb
  fi
  [ -f /usr/include/zlib.h ] || unpack .device/debs/zlib1g-dev*.deb
  [ -d /usr/share/games/fortunes ] || unpack .device/debs/fortunes*.deb
  export CMAKE_PREFIX_PATH="$DEPS/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export CPATH="$DEPS/usr/include${CPATH:+:$CPATH}"
  export LIBRARY_PATH="$DEPS/usr/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export LD_LIBRARY_PATH="$DEPS/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  [ -d "$DEPS/usr/share/games/fortunes" ] && export SCALESCOPE_DATA="$DEPS/usr/share/games/fortunes"
fi
# cuDNN's fused attention: cuDNN 9 from the system, else the copy PyTorch's wheels bring (nvidia-cudnn-cu13, whose
# directory is not on the loader's path); cudnn-frontend (header-only) carried in .device/cudnn-frontend.
if [ -z "${CUDNN_ROOT:-}" ] && [ ! -f /usr/include/cudnn.h ] && [ ! -f /usr/local/cuda/include/cudnn.h ]; then
  wheel=$(python3 -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null) &&
    [ -f "$wheel/include/cudnn.h" ] && export CUDNN_ROOT=$wheel
fi
if [ -n "${CUDNN_ROOT:-}" ]; then export LD_LIBRARY_PATH="$CUDNN_ROOT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
if [ -d .device/cudnn-frontend/include ]; then export CUDNN_FRONTEND_ROOT=$PWD/.device/cudnn-frontend; fi
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1  # never NVLink multicast
export PATH=/usr/local/cuda/bin:$PATH

# device_build [TARGET…]: configure and build scalescope into build-device (RelWithDebInfo, Ninja, every core),
# the named targets or everything, logging to $OUT/build.log; on failure prints the log's tail and returns 1.
device_build() {
  local log=${OUT:-/tmp}/build.log targets=()
  [ $# -gt 0 ] && targets=(--target "$@")
  { cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    cmake --build build-device -j "$(nproc)" "${targets[@]}"; } > "$log" 2>&1 || { tail -40 "$log"; return 1; }
}

# device_build_cpu TARGET…: the same without CUDA (-DSCALESCOPE_CUDA=OFF) into build-device-cpu, for scripts whose
# scalescope needs no GPU code of its own (profile, analyze, the NCCL plugin).
device_build_cpu() {
  local log=${OUT:-/tmp}/build.log
  { cmake -S . -B build-device-cpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSCALESCOPE_CUDA=OFF &&
    cmake --build build-device-cpu -j "$(nproc)" --target "$@"; } > "$log" 2>&1 || { tail -40 "$log"; return 1; }
}

# run_gpu_tests TEST…: runs each built test binary, output in $OUT/TEST.txt, one summary line each.
run_gpu_tests() {
  local t
  for t in "$@"; do
    timeout "${GPU_TEST_TIMEOUT:-900}" build-device/tests/$t --gtest_brief=1 > "${OUT:-/tmp}/$t.txt" 2>&1
    echo "$t: exit $? — $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' "${OUT:-/tmp}/$t.txt" | tr '\n' ' ')"
  done
}
