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
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1  # never NVLink multicast
export PATH=/usr/local/cuda/bin:$PATH
