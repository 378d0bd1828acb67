// ---- Tiles in shared memory --------------------------------------------------
// Scan and filter work on a tile of SCAN_TILE items: loaded striped (each
// access coalesced, in 16-byte vectors when possible) into shared memory,
// where thread t owns the SCAN_ITEMS contiguous items from t * SCAN_ITEMS.
//
// Tile size: each thread owns SCAN_THREAD_BYTES (128) bytes, so a tile is
// large (32 KiB of float32 for 256 threads) and what every tile pays once
// (a look-back, five barriers) is paid once per 32 KiB. The rows stay in
// registers between the two passes over them, which is what caps the size:
// a bigger row costs registers, and fewer blocks then fit on an SM.
//
// Each row is followed by ROW_PAD unused items (16 bytes for vectorised
// types): without them the rows of neighbouring threads start in the same
// memory bank, and a warp reading one row each waits for up to 32 bank
// conflicts. With 16 bytes a row is still 16-byte aligned, so a thread reads
// and writes its row in vectors, conflict-free.

#define ROW_PAD (VEC > 1 ? VEC : 1)
#define ROW_SLOTS (SCAN_ITEMS + ROW_PAD)
#define TILE_SLOTS (BLOCK_THREADS * ROW_SLOTS)

// Where item k of the tile lives in shared memory.
__device__ __forceinline__ int slot(int k) { return k + (k / SCAN_ITEMS) * ROW_PAD; }

// The tile a block works on: its id, the number of tiles, its first item and its item count.
struct Tile {
    long long id;
    long long tiles;
    index_t base;
    int count;
};

template <typename T, typename In>
__device__ __forceinline__ void load_tile(const In& in, index_t base, int count, T* tile) {
    if constexpr (VEC > 1) {
        if (count == SCAN_TILE && can_vectorize(in)) {
            Vector<T, VEC> v[SCAN_ITEMS / VEC];
            #pragma unroll
            for (int r = 0; r < SCAN_ITEMS / VEC; ++r)  // every load in flight at once
                v[r] = load_vector(in, base + (index_t)(r * BLOCK_THREADS + threadIdx.x) * VEC);
            #pragma unroll
            for (int r = 0; r < SCAN_ITEMS / VEC; ++r)  // a vector stays in one row
                *reinterpret_cast<Vector<T, VEC>*>(tile + slot((r * BLOCK_THREADS + threadIdx.x) * VEC)) = v[r];
            return;
        }
    }
    // Item by item: ITEM_LOADS loads are issued before their stores to shared
    // memory. A load cannot be hoisted above its bounds check, so a store beside
    // it made each row wait a round trip to memory (a strided tile: 32 rows,
    // 1.2-1.5x slower, bench/results run 33); all 32 at once spill under the
    // scan's register cap of 48.
    constexpr int ITEM_LOADS = SCAN_ITEMS < 16 ? SCAN_ITEMS : 16;
    #pragma unroll
    for (int batch = 0; batch < SCAN_ITEMS; batch += ITEM_LOADS) {
        T v[ITEM_LOADS];
        #pragma unroll
        for (int r = 0; r < ITEM_LOADS; ++r) {
            const int k = (batch + r) * BLOCK_THREADS + threadIdx.x;
            if (batch + r < SCAN_ITEMS && k < count) v[r] = load(in, base + k);
        }
        #pragma unroll
        for (int r = 0; r < ITEM_LOADS; ++r) {
            const int k = (batch + r) * BLOCK_THREADS + threadIdx.x;
            if (batch + r < SCAN_ITEMS && k < count) tile[slot(k)] = v[r];
        }
    }
}

// Block b works on tile b and loads its items into shared memory (`items`).
// Tile ids are block indices, as in CUB: blocks start in index order, so
// every tile a look-back waits for has started (or finished) already.
template <typename In, typename T>
__device__ __forceinline__ Tile load_block_tile(const In& in, index_t n, T* items) {
    Tile tile;
    tile.id = blockIdx.x;
    tile.tiles = gridDim.x;
    tile.base = (index_t)tile.id * SCAN_TILE;
    tile.count = n - tile.base < SCAN_TILE ? (int)(n - tile.base) : SCAN_TILE;
    load_tile(in, tile.base, tile.count, items);
    __syncthreads();
    return tile;
}

template <typename T>
__device__ __forceinline__ void store_tile(const Output& out, index_t base, int count, const T* tile) {
    if constexpr (VEC > 1) {
        if (count == SCAN_TILE && can_vectorize(out)) {
            #pragma unroll
            for (int r = 0; r < SCAN_ITEMS / VEC; ++r) {
                const int k = (r * BLOCK_THREADS + threadIdx.x) * VEC;
                store_vector(out, base + k, *reinterpret_cast<const Vector<T, VEC>*>(tile + slot(k)));
            }
            return;
        }
    }
    #pragma unroll
    for (int r = 0; r < SCAN_ITEMS; ++r) {
        const int k = r * BLOCK_THREADS + threadIdx.x;
        if (k < count) store(out, base + k, tile[slot(k)]);
    }
}

// This thread's row: its SCAN_ITEMS items (those past `count` are copies of item 0).
template <typename T>
__device__ __forceinline__ void read_row(const T* tile, int count, T (&row)[SCAN_ITEMS]) {
    const int first = threadIdx.x * SCAN_ITEMS;
    const T* mine = tile + threadIdx.x * ROW_SLOTS;
    if (count == SCAN_TILE) {
        #pragma unroll
        for (int r = 0; r < SCAN_ITEMS / VEC; ++r) {
            const Vector<T, VEC> v = reinterpret_cast<const Vector<T, VEC>*>(mine)[r];
            #pragma unroll
            for (int j = 0; j < VEC; ++j) row[r * VEC + j] = v.item[j];
        }
    } else {
        #pragma unroll
        for (int j = 0; j < SCAN_ITEMS; ++j) row[j] = first + j < count ? mine[j] : tile[0];
    }
}

template <typename T>
__device__ __forceinline__ void write_row(T* tile, const T (&row)[SCAN_ITEMS]) {
    Vector<T, VEC>* mine = reinterpret_cast<Vector<T, VEC>*>(tile + threadIdx.x * ROW_SLOTS);
    #pragma unroll
    for (int r = 0; r < SCAN_ITEMS / VEC; ++r) {
        Vector<T, VEC> v;
        #pragma unroll
        for (int j = 0; j < VEC; ++j) v.item[j] = row[r * VEC + j];
        mine[r] = v;
    }
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

// ---- One short tile ------------------------------------------------------------
// An input of at most SMALL_TILE items is the only tile, and a short one. The
// tile code would cost each warp over a thousand instructions for it, nearly
// all for rows past the end and each fetched cold: at 2^10 float32 items a
// scan took 2.5x a map's GPU time (bench/results run 33). So scan and filter
// give it a path of its own, with no shared-memory tile and no look-back:
// thread t reads the SMALL_ITEMS items from t * SMALL_ITEMS straight into
// registers, every load in flight at once. An index past the end reads the
// last item instead, and the count returned drops it: no branch sits before
// the shuffles (common.cu).
template <typename In, typename T>
__device__ __forceinline__ int load_small_row(const In& in, index_t n, T (&row)[SMALL_ITEMS]) {
    const index_t last = n - 1, first = (index_t)threadIdx.x * SMALL_ITEMS;
    #pragma unroll
    for (int j = 0; j < SMALL_ITEMS; ++j) row[j] = load(in, first + j < last ? first + j : last);
    return n - first <= 0 ? 0 : (n - first < SMALL_ITEMS ? (int)(n - first) : SMALL_ITEMS);
}
