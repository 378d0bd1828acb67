// ---- Filter: stream compaction in one pass -------------------------------------
// A tile: load; each thread tests its items; the kept counts are scanned
// within the block and across tiles (the look-back over counts); kept items
// are gathered at the front of the tile in order, then written out
// contiguously. The last tile writes how many items were kept in all.

// Kept item k of the tile is gathered at items[gathered(k)]: after every 128
// bytes (a row of the 32 memory banks) comes one unused 4-byte word (one
// item, for wider items). Thread t gathers its kept items from about
// t * SCAN_ITEMS / 2 on (half kept), so without the gap the threads of a warp
// would store into the same two banks, up to 16 stores waiting in line; with
// it their first items fall in different banks, and store_kept's readers of
// VEC consecutive items are conflict-free too. The gaps fit in the rows' pads.
#define GATHER_ROW (128 / sizeof(value_t) > 0 ? 128 / sizeof(value_t) : 1)
#define GATHER_PAD (4 / sizeof(value_t) > 0 ? 4 / sizeof(value_t) : 1)
__device__ __forceinline__ int gathered(int k) { return k + k / (int)GATHER_ROW * (int)GATHER_PAD; }
static_assert(SCAN_ITEMS <= 32 && SMALL_ITEMS <= 32, "a thread's kept items are the bits of one word");
static_assert(SCAN_TILE - 1 + (SCAN_TILE - 1) / GATHER_ROW * GATHER_PAD < TILE_SLOTS,
              "the gathered tile fits in the tile's slots");

// Write the tile's `kept` items, gathered at the front of `items` (gathered(k)), to
// out[at ...]. In 16-byte vectors where the output can take them: vector v
// covers out[at - shift + v * VEC ...], whose items are read one by one from
// shared memory (they need not be aligned there), then stored at once. Both
// loops have a fixed length (a tile's worth), which ptxas unrolls without the
// CALL it uses to leave an unrolled loop of unknown length.
template <typename T>
__device__ __forceinline__ void store_kept(const Output& out, index_t at, int kept, const T* items) {
    if constexpr (VEC > 1) {
        if (can_vectorize(out)) {
            const int shift = (int)(at % VEC);  // out[at - shift] starts a vector
            const int vectors = (shift + kept + VEC - 1) / VEC;
            #pragma unroll
            for (int r = 0; r <= SCAN_ITEMS / VEC; ++r) {
                const int v = r * BLOCK_THREADS + threadIdx.x;
                const int k = v * VEC - shift;  // items[k] goes to the vector's first item
                if (v < vectors && k >= 0 && k + VEC <= kept) {
                    Vector<T, VEC> whole;
                    #pragma unroll
                    for (int j = 0; j < VEC; ++j) whole.item[j] = items[gathered(k + j)];
                    store_vector(out, at + k, whole);
                } else if (v < vectors) {
                    #pragma unroll
                    for (int j = 0; j < VEC; ++j)
                        if (k + j >= 0 && k + j < kept) store(out, at + k + j, items[gathered(k + j)]);
                }
            }
            return;
        }
    }
    #pragma unroll
    for (int r = 0; r < SCAN_ITEMS; ++r) {
        const int k = r * BLOCK_THREADS + threadIdx.x;
        if (k < kept) store(out, at + k, items[gathered(k)]);
    }
}

// The only tile, a short one (tile.cu): each thread tests its SMALL_ITEMS
// items in registers and writes those it keeps where the block's prefix of
// kept counts says.
template <typename In, typename Add>
__device__ __forceinline__ void filter_small(const In& in, index_t n, const Output& out, long long* kept_total,
                                             const Uniforms& u, Add add) {
    value_t row[SMALL_ITEMS];
    const int mine = load_small_row(in, n, row);
    unsigned int keep = 0;  // bit j: item j is kept
    #pragma unroll
    for (int j = 0; j < SMALL_ITEMS; ++j) keep |= (unsigned int)(predicate(row[j], u) && j < mine) << j;
    const index_t kept = __popc(keep);
    bool has;
    index_t position = block_exclusive_prefix(kept, has, add);
    #pragma unroll
    for (int j = 0; j < SMALL_ITEMS; ++j)
        if (keep >> j & 1) store(out, position++, row[j]);
    if (mine > 0 && (index_t)threadIdx.x * SMALL_ITEMS + mine == n) *kept_total = position;  // the last thread
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, SCAN_MIN_BLOCKS)
gpulab_filter(Input0 in, index_t n, Output out, long long* kept_total, TileStatus<index_t> status,
              unsigned int epoch, Uniforms u) {
    auto add = [](index_t a, index_t b) { return a + b; };
    __shared__ alignas(16) value_t items[TILE_SLOTS];
    __shared__ index_t tile_kept, tile_prefix;
    if (n <= SMALL_TILE) {  // the same for the whole block
        filter_small(in, n, out, kept_total, u, add);
        return;
    }

    const Tile tile = load_block_tile(in, n, items);
    const int count = tile.count;

    // 1. Test this thread's items; keep them in registers.
    const int first = threadIdx.x * SCAN_ITEMS;
    value_t mine[SCAN_ITEMS];
    read_row(items, count, mine);
    unsigned int keep = 0;  // bit j: item j is kept (one register, where bool[] took one each and spilled)
    #pragma unroll
    for (int j = 0; j < SCAN_ITEMS; ++j)  // no branch around the predicate (common.cu)
        keep |= (unsigned int)(predicate(mine[j], u) && first + j < count) << j;
    const index_t kept = __popc(keep);

    // 2. Where this thread's kept items go within the tile; the tile's count, published at once.
    bool has;
    index_t position = block_exclusive_prefix(kept, has, add);
    if (first < count && first + SCAN_ITEMS >= count) {  // the last thread holding items
        tile_kept = position + kept;
        publish(status.aggregate, tile.id, epoch, tile_kept);
    }
    __syncthreads();  // every thread has read its row: the tile can be overwritten

    // 3. Gather kept items at the front of the tile, in order.
    #pragma unroll
    for (int j = 0; j < SCAN_ITEMS; ++j)
        if (keep >> j & 1) items[gathered(position++)] = mine[j];

    // 4. Where the tile's kept items go in the output: the counts of its window of predecessors.
    index_t before;
    const bool has_before = look_back(status, tile.id, epoch, before, add);
    if (threadIdx.x == 0) {
        tile_prefix = has_before ? before : 0;
        publish(status.inclusive, tile.id, epoch, tile_prefix + tile_kept);
    }
    __syncthreads();
    store_kept(out, tile_prefix, (int)tile_kept, items);
    if (tile.id == tile.tiles - 1 && threadIdx.x == 0) *kept_total = tile_prefix + tile_kept;
}
