// ---- Scan: one pass with a deterministic look-back -----------------------------
// A tile: load; each thread folds its items; prefixes of the threads within
// the block; the tile's aggregate, published at once; the tile's prefix from
// its window of predecessors (lookback.cu); each thread rescans its items
// from its full prefix; store. Every fold is in order.

// The only tile, a short one (tile.cu): the same steps on SMALL_ITEMS items
// per thread, in registers, with the initial value as the tile's prefix.
template <typename In, typename Combine>
__device__ __forceinline__ void scan_small(const In& in, index_t n, const Output& out, value_t initial,
                                           bool has_initial, Combine combine) {
    value_t row[SMALL_ITEMS];
    const int mine = load_small_row(in, n, row);
    value_t total = row[0];
    #pragma unroll
    for (int j = 1; j < SMALL_ITEMS; ++j) {
        const value_t joined = combine(total, row[j]);
        total = j < mine ? joined : total;
    }
    bool has;
    value_t prefix = block_exclusive_prefix(total, has, combine);
    if (has_initial) {
        prefix = has ? combine(initial, prefix) : initial;
        has = true;
    }
    const index_t first = (index_t)threadIdx.x * SMALL_ITEMS;
    #pragma unroll
    for (int j = 0; j < SMALL_ITEMS; ++j) {
        const value_t running = has ? combine(prefix, row[j]) : row[j];
        if (j < mine) store(out, first + j, EXCLUSIVE ? prefix : running);
        prefix = running;
        has = true;
    }
}

