// ---- Tiles in shared memory --------------------------------------------------
// Scan and filter work on a tile of SCAN_TILE items: loaded striped (each
// access coalesced, in 16-byte vectors when possible) into shared memory,
// where thread t owns the SCAN_ITEMS contiguous items from t * SCAN_ITEMS.
// Each thread's row is followed by one unused slot: without it, the rows of
// neighbouring threads start in the same memory bank, and a warp reading
// item j of every row waits for up to 32 bank conflicts.

#define TILE_SLOTS (SCAN_TILE + BLOCK_THREADS)

// Where item k of the tile lives in shared memory.
__device__ __forceinline__ int slot(int k) { return k + k / SCAN_ITEMS; }

template <typename T, typename In>
__device__ __forceinline__ void load_tile(const In& in, index_t base, int count, T* tile) {
    if constexpr (VEC > 1) {
        if (count == SCAN_TILE && can_vectorize(in)) {
            #pragma unroll
            for (int r = 0; r < SCAN_ITEMS / VEC; ++r) {  // every load in flight at once
                const int k = r * BLOCK_THREADS + threadIdx.x;
                const Vector<T, VEC> v = load_vector(in, base + (index_t)k * VEC);
                #pragma unroll
                for (int j = 0; j < VEC; ++j) tile[slot(k * VEC) + j] = v.item[j];  // a vector stays in one row
            }
            return;
        }
    }
    for (int k = threadIdx.x; k < count; k += BLOCK_THREADS) tile[slot(k)] = load(in, base + k);
}

template <typename T>
__device__ __forceinline__ void store_tile(const Output& out, index_t base, int count, const T* tile) {
    if constexpr (VEC > 1) {
        if (count == SCAN_TILE && can_vectorize(out)) {
            #pragma unroll
            for (int r = 0; r < SCAN_ITEMS / VEC; ++r) {
                const int k = r * BLOCK_THREADS + threadIdx.x;
                Vector<T, VEC> v;
                #pragma unroll
                for (int j = 0; j < VEC; ++j) v.item[j] = tile[slot(k * VEC) + j];
                store_vector(out, base + (index_t)k * VEC, v);
            }
            return;
        }
    }
    for (int k = threadIdx.x; k < count; k += BLOCK_THREADS) store(out, base + k, tile[slot(k)]);
}

// This thread's row: its SCAN_ITEMS items (those past `count` are copies of item 0).
template <typename T>
__device__ __forceinline__ void read_row(const T* tile, int count, T (&row)[SCAN_ITEMS]) {
    const int first = threadIdx.x * SCAN_ITEMS;
    const T* mine = tile + threadIdx.x * (SCAN_ITEMS + 1);
    if (count == SCAN_TILE) {
        #pragma unroll
        for (int j = 0; j < SCAN_ITEMS; ++j) row[j] = mine[j];
    } else {
        #pragma unroll
        for (int j = 0; j < SCAN_ITEMS; ++j) row[j] = first + j < count ? mine[j] : tile[0];
    }
}

template <typename T>
__device__ __forceinline__ void write_row(T* tile, const T (&row)[SCAN_ITEMS]) {
    const int first = threadIdx.x * (SCAN_ITEMS + 1);
    #pragma unroll
    for (int j = 0; j < SCAN_ITEMS; ++j) tile[first + j] = row[j];
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
