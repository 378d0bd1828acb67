// ---- Tiles in shared memory --------------------------------------------------
// Scan and filter work on a tile of SCAN_TILE items: loaded striped (each
// access coalesced, in 16-byte vectors when possible) into shared memory,
// where thread t owns the SCAN_ITEMS contiguous items from t * SCAN_ITEMS.

template <typename T, typename In>
__device__ __forceinline__ void load_tile(const In& in, index_t base, int count, T* tile) {
    if constexpr (VEC > 1) {
        if (count == SCAN_TILE && can_vectorize(in)) {
            for (int k = threadIdx.x; k < SCAN_TILE / VEC; k += BLOCK_THREADS)
                reinterpret_cast<Vector<T, VEC>*>(tile)[k] = load_vector(in, base + (index_t)k * VEC);
            return;
        }
    }
    for (int k = threadIdx.x; k < count; k += BLOCK_THREADS) tile[k] = load(in, base + k);
}

template <typename T>
__device__ __forceinline__ void store_tile(const Output& out, index_t base, int count, const T* tile) {
    if constexpr (VEC > 1) {
        if (count == SCAN_TILE && can_vectorize(out)) {
            for (int k = threadIdx.x; k < SCAN_TILE / VEC; k += BLOCK_THREADS)
                store_vector(out, base + (index_t)k * VEC, reinterpret_cast<const Vector<T, VEC>*>(tile)[k]);
            return;
        }
    }
    for (int k = threadIdx.x; k < count; k += BLOCK_THREADS) store(out, base + k, tile[k]);
}

// Each thread's exclusive prefix within the block, from its own total:
// the totals of all earlier warps, then of earlier lanes of its warp.
// Threads holding items are a prefix of the block, so every total read is real.
template <typename T, typename Combine>
__device__ __forceinline__ T block_exclusive_prefix(T total, bool& has, Combine combine) {
    __shared__ T warp_totals[WARPS_PER_BLOCK];
    const T scanned = warp_scan(total, combine);
    if (lane_id() == WARP_THREADS - 1) warp_totals[warp_id()] = scanned;
    const T left = shuffle_up(scanned, 1);
    __syncthreads();
    T prefix = T();
    has = false;
    for (int w = 0; w < warp_id(); ++w) {
        prefix = has ? combine(prefix, warp_totals[w]) : warp_totals[w];
        has = true;
    }
    if (lane_id() > 0) {
        prefix = has ? combine(prefix, left) : left;
        has = true;
    }
    return prefix;
}