#if PORTABLE_ORDER
// ---- The portable tree (order.cu) --------------------------------------------------
// Each thread's S items go up their tree in registers (their pairwise tree in
// row[S - 1]); the threads' tree is kept in shared memory; the tile publishes
// its group's G and learns F before it and after it (fenwick_look_back); then
// a thread's prefix is F before the tile, then the threads' nodes of its
// number's digits (thread_prefix), and its items come down their tree from it.
// Item p of an inclusive scan is F(p + 1): the exclusive prefix of the next
// item, so a thread's last takes the next thread's prefix, and the tile's
// last F after the tile. The cost against order="device": as many operator
// calls, and after the look-back each thread reads 2 * log2(BLOCK_THREADS)
// nodes of shared memory and folds them (the device order's one combine);
// the look-back itself reads one value per digit of the tile's number.
template <int S, typename Combine>
__device__ __forceinline__ void scan_row_portable(value_t (&row)[S], const ThreadTree<value_t>& tree,
                                                  const value_t& before, bool has_before, const value_t& after,
                                                  value_t initial, bool has_initial, Combine combine) {
    const int t = threadIdx.x;
    bool has = has_before, has_next = has_before;
    const value_t mine = thread_prefix(tree, t, before, has, combine);  // F before this thread's items
    const value_t next = t + 1 < BLOCK_THREADS ? thread_prefix(tree, t + 1, before, has_next, combine) : after;
    down_sweep(row, pick(has, mine, row[S - 1]), has, combine);  // row[j]: F before item j
    #pragma unroll
    for (int j = 0; j < S; ++j) {
        const value_t folded = EXCLUSIVE ? row[j] : (j + 1 < S ? row[j + 1] : next);
        const bool none = EXCLUSIVE && j == 0 && !has;  // the first item of all: initial alone
        row[j] = pick(has_initial, pick(none, initial, combine(initial, folded)), folded);
    }
}
#endif

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, SCAN_MIN_BLOCKS)
gpulab_scan(Input0 in, index_t n, Output out, TileStatus<value_t> status, unsigned int epoch,
            value_t initial, bool has_initial, Uniforms u) {
    auto combine = [&](value_t a, value_t b) { return op(a, b, u); };
    __shared__ alignas(16) value_t items[TILE_SLOTS];
#if PORTABLE_ORDER
    __shared__ ThreadTree<value_t> tree;
    if (n <= SMALL_TILE) {  // one short tile, in registers (tile.cu): no look-back
        value_t row[SMALL_ITEMS];
        const int mine = load_small_row(in, n, row);
        up_sweep(row, combine);
        build_thread_tree(tree, row[SMALL_ITEMS - 1], combine);
        __syncthreads();
        scan_row_portable(row, tree, row[0], false, tree.total, initial, has_initial, combine);
        const index_t first = (index_t)threadIdx.x * SMALL_ITEMS;
        #pragma unroll
        for (int j = 0; j < SMALL_ITEMS; ++j) {
            if (j < mine) store(out, first + j, row[j]);
        }
        return;
    }
    __shared__ FenwickWindow<value_t> window;
    const Tile tile = load_block_tile(in, n, items);
    value_t row[SCAN_ITEMS];
    read_row(items, tile.count, row);
    up_sweep(row, combine);
    build_thread_tree(tree, row[SCAN_ITEMS - 1], combine);
    fenwick_look_back(status, tile.id, epoch, tree.total, window, combine);  // its barriers show the tree
    scan_row_portable(row, tree, window.before, window.has_before, window.after, initial, has_initial, combine);
    write_row(items, row);  // rows past the last item are written but never stored
    __syncthreads();
    store_tile(out, tile.base, tile.count, items);
#else
    __shared__ value_t tile_aggregate, tile_prefix;
    __shared__ bool tile_has_prefix;
    if (n <= SMALL_TILE) {  // the same for the whole block
        scan_small(in, n, out, initial, has_initial, combine);
        return;
    }

    const Tile tile = load_block_tile(in, n, items);
    const int count = tile.count;

    // 1. This thread's items and their fold.
    const int first = threadIdx.x * SCAN_ITEMS;
    const int mine = count - first < 0 ? 0 : (count - first < SCAN_ITEMS ? count - first : SCAN_ITEMS);
    value_t row[SCAN_ITEMS];
    read_row(items, count, row);
    value_t total = row[0];
    #pragma unroll
    for (int j = 1; j < SCAN_ITEMS; ++j) {
        const value_t joined = combine(total, row[j]);
        total = j < mine ? joined : total;  // a select, not a branch, before the shuffles (common.cu)
    }

    // 2. The prefix of this thread within the tile; the tile's aggregate, published at once.
    bool has;
    value_t prefix = block_exclusive_prefix(total, has, combine);
    if (mine > 0 && first + mine == count) {  // the last thread holding items
        tile_aggregate = has ? combine(prefix, total) : total;
        publish(status.aggregate, tile.id, epoch, tile_aggregate);
    }

    // 3. The tile's prefix: its window of predecessors (whose barriers make
    //    tile_aggregate visible), the initial value on the left of the first
    //    tiles' windows (later windows start at an inclusive prefix, which has it).
    value_t before;
    bool has_before = look_back(status, tile.id, epoch, before, combine);
    if (threadIdx.x == 0) {
        if (has_initial && tile.id < LOOKBACK_TILES) {
            before = has_before ? combine(initial, before) : initial;
            has_before = true;
        }
        tile_prefix = before;
        tile_has_prefix = has_before;
        publish(status.inclusive, tile.id, epoch, has_before ? combine(before, tile_aggregate) : tile_aggregate);
    }
    __syncthreads();

    // 4. Rescan this thread's items from its full prefix.
    if (tile_has_prefix) {
        prefix = has ? combine(tile_prefix, prefix) : tile_prefix;
        has = true;
    }
    #pragma unroll
    for (int j = 0; j < SCAN_ITEMS; ++j) {
        const value_t running = has ? combine(prefix, row[j]) : row[j];
        row[j] = EXCLUSIVE ? prefix : running;
        prefix = running;
        has = true;
    }
    write_row(items, row);  // rows past the last item are written but never stored
    __syncthreads();
    store_tile(out, tile.base, count, items);
#endif
}
